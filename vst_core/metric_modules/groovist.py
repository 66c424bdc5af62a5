"""GROOVIST (Surikuchi et al., 2023): noun phrases grounded in image regions with CLIP, θ penalty,
concreteness weights; with temporal misalignment T and noun-phrase proportion P.

Formula: :mod:`vst_core.metrics.grounding`; images, regions and cached vectors:
:class:`vst_core.grounding.grounder.Grounder` (``groovist_record``). Card: ``docs/metrics/groovist.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vst_core.metric_spec import Card, MetricField, MetricSpec
from vst_core.records import GroundingScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.scoring.story import ScoringRun

NAME = "grounding"
#: The settings that change the grounder's numbers (shared by the CLIP metrics).
IMAGE_SETTINGS: tuple[str, ...] = (
    "clip_arch",
    "clip_pretrained",
    "clip_checkpoint",
    "clip_config",
    "clip_activation",
    "regions",
    "preprocess",
)


def score(stories: Sequence[Story], run: ScoringRun) -> Mapping[tuple[str, str], Any]:
    return run.image_records(stories, lambda grounder, story, entries: grounder.groovist_record(story, entries))


def from_score(value: float, note: str) -> GroundingScores:
    """An imported GROOVIST value is the unbounded one, as the authors release it; tanh is its score."""
    return GroundingScores(math.tanh(value), value, None, None, (), None, (), (note,))


def cards(story: Any) -> list[Card]:
    """GROOVIST with its unbounded value, θ, T and P on hover; T on a card of its own."""
    from vst_core.viz.story import format_score

    grd = story.metrics.get(NAME)
    detail = (
        (
            f"unbounded {format_score(grd.unbounded)} · θ {format_score(grd.theta, 4)} · "
            f"T {format_score(grd.temporal_misalignment)} · P {format_score(grd.np_proportion)}"
        )
        if grd
        else ""
    )
    return [
        ("GROOVIST", grd.score if grd else None, detail),
        ("T", grd.temporal_misalignment if grd else None, METRIC.fields[2].help),
    ]


METRIC = MetricSpec(
    name=NAME,
    title="GROOVIST",
    description="GROOVIST: noun phrases matched to image regions with CLIP, θ penalty, concreteness weights; "
    "also temporal misalignment T and noun-phrase proportion P",
    record=GroundingScores,
    fields=(
        MetricField("GROOVIST", NAME, "score", "GROOVIST, tanh-bounded", report="GROOVIST"),
        MetricField("GROOVIST raw", NAME, "unbounded", "GROOVIST before tanh"),
        MetricField(
            "T", NAME, "temporal_misalignment", "temporal misalignment (GROOVIST Eq. 3)", covariate=True, direction="lower"
        ),
        MetricField("P", NAME, "np_proportion", "noun-phrase proportion (GROOVIST Eq. 4)", covariate=True, direction="none"),
    ),
    needs=frozenset({"images", "clip"}),
    settings=(
        *IMAGE_SETTINGS,
        "theta",
        "penalize",
        "weighting",
        "units",
        "expressions",
        "grounding_profile",
        "spacy_model",
    ),
    main_value="unbounded",
    card="docs/metrics/groovist.md",
    aliases=("g", "groovist"),
    from_score=from_score,
    score=score,
    load=lambda models: models.clip,
    cards=cards,
)
