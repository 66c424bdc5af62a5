"""One permutation budget per run: every test's first permutations and those added near α draw
within it, in rounds shared equally; a run that reaches it says so, each test it stopped says so
with the p and Monte-Carlo standard error of what it drew, and below it every number is the one
drawn without a budget. The leaderboard, the two-system tests, the human-likeness profile and the
metric-vs-metric tables; the commands' output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vst_core.analysis.leaderboard import Leaderboard, leaderboard
from vst_core.analysis.meta_eval.versus import VersusSettings, versus_accuracy, versus_correlations
from vst_core.analysis.paired_tests import PERMUTATION_BUDGET, Draws, PermutationBudget, p_standard_error, paired_tests
from vst_core.analysis.profile import human_likeness_profile
from vst_core.analysis.systems import paired_sequences
from vst_core.cli.compare import print_board

#: Sixteen differences whose exact two-sided p is 0.0477, near α: every test on them is extended.
NEAR = np.array([0.63, 0.04, 1.88, 1.62, 0.93, -1.9, 0.35, 0.98, 1.3, -0.32, 2.12, -1.02, -0.36, 1.24, 0.35, 2.3])


def near_alpha(systems: int, order: list[int] | None = None) -> pd.DataFrame:
    """System i's value on sequence q is 0.5 + i·NEAR[q]: every two systems differ by a multiple of
    NEAR, so every pair's p is 0.0477 (a sign-flip p does not see the scale)."""
    rows = [
        {"story": f"{q}-{i}", "sequence": f"q{q:02d}", "system": f"s{i}", "NR": 0.5 + i * NEAR[q]}
        for i in (order or list(range(systems)))
        for q in range(16)
    ]
    return pd.DataFrame(rows)


def outcome(board: Leaderboard) -> list[tuple[str, str, float | None, float | None, int]]:
    return [(t.system_a, t.system_b, t.p, t.p_se, t.permutations) for t in board.pairs]


