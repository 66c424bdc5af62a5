"""Metric against metric, against people: is one metric's agreement with human ratings
significantly higher than another's on the same stories?

For two metrics a, b and a human aspect h over the N stories with all three values (each metric
oriented so that higher = better, :func:`~vst_core.analysis.meta_eval.stats._oriented`):

* **Williams' test** for two dependent correlations sharing h (Williams 1959, as the WMT metrics
  tasks use it), r12 = r(a, h), r13 = r(b, h), r23 = r(a, b)::

      |R| = 1 − r12² − r13² − r23² + 2·r12·r13·r23
      t   = (r12 − r13)·√((N−1)(1+r23)) / √(2·(N−1)/(N−3)·|R| + (r12+r13)²/4·(1−r23)³),  df = N − 3

  (defined for Pearson r; applied to Spearman ρ it is the same test on ranks).
* **PERM-BOTH** (Deutsch, Dror and Roth 2021): per story, the two metrics' standardised scores are
  swapped with probability ½; p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + permutations), two-sided, Δ = r(a,h) − r(b,h),
  with its Monte-Carlo standard error; permutations are doubled (up to 100,000) while α is within 3
  standard errors of p, every test of a run within one permutation budget
  (:class:`~vst_core.analysis.paired_tests.PermutationBudget`: a test it stops says so,
  ``stopped_early``). Williams' p and this p are two-sided; WMT's ``mt-metrics-eval`` reports
  one-sided p (a better than b): half of these for the metric ahead. Standardising (z-scores) makes
  swapping meaningful between metrics on different scales and leaves every correlation unchanged.
* a **paired bootstrap** interval of Δ: stories resampled with replacement, both correlations
  recomputed on the same resample.
* **pairwise accuracy** (Vrank Eq. 1-2, ties wrong) compared the same way: per judged pair the two
  metrics' verdicts (correct or not) are swapped with probability ½.

>>> t, p = williams_test(0.6, 0.4, 0.5, 100)
>>> round(t, 3), round(p, 4)
(2.449, 0.0161)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from vst_core.analysis.meta_eval.stats import _oriented, _rowwise_pearson, margins_of
from vst_core.analysis.paired_tests import PERMUTATION_BUDGET, Draws, PermutationBudget

#: The correlations Williams' test and the permutation are computed for.
VERSUS_METHODS = ("pearson", "spearman")
#: Significance level of the marks in the matrix view.
ALPHA = 0.05
#: Rows of resamples processed at once (bounds memory at about BLOCK × N floats).
_BLOCK = 256
#: The most permutations a PERM-BOTH or accuracy test is extended to while α lies near its p.
VERSUS_PERMUTATION_CAP = 100_000


Row = dict[str, Any]


@dataclass
class _Pending:
    """A row of a metric-vs-metric table whose permutation p is still open (``draws`` None: no p)."""

    row: Row
    draws: Draws | None

    def done(self) -> Row:
        if self.draws is not None:
            p, se, used = self.draws.result()
            self.row.update(
                {"p_permutation": p, "p_permutation_se": se, "permutations": used, "stopped_early": self.draws.stopped}
            )
        return self.row


def _first(hits: Callable[[int], int], asked: int, first: int, budget: PermutationBudget) -> Draws | None:
    """A test's first ``first`` of its ``asked`` permutations, counted in ``budget`` (None: none left for it)."""
    if first <= 0:
        return None
    draws = Draws(hits(first), first, hits, stopped=first < asked)
    budget.spend(first)
    return draws


def _extend_all(pending: Sequence[_Pending], budget: PermutationBudget) -> list[Row]:
    """Every row's test extended near α within ``budget`` (:meth:`PermutationBudget.extend`), then its p."""
    budget.extend([t.draws for t in pending if t.draws is not None], (ALPHA,), VERSUS_PERMUTATION_CAP)
    return [t.done() for t in pending]


