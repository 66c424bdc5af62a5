"""RoViST-NR's record: a story's non-redundancy, its inter- and intra-sentence parts, and each
repeated span located in its sentence (character spans), which a ``--no-spans`` run leaves out.

>>> RedundancyScores(0.9, 0.1, 0.0, "paper", 4).inter_repeats is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

from vst_core.formulas.variants import RecordedNRVariant

#: A span of a sentence's characters, ``(start, end)``.
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class InterRepeat:
    """Words sentence ``sentence`` shares with the earlier sentence ``earlier`` (character spans)."""

    sentence: int
    earlier: int
    jaccard: float
    words: tuple[str, ...]
    spans: tuple[Span, ...]
    earlier_spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class IntraRepeat:
    """An n-gram window of a sentence overlapping the previous window (character spans)."""

    sentence: int
    jaccard: float
    words: tuple[str, ...]
    window: Span
    previous: Span
    spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class RedundancyScores:
    """RoViST-NR = 1 − mean(inter, intra); repeats are None when a ``--no-spans`` run left them out."""

    score: float | None
    inter: float | None
    intra: float | None
    variant: RecordedNRVariant
    n: int
    notes: tuple[str, ...] = ()
    inter_repeats: tuple[InterRepeat, ...] | None = None
    intra_repeats: tuple[IntraRepeat, ...] | None = None
