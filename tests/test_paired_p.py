"""A permutation p is an estimate: it is shown with its Monte-Carlo standard error, and more
permutations are drawn while a decision threshold lies within 3 standard errors of it, so a verdict
at α does not depend on the seed. Checked against the exact p (all 2^16 sign flips enumerated)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vst_core.analysis.paired_tests import (
    PERMUTATION_CAP,
    SE_MARGIN,
    adaptive_permutation_p,
    holm_thresholds,
    p_standard_error,
    paired_test,
    permutation_p,
)

#: Sixteen differences whose exact two-sided p is 0.04773 (3,128 of 65,536 flips): just below 0.05.
NEAR = np.array([0.63, 0.04, 1.88, 1.62, 0.93, -1.9, 0.35, 0.98, 1.3, -0.32, 2.12, -1.02, -0.36, 1.24, 0.35, 2.3])


def exact_p(d: np.ndarray) -> float:
    """The share of all 2^n sign flips with |Σ s·d| ≥ |Σ d| (the data's own flip included)."""
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(d))))
    return float((np.abs(signs @ d) >= abs(d.sum()) - 1e-9).mean())


def test_the_example_is_near_the_threshold() -> None:
    assert exact_p(NEAR) == pytest.approx(3128 / 65536)


def test_a_p_near_alpha_gets_more_permutations_and_lands_on_the_exact_side() -> None:
    p, se, used = adaptive_permutation_p(NEAR, 10_000, np.random.default_rng(0), (0.05,))
    assert used > 10_000 and used <= PERMUTATION_CAP
    assert se == pytest.approx(p_standard_error(p, used))
    assert abs(p - exact_p(NEAR)) < 4 * se
    assert abs(p - 0.05) >= SE_MARGIN * se or used == PERMUTATION_CAP


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_the_verdict_at_alpha_is_the_same_for_twenty_seeds() -> None:
    fixed = [permutation_p(NEAR, 10_000, np.random.default_rng(seed)) < 0.05 for seed in range(20)]
    adaptive = [adaptive_permutation_p(NEAR, 10_000, np.random.default_rng(seed), (0.05,))[0] < 0.05 for seed in range(20)]
    assert all(adaptive)  # the exact p is 0.0477
    assert not all(fixed)  # 10,000 flips alone put some seeds on the other side


def test_a_p_far_from_every_threshold_is_the_fixed_count() -> None:
    d = NEAR + 0.5  # p far below 0.05
    p, se, used = adaptive_permutation_p(d, 5_000, np.random.default_rng(3), holm_thresholds(0.05, 3))
    assert used == 5_000 and p == permutation_p(d, 5_000, np.random.default_rng(3))
    assert se == pytest.approx(np.sqrt(p * (1 - p) / 5_000))


def test_a_paired_test_carries_p_and_its_standard_error() -> None:
    tests = [paired_test(NEAR, "NR", "a", "b", resamples=0, permutations=10_000, seed=seed) for seed in range(5)]
    for test in tests:
        assert test.p is not None and test.p_se is not None and test.p < 0.05
        assert test.p_se == pytest.approx(p_standard_error(test.p, test.permutations))
        assert abs(test.p - 0.05) >= SE_MARGIN * test.p_se  # extended until α is told apart
    assert any(test.permutations > 10_000 for test in tests)
    test = tests[0]
    quick = paired_test(NEAR, "NR", "a", "b", resamples=0, permutations=10_000, seed=0, thresholds=())
    assert quick.permutations == 10_000  # no threshold: the fixed count


def test_holm_thresholds_cover_every_step_of_a_family() -> None:
    assert holm_thresholds(0.05, 1) == (0.05,)
    assert holm_thresholds(0.05, 4) == pytest.approx((0.05, 0.025, 0.05 / 3, 0.0125))
