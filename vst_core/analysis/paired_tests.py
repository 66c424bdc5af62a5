"""Paired tests between two systems over the image sequences both wrote for (as SacreBLEU's
``--paired-bs`` / ``--paired-ar``): d = a − b per sequence, its mean with a paired-bootstrap
interval, a paired approximate-randomization p-value (two-sided: ``|mean(s·d)| ≥ |mean(d)|`` for
random signs ``s``; p = (1 + hits) / (1 + permutations)), Holm's adjustment over a family of tests,
and the effect size d_z = mean(d) / sd(d) (ddof 1). Each test's random stream is seeded by
``seed``, the metric and the two systems' names (in either order).

A p from random flips is an estimate: its Monte-Carlo standard error is √(p(1 − p) / permutations)
(``p_se``). When the 2^N sign flips of N sequences are no more than the permutations a test may
draw, all of them are enumerated instead: p = hits / 2^N is exact (the data's own flip, and its
mirror, among the hits), ``p_se`` is 0 and ``permutations`` is 2^N. While α lies within :data:`SE_MARGIN` standard errors of p, the test doubles its
permutations (continuing the same random stream) up to :data:`PERMUTATION_CAP`, so a verdict at α
does not depend on the seed. The rule is the same for every pair whichever systems are compared (a
pair's p does not move when a system joins, and the leaderboard and the two-system page agree); a
Holm-adjusted p near α carries about k times p's standard error in a family of k
(:func:`holm_thresholds` gives the thresholds a caller may refine against instead).

A run of many tests draws within one :class:`PermutationBudget` (:data:`PERMUTATION_BUDGET` draws
unless told otherwise), every test's first permutations and extensions together: the extensions
go in rounds, every test still near a threshold doubling at once, so no test is favoured by its
place in the run. When a round does not fit, what is left is shared equally and those tests stop
early: each says so (``stopped_early``), keeps the p and Monte-Carlo standard error of the
permutations it drew, and the run reports its budget, what it drew and that it was reached. Below
the budget every p is the one drawn without it.

How these p relate to other tools: the test is two-sided (a difference in either direction), as
SacreBLEU's paired approximate randomization; WMT's ``mt-metrics-eval`` reports one-sided p for
"a is better than b", half of a two-sided p when a is ahead. A flip whose statistic equals the
observed one counts as a hit (the data is one of its own flips), where SacreBLEU counts only
strictly greater ones and so can call a system different from itself.

>>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.dhm import bootstrap
from vst_core.analysis.intervals import SMALL_N_MARK, has_interval
from vst_core.records import direction_of

#: Sign-flip permutations of the paired approximate-randomization test, unless told otherwise.
PERMUTATIONS = 10_000
#: Bootstrap resamples of every interval, unless told otherwise.
RESAMPLES = 1000
#: Random signs held at once by the permutation test (permutations × sequences per block).
PERMUTATION_BLOCK = 1 << 22
#: The most permutations a test is extended to while a threshold lies near its p.
PERMUTATION_CAP = 1_000_000
#: Monte-Carlo standard errors between p and every decision threshold before a test stops adding permutations.
SE_MARGIN = 3.0
#: Permutations one run may draw over all its tests together, unless told otherwise: ten tests
#: extended to :data:`PERMUTATION_CAP` (a million draws over 300 sequences take about 2.5 s on one core).
PERMUTATION_BUDGET = 10_000_000
#: Significance level of decisions (clusters, the ``*`` of significant differences).
ALPHA = 0.05
#: Which tests one Holm adjustment covers: those of one metric (every pair of systems), or all of a result.
FAMILIES = ("metric", "all")


@dataclass(frozen=True, slots=True)
class PairTest:
    """System a against b on one metric over the ``n`` sequences both (and every compared system)
    have: d = a − b. ``better``: the system the mean difference favours by the metric's direction
    (None: no difference). ``p_holm``: Holm-adjusted over the tests it was computed with."""

    metric: str
    system_a: str
    system_b: str
    n: int
    mean_difference: float
    ci_low: float | None
    ci_high: float | None
    p: float | None
    p_holm: float | None
    effect_size: float | None
    better: str | None
    permutations: int
    p_se: float | None = None  # the Monte-Carlo standard error of p: √(p(1 − p) / permutations)
    stopped_early: bool = False  # the run's permutation budget ended its draws while a threshold was within SE_MARGIN SE of p


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values given (None stays None and is not counted):
    the i-th smallest of m becomes max over j ≤ i of min(1, (m − j + 1) · p_(j)).

    >>> holm([0.01, 0.04, 0.03, None])
    [0.03, 0.06, 0.06, None]
    """
    known = [(v, i) for i, v in enumerate(p) if v is not None]
    out: list[float | None] = [None] * len(p)
    m = len(known)
    running = 0.0
    for j, (v, i) in enumerate(sorted(known)):
        running = max(running, min(1.0, (m - j) * v))
        out[i] = running
    return out


