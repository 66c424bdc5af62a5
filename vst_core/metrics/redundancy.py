"""RoViST-NR: non-redundancy of a story, with the spans that caused the repetition.

Paper definition (Wang et al. 2022, §3.3, Eq. 7), ``variant="paper"``:

    JS(A, B)  = |A ∩ B| / |A ∪ B|                      over sets of unique lower-cased words
    inter     = mean over sentence pairs j < i of JS(words_i, words_j)
    intra     = mean over consecutive non-overlapping n-grams (g_k, g_k+1) of a sentence of JS
    NR        = 1 - mean(inter, intra)

Punctuation tokens are excluded. A part with no pairs (one sentence: no inter part;
every sentence shorter than n+1 words: no intra part) is ``None`` and NR is computed from
the part that exists; with neither, NR is ``None``. ``notes`` says which.

Public-code behaviour, ``variant="reference"`` (for parity with published numbers):
case-sensitive tokens, only the last token of each sentence dropped (other punctuation
kept), intersection = number of matching token *pairs* (so JS can exceed 1 and NR go
below 0), and intra = 0 when no sentence has two n-grams. A one-sentence story gives NaN
in that code; here it is ``None`` with a note. JS of two empty token lists is 0 in both
variants (the public code divides by zero there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vst_core.text import is_punctuation

Variant = Literal["paper", "reference"]
VARIANTS: tuple[str, ...] = ("paper", "reference")


@dataclass(frozen=True, slots=True)
class InterOverlap:
    """Sentence ``sentence`` against the earlier sentence ``earlier``.

    ``tokens`` are the token indices of ``sentence`` that repeat a word of ``earlier``;
    ``earlier_tokens`` the indices in ``earlier`` they repeat.
    """

    sentence: int
    earlier: int
    jaccard: float
    tokens: tuple[int, ...]
    earlier_tokens: tuple[int, ...]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IntraOverlap:
    """Two consecutive n-gram windows of one sentence, as token index ranges ``[start, end)``.

    ``tokens`` are the indices inside ``window`` that repeat a word of ``previous``.
    """

    sentence: int
    previous: tuple[int, int]
    window: tuple[int, int]
    jaccard: float
    tokens: tuple[int, ...]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NonRedundancy:
    """Story non-redundancy and its evidence. ``None`` means undefined; ``notes`` say why."""

    score: float | None
    inter: float | None
    intra: float | None
    variant: str
    n: int
    inter_pairs: tuple[InterOverlap, ...]
    intra_pairs: tuple[IntraOverlap, ...]
    notes: tuple[str, ...]

    @property
    def inter_repeats(self) -> tuple[InterOverlap, ...]:
        """Sentence pairs that share at least one word."""
        return tuple(p for p in self.inter_pairs if p.tokens)

    @property
    def intra_repeats(self) -> tuple[IntraOverlap, ...]:
        """Window pairs that share at least one word."""
        return tuple(p for p in self.intra_pairs if p.tokens)


def jaccard(a: Sequence[str], b: Sequence[str], *, count_pairs: bool = False) -> float:
    """``|set(a) ∩ set(b)| / |set(a) ∪ set(b)|``; with ``count_pairs`` the numerator counts
    every equal pair ``(x in a, y in b)`` instead, as the public RoViST code does. 0 for two
    empty inputs."""
    union = set(a) | set(b)
    if not union:
        return 0.0
    if count_pairs:
        counts_b: dict[str, int] = {}
        for y in b:
            counts_b[y] = counts_b.get(y, 0) + 1
        return sum(counts_b.get(x, 0) for x in a) / len(union)
    return len(set(a) & set(b)) / len(union)


def _units(tokens: Sequence[str], variant: str) -> list[tuple[int, str]]:
    """(token index, comparable form) of the tokens a variant compares."""
    if variant == "paper":
        return [(i, t.lower()) for i, t in enumerate(tokens) if not is_punctuation(t)]
    return list(enumerate(tokens[:-1]))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def non_redundancy(sentences: list[list[str]], n: int = 4, variant: str = "paper") -> NonRedundancy:
    """Non-redundancy of a tokenised story (one token list per sentence); see module doc."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    count_pairs = variant == "reference"
    units = [_units(toks, variant) for toks in sentences]
    notes: list[str] = []

    inter_pairs: list[InterOverlap] = []
    for i in range(1, len(units)):
        words_i = [w for _, w in units[i]]
        for j in range(i):
            words_j = [w for _, w in units[j]]
            shared = set(words_i) & set(words_j)
            inter_pairs.append(
                InterOverlap(
                    sentence=i,
                    earlier=j,
                    jaccard=jaccard(words_i, words_j, count_pairs=count_pairs),
                    tokens=tuple(k for k, w in units[i] if w in shared),
                    earlier_tokens=tuple(k for k, w in units[j] if w in shared),
                    words=tuple(sorted(shared)),
                )
            )

    intra_pairs: list[IntraOverlap] = []
    for s, sent_units in enumerate(units):
        windows = [sent_units[k : k + n] for k in range(0, len(sent_units), n)]
        for prev, nxt in zip(windows, windows[1:]):
            prev_words = [w for _, w in prev]
            next_words = [w for _, w in nxt]
            shared = set(prev_words) & set(next_words)
            intra_pairs.append(
                IntraOverlap(
                    sentence=s,
                    previous=(prev[0][0], prev[-1][0] + 1),
                    window=(nxt[0][0], nxt[-1][0] + 1),
                    jaccard=jaccard(prev_words, next_words, count_pairs=count_pairs),
                    tokens=tuple(k for k, w in nxt if w in shared),
                    words=tuple(sorted(shared)),
                )
            )

    inter = _mean([p.jaccard for p in inter_pairs])
    intra = _mean([p.jaccard for p in intra_pairs])
    if not sentences:
        notes.append("empty story: non-redundancy is undefined")
    elif inter is None:
        notes.append("one sentence: there is no inter-sentence part")
    if intra is None and sentences:
        if variant == "reference":
            intra = 0.0
            notes.append(f"no sentence has two {n}-gram windows: intra set to 0 as the public code does")
        else:
            notes.append(f"no sentence has two {n}-gram windows: there is no intra-sentence part")

    if variant == "reference":
        score = None if inter is None or intra is None else 1.0 - (inter + intra) / 2.0
        if inter is None and sentences:
            notes.append("reference variant needs an inter part (the public code gives NaN): score undefined")
    else:
        parts = [x for x in (inter, intra) if x is not None]
        score = 1.0 - sum(parts) / len(parts) if parts else None
        if len(parts) == 1:
            notes.append("score computed from the only part that exists")
    return NonRedundancy(
        score=score,
        inter=inter,
        intra=intra,
        variant=variant,
        n=n,
        inter_pairs=tuple(inter_pairs),
        intra_pairs=tuple(intra_pairs),
        notes=tuple(notes),
    )
