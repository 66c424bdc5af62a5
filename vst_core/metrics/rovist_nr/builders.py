"""RoViST-NR's result plus where its words sit in the text -> its record
(:class:`.record.RedundancyScores`). Token indices become character spans here, so every
consumer of a record (cards, highlighted text, exports) works on character offsets of the sentences."""

from __future__ import annotations

from collections.abc import Sequence

from vst_core.formulas.redundancy import NonRedundancy
from vst_core.formulas.variants import NRVariant
from vst_core.metrics.rovist_nr.record import InterRepeat, IntraRepeat, RedundancyScores, Span
from vst_core.text.phrases import Token

#: Note on an NR record whose repeated spans a ``--no-spans`` run left out.
NO_SPANS_NOTE = "repeated spans not computed in this run (--no-spans)"


def _span(tokens: Sequence[Token], index: int) -> Span:
    return (tokens[index].start, tokens[index].end)


def _range(tokens: Sequence[Token], window: tuple[int, int]) -> Span:
    return (tokens[window[0]].start, tokens[window[1] - 1].end)


def redundancy_scores(result: NonRedundancy, tokens: Sequence[Sequence[Token]]) -> RedundancyScores:
    """RoViST-NR record with every repeat located in its sentence (``tokens`` per sentence)."""
    return RedundancyScores(
        score=result.score,
        inter=result.inter,
        intra=result.intra,
        variant=result.variant,
        n=result.n,
        notes=tuple(result.notes),
        inter_repeats=tuple(
            InterRepeat(
                sentence=p.sentence,
                earlier=p.earlier,
                jaccard=p.jaccard,
                words=tuple(p.words),
                spans=tuple(_span(tokens[p.sentence], k) for k in p.tokens),
                earlier_spans=tuple(_span(tokens[p.earlier], k) for k in p.earlier_tokens),
            )
            for p in result.inter_repeats
        ),
        intra_repeats=tuple(
            IntraRepeat(
                sentence=p.sentence,
                jaccard=p.jaccard,
                words=tuple(p.words),
                window=_range(tokens[p.sentence], p.window),
                previous=_range(tokens[p.sentence], p.previous),
                spans=tuple(_span(tokens[p.sentence], k) for k in p.tokens),
            )
            for p in result.intra_repeats
        ),
    )


def redundancy_numbers(
    score: float | None,
    inter: float | None,
    intra: float | None,
    *,
    variant: NRVariant,
    n: int,
    notes: Sequence[str],
    why: str = NO_SPANS_NOTE,
) -> RedundancyScores:
    """RoViST-NR record without repeated spans, saying ``why`` (default: a ``--no-spans`` run)."""
    return RedundancyScores(score, inter, intra, variant, n, (*notes, why), None, None)