@dataclass(frozen=True)
class VersusSettings:
    """How metrics are compared with each other: the coefficient, the number of permutations and
    bootstrap resamples (the same count), the seed, the interval level, and the permutations a run
    may draw over all its tests (:class:`~vst_core.analysis.paired_tests.PermutationBudget`)."""

    method: str = "pearson"
    permutations: int = 1000
    seed: int = 0
    confidence: float = 0.95
    permutation_budget: int | None = PERMUTATION_BUDGET  # draws of every test of a run together (None: no limit)

    def __post_init__(self) -> None:
        if self.method not in VERSUS_METHODS:
            raise ValueError(f"metric-vs-metric method must be one of {', '.join(VERSUS_METHODS)}, not {self.method!r}")
        if self.permutations < 1:
            raise ValueError("permutations must be at least 1")
        if self.permutation_budget is not None and self.permutation_budget < 0:
            raise ValueError("the permutation budget must be 0 or more draws")
        if not 0 < self.confidence < 1:
            raise ValueError("confidence must be between 0 and 1")

    def describe(self) -> str:
        return (
            f"{self.method}; Williams' test (df = N − 3); PERM-BOTH {self.permutations} permutations and paired bootstrap "
            f"{self.permutations}× ({self.confidence:.0%}), seed {self.seed}; p two-sided"
        )


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t for r12 − r13 (two correlations with a shared variable 1) and its two-sided p
    (Student's t, df = n − 3). NaN when n ≤ 3 or the denominator is not positive."""
    if n <= 3:
        return math.nan, math.nan
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    denom = 2 * (n - 1) / (n - 3) * det + ((r12 + r13) ** 2) / 4 * (1 - r23) ** 3
    if not denom > 0 or not 1 + r23 >= 0:
        return math.nan, math.nan
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denom)
    return float(t), float(2 * stats.t.sf(abs(t), n - 3))


def _unit(x: np.ndarray) -> np.ndarray:
    """``x`` divided by its largest magnitude (as it is when that is 0).

    >>> _unit(np.array([2e200, -4e200])).tolist()
    [0.5, -1.0]
    """
    top = float(np.abs(x).max()) if x.size else 0.0
    return x / top if top > 0 else x


def _standardised(x: np.ndarray) -> np.ndarray:
    centred: np.ndarray = x - x.mean()
    sd = float(x.std())
    return centred / sd if sd > 0 else centred