def permutation_p(diff: np.ndarray, permutations: int, rng: np.random.Generator) -> float:
    """Two-sided paired approximate randomization: the share of random sign flips ``s`` with
    ``|Σ s·d| ≥ |Σ d|``, counted as (1 + hits) / (1 + permutations). Every flip of a block is one
    row of a ±1 matrix, and the statistics of the block one matrix product with ``d``. When
    2^n ≤ ``permutations`` every flip is counted instead (:func:`exact_flip_p`).

    >>> permutation_p(np.array([0.2, 0.4]), 10_000, np.random.default_rng(0))
    0.5
    """
    if is_enumerable(len(diff), permutations):
        return exact_flip_p(diff)
    return (1 + _flip_hits(diff, permutations, rng)) / (1 + permutations)


def is_enumerable(n: int, permutations: int) -> bool:
    """Whether the 2^n sign flips of n differences are at most ``permutations`` (n ≥ 1)."""
    return 1 <= n < 63 and 1 << n <= permutations


def exact_flip_p(diff: np.ndarray) -> float:
    """The exact two-sided p of the sign-flip test: the share of all 2^n flips ``s`` (the data's
    own among them) with ``|Σ s·d| ≥ |Σ d|``, within the same relative tolerance as the random
    flips.

    >>> exact_flip_p(np.array([0.2, 0.4])), exact_flip_p(np.array([1.0, 1.0, 1.0]))
    (0.5, 0.25)
    """
    n = len(diff)
    return _enumerated_hits(np.asarray(diff, dtype=float)) / (1 << n)


