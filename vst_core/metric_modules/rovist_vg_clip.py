"""RoViST-VG's aggregation of CLIP similarities (not the authors' model): the idf-weighted
log-sum-exp of each head noun's best CLIP cosine, 2/(1+exp(−0.5·lse)) − 1.

Formula: :mod:`vst_core.metrics.grounding`; computed by
:class:`vst_core.grounding.grounder.Grounder` (``rovist_vg_clip_record``). Card: ``docs/metrics/rovist_vg_clip.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vst_core.metric_modules.groovist import IMAGE_SETTINGS
from vst_core.metric_spec import MetricField, MetricSpec
from vst_core.records import RovistVGClipScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.scoring.story import ScoringRun

NAME = "rovist_vg_clip"


def score(stories: Sequence[Story], run: ScoringRun) -> Mapping[tuple[str, str], Any]:
    return run.image_records(stories, lambda grounder, story, entries: grounder.rovist_vg_clip_record(story, entries))


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-VG (CLIP)",
    description="RoViST-VG's aggregation of CLIP cosines (idf-weighted LogSumExp of each head noun's best CLIP "
    "cosine): not the RoViST-VG model",
    record=RovistVGClipScores,
    fields=(
        MetricField("RoViST-VG (CLIP)", NAME, "score", "RoViST-VG's aggregation of CLIP similarities", report="RoViST-VG (CLIP)"),
    ),
    needs=frozenset({"images", "clip"}),
    settings=(*IMAGE_SETTINGS, "spacy_model"),
    card="docs/metrics/rovist_vg_clip.md",
    score=score,
    load=lambda models: models.clip,
)
