"""GROOVIST's record: a story's score, T and P, and each noun phrase with the region it matched best.

>>> GroundingScores(0.5, 0.55, 0.6, None, (), None, ()).theta
0.6
"""

from __future__ import annotations

from dataclasses import dataclass

#: A span of a sentence's characters, ``(start, end)``.
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PhraseMatch:
    """One noun phrase (or noun) and the region it matched best."""

    text: str
    surface: str
    sentence: int
    span: Span
    best_cosine: float
    score: float
    image: int
    box: tuple[float, ...]
    box_label: str | None
    weight: float
    contribution: float
    positive: bool


@dataclass(frozen=True, slots=True)
class GroundingScores:
    """GROOVIST: ``score`` = tanh(``unbounded``); T and P with it (GROOVIST Eq. 3, 4)."""

    score: float | None
    unbounded: float | None
    theta: float | None  # None for a score imported without its evidence
    temporal_misalignment: float | None
    misalignment_per_sentence: tuple[float | None, ...]
    np_proportion: float | None
    phrases: tuple[PhraseMatch, ...]
    notes: tuple[str, ...] = ()
