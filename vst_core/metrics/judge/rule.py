"""A rubric judge's numbers (G-Eval's rule), its pairwise verdicts and its biases: pure math.

G-Eval (Liu et al., 2023, §2.3) scores a rubric question by the probability-weighted mean of the
rating tokens instead of the one rating a sampled answer would give:

    p(k) = exp(ℓ_k) / Σ_j exp(ℓ_j),   k, j ∈ {1..5}         (the five rating tokens, renormalised)
    score = Σ_k k · p(k)                                  in [1, 5]

where ℓ_k is the model's next-token log-probability (or logit: the renormalisation cancels the
full-vocabulary normaliser) of the token ``"k"`` right after the rubric prompt. Nothing is sampled
and nothing is parsed, so a score is deterministic given the weights and the prompt. ``mass`` =
Σ_k exp(ℓ_k) is the share of the full next-token distribution the five tokens had (when ℓ are
log-probabilities): a low mass means the model wanted to say something else.

Several paraphrases of one rubric question are averaged (scores and distributions alike, so the
mean of the averaged distribution is the averaged score); their spread is the judge's
self-consistency on that story.

Pairwise mode asks which of two stories is better in both orders. With P₁(a, b) the renormalised
probability of answering "1" (the story shown first) when ``a`` is shown first:

    preference(a over b) = (P₁(a, b) + 1 − P₁(b, a)) / 2        (order-averaged, antisymmetric)
    first-position shift = (P₁(a, b) + P₁(b, a)) / 2 − 1/2       (0 for an order-blind judge)

and a pair's verdict "follows the position" when both orders pick the same position (the first
twice or the second twice): the story changed, the answer did not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The rating scale: tokens "1".."5".
RATINGS: tuple[int, ...] = (1, 2, 3, 4, 5)


@dataclass(frozen=True, slots=True)
class Rating:
    """One rubric answer: ``distribution`` p(1..5) renormalised over the rating tokens, ``score`` =
    Σ k·p(k), ``mass`` the five tokens' share of the next-token distribution before renormalising."""

    distribution: tuple[float, ...]
    score: float
    mass: float


def softmax(values: Sequence[float]) -> tuple[float, ...]:
    """exp(v_i − max v) / Σ_j exp(v_j − max v); ``-inf`` entries get 0.

    >>> softmax([0.0, 0.0])
    (0.5, 0.5)
    """
    if not values:
        raise ValueError("softmax of no values")
    top = max(values)
    if not math.isfinite(top):
        raise ValueError(f"no finite value among {list(values)!r}")
    weights = [math.exp(v - top) if v != -math.inf else 0.0 for v in values]
    total = sum(weights)
    return tuple(w / total for w in weights)


def rating(logprobs: Sequence[float], scale: Sequence[int] = RATINGS) -> Rating:
    """G-Eval's probability-weighted rating from the next-token log-probabilities of ``scale``'s tokens.

    >>> r = rating([math.log(0.1), math.log(0.2), math.log(0.3), math.log(0.2), math.log(0.1)])
    >>> [round(p, 3) for p in r.distribution], round(r.score, 3), round(r.mass, 3)
    ([0.111, 0.222, 0.333, 0.222, 0.111], 3.0, 0.9)
    """
    if len(logprobs) != len(scale):
        raise ValueError(f"expected {len(scale)} log-probabilities, got {len(logprobs)}")
    if any(math.isnan(v) or v == math.inf for v in logprobs):
        raise ValueError(f"log-probabilities must be finite or -inf, got {list(logprobs)!r}")
    distribution = softmax(logprobs)
    score = sum(k * p for k, p in zip(scale, distribution, strict=True))
    mass = sum(math.exp(v) for v in logprobs if v != -math.inf)
    return Rating(distribution, score, min(mass, 1.0))


@dataclass(frozen=True, slots=True)
class AspectRating:
    """One aspect over its paraphrases: the mean ``score`` and ``distribution``, each paraphrase's
    score, their population standard deviation ``spread`` and the mean ``mass``."""

    score: float
    distribution: tuple[float, ...]
    paraphrases: tuple[float, ...]
    spread: float
    mass: float