def test_a_run_of_tests_near_alpha_stops_at_its_budget_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Fifteen tests near α would draw 1,520,000 permutations; within 300,000 the run stops at
    300,000, every test says it stopped early, and its p carries the standard error of its draws."""
    unbounded = leaderboard(near_alpha(6), metrics=["NR"], resamples=0, permutation_budget=None)
    assert sum(t.permutations for t in unbounded.pairs) == 1_520_000 and not unbounded.permutation_budget["reached"]
    board = leaderboard(near_alpha(6), metrics=["NR"], resamples=0, permutation_budget=300_000)
    drawn = sum(t.permutations for t in board.pairs)
    assert drawn == board.permutation_budget["drawn"] <= 300_000
    assert board.permutation_budget == {"budget": 300_000, "drawn": drawn, "reached": True, "stopped_tests": 15}
    for test in board.pairs:
        assert test.stopped_early and test.p is not None and test.p_se is not None
        assert test.p_se == pytest.approx(p_standard_error(test.p, test.permutations))
        assert abs(test.p - 0.05) < 3 * test.p_se  # not told apart from α: that is why it says so
    assert any("permutation budget of 300,000 draws was reached" in n and "15 test(s) stopped early" in n for n in board.notes)
    assert board.signature["permutation_budget"] == 300_000  # it decided the numbers: signed
    document = board.to_json()
    assert document["permutation_budget"]["reached"] and all(row["stopped_early"] for row in document["pairwise"])
    print_board(board)
    printed = capsys.readouterr().out
    assert "permutation budget: 300,000 draws, 300,000 drawn; reached: 15 test(s) stopped early" in printed
    assert printed.count("(stopped early)") == 15 + 1


def test_below_its_budget_a_run_is_what_it_was_without_one() -> None:
    free = leaderboard(near_alpha(6), metrics=["NR"], resamples=50, permutation_budget=None)
    bounded = leaderboard(near_alpha(6), metrics=["NR"], resamples=50)
    assert outcome(bounded) == outcome(free) and not any(t.stopped_early for t in bounded.pairs)
    assert bounded.permutation_budget == {"budget": PERMUTATION_BUDGET, "drawn": 1_520_000, "reached": False, "stopped_tests": 0}
    assert "permutation_budget" not in bounded.signature  # signed as before there was a budget
    assert {k: v for k, v in bounded.signature.items() if k != "id"} == {k: v for k, v in free.signature.items() if k != "id"}


def test_the_budget_is_shared_equally_whatever_the_order_of_the_systems() -> None:
    """A round that does not fit gives every test still asking the same share, so a pair's p does
    not depend on where it comes in the run."""
    one = leaderboard(near_alpha(5), metrics=["NR"], resamples=0, permutation_budget=250_000)
    other = leaderboard(near_alpha(5, order=[3, 0, 4, 2, 1]), metrics=["NR"], resamples=0, permutation_budget=250_000)
    assert sorted(outcome(one)) == sorted(outcome(other))
    assert len({t.permutations for t in one.pairs}) == 1 and one.permutation_budget["drawn"] <= 250_000


def test_a_budget_below_the_first_permutations_shares_them_and_an_empty_one_gives_no_p() -> None:
    board = leaderboard(near_alpha(4), metrics=["NR"], resamples=0, permutations=10_000, permutation_budget=6_000)
    assert [t.permutations for t in board.pairs] == [1_000] * 6 and all(t.stopped_early for t in board.pairs)
    assert board.permutation_budget["drawn"] == 6_000 and board.permutation_budget["reached"]
    empty = leaderboard(near_alpha(3), metrics=["NR"], resamples=0, permutation_budget=0)
    assert all(t.p is None and t.stopped_early and t.permutations == 0 for t in empty.pairs)
    assert empty.pairs[0].mean_difference == pytest.approx(-NEAR.mean())  # the rest of the test is there


def test_progress_counts_every_draw() -> None:
    seen: list[tuple[str, int]] = []

    class Bar:
        total = 0

        def update(self, n: int) -> None:
            seen.append(("update", n))

        def refresh(self) -> None:
            seen.append(("refresh", self.total))

        def close(self) -> None:
            seen.append(("close", 0))

    bar = Bar()

    def progress(total: int) -> Bar:
        bar.total = total
        seen.append(("start", total))
        return bar

    board = leaderboard(near_alpha(3), metrics=["NR"], resamples=0, progress=progress)
    drawn = board.permutation_budget["drawn"]
    assert seen[0] == ("start", 30_000) and seen[-1] == ("close", 0)
    assert sum(n for kind, n in seen if kind == "update") == drawn == bar.total > 30_000  # each round raised the total


def test_the_two_system_tests_and_the_profile_draw_within_a_budget() -> None:
    table = near_alpha(2)
    paired = paired_sequences(table, "s1", "s0", ["NR"])
    (free,) = paired_tests(paired, ["NR"], "s1", "s0", resamples=0, permutation_budget=None)
    (bounded,) = paired_tests(paired, ["NR"], "s1", "s0", resamples=0, permutation_budget=20_000)
    assert free.permutations > 20_000 and not free.stopped_early
    assert bounded.permutations == 20_000 and bounded.stopped_early
    profile = human_likeness_profile(near_alpha(4), ["s0"], ["NR"], resamples=0, permutation_budget=45_000)
    assert profile["permutations"].sum() <= 45_000 and profile["stopped_early"].all()
    assert profile.attrs["permutation_budget"]["reached"] and profile.attrs["permutation_budget"]["stopped_tests"] == 3
    within = human_likeness_profile(near_alpha(4), ["s0"], ["NR"], resamples=0)
    assert not within["stopped_early"].any() and not within.attrs["permutation_budget"]["reached"]


def _metrics_near_alpha() -> pd.DataFrame:
    """Seven metrics and one aspect whose PERM-BOTH tests are extended (p near α at 500 permutations)."""
    rng = np.random.default_rng(9)
    h = rng.normal(size=40)
    columns = {"overall": h, **{f"m{k}": h + rng.normal(size=40) * (1.2 + 0.1 * k) for k in range(7)}}
    return pd.DataFrame(columns, index=[f"s{k}" for k in range(40)])


def test_metric_versus_metric_tables_share_one_budget_and_mark_what_it_stopped() -> None:
    data = _metrics_near_alpha()
    metrics = [c for c in data if c != "overall"]
    free = versus_correlations(data, metrics, ["overall"], VersusSettings(permutations=500, permutation_budget=None))
    assert free["permutations"].max() > 500 and not free["stopped_early"].any()
    budget = PermutationBudget(21 * 500 + 2_000)
    table = versus_correlations(data, metrics, ["overall"], VersusSettings(permutations=500), budget=budget)
    pairs = pd.DataFrame({"better": [f"s{k}" for k in range(0, 40, 2)], "worse": [f"s{k}" for k in range(1, 40, 2)]})
    accuracy = versus_accuracy(pairs, data, metrics[:3], VersusSettings(permutations=500), budget=budget)
    assert budget.drawn == table["permutations"].sum() + accuracy["permutations"].sum() <= 21 * 500 + 2_000
    assert budget.reached and table["stopped_early"].any() and accuracy["stopped_early"].all()
    extended = free["permutations"] > 500
    assert (table.loc[~extended, "p_permutation"] == free.loc[~extended, "p_permutation"]).all()  # the first draws are the same
    stopped = table[table["stopped_early"]]
    assert (
        stopped["p_permutation_se"]
        == [p_standard_error(p, k) for p, k in zip(stopped["p_permutation"], stopped["permutations"], strict=True)]
    ).all()


def test_a_budget_extends_in_rounds_as_one_test_alone_would() -> None:
    """Below the budget, each test draws exactly what it draws alone (its own stream, the same doubling)."""

    def hits(seed: int) -> Callable[[int], int]:
        """k draws of a test whose true p is 0.05, from its own stream."""
        rng = np.random.default_rng(seed)
        return lambda k: int((rng.random(k) < 0.05).sum())

    tests = [Draws(45, 1000, hits(k)) for k in range(3)]
    PermutationBudget(None).extend(tests, (0.05,), 64_000)
    alone = []
    for k in range(3):
        draws = Draws(45, 1000, hits(k))
        PermutationBudget(None).extend([draws], (0.05,), 64_000)
        alone.append(draws.result())
    assert [t.result() for t in tests] == alone and any(t.used > 1000 for t in tests)


def test_the_commands_take_the_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import main

    rows = "".join(f"q{q:02d},R,{0.5 + i * NEAR[q] / 20:.6f},s{i}\n" for i in range(4) for q in range(16))
    source = tmp_path / "long.csv"
    source.write_text("story_id,metric,value,system\n" + rows)
    scores = tmp_path / "scores.jsonl"
    assert main(["import-scores", str(source), "--long", "--out", str(scores), "--sequence-id-from", "story_id"]) == 0
    out = tmp_path / "compare.json"
    code = main(
        ["compare", str(scores), "--json", str(out), "--resamples", "0", "--permutation-budget", "70000", "--no-progress"]
    )
    assert code == 0
    document = json.loads(out.read_text())
    assert document["permutation_budget"]["reached"] and document["permutation_budget"]["drawn"] <= 70_000
    assert "reached: 6 test(s) stopped early" in capsys.readouterr().out
    assert main(["compare", str(scores), "--permutation-budget", "-1"]) == 2
