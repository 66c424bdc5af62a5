"""CLIPScore (Hessel et al., 2021) per sentence and image: mean of 2.5 · max(cos(sentence i, image i), 0).

Formula: :mod:`vst_core.metrics.grounding`; the whole images' vectors:
:class:`vst_core.grounding.grounder.Grounder` (``clipscore_record``). Card: ``docs/metrics/clipscore.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vst_core.metric_modules.groovist import IMAGE_SETTINGS
from vst_core.metric_spec import MetricField, MetricSpec
from vst_core.records import ClipScoreScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.scoring.story import ScoringRun

NAME = "clipscore"


def score(stories: Sequence[Story], run: ScoringRun) -> Mapping[tuple[str, str], Any]:
    return run.image_records(stories, lambda grounder, story, entries: grounder.clipscore_record(story, entries))


METRIC = MetricSpec(
    name=NAME,
    title="CLIPScore",
    description="CLIPScore: 2.5 * max(cos(sentence i, image i), 0), mean over the story",
    record=ClipScoreScores,
    fields=(MetricField("CLIPScore", NAME, "score", "mean 2.5·max(cos(sentence i, image i), 0)", report="CLIPScore"),),
    needs=frozenset({"images", "clip"}),
    settings=(*IMAGE_SETTINGS, "clipscore_prompt"),
    card="docs/metrics/clipscore.md",
    score=score,
    load=lambda models: models.clip,
)