def combine(ratings: Sequence[Rating]) -> AspectRating:
    """The mean of paraphrase ratings: Σ_k k · mean p(k) equals the mean score by linearity.

    >>> a = combine([rating([0.0, -9e9, -9e9, -9e9, -9e9]), rating([-9e9, -9e9, 0.0, -9e9, -9e9])])
    >>> a.score, a.paraphrases, a.spread, a.distribution
    (2.0, (1.0, 3.0), 1.0, (0.5, 0.0, 0.5, 0.0, 0.0))
    """
    if not ratings:
        raise ValueError("no rating to combine")
    n = len(ratings)
    scores = tuple(r.score for r in ratings)
    mean = sum(scores) / n
    width = len(ratings[0].distribution)
    distribution = tuple(sum(r.distribution[k] for r in ratings) / n for k in range(width))
    spread = math.sqrt(sum((s - mean) ** 2 for s in scores) / n)
    return AspectRating(mean, distribution, scores, spread, sum(r.mass for r in ratings) / n)


def first_probability(logprobs: Sequence[float]) -> float:
    """P("1") renormalised over the two answer tokens ("1": the story shown first, "2": the second).

    >>> round(first_probability([math.log(0.3), math.log(0.1)]), 3)
    0.75
    """
    if len(logprobs) != 2:
        raise ValueError(f"expected 2 log-probabilities (answers 1 and 2), got {len(logprobs)}")
    return softmax(logprobs)[0]


@dataclass(frozen=True, slots=True)
class PairVerdict:
    """A pair asked in both orders: ``forward`` = P₁(a, b), ``backward`` = P₁(b, a)."""

    forward: float
    backward: float

    @property
    def preference(self) -> float:
        """(P₁(a, b) + 1 − P₁(b, a)) / 2: the order-averaged probability that ``a`` is better."""
        return (self.forward + 1.0 - self.backward) / 2.0

    @property
    def shift(self) -> float:
        """(P₁(a, b) + P₁(b, a)) / 2 − 1/2: how far the first position pulls the answer."""
        return (self.forward + self.backward) / 2.0 - 0.5

    @property
    def follows_position(self) -> bool:
        """Both orders pick the same position (first twice or second twice): the verdict did not
        move with the stories."""
        return (self.forward > 0.5) == (self.backward > 0.5)


@dataclass(frozen=True, slots=True)
class PositionBias:
    """Over ``pairs`` pairs: the share whose verdict follows the position, the share that picks the
    first position in both orders, the mean first-position shift and the mean |shift|."""

    pairs: int
    follows_position: float
    first_both: float
    mean_shift: float
    mean_abs_shift: float


def position_bias(verdicts: Sequence[PairVerdict]) -> PositionBias:
    """How much the answer follows the position rather than the story (module doc).

    >>> b = position_bias([PairVerdict(0.9, 0.8), PairVerdict(0.7, 0.2)])
    >>> b.pairs, b.follows_position, b.first_both, round(b.mean_shift, 3), round(b.mean_abs_shift, 3)
    (2, 0.5, 0.5, 0.15, 0.2)
    """
    n = len(verdicts)
    if n == 0:
        return PositionBias(0, math.nan, math.nan, math.nan, math.nan)
    follows = sum(v.follows_position for v in verdicts) / n
    first = sum(v.forward > 0.5 and v.backward > 0.5 for v in verdicts) / n
    shifts = [v.shift for v in verdicts]
    return PositionBias(n, follows, first, sum(shifts) / n, sum(abs(s) for s in shifts) / n)


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n, ties sharing their mean rank (as scipy's ``rankdata``)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ: Pearson's r of the ranks (NaN when either side is constant or n < 2).

    >>> spearman([1.0, 2.0, 3.0], [2.0, 4.0, 9.0])
    1.0
    """
    if len(x) != len(y):
        raise ValueError("spearman of sequences of different lengths")
    n = len(x)
    if n < 2:
        return math.nan
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / n, sum(ry) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return math.nan
    return sxy / math.sqrt(sxx * syy)


def paraphrase_agreement(columns: Sequence[Sequence[float]]) -> float:
    """Self-consistency across paraphrases: the mean Spearman ρ over every two paraphrases' score
    columns (one value per story in each); NaN pairs (a constant column) are left out.

    >>> paraphrase_agreement([[1.0, 2.0, 3.0], [1.5, 2.5, 2.0], [3.0, 2.0, 1.0]])
    -0.3333333333333333
    """
    values = [spearman(columns[i], columns[j]) for i in range(len(columns)) for j in range(i + 1, len(columns))]
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan
