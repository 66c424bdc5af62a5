"""GROOVIST's result plus where its phrases sit in the text and which region each matched -> its
record (:class:`.record.GroundingScores`)."""

from __future__ import annotations

from collections.abc import Sequence

from vst_core.contract.protocols import BoxLike, PhraseLike
from vst_core.formulas.grounding import GroovistScore, Misalignment
from vst_core.metrics.groovist.record import GroundingScores, PhraseMatch


def grounding_scores(
    result: GroovistScore,
    units: Sequence[tuple[str, PhraseLike]],
    *,
    best_cosines: Sequence[float],
    images: Sequence[int],
    boxes: Sequence[BoxLike],
    misalignment: Misalignment,
    np_proportion: float | None,
    notes: Sequence[str],
    penalize: bool,
) -> GroundingScores:
    """GROOVIST record: each unit with its best region (``images``/``boxes`` per unit), its weight
    and its contribution."""
    return GroundingScores(
        score=result.score,
        unbounded=result.unbounded,
        theta=result.theta,
        temporal_misalignment=misalignment.score,
        misalignment_per_sentence=misalignment.per_sentence,
        np_proportion=np_proportion,
        phrases=tuple(
            PhraseMatch(
                text=unit,
                surface=phrase.surface,
                sentence=phrase.sentence,
                span=(phrase.start, phrase.end),
                best_cosine=float(best_cosines[k]),
                score=result.scores[k],
                image=int(images[k]),
                box=tuple(boxes[k].as_list()),
                box_label=boxes[k].label,
                weight=result.weights[k],
                contribution=result.contributions[k],
                positive=result.scores[k] >= result.theta or not penalize,
            )
            for k, (unit, phrase) in enumerate(units)
        ),
        notes=(*result.notes, *notes),
    )
