"""Grounding builders: a pure GROOVIST, CLIPScore or RoViST-VG result plus where its phrases
sit in the text and which region each matched -> its typed record (:mod:`vst_core.records`)."""

from __future__ import annotations

from collections.abc import Sequence

from vst_core.metric_spec.contract import BoxLike, PhraseLike
from vst_core.metrics.grounding import ClipScore, GroovistScore, Misalignment, RovistVG
from vst_core.records import (
    ClipScoreScores,
    GroundingScores,
    NounMatch,
    NounRegion,
    PhraseMatch,
    RovistVGClipScores,
    RovistVGScores,
)


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


def clipscore_scores(result: ClipScore, notes: Sequence[str] = ()) -> ClipScoreScores:
    """CLIPScore record: the mean and each sentence-image pair's value."""
    return ClipScoreScores(result.score, result.pairs, tuple(notes))


def rovist_vg_clip_scores(
    result: RovistVG, nouns: Sequence[str], best: Sequence[float], idf: Sequence[float]
) -> RovistVGClipScores:
    """RoViST-VG aggregation of CLIP cosines: each head noun with its best cosine and idf weight."""
    notes = ["CLIP similarities with RoViST's aggregation, not the RoViST-VG model"] + ([] if nouns else ["no noun: undefined"])
    return RovistVGClipScores(
        result.score,
        result.lse,
        tuple(NounMatch(n, float(c), float(w)) for n, c, w in zip(nouns, best, idf, strict=True)),
        tuple(notes),
    )


def rovist_vg_scores(
    result: RovistVG,
    nouns: Sequence[tuple[str, int, bool]],
    *,
    best: Sequence[float],
    idf: Sequence[float],
    images: Sequence[int],
    boxes: Sequence[BoxLike],
    model: str,
    tagger: str,
    notes: Sequence[str] = (),
) -> RovistVGScores:
    """RoViST-VG record: each noun (text, sentence, known to GloVe) with its best region, cosine and idf."""
    return RovistVGScores(
        score=result.score,
        lse=result.lse,
        nouns=tuple(
            NounRegion(
                noun=text,
                sentence=sentence,
                best_cosine=float(best[k]),
                idf=float(idf[k]),
                image=int(images[k]),
                box=tuple(boxes[k].as_list()),
                box_label=boxes[k].label,
                known=known,
            )
            for k, (text, sentence, known) in enumerate(nouns)
        ),
        notes=(*notes, *([] if nouns else ["no noun: undefined"])),
        model=model,
        tagger=tagger,
    )
