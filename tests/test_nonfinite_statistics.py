"""Values that are not numbers, and labels that are not there: a correlation leaves out the pairs
with an infinite value or no group label and counts them, instead of failing or answering NaN for
a wrong reason; a system whose mean is not a finite number is never ranked, and one whose sum only
overflows a float keeps its true mean."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vst_core.analysis.leaderboard import leaderboard
from vst_core.analysis.meta_eval.stats import correlate

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
Y = [2.0, 1.0, 4.0, 3.0, 6.0, 5.0, 8.0, 7.0, 10.0, 9.0, 12.0, 11.0]
GROUPS = ["a", "a", "b", "b", "c", "c", "d", "d", "e", "e", "f", "f"]


def test_infinite_values_are_left_out_and_counted() -> None:
    x = [*X[:3], float("inf"), *X[4:6], float("-inf"), *X[7:]]
    found = correlate(x, Y, resamples=200)  # 10 pairs left: an interval's minimum N
    keep = [k for k in range(12) if k not in (3, 6)]
    for method, result in found.items():
        assert result.n == 10 and result.infinite == 2 and result.unlabelled == 0, method
        assert result.value is not None and np.isfinite(result.value), method
        assert result.undefined is None and result.ci_low is not None, method
    assert found["pearson"].value == pytest.approx(stats.pearsonr([X[k] for k in keep], [Y[k] for k in keep])[0])
    assert found["spearman"].value == pytest.approx(stats.spearmanr([X[k] for k in keep], [Y[k] for k in keep])[0])


def test_pairs_without_a_group_label_are_left_out_and_counted() -> None:
    groups: list[object] = [*GROUPS]
    groups[2], groups[5], groups[8] = None, float("nan"), " "
    found = correlate(X, Y, resamples=200, groups=groups)
    keep = [k for k in range(12) if k not in (2, 5, 8)]
    same = correlate([X[k] for k in keep], [Y[k] for k in keep], resamples=200, groups=[GROUPS[k] for k in keep])
    for method, result in found.items():
        assert result.unlabelled == 3 and result.infinite == 0 and result.n == 9, method
        assert (result.value, result.p, result.ci_low, result.ci_high) == (
            same[method].value,
            same[method].p,
            same[method].ci_low,
            same[method].ci_high,
        ), method


def test_a_nan_is_still_a_missing_value_and_not_counted() -> None:
    x = [float("nan"), *X[1:]]
    found = correlate(x, Y, ["pearson"], resamples=0, groups=[None, *GROUPS[1:]])["pearson"]
    assert found.n == 11 and found.infinite == 0 and found.unlabelled == 0


def test_a_system_whose_mean_is_not_a_number_is_never_ranked_first() -> None:
    rows = []
    for q in range(12):
        for system, value in (("h", 0.9 - q * 0.01), ("m", 0.7 + q * 0.01), ("o", float("inf") if q == 3 else 0.5)):
            rows.append({"story": f"{q}{system}", "sequence": f"q{q:02d}", "system": system, "NR": value})
    board = leaderboard(pd.DataFrame(rows), metrics=["NR"], resamples=100, permutations=99)
    ranks = {s.system: s.rank for s in board.standings}
    assert ranks == {"h": 1, "m": 2, "o": None}
    assert [s.system for s in board.standings] == ["h", "m", "o"]  # listed after every ranked system
    unranked = next(s for s in board.standings if s.system == "o")
    assert unranked.cluster is None and unranked.ci_low is None
    assert any("the mean of o is not a finite number (inf); it is not ranked" in n for n in board.notes)
    assert "#" not in board.glance().set_index("system").loc["o", "NR"]
    tests = {(t.system_a, t.system_b): t for t in board.pairs}
    assert tests[("h", "o")].p is None and tests[("h", "o")].better is None
    lower = leaderboard(pd.DataFrame(rows).assign(T=lambda t: t["NR"]), metrics=["T"], resamples=0, permutations=99)
    assert {s.system: s.rank for s in lower.standings} == {"m": 1, "h": 2, "o": None}  # lower is better: still unranked


def test_a_mean_whose_sum_overflows_is_its_true_mean() -> None:
    rows = []
    for q in range(12):
        for system, value in (("h", 0.9), ("big", 1e308), ("m", 0.7)):
            rows.append({"story": f"{q}{system}", "sequence": f"q{q:02d}", "system": system, "NR": value})
    board = leaderboard(pd.DataFrame(rows), metrics=["NR"], resamples=100, permutations=99)
    big = next(s for s in board.standings if s.system == "big")
    assert big.mean == 1e308 and big.rank == 1 and big.ci_low == pytest.approx(1e308) and big.ci_high == pytest.approx(1e308)
    assert not any("not a finite number" in n for n in board.notes)
