"""Pairwise accuracy with ties and WMT's tie calibration (Deutsch et al. 2023, "Ties Matter"):
checked against a brute force over every candidate ε, and carried through a meta-evaluation whose
ratings hold ties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.analysis.meta_eval.stats import tie_calibrated_accuracy, tie_calibration_table, tied_pairs


def brute(delta: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    """(best accuracy, smallest ε reaching it) over ε in {0} ∪ {|delta|}, each pair judged directly."""
    best = (-1.0, 0.0)
    for eps in sorted({0.0, *np.abs(delta).tolist()}):
        verdict = np.where(np.abs(delta) <= eps, 0.0, np.sign(delta))
        accuracy = float((verdict == np.sign(human)).mean())
        if accuracy > best[0]:
            best = (accuracy, eps)
    return best


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([-0.3, -0.1, -0.02, 0.0, 0.02, 0.05, 0.1, 0.4]), st.sampled_from([-1, 0, 1])),
        min_size=1,
        max_size=40,
    )
)
def test_the_sweep_equals_a_brute_force(pairs: list[tuple[float, int]]) -> None:
    delta = np.array([d for d, _ in pairs])
    human = np.array([h for _, h in pairs], float)
    result = tie_calibrated_accuracy(delta, human)
    accuracy, epsilon = brute(delta, human)
    assert result["accuracy"] == pytest.approx(accuracy) and result["epsilon"] == pytest.approx(epsilon)
    at_zero = float((np.where(delta == 0, 0.0, np.sign(delta)) == np.sign(human)).mean())
    assert result["accuracy_at_0"] == pytest.approx(at_zero)
    assert result["n"] == len(pairs) and result["human_ties"] == int((human == 0).sum())


def test_without_human_ties_calibration_cannot_help() -> None:
    delta = np.array([0.3, -0.1, 0.0, 0.2])
    result = tie_calibrated_accuracy(delta, np.ones(4))
    assert result["epsilon"] == 0.0 and result["accuracy"] == 0.5  # the exact tie is wrong, as Vrank counts it


def test_the_table_uses_the_peoples_ties_and_the_metrics_direction() -> None:
    data = pd.DataFrame(
        {
            "sequence_id": ["q", "q", "q", "r", "r"],
            "overall": [3.0, 3.0, 1.0, 2.0, 2.0],
            "NR": [0.80, 0.81, 0.30, 0.5, 1.1],
            "inter": [0.10, 0.11, 0.50, 0.2, 0.2],  # lower is better
        },
        index=["a", "b", "c", "d", "e"],
    )
    ties = tied_pairs(data["overall"], data["sequence_id"])
    assert ties[["first", "second"]].values.tolist() == [["a", "b"], ["d", "e"]]
    ranked = pd.DataFrame({"better": ["a", "b"], "worse": ["c", "c"], "agreement": [np.nan] * 2, "gap": [2.0, 2.0]})
    table = tie_calibration_table(ranked, ties, data, ["NR", "inter"]).set_index("metric")
    # NR: a-b differ by 0.01 (ε = 0.01 ties them: right), d-e by 0.6 (tying it would tie the ranked pairs too); both ranked pairs right
    assert table.at["NR", "accuracy"] == pytest.approx(3 / 4) and table.at["NR", "epsilon"] == pytest.approx(0.01)
    assert table.at["NR", "accuracy_at_0"] == pytest.approx(2 / 4) and table.at["NR", "vrank_accuracy"] == 1.0
    # inter (lower is better, oriented): d-e tie exactly, a-b differ by 0.01; the ranked pairs are right
    assert table.at["inter", "accuracy"] == pytest.approx(1.0) and table.at["inter", "human_ties"] == 2