def _rows_corr(method: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The coefficient of every row of ``x`` with the matching row of ``y`` (2-D arrays)."""
    if method == "spearman":
        x, y = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    found: np.ndarray = _rowwise_pearson(x, y)
    return found


def correlation_difference(
    a: np.ndarray,
    b: np.ndarray,
    human: np.ndarray,
    settings: VersusSettings = VersusSettings(),
    *,
    budget: PermutationBudget | None = None,
) -> dict[str, float | int | None]:
    """Δ = r(a, h) − r(b, h) over the items with all three values, Williams' test, the PERM-BOTH p
    and the paired bootstrap interval of Δ (``a`` and ``b`` already oriented higher = better).

    The permutation draws ``rng.random(n) < 0.5`` per permutation, then the bootstrap draws
    ``rng.integers(0, n, n)`` per resample, from ``numpy.random.default_rng(seed)`` in that order.
    ``budget``: the run's (None: no limit but the cap); a table of many tests draws them together
    (:func:`versus_correlations`)."""
    budget = budget or PermutationBudget(None)
    return _extend_all([_correlation_pending(a, b, human, settings, budget.first(settings.permutations, 1), budget)], budget)[0]


def _correlation_pending(
    a: np.ndarray, b: np.ndarray, human: np.ndarray, settings: VersusSettings, first: int, budget: PermutationBudget
) -> _Pending:
    """:func:`correlation_difference` up to its first ``first`` permutations."""
    a, b, h = (np.asarray(v, dtype=float) for v in (a, b, human))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(h)
    # each scaled to at most 1 (a correlation does not see a positive scale): squares of 1e200 do not overflow
    a, b, h = (_unit(v[keep]) for v in (a, b, h))
    n = int(a.size)
    out: Row = {"n": n, "r_a": None, "r_b": None, "r_ab": None, "difference": None}
    out.update({"ci_low": None, "ci_high": None, "williams_t": None, "p_williams": None, "p_permutation": None})
    if n < 4 or min(np.ptp(a), np.ptp(b), np.ptp(h)) == 0:
        return _Pending(out, None)
    method = settings.method
    ra, rb, rab = (float(_rows_corr(method, u[None, :], v[None, :])[0]) for u, v in ((a, h), (b, h), (a, b)))
    diff = ra - rb
    t, p = williams_test(ra, rb, rab, n)
    za, zb = _standardised(a), _standardised(b)
    h_ranked = stats.rankdata(h) if method == "spearman" else h
    rng = np.random.default_rng(settings.seed)

    def draw(count: int) -> int:
        hits = 0
        for start in range(0, count, _BLOCK):
            rows = min(_BLOCK, count - start)
            swap = rng.random((rows, n)) < 0.5
            pa, pb = np.where(swap, zb, za), np.where(swap, za, zb)
            if method == "spearman":  # the human side is the same in every permutation: ranked once
                pa, pb = stats.rankdata(pa, axis=1), stats.rankdata(pb, axis=1)
            hh = np.broadcast_to(h_ranked, (rows, n))
            d = _rowwise_pearson(pa, hh) - _rowwise_pearson(pb, hh)
            hits += int(np.sum(np.abs(d) >= abs(diff) - 1e-12))
        return hits

    draws = _first(draw, settings.permutations, first, budget)
    boot = np.empty(settings.permutations)
    for start in range(0, settings.permutations, _BLOCK):
        rows = min(_BLOCK, settings.permutations - start)
        idx = rng.integers(0, n, size=(rows, n))
        boot[start : start + rows] = _rows_corr(method, a[idx], h[idx]) - _rows_corr(method, b[idx], h[idx])
    boot = boot[~np.isnan(boot)]
    tail = (1 - settings.confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(boot, [tail, 100 - tail])) if boot.size else (None, None)
    out.update(
        {
            "r_a": ra,
            "r_b": rb,
            "r_ab": rab,
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
            "williams_t": None if math.isnan(t) else t,
            "p_williams": None if math.isnan(p) else p,
        }
    )
    if draws is None:  # the run's budget left no permutation for this test
        out.update({"permutations": 0, "stopped_early": True})
    return _Pending(out, draws)


def pair_verdicts(
    pairs: pd.DataFrame, scores: pd.Series, metric: str, margins: Mapping[tuple[str, str], float] | None = None
) -> pd.Series:
    """Per judged pair: 1.0 when the metric (oriented) scores the better story strictly higher (or
    its own margin m(better, worse) > 0), 0.0 when not (ties are wrong), NaN when a story is unscored."""
    if margins is not None:
        m = pd.Series(margins_of(margins, pairs["better"], pairs["worse"]), index=pairs.index, dtype=float)
        return (m > 0).astype(float).where(m.notna())
    s = _oriented(scores.astype(float), metric)
    better, worse = pairs["better"].map(s), pairs["worse"].map(s)
    return (better > worse).astype(float).where(better.notna() & worse.notna())


def accuracy_difference(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    settings: VersusSettings = VersusSettings(),
    *,
    budget: PermutationBudget | None = None,
) -> dict[str, float | int | None]:
    """Δ = accuracy(a) − accuracy(b) on the pairs both metrics judge, its paired permutation p
    (per pair the two verdicts swapped with probability ½, ``rng.random(n) < 0.5`` per permutation)
    and its paired bootstrap interval (pairs resampled, ``rng.integers(0, n, n)``), in that order.
    ``budget``: the run's (None: no limit but the cap)."""
    budget = budget or PermutationBudget(None)
    return _extend_all(
        [_accuracy_pending(correct_a, correct_b, settings, budget.first(settings.permutations, 1), budget)], budget
    )[0]


def _accuracy_pending(
    correct_a: np.ndarray, correct_b: np.ndarray, settings: VersusSettings, first: int, budget: PermutationBudget
) -> _Pending:
    """:func:`accuracy_difference` up to its first ``first`` permutations."""
    ca, cb = np.asarray(correct_a, dtype=float), np.asarray(correct_b, dtype=float)
    keep = ~(np.isnan(ca) | np.isnan(cb))
    ca, cb = ca[keep], cb[keep]
    n = int(ca.size)
    out: Row = {"n": n, "accuracy_a": None, "accuracy_b": None, "difference": None}
    out.update({"ci_low": None, "ci_high": None, "p_permutation": None})
    if n == 0:
        return _Pending(out, None)
    d = ca - cb
    diff = float(d.mean())
    rng = np.random.default_rng(settings.seed)

    def draw(count: int) -> int:
        hits = 0
        for start in range(0, count, _BLOCK):
            rows = min(_BLOCK, count - start)
            sign = np.where(rng.random((rows, n)) < 0.5, -1.0, 1.0)
            hits += int(np.sum(np.abs((sign * d).mean(axis=1)) >= abs(diff) - 1e-12))
        return hits

    draws = _first(draw, settings.permutations, first, budget)
    boot = np.empty(settings.permutations)
    for start in range(0, settings.permutations, _BLOCK):
        rows = min(_BLOCK, settings.permutations - start)
        boot[start : start + rows] = d[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    tail = (1 - settings.confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(boot, [tail, 100 - tail]))
    out.update(
        {"accuracy_a": float(ca.mean()), "accuracy_b": float(cb.mean()), "difference": diff, "ci_low": low, "ci_high": high}
    )
    if draws is None:  # the run's budget left no permutation for this test
        out.update({"permutations": 0, "stopped_early": True})
    return _Pending(out, draws)


CORRELATION_COLUMNS = [
    "aspect", "method", "metric_a", "metric_b", "n", "r_a", "r_b", "r_ab", "difference",
    "ci_low", "ci_high", "williams_t", "p_williams", "p_permutation", "p_permutation_se", "permutations", "stopped_early",
]  # fmt: skip
ACCURACY_COLUMNS = [
    "metric_a", "metric_b", "n", "accuracy_a", "accuracy_b", "difference", "ci_low", "ci_high", "p_permutation",
    "p_permutation_se", "permutations", "stopped_early",
]  # fmt: skip


def versus_correlations(
    data: pd.DataFrame,
    metrics: Sequence[str],
    aspects: Sequence[str],
    settings: VersusSettings = VersusSettings(),
    *,
    budget: PermutationBudget | None = None,
) -> pd.DataFrame:
    """Every two metrics (a before b in ``metrics``' order) × aspect: :func:`correlation_difference`
    of their oriented scores against the aspect, every test within one ``budget`` (by default of
    ``settings.permutation_budget`` draws; pass one to share it with :func:`versus_accuracy`)."""
    budget = budget or PermutationBudget(settings.permutation_budget)
    present = [m for m in metrics if m in data]
    shown = [aspect for aspect in aspects if aspect in data]
    first = budget.first(settings.permutations, len(shown) * len(present) * (len(present) - 1) // 2)
    pending = []
    for aspect in shown:
        h = data[aspect].to_numpy(dtype=float)
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                x = _oriented(data[a].astype(float), a).to_numpy()
                y = _oriented(data[b].astype(float), b).to_numpy()
                found = _correlation_pending(x, y, h, settings, first, budget)
                head: Row = {"method": settings.method, "permutations": settings.permutations, "stopped_early": False}
                found.row = {"aspect": aspect, "metric_a": a, "metric_b": b, **head, **found.row}
                pending.append(found)
    return pd.DataFrame(_extend_all(pending, budget), columns=CORRELATION_COLUMNS)


def versus_accuracy(
    pairs: pd.DataFrame,
    scores: pd.DataFrame,
    metrics: Sequence[str],
    settings: VersusSettings = VersusSettings(),
    margins: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
    *,
    budget: PermutationBudget | None = None,
) -> pd.DataFrame:
    """Every two metrics: :func:`accuracy_difference` of their verdicts on the judged ``pairs``
    (keys into ``scores``' index); a metric with ``margins`` is judged by them. Every test within
    one ``budget`` (by default of ``settings.permutation_budget`` draws)."""
    present = [m for m in metrics if m in scores]
    if pairs.empty or len(present) < 2:
        return pd.DataFrame(columns=ACCURACY_COLUMNS)
    budget = budget or PermutationBudget(settings.permutation_budget)
    first = budget.first(settings.permutations, len(present) * (len(present) - 1) // 2)
    verdicts = {m: pair_verdicts(pairs, scores[m], m, (margins or {}).get(m)).to_numpy() for m in present}
    pending = []
    for i, a in enumerate(present):
        for b in present[i + 1 :]:
            found = _accuracy_pending(verdicts[a], verdicts[b], settings, first, budget)
            found.row = {"metric_a": a, "metric_b": b, "permutations": settings.permutations, "stopped_early": False, **found.row}
            pending.append(found)
    return pd.DataFrame(_extend_all(pending, budget), columns=ACCURACY_COLUMNS)


def versus_matrix(
    table: pd.DataFrame, metrics: Sequence[str], p_column: str = "p_permutation", alpha: float = ALPHA
) -> pd.DataFrame:
    """The square view of one aspect's (or the accuracy's) table: cell (row a, column b) is
    Δ = score(a) − score(b) as text, marked ``*`` when ``p_column`` < ``alpha``; the diagonal and
    undefined cells are empty. Antisymmetric: (b, a) shows −Δ; a Δ that rounds to zero is ``0.000``
    (:func:`signed`)."""
    names = [m for m in metrics if m in set(table["metric_a"]) | set(table["metric_b"])]
    out = pd.DataFrame("", index=pd.Index(names, name="row − column"), columns=names)
    for row in table.itertuples(index=False):
        diff, p = row.difference, getattr(row, p_column)
        if diff is None or pd.isna(diff):
            continue
        mark = "*" if p is not None and not pd.isna(p) and p < alpha else ""
        out.at[row.metric_a, row.metric_b] = signed(diff) + mark
        out.at[row.metric_b, row.metric_a] = signed(-diff) + mark
    return out


def signed(value: float, digits: int = 3) -> str:
    """A difference with its sign at ``digits`` decimals; one that rounds to zero is ``0.000``, with
    no sign (two metrics that agree equally are neither +0.000 nor −0.000 apart).

    >>> signed(0.2), signed(-0.2), signed(0.0), signed(-0.0), signed(-0.0004)
    ('+0.200', '-0.200', '0.000', '0.000', '0.000')
    """
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


__all__ = [
    "ACCURACY_COLUMNS",
    "ALPHA",
    "CORRELATION_COLUMNS",
    "VERSUS_METHODS",
    "VersusSettings",
    "accuracy_difference",
    "correlation_difference",
    "pair_verdicts",
    "signed",
    "versus_accuracy",
    "versus_correlations",
    "versus_matrix",
    "williams_test",
]
