"""Agreement between raters: Krippendorff's α (nominal, ordinal, interval) with a bootstrap interval
over items, Fleiss' κ, and the share of rater pairs that agree.

Krippendorff's α (Krippendorff 2004, *Content Analysis*, ch. 11; the computation of "Computing
Krippendorff's Alpha-Reliability", 2011): from the coincidence matrix ``o[c, k] = Σ_u (pairs of
values c, k in unit u) / (m_u - 1)`` over the units rated at least twice,
``α = 1 - (n - 1) Σ o[c,k] δ²(c,k) / Σ n_c n_k δ²(c,k)``, with ``n_c`` the margins and ``n`` their
sum; ``δ²`` is 0/1 (nominal), ``(c - k)²`` (interval) or, ordinal,
``(Σ_{g=c..k} n_g - (n_c + n_k) / 2)²`` over the values observed, in order.

>>> round(krippendorff_alpha([[1, 2, 3, 3], [1, 2, 3, 4]], level="interval"), 4)
0.8889
>>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 4)
0.3333
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["Level", "agreeing_pairs", "alpha_interval", "fleiss_kappa", "krippendorff_alpha"]

Level = Literal["nominal", "ordinal", "interval"]


def _table(table: npt.ArrayLike) -> npt.NDArray[np.float64]:
    data = np.asarray(table, dtype=float)
    if data.ndim != 2:
        raise ValueError("a reliability table is raters x items (two dimensions)")
    return data


def _coincidences(data: npt.NDArray[np.float64], values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The coincidence matrix of a raters x items table over ``values``."""
    index = {v: i for i, v in enumerate(values.tolist())}
    counts = np.zeros((data.shape[1], len(values)))  # items x values
    for item in range(data.shape[1]):
        for v in data[:, item]:
            if not np.isnan(v):
                counts[item, index[float(v)]] += 1
    m = counts.sum(axis=1)
    paired = m >= 2
    counts, m = counts[paired], m[paired]
    # o[c,k] = Σ_u n_uc (n_uk - [c = k]) / (m_u - 1)
    weighted = counts / (m - 1)[:, None]
    o = weighted.T @ counts
    o -= np.diag(weighted.sum(axis=0))
    return o


def _distances(values: npt.NDArray[np.float64], margins: npt.NDArray[np.float64], level: Level) -> npt.NDArray[np.float64]:
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return np.subtract.outer(values, values) ** 2
    if level == "ordinal":
        cumulative = np.cumsum(margins)
        lo = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
        hi = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
        between = cumulative[hi] - np.where(lo > 0, cumulative[np.maximum(lo - 1, 0)], 0.0)
        return (between - (margins[lo] + margins[hi]) / 2) ** 2
    raise ValueError(f"unknown level {level!r}; choose nominal, ordinal or interval")


def krippendorff_alpha(table: npt.ArrayLike, level: Level = "ordinal") -> float:
    """Krippendorff's α of a raters x items table (NaN: not rated), over the items rated at least
    twice; NaN when undefined (no such item, or a single value: no expected disagreement)."""
    data = _table(table)
    values = np.unique(data[~np.isnan(data)])
    if len(values) == 0:
        return float("nan")
    o = _coincidences(data, values)
    margins = o.sum(axis=1)
    n = margins.sum()
    if n <= 1 or len(values) < 2:
        return float("nan")
    delta = _distances(values, margins, level)
    expected = float((np.outer(margins, margins) * delta).sum())
    if expected == 0:
        return float("nan")
    observed = float((o * delta).sum())
    return float(1.0 - (n - 1) * observed / expected)


def alpha_interval(
    table: npt.ArrayLike, level: Level = "ordinal", *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """A percentile bootstrap interval of :func:`krippendorff_alpha` resampling the items (the
    table's columns) with replacement, ``n_boot`` times; (NaN, NaN) when α is undefined in most
    draws or ``n_boot`` is 0."""
    data = _table(table)
    if n_boot <= 0 or not 0 < confidence < 1:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    items = data.shape[1]
    draws = np.array([krippendorff_alpha(data[:, rng.integers(0, items, items)], level) for _ in range(n_boot)])
    finite = draws[np.isfinite(draws)]
    if len(finite) < n_boot / 2:
        return (float("nan"), float("nan"))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return (float(low), float(high))


def fleiss_kappa(counts: npt.ArrayLike) -> float:
    """Fleiss' κ of an items x categories table of how many raters chose each category.

    ``P_i = (Σ_j n_ij² - n_i) / (n_i (n_i - 1))``, ``P̄`` their mean, ``p_j = Σ_i n_ij / Σ_i n_i``,
    ``P_e = Σ_j p_j²``, ``κ = (P̄ - P_e) / (1 - P_e)``; items rated by fewer than two raters are
    left out, and an item may have its own number of raters (Fleiss' form when all have the same).
    NaN when undefined (no item left, or one category only)."""
    data = np.asarray(counts, dtype=float)
    if data.ndim != 2:
        raise ValueError("counts are items x categories (two dimensions)")
    n = data.sum(axis=1)
    data, n = data[n >= 2], n[n >= 2]
    if len(data) == 0:
        return float("nan")
    agreement = ((data**2).sum(axis=1) - n) / (n * (n - 1))
    share = data.sum(axis=0) / n.sum()
    chance = float((share**2).sum())
    if chance >= 1:
        return float("nan")
    return float((agreement.mean() - chance) / (1 - chance))


def agreeing_pairs(choices: Sequence[Sequence[object]]) -> tuple[float, int]:
    """The share of rater pairs (within each item) that gave the same answer, and the number of
    pairs; NaN with no pair.

    >>> agreeing_pairs([["a", "a", "b"], ["tie", "tie"]])
    (0.5, 4)
    """
    agree = total = 0
    for item in choices:
        values = list(item)
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                total += 1
                agree += values[i] == values[j]
    return (agree / total if total else float("nan"), total)
