"""The study's agreement statistics against independent computations: Krippendorff's α against the
`krippendorff` package on generated data (nominal, ordinal, interval, with missing ratings), Fleiss'
κ and the share of agreeing pairs against hand computations, α's bootstrap interval."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from vst_core.study import agreeing_pairs, alpha_interval, fleiss_kappa, krippendorff_alpha
from vst_core.study.agreement import Level


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_equals_the_krippendorff_package_on_generated_ratings(level: Level, seed: int) -> None:
    rng = np.random.default_rng(seed)
    raters, items = rng.integers(2, 7), rng.integers(5, 60)
    truth = rng.integers(1, 6, items)
    table = np.clip(truth + rng.integers(-1, 2, (raters, items)) * (rng.random((raters, items)) < 0.4), 1, 5).astype(float)
    table[rng.random(table.shape) < 0.25] = np.nan  # raters who skipped items
    expected = krippendorff.alpha(reliability_data=table, level_of_measurement=level)
    assert krippendorff_alpha(table, level) == pytest.approx(expected, abs=1e-12)


def test_alpha_on_pairwise_choices_with_ties_equals_the_package_nominal() -> None:
    rng = np.random.default_rng(3)
    table = rng.choice([0.0, 1.0, 2.0], size=(3, 40), p=[0.6, 0.3, 0.1])
    assert krippendorff_alpha(table, "nominal") == pytest.approx(
        krippendorff.alpha(reliability_data=table, level_of_measurement="nominal"), abs=1e-12
    )


def test_alpha_is_undefined_rather_than_zero() -> None:
    assert np.isnan(krippendorff_alpha([[3, 3, 3], [3, 3, 3]]))  # one value: no expected disagreement
    assert np.isnan(krippendorff_alpha([[1, np.nan], [np.nan, 2]]))  # no item rated twice
    assert krippendorff_alpha([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]]) == pytest.approx(1.0)


def test_fleiss_kappa_by_hand() -> None:
    # 4 items, 3 raters, categories (left, right, tie):
    counts = [[3, 0, 0], [2, 1, 0], [0, 3, 0], [1, 1, 1]]
    # P_i = (sum n_ij^2 - 3) / 6: 1, 1/3, 1, 0 -> P̄ = 7/12
    # p_j = 6/12, 5/12, 1/12 -> P_e = (36 + 25 + 1) / 144 = 62/144
    p_bar, p_e = 7 / 12, 62 / 144
    assert fleiss_kappa(counts) == pytest.approx((p_bar - p_e) / (1 - p_e))
    assert fleiss_kappa([[3, 0], [0, 3]]) == pytest.approx(1.0)
    assert np.isnan(fleiss_kappa([[3, 0], [3, 0]]))  # one category: undefined
    assert np.isnan(fleiss_kappa([[1, 0]]))  # one rater: no pair


def test_agreeing_pairs_by_hand() -> None:
    share, pairs = agreeing_pairs([[0, 0, 1], [1, 1, 1], ["tie", 0]])
    assert pairs == 3 + 3 + 1 and share == pytest.approx((1 + 3 + 0) / 7)
    assert np.isnan(agreeing_pairs([[0]])[0])


def test_the_bootstrap_interval_resamples_items_and_holds_alpha() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, 80)
    table = np.clip(truth + rng.integers(-1, 2, (3, 80)), 1, 5).astype(float)
    alpha = krippendorff_alpha(table, "ordinal")
    low, high = alpha_interval(table, "ordinal", n_boot=300, seed=1)
    assert low < alpha < high and high - low < 0.4
    assert alpha_interval(table, "ordinal", n_boot=300, seed=1) == (low, high)  # seeded
    assert all(np.isnan(v) for v in alpha_interval(table, n_boot=0))
