"""Paired tests between two systems over the image sequences both wrote for (as SacreBLEU's
``--paired-bs`` / ``--paired-ar``): d = a − b per sequence, its mean with a paired-bootstrap
interval, a paired approximate-randomization p-value (two-sided: ``|mean(s·d)| ≥ |mean(d)|`` for
random signs ``s``; p = (1 + hits) / (1 + permutations)), Holm's adjustment over a family of tests,
and the effect size d_z = mean(d) / sd(d) (ddof 1). Each test's random stream is seeded by
``seed``, the metric and the two systems' names (in either order).

>>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

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
    row of a ±1 matrix, and the statistics of the block one matrix product with ``d``."""
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
    return (1 + hits) / (1 + permutations)


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
) -> PairTest:
    """The test of a against b on the per-sequence differences ``diff`` (a − b, no NaN); ``p_holm``
    is left as ``p`` (:func:`adjusted` sets it over a family). No p below two sequences."""
    diff = np.asarray(diff, dtype=float)
    n = len(diff)
    if n and not np.isfinite(diff).all():  # a difference too large for a float (or none at all): nothing is told
        return PairTest(metric, a, b, n, float("nan"), None, None, None, None, None, None, permutations)
    # on the differences scaled to at most 1: sums of ±1e308 do not overflow, and 1e-308 is not below a tolerance
    scale = float(np.abs(diff).max()) if n else 0.0
    unit = diff / scale if scale > 0 else diff
    mean = float(unit.mean()) * scale if n else float("nan")
    rng = _rng(seed, metric, a, b)
    (interval,) = bootstrap(unit.reshape(n, 1), resamples, int(rng.integers(2**63)), confidence) if n else [None]
    if interval is not None and scale > 0:
        interval = (interval[0] * scale, interval[1] * scale)
    p = permutation_p(unit, permutations, rng) if n >= 2 and permutations > 0 else None
    sd = float(unit.std(ddof=1)) if n >= 2 else 0.0
    effect = float(unit.mean()) / sd if sd > 0 else None
    direction = direction_of(metric)
    sign = {"higher": 1.0, "lower": -1.0}.get(direction, 0.0)
    better = None if not n or mean * sign == 0 else a if mean * sign > 0 else b
    low, high = interval if interval else (None, None)
    return PairTest(metric, a, b, n, mean, low, high, p, p, effect, better, permutations)


def adjusted(tests: Sequence[PairTest]) -> list[PairTest]:
    """``tests`` with ``p_holm`` adjusted over all of them (:func:`holm`)."""

    return [replace(t, p_holm=h) for t, h in zip(tests, holm([t.p for t in tests]), strict=True)]


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
) -> list[PairTest]:
    """The tests of a against b on :func:`vst_core.analysis.systems.paired_sequences`' differences,
    one per metric with a direction, Holm-adjusted over those metrics (the comparisons shown)."""
    if "sequence" in paired:  # the leaderboard's order of sequences, so both draw the same resamples
        paired = paired.sort_values("sequence", kind="stable")
    tests = [
        paired_test(
            paired[m].dropna().to_numpy(float),
            m,
            a,
            b,
            resamples=resamples,
            permutations=permutations,
            seed=seed,
            confidence=confidence,
        )
        for m in metrics
        if m in paired and direction_of(m) != "none"
    ]
    return adjusted(tests)


def with_tests(summary: pd.DataFrame, tests: Sequence[PairTest]) -> pd.DataFrame:
    """:func:`vst_core.analysis.systems.win_tie_loss`'s table with each metric's test beside it:
    ``95% interval`` of the mean difference (``†`` below the minimum N), ``p``, ``p_holm``, ``d_z``."""
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
            "p_holm": [t.p_holm if t is not None else None for t in found],
            "d_z": [t.effect_size if t is not None else None for t in found],
        }
    ).astype({"p": "Float64", "p_holm": "Float64", "d_z": "Float64"})
