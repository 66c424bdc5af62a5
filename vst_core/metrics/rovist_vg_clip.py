"""RoViST-VG's aggregation of CLIP similarities (not the authors' model): the idf-weighted
log-sum-exp of each head noun's best CLIP cosine, 2/(1+exp(−0.5·lse)) − 1.

Formula: :mod:`vst_core.formulas.grounding`; wired here (:func:`record`) over the regions and head nouns
the image metrics' shared work encoded (:class:`vst_core.images.grounder.Grounder`).
Card: ``docs/metrics/rovist_vg_clip.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vst_core.contract import (
    Computing,
    GrounderLike,
    ImageEntryLike,
    MetricField,
    MetricSpec,
    PhraseLike,
    Reading,
    SettingsLike,
)

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.formulas.grounding import RovistVG

NAME = "rovist_vg_clip"


@dataclass(frozen=True, slots=True)
class NounMatch:
    """One head noun: its best CLIP cosine over every region, and its idf weight."""

    noun: str
    best_cosine: float
    idf: float


@dataclass(frozen=True, slots=True)
class RovistVGClipScores:
    """RoViST-VG's aggregation of CLIP similarities (``rovist_vg_clip``): ``score`` = 2/(1+exp(−0.5·lse)) − 1."""

    score: float | None
    lse: float | None
    nouns: tuple[NounMatch, ...]
    notes: tuple[str, ...] = ()


def texts(settings: SettingsLike, story: Story, phrases: Sequence[PhraseLike]) -> list[str]:
    """What it embeds beyond the phrase units: each phrase's head noun."""
    return [p.root for p in phrases]


def record(grounder: GrounderLike, story: Story, entries: Sequence[ImageEntryLike]) -> RovistVGClipScores:
    """Each distinct head noun's best CLIP cosine over every region, idf-weighted (``noun:`` idf
    fitted over the set), through RoViST-VG's log-sum-exp and Eq. 3."""
    import numpy as np

    from vst_core.formulas.grounding import rovist_vg

    regions = np.concatenate([e.region_emb for e in entries])
    nouns = list(dict.fromkeys(p.root for p in grounder.phrases_of(story)))
    best = grounder.best_matches(nouns, regions)[1]
    idf = [grounder.idf.get(f"noun:{n}", 0.0) for n in nouns]
    return clip_record(rovist_vg(best, idf), nouns, [float(c) for c in best], idf)


def clip_record(result: RovistVG, nouns: Sequence[str], best: Sequence[float], idf: Sequence[float]) -> RovistVGClipScores:
    """RoViST-VG aggregation of CLIP cosines: each head noun with its best cosine and idf weight."""
    notes = ["CLIP similarities with RoViST's aggregation, not the RoViST-VG model"] + ([] if nouns else ["no noun: undefined"])
    return RovistVGClipScores(
        result.score,
        result.lse,
        tuple(NounMatch(n, float(c), float(w)) for n, c, w in zip(nouns, best, idf, strict=True)),
        tuple(notes),
    )


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-VG (CLIP)",
    description="RoViST-VG's aggregation of CLIP cosines (idf-weighted LogSumExp of each head noun's best CLIP "
    "cosine): not the RoViST-VG model",
    record=RovistVGClipScores,
    fields=(
        MetricField(
            "RoViST-VG (CLIP)",
            NAME,
            "score",
            "RoViST-VG's aggregation of CLIP similarities",
            report="RoViST-VG (CLIP)",
            bounds=(-1.0, 1.0),
        ),
    ),
    card="docs/metrics/rovist_vg_clip.md",
    computing=Computing(
        needs=frozenset({"images", "clip", "idf"}),
        image_record=record,
        texts=texts,
        load=lambda models: models.clip,
    ),
    reading=Reading(formerly=("rovist_vg",)),  # earlier versions wrote this record under that name
)