def _enumerated_hits(diff: np.ndarray) -> int:
    """How many of all 2^n sign flips of ``diff`` have ``|Σ s·d| ≥ |Σ d|``: flip k's signs are the
    bits of k, in blocks of :data:`PERMUTATION_BLOCK` signs."""
    n = len(diff)
    total = float(diff.sum())
    observed = abs(total)
    tolerance = 1e-12 * float(np.abs(diff).sum())
    shifts = np.arange(n, dtype=np.int64)
    step = max(1, PERMUTATION_BLOCK // max(n, 1))
    hits = 0
    for start in range(0, 1 << n, step):
        k = np.arange(start, min(start + step, 1 << n), dtype=np.int64)
        bits = ((k[:, None] >> shifts) & 1).astype(np.float64)
        flipped = 2.0 * (bits @ diff) - total
        hits += int((np.abs(flipped) >= observed - tolerance).sum())
    return hits


def p_standard_error(p: float, permutations: int) -> float:
    """The Monte-Carlo standard error of a p estimated from ``permutations`` random draws.

    >>> round(p_standard_error(0.05, 10_000), 5)
    0.00218
    """
    return float(np.sqrt(p * (1 - p) / permutations)) if permutations > 0 else float("nan")


def holm_thresholds(alpha: float, family: int) -> tuple[float, ...]:
    """The raw-p thresholds Holm's procedure can compare a test with in a family of ``family``:
    α / k for k = 1 … family.

    >>> holm_thresholds(0.05, 3)
    (0.05, 0.025, 0.016666666666666666)
    """
    return tuple(alpha / k for k in range(1, max(family, 1) + 1))


@dataclass
class Draws:
    """One permutation test's count: ``hits`` in ``used`` permutations, ``draw(k)`` the hits of k
    more from its own stream; ``stopped``: a budget ended it before its rule was met."""

    hits: int
    used: int
    draw: Callable[[int], int]
    stopped: bool = False
    exact: bool = False  # every flip was enumerated: p = hits / used, with no Monte-Carlo error

    def result(self) -> tuple[float, float, int]:
        """(p, its Monte-Carlo standard error, permutations drawn): p = (1 + hits) / (1 + used),
        or hits / used and 0 for an ``exact`` count."""
        if self.exact:
            return self.hits / self.used, 0.0, self.used
        p = (1 + self.hits) / (1 + self.used)
        return p, p_standard_error(p, self.used), self.used

    def wanted(self, thresholds: Sequence[float], cap: int) -> int:
        """The permutations the rule adds now: as many again while some threshold is within
        :data:`SE_MARGIN` standard errors of p and fewer than ``cap`` were drawn, else 0."""
        p, se, used = self.result()
        if self.exact or used >= cap or not any(abs(p - t) < SE_MARGIN * se for t in thresholds):
            return 0
        return min(used, cap - used)


class PermutationBudget:
    """The permutations one run may draw over all its tests (``limit``; None: no limit), what it
    drew (``drawn``) and how many tests it stopped early (``stopped``). ``progress(total)`` may
    return a bar with ``update(n)`` and ``close()``, advanced per draw; a round of extensions
    raises its ``total`` where it has one (as tqdm's).

    >>> budget = PermutationBudget(1000)
    >>> budget.first(400, 3), budget.summary()["reached"]
    (333, True)
    """

    def __init__(self, limit: int | None = PERMUTATION_BUDGET, progress: Callable[[int], Any] | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("a permutation budget is 0 or more draws")
        self.limit = limit
        self.drawn = 0
        self.stopped = 0
        self.cut = False  # some tests started with fewer permutations than asked
        self._progress = progress
        self._bar: Any = None

    @property
    def left(self) -> int | None:
        """Draws still allowed (None: no limit)."""
        return None if self.limit is None else max(self.limit - self.drawn, 0)

    @property
    def reached(self) -> bool:
        """Whether the budget ended some test's draws."""
        return self.cut or self.stopped > 0

    def first(self, permutations: int, tests: int) -> int:
        """The permutations each of ``tests`` tests starts with: ``permutations``, or an equal share
        of what is left when they do not all fit (each of those tests then stops early)."""
        left = self.left
        share = permutations if left is None or permutations * tests <= left else left // max(tests, 1)
        if share < permutations:
            self.cut = True
        self._expect(share * tests)
        return share

    def spend(self, count: int) -> None:
        """Count ``count`` draws made."""
        self.drawn += count
        if self._bar is not None and count:
            self._bar.update(count)

    def _expect(self, count: int) -> None:
        if self._progress is None or count <= 0:
            return
        if self._bar is None:
            self._bar = self._progress(count)
        elif getattr(self._bar, "total", None) is not None:
            self._bar.total += count
            if hasattr(self._bar, "refresh"):
                self._bar.refresh()

    def extend(self, tests: Sequence[Draws], thresholds: Sequence[float], cap: int) -> None:
        """Extend ``tests`` by their rule (:meth:`Draws.wanted`) in rounds, each test still near a
        threshold doubling at once, within the budget; when a round does not fit, what is left is
        shared equally and the tests still wanting more are ``stopped``."""
        while True:
            asks = [(d, k) for d in tests if not d.stopped and (k := d.wanted(thresholds, cap))]
            if not asks:
                return
            total, left = sum(k for _, k in asks), self.left
            self._expect(total if left is None else min(total, left))
            share = None if left is None or total <= left else left // len(asks)
            for d, k in asks:
                more = k if share is None else min(k, share)
                if more:
                    d.hits += d.draw(more)
                    d.used += more
                    self.spend(more)
            if share is not None:
                for d, _ in asks:
                    d.stopped = d.wanted(thresholds, cap) > 0
                    self.stopped += d.stopped
                return

    def close(self) -> None:
        """Close the progress bar, if one was made."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def summary(self) -> dict[str, Any]:
        """``budget`` (draws; None: no limit), ``drawn``, ``reached`` and ``stopped_tests``, as a
        run's output states them."""
        return {"budget": self.limit, "drawn": self.drawn, "reached": self.reached, "stopped_tests": self.stopped}

    def note(self) -> str | None:
        """One sentence for a run whose budget was reached, else None."""
        if not self.reached:
            return None
        return (
            f"the permutation budget of {self.limit:,} draws was reached ({self.drawn:,} drawn): "
            + (
                f"{self.stopped} test(s) stopped early"
                if self.stopped
                else "the tests started with fewer permutations than asked"
            )
            + " (stopped_early), each p with the Monte-Carlo standard error of the permutations it drew; "
            "raise the budget or lower the permutations to tell them apart from alpha"
        )


def adaptive_permutation_p(
    diff: np.ndarray,
    permutations: int,
    rng: np.random.Generator,
    thresholds: Sequence[float] = (),
    cap: int = PERMUTATION_CAP,
) -> tuple[float, float, int]:
    """(p, its Monte-Carlo standard error, permutations drawn): :func:`permutation_p`, then, while
    some threshold t has |p − t| < :data:`SE_MARGIN` · SE and fewer than ``cap`` permutations were
    drawn, as many more again from the same stream. The first ``permutations`` draws are those of
    :func:`permutation_p`, so a p far from every threshold is unchanged. When 2^n ≤
    ``permutations``, every flip is counted: (the exact p, 0, 2^n)."""
    if is_enumerable(len(diff), permutations):
        return exact_flip_p(diff), 0.0, 1 << len(diff)
    return extended_p(_flip_hits(diff, permutations, rng), permutations, lambda k: _flip_hits(diff, k, rng), thresholds, cap)


def extended_p(
    hits: int, used: int, draw: Callable[[int], int], thresholds: Sequence[float], cap: int
) -> tuple[float, float, int]:
    """(p, its Monte-Carlo standard error, permutations drawn) of any permutation test from its
    ``hits`` in ``used`` permutations: p = (1 + hits) / (1 + used), then, while some threshold is
    within :data:`SE_MARGIN` standard errors of p and fewer than ``cap`` were drawn, as many again
    by ``draw(k)`` (the hits of k more permutations, from the test's own stream). No budget: a run
    of tests extends them together with :meth:`PermutationBudget.extend`."""
    draws = Draws(hits, used, draw)
    PermutationBudget(None).extend([draws], thresholds, cap)
    return draws.result()


def _flip_hits(diff: np.ndarray, permutations: int, rng: np.random.Generator) -> int:
    """How many of ``permutations`` random sign flips of ``diff`` have ``|Σ s·d| ≥ |Σ d|``."""
    n = len(diff)
    observed = abs(float(diff.sum()))
    tolerance = 1e-12 * float(np.abs(diff).sum())  # relative: a flip equal to the data counts as a hit, at any scale
    total = float(diff.sum())
    hits = 0
    step = max(1, PERMUTATION_BLOCK // max(n, 1))
    words = (n + 63) // 64
    for start in range(0, permutations, step):
        rows = min(step, permutations - start)
        # s = 2·b − 1 for fair random bits b (64 per draw), so Σ s·d = 2·(b @ d) − Σ d
        bits = np.unpackbits(rng.integers(0, 2**64, size=(rows, words), dtype=np.uint64, endpoint=False).view(np.uint8), axis=1)
        flipped = 2.0 * (bits[:, :n].astype(np.float64) @ diff) - total
        hits += int((np.abs(flipped) >= observed - tolerance).sum())
    return hits


def _no_more_draws(k: int) -> int:
    raise AssertionError("an exact count draws no more permutations")


def _rng(seed: int, metric: str, a: str, b: str) -> np.random.Generator:
    """The random stream of one test: by the seed, the metric and the two names in sorted order."""
    first, second = sorted((a, b))
    key = zlib.crc32(f"{metric}\x00{first}\x00{second}".encode())
    return np.random.default_rng([seed, key])


def paired_test(
    diff: np.ndarray,
    metric: str,
    a: str,
    b: str,
    *,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    thresholds: Sequence[float] = (ALPHA,),
    budget: PermutationBudget | None = None,
) -> PairTest:
    """The test of a against b on the per-sequence differences ``diff`` (a − b, no NaN); ``p_holm``
    is left as ``p`` (:func:`adjusted` sets it over a family). No p below two sequences.
    ``thresholds``: where p must be told apart (:func:`adaptive_permutation_p`; a Holm family's
    are :func:`holm_thresholds`). ``budget``: the run's, which counts its draws and may stop it
    early (None: no limit but :data:`PERMUTATION_CAP`); a run of many tests draws them together
    with :func:`pending_test` and :meth:`PermutationBudget.extend`."""
    budget = budget or PermutationBudget(None)
    pending = pending_test(
        diff, metric, a, b, resamples=resamples, permutations=permutations, seed=seed, confidence=confidence,
        first=budget.first(permutations, 1), budget=budget,
    )  # fmt: skip
    if pending.draws is not None:
        budget.extend([pending.draws], thresholds, PERMUTATION_CAP)
    return pending.done()


@dataclass(frozen=True)
class PendingTest:
    """A test whose p is still open: the test without it, and its permutations so far (None: no p)."""

    test: PairTest
    draws: Draws | None

    def done(self) -> PairTest:
        """The test with the p of its draws, their count and whether a budget stopped them."""
        if self.draws is None:
            return self.test
        p, se, used = self.draws.result()
        return replace(self.test, p=p, p_holm=p, permutations=used, p_se=se, stopped_early=self.draws.stopped)


def pending_test(
    diff: np.ndarray,
    metric: str,
    a: str,
    b: str,
    *,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    first: int | None = None,
    budget: PermutationBudget | None = None,
) -> PendingTest:
    """:func:`paired_test` up to its first permutations: ``first`` of them (default
    ``permutations``; fewer when the run's budget shares them out, and the test is then stopped
    early), counted in ``budget``; all 2^n flips, an exact p, when 2^n ≤ ``first``. Extend the draws of a run's tests together
    (:meth:`PermutationBudget.extend`), then :meth:`PendingTest.done`."""
    first = permutations if first is None else first
    diff = np.asarray(diff, dtype=float)
    n = len(diff)
    if n and not np.isfinite(diff).all():  # a difference too large for a float (or none at all): nothing is told
        return PendingTest(PairTest(metric, a, b, n, float("nan"), None, None, None, None, None, None, permutations), None)
    # on the differences scaled to at most 1: sums of ±1e308 do not overflow, and 1e-308 is not below a tolerance
    scale = float(np.abs(diff).max()) if n else 0.0
    unit = diff / scale if scale > 0 else diff
    mean = float(unit.mean()) * scale if n else float("nan")
    rng = _rng(seed, metric, a, b)
    (interval,) = bootstrap(unit.reshape(n, 1), resamples, int(rng.integers(2**63)), confidence) if n else [None]
    if interval is not None and scale > 0:
        interval = (interval[0] * scale, interval[1] * scale)
    draws, stopped = None, False
    if n >= 2 and permutations > 0:
        if is_enumerable(n, first):  # every flip counted: the exact p
            draws = Draws(_enumerated_hits(unit), 1 << n, _no_more_draws, exact=True)
            permutations = 1 << n
            if budget is not None:
                budget.spend(1 << n)
        elif first > 0:
            draws = Draws(_flip_hits(unit, first, rng), first, lambda k: _flip_hits(unit, k, rng), stopped=first < permutations)
            if budget is not None:
                budget.spend(first)
        else:  # the run's budget left nothing for this test
            stopped, permutations = True, 0
    sd = float(unit.std(ddof=1)) if n >= 2 else 0.0
    effect = float(unit.mean()) / sd if sd > 0 else None
    direction = direction_of(metric)
    sign = {"higher": 1.0, "lower": -1.0}.get(direction, 0.0)
    better = None if not n or mean * sign == 0 else a if mean * sign > 0 else b
    low, high = interval if interval else (None, None)
    test = PairTest(metric, a, b, n, mean, low, high, None, None, effect, better, permutations, None, stopped)
    return PendingTest(test, draws)


def adjusted(tests: Sequence[PairTest], family: str = "all") -> list[PairTest]:
    """``tests`` with ``p_holm`` adjusted by :func:`holm` over each family: every test given
    (``"all"``) or the tests of one metric (``"metric"``)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown Holm family {family!r}: one of {', '.join(FAMILIES)}")
    groups: dict[str, list[int]] = {}
    for k, t in enumerate(tests):
        groups.setdefault(t.metric if family == "metric" else "", []).append(k)
    out = list(tests)
    for members in groups.values():
        for k, h in zip(members, holm([tests[k].p for k in members]), strict=True):
            out[k] = replace(tests[k], p_holm=h)
    return out


def paired_tests(
    paired: pd.DataFrame,
    metrics: Sequence[str],
    a: str,
    b: str,
    *,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    family: str = "metric",
    alpha: float = ALPHA,
    permutation_budget: int | None = PERMUTATION_BUDGET,
) -> list[PairTest]:
    """The tests of a against b on :func:`vst_core.analysis.systems.paired_sequences`' differences,
    one per metric with a direction. Holm's family (:func:`adjusted`): ``"metric"`` (the default,
    as the leaderboard's: one pair per metric here, so ``p_holm`` = p) or ``"all"`` (over the
    metrics given). The tests draw within one :class:`PermutationBudget` of
    ``permutation_budget`` draws (None: no limit)."""
    if "sequence" in paired:  # the leaderboard's order of sequences, so both draw the same resamples
        paired = paired.sort_values("sequence", kind="stable")
    tested = [m for m in metrics if m in paired and direction_of(m) != "none"]
    thresholds = (alpha,)  # the leaderboard's rule: the same p for the pair there and here
    budget = PermutationBudget(permutation_budget)
    first = budget.first(permutations, len(tested))
    pending = [
        pending_test(
            paired[m].dropna().to_numpy(float),
            m,
            a,
            b,
            resamples=resamples,
            permutations=permutations,
            seed=seed,
            confidence=confidence,
            first=first,
            budget=budget,
        )
        for m in tested
    ]
    budget.extend([t.draws for t in pending if t.draws is not None], thresholds, PERMUTATION_CAP)
    return adjusted([t.done() for t in pending], family)


def with_tests(summary: pd.DataFrame, tests: Sequence[PairTest]) -> pd.DataFrame:
    """:func:`vst_core.analysis.systems.win_tie_loss`'s table with each metric's test beside it:
    ``95% interval`` of the mean difference (``†`` below the minimum N), ``p`` with its Monte-Carlo
    standard error ``p_se``, ``p_holm``, ``d_z`` (``d_z †``: True where N is below the minimum N of
    an interval, so the effect size is as unreliable as an interval would be)."""
    by_metric = {t.metric: t for t in tests}

    def interval(t: PairTest | None) -> str:
        if t is None:
            return "—"
        if t.ci_low is None or t.ci_high is None:
            return SMALL_N_MARK if not has_interval(t.n) else "—"
        return f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]"

    found = [by_metric.get(m) for m in summary["metric"]]
    return summary.assign(
        **{
            "95% interval": [interval(t) for t in found],
            "p": [t.p if t is not None else None for t in found],
            "p_se": [t.p_se if t is not None else None for t in found],
            "p_holm": [t.p_holm if t is not None else None for t in found],
            "d_z": [t.effect_size if t is not None else None for t in found],
            "d_z †": [t is not None and t.effect_size is not None and not has_interval(t.n) for t in found],
        }
    ).astype({"p": "Float64", "p_se": "Float64", "p_holm": "Float64", "d_z": "Float64"})
