"""With few sequences the paired sign-flip test counts every one of its 2^N flips: the p is exact,
with no Monte-Carlo error, checked against a brute-force enumeration for N = 2 … 10."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from vst_core.analysis.paired_tests import (
    PermutationBudget,
    adaptive_permutation_p,
    exact_flip_p,
    paired_test,
    paired_tests,
    pending_test,
    permutation_p,
)


def brute_force_p(d: np.ndarray) -> float:
    """Every sign vector in turn, in plain Python: the share with |Σ s·d| ≥ |Σ d|."""
    observed = abs(sum(d))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-9
        for signs in itertools.product((-1, 1), repeat=len(d))
    )
    return hits / 2 ** len(d)


def differences(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.3, 1.0, n), 2)
    if seed % 3 == 0:
        d[0] = 0.0  # a tie between the systems on one sequence
    if seed % 3 == 1:
        d[: n // 2] = abs(d[0])  # equal differences: many flips land on the observed sum
    return d


@pytest.mark.parametrize("n", range(2, 11))
@pytest.mark.parametrize("seed", range(3))
def test_the_p_of_a_few_sequences_is_the_enumerated_one(n: int, seed: int) -> None:
    d = differences(n, seed)
    exact = brute_force_p(d)
    test = paired_test(d, "NR", "a", "b", resamples=0, permutations=10_000, seed=seed)
    assert test.p == pytest.approx(exact, abs=1e-15) and test.p_se == 0.0
    assert test.permutations == 2**n and not test.stopped_early
    assert exact_flip_p(d) == pytest.approx(exact, abs=1e-15)
    assert permutation_p(d, 10_000, np.random.default_rng(seed)) == pytest.approx(exact, abs=1e-15)
    assert adaptive_permutation_p(d, 10_000, np.random.default_rng(seed), (0.05,)) == (pytest.approx(exact), 0.0, 2**n)


def test_two_sequences_give_one_half_for_every_seed() -> None:
    ps = {paired_test(np.array([0.3, 0.5]), "NR", "a", "b", resamples=0, seed=seed).p for seed in range(20)}
    assert ps == {0.5}  # 20 random estimates spread about 0.49 to 0.51


def test_more_flips_than_permutations_are_still_drawn_at_random() -> None:
    d = differences(10, 1)  # 1,024 flips
    test = paired_test(d, "NR", "a", "b", resamples=0, permutations=1000, seed=0)
    assert test.p_se is not None and test.p_se > 0 and test.permutations >= 1000
    assert test.p != brute_force_p(d)


def test_an_exact_test_spends_its_flips_in_the_run_budget_and_is_never_extended() -> None:
    budget = PermutationBudget(10_000)
    pending = pending_test(np.array([0.01, 0.02, 0.03, -0.04, 0.05]), "NR", "a", "b", resamples=0, budget=budget)
    assert pending.draws is not None and pending.draws.exact
    budget.extend([pending.draws], (pending.draws.result()[0],), 1_000_000)  # a threshold right at p
    assert budget.drawn == 32 and pending.done().permutations == 32 and pending.done().p_se == 0.0


def test_the_two_system_page_tests_give_the_exact_p() -> None:
    paired = pd.DataFrame({"sequence": ["s1", "s2", "s3"], "NR": [0.1, 0.2, 0.4]})
    (test,) = paired_tests(paired, ["NR"], "a", "b", resamples=0)
    assert test.p == 0.25 and test.p_se == 0.0 and test.permutations == 8
