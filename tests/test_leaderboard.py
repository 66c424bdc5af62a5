"""The leaderboard and the paired tests between systems, against independent computations: scipy's
bootstrap and permutation test, an exact enumeration of sign flips written here, Holm by hand, and
constructed cases for ranks, directions and clusters; the command's JSON; the page against the
command (AppTest, slow).

Monte-Carlo error: a percentile endpoint from R resamples has a standard error of about
2.7 σ_boot / √R (σ_boot = interval width / 3.92), 0.7% of the width at R = 10,000 per method; the
tests allow 5% of the width between two independent estimates (about 5 standard errors). A p-value
from R permutations has a standard error of √(p(1 − p) / R) ≤ 0.005 at R = 10,000; the tests
allow 0.025 between two independent estimates and 0.02 against an exact value (4-5 standard errors).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from vst_core.analysis.leaderboard import holm, leaderboard, paired_test, paired_tests, story_ratings
from vst_core.analysis.systems import paired_sequences
from vst_core.cli import main

REQUIRED = ("metric", "system_a", "system_b", "n", "mean_difference", "ci_low", "ci_high", "p", "p_holm")


def table_of(values: dict[str, np.ndarray], metric: str = "NR") -> pd.DataFrame:
    """A story table: one story per system and sequence ``q0, q1, ...``; ids shared across systems."""
    rows = []
    for system, column in values.items():
        for k, v in enumerate(column):
            rows.append({"story": f"s{k}", "sequence": f"q{k:05d}", "system": system, metric: float(v)})
    return pd.DataFrame(rows)


def two_systems(n: int, shift: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.normal(0.6, 0.15, n)
    return base + shift + rng.normal(0, 0.1, n), base + rng.normal(0, 0.1, n)


# --------------------------------------------------------------------------- the numbers of one pair


def test_mean_difference_is_the_mean_of_the_paired_differences_exactly() -> None:
    x, y = two_systems(300, 0.02)
    table = table_of({"a": x, "b": y})
    extra = pd.DataFrame(  # a second story of a on q00000 (averaged), and a sequence only b wrote for (left out)
        [
            {"story": "t", "sequence": "q00000", "system": "a", "NR": 0.25},
            {"story": "u", "sequence": "only-b", "system": "b", "NR": 0.9},
        ]
    )
    board = leaderboard(pd.concat([table, extra]), resamples=0, permutations=0)
    (test,) = board.pairs
    x_seen = x.copy()
    x_seen[0] = (x[0] + 0.25) / 2
    expected = math.fsum(float(u) - float(v) for u, v in zip(x_seen, y, strict=True)) / len(x)
    assert test.n == 300 and abs(test.mean_difference - expected) < 1e-12
    means = {s.system: s.mean for s in board.standings}
    assert abs(means["a"] - math.fsum(x_seen) / 300) < 1e-12 and abs(means["b"] - math.fsum(y) / 300) < 1e-12


def test_difference_interval_equals_scipys_paired_percentile_bootstrap() -> None:
    x, y = two_systems(400, 0.03, seed=1)
    test = paired_test(x - y, "NR", "a", "b", resamples=10_000, permutations=0, seed=3)
    theirs = stats.bootstrap(
        (x, y),
        lambda u, v, axis=-1: np.mean(u - v, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(11),
    ).confidence_interval
    assert test.ci_low is not None and test.ci_high is not None
    width = theirs.high - theirs.low
    assert abs(test.ci_low - theirs.low) < 0.05 * width and abs(test.ci_high - theirs.high) < 0.05 * width


def test_each_systems_interval_equals_scipys_bootstrap_of_its_mean() -> None:
    x, y = two_systems(250, 0.0, seed=2)
    board = leaderboard(table_of({"a": x, "b": y}), resamples=10_000, permutations=0, seed=5)
    for standing, values in zip(sorted(board.standings, key=lambda s: s.system), (x, y), strict=True):
        theirs = stats.bootstrap(
            (values,), np.mean, n_resamples=10_000, method="percentile", random_state=np.random.default_rng(7)
        ).confidence_interval
        width = theirs.high - theirs.low
        assert standing.ci_low is not None and standing.ci_high is not None
        assert abs(standing.ci_low - theirs.low) < 0.05 * width and abs(standing.ci_high - theirs.high) < 0.05 * width


@pytest.mark.parametrize(("shift", "seed"), [(0.02, 4), (0.0, 5), (0.012, 6)])
def test_p_value_equals_scipys_paired_permutation_test(shift: float, seed: int) -> None:
    x, y = two_systems(150, shift, seed=seed)
    test = paired_test(x - y, "NR", "a", "b", resamples=0, permutations=10_000, seed=seed)
    theirs = stats.permutation_test(
        (x, y),
        lambda u, v, axis=-1: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        alternative="two-sided",
        random_state=np.random.default_rng(100 + seed),
    ).pvalue
    assert test.p is not None and abs(test.p - theirs) < 0.025, (test.p, theirs)
    assert test.permutations == 10_000


def test_p_value_equals_an_exact_enumeration_of_sign_flips() -> None:
    d = np.array([0.31, -0.12, 0.2, 0.05, 0.44, -0.3, 0.18, 0.09, -0.02, 0.27, 0.11, -0.15])
    observed = abs(sum(d))
    hits = 0
    for signs in itertools.product((-1.0, 1.0), repeat=len(d)):  # all 4,096 flips, one by one
        hits += abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= observed - 1e-12
    exact = hits / 2 ** len(d)
    test = paired_test(d, "NR", "a", "b", resamples=0, permutations=20_000, seed=0)
    assert test.p is not None and abs(test.p - exact) < 0.02, (test.p, exact)
    # every difference equal: each flip of all signs but one is smaller, only ±d itself reaches it
    assert paired_test(np.zeros(20), "NR", "a", "b", resamples=0, permutations=500).p == 1.0


def test_effect_size_is_the_mean_over_the_sd_of_the_differences() -> None:
    d = np.array([0.1, 0.3, -0.1, 0.2, 0.25])
    mean = sum(d) / 5
    sd = math.sqrt(sum((v - mean) ** 2 for v in d) / 4)
    test = paired_test(d, "NR", "a", "b", resamples=0, permutations=0)
    assert test.effect_size == pytest.approx(mean / sd, rel=1e-12) and test.better == "a"
    lower = paired_test(d, "inter", "a", "b", resamples=0, permutations=0)  # a repeats more: b is better
    assert lower.better == "b"


def test_holm_by_hand() -> None:
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0]) and holm([None, 0.02]) == [None, pytest.approx(0.02)]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), max_size=12))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(p: list[float | None]) -> None:
    adjusted = holm(p)
    assert [a is None for a in adjusted] == [v is None for v in p]
    known = [(v, a) for v, a in zip(p, adjusted, strict=True) if v is not None and a is not None]
    assert all(v <= a <= 1.0 for v, a in known)
    assert all(a1 <= a2 for v1, a1 in known for v2, a2 in known if v1 < v2)
    if known:  # the smallest is multiplied by the number of tests (capped at 1)
        v, a = min(known)
        assert a == pytest.approx(min(1.0, v * len(known)))


def _holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])  # Holm, step by step
    out = [0.0] * len(p)
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - j) * p[i]))
        out[i] = running
    return out


def test_the_boards_holm_family_is_stated_and_kept() -> None:
    """Per metric by default (a metric's verdicts do not move when other columns are loaded), or
    over every test with ``family="all"``; the family is in the signature."""
    rng = np.random.default_rng(8)
    base = rng.normal(0.5, 0.1, 80)
    values = {s: base + shift + rng.normal(0, 0.05, 80) for s, shift in (("a", 0.03), ("b", 0.0), ("c", 0.01))}
    table = table_of(values).merge(table_of({s: 1 - v for s, v in values.items()}, "inter"))
    every = leaderboard(table, resamples=0, permutations=2000, family="all")
    assert len(every.pairs) == 6 and every.signature["holm_family"] == "all"  # 3 pairs × 2 metrics
    assert [t.p_holm for t in every.pairs] == pytest.approx(_holm_by_hand([t.p for t in every.pairs]))
    board = leaderboard(table, resamples=0, permutations=2000)
    assert board.signature["holm_family"] == "metric" and board.signature["id"] != every.signature["id"]
    for metric in ("NR", "inter"):
        tests = [t for t in board.pairs if t.metric == metric]
        assert [t.p_holm for t in tests] == pytest.approx(_holm_by_hand([t.p for t in tests]))
    alone = leaderboard(table_of(values), resamples=0, permutations=2000)  # NR without the inter column
    assert [t.p_holm for t in alone.pairs] == [t.p_holm for t in board.pairs if t.metric == "NR"]
    with pytest.raises(ValueError, match="Holm family"):
        leaderboard(table, resamples=0, permutations=10, family="systems")


def test_clusters_never_hold_two_significantly_different_systems() -> None:
    """Four systems 0.01 apart in steps: neighbours do not differ, the first and the last do. The
    chain of neighbours used to put all four in cluster A."""
    rng = np.random.default_rng(5)
    base = rng.normal(0.5, 0.1, 600)
    values = {
        s: base + shift + rng.normal(0, 0.02, 600) for s, shift in (("w", 0.0), ("x", -0.002), ("y", -0.004), ("z", -0.006))
    }
    board = leaderboard(table_of(values), resamples=0, permutations=4000)
    p = {frozenset((t.system_a, t.system_b)): t.p_holm for t in board.pairs}
    assert p[frozenset("wz")] < 0.05  # the ends differ
    cluster = {s.system: s.cluster for s in board.standings}
    for a in cluster:
        for b in cluster:
            if a < b and cluster[a] == cluster[b]:
                assert p[frozenset((a, b))] >= 0.05, (a, b)
    assert len(set(cluster.values())) >= 2


def test_a_pairs_numbers_do_not_depend_on_the_other_systems_or_their_order() -> None:
    x, y = two_systems(60, 0.01, seed=9)
    z = x + 0.5
    two = leaderboard(table_of({"a": x, "b": y}), resamples=500, permutations=3000)
    three = leaderboard(table_of({"a": x, "b": y, "c": z}), resamples=500, permutations=3000)
    ab = next(t for t in three.pairs if (t.system_a, t.system_b) == ("a", "b"))
    assert (ab.p, ab.ci_low, ab.ci_high) == (two.pairs[0].p, two.pairs[0].ci_low, two.pairs[0].ci_high)
    swapped = paired_test(y - x, "NR", "b", "a", resamples=500, permutations=3000)
    assert swapped.p == ab.p and swapped.ci_low == pytest.approx(-ab.ci_high) and swapped.better == "a"
    # the Compare two systems page's tests (its own paired table) give the same numbers
    paired = paired_sequences(table_of({"a": x, "b": y}), "a", "b", ["NR"])
    (page,) = paired_tests(paired, ["NR"], "a", "b", resamples=500, permutations=3000)
    assert (page.p, page.ci_low, page.ci_high) == (ab.p, ab.ci_low, ab.ci_high)


# --------------------------------------------------------------------------- ranks, directions, clusters


def test_a_lower_is_better_metric_ranks_ascending_and_a_descriptor_is_not_ranked() -> None:
    rows = []
    for k in range(12):
        for system, inter, p in (("few-repeats", 0.05, 0.3), ("many-repeats", 0.4, 0.2), ("some", 0.2, 0.25)):
            rows.append({"story": f"{system}{k}", "sequence": f"q{k}", "system": system, "inter": inter + 0.01 * k, "P": p})
    board = leaderboard(pd.DataFrame(rows), resamples=0, permutations=1000)
    inter = [s for s in board.standings if s.metric == "inter"]
    assert [(s.system, s.rank) for s in inter] == [("few-repeats", 1), ("some", 2), ("many-repeats", 3)]
    p = [s for s in board.standings if s.metric == "P"]
    assert {s.rank for s in p} == {None} and {s.cluster for s in p} == {None} and len(p) == 3
    assert {t.metric for t in board.pairs} == {"inter"}  # a descriptor is shown, not tested
    assert next(t for t in board.pairs if t.system_a == "few-repeats").better == "few-repeats"


def test_clusters_on_a_constructed_case() -> None:
    n = 40
    base = np.linspace(0.3, 0.7, n)
    wiggle = np.where(np.arange(n) % 2, 0.1, -0.1)  # mean 0: a and b do not differ (p = 1)
    values = {
        "a": base + 0.5,
        "b": base + 0.5 + wiggle,
        "c": base + 0.2,  # every sequence 0.3 below a: significant
        "d": base + 0.2 + wiggle / 10,  # as c
        "e": base - 0.3,
    }
    board = leaderboard(table_of(values), resamples=0, permutations=2000)
    clusters = {s.system: s.cluster for s in board.standings}
    assert clusters == {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3}
    ranks = {s.system: s.rank for s in board.standings}
    assert ranks["e"] == 5 and {ranks["a"], ranks["b"]} == {1, 2}


def test_only_sequences_every_system_wrote_for_enter() -> None:
    values = {"a": np.arange(12.0), "b": np.arange(12.0) + 1, "c": np.arange(12.0) + 2}
    table = table_of(values)
    table = table[~((table["system"] == "c") & (table["sequence"] == "q00000"))]  # c skipped one sequence
    board = leaderboard(table, resamples=0, permutations=0)
    assert {s.n for s in board.standings} == {11}
    assert next(s for s in board.standings if s.system == "a").mean == pytest.approx(sum(range(1, 12)) / 11)


def test_human_ratings_are_each_systems_mean_over_its_rated_stories(tmp_path: Path) -> None:
    from vst_core.analysis.meta_eval import read_judgements

    table = table_of({"a": np.ones(3), "b": np.zeros(3)})
    path = tmp_path / "people.csv"
    path.write_text(
        "story_id,system,rater,aspect,value\n"
        "s0,a,r1,overall,4\ns0,a,r2,overall,5\ns1,a,r1,overall,2\n"  # a: story means 4.5 and 2 -> 3.25
        "s0,b,r1,overall,1\n"
    )
    ratings = story_ratings(table, read_judgements(path))
    board = leaderboard(table, resamples=0, permutations=0, ratings=ratings)
    means = {(r.system, r.aspect): (r.mean, r.n) for r in board.ratings}
    assert means == {("a", "overall"): (3.25, 2), ("b", "overall"): (1.0, 1)}
    assert board.glance().set_index("system").loc["a", "people: overall"] == "3.2500 †"


# --------------------------------------------------------------------------- the command


def imported_scores(folder: Path, sequences: int = 14) -> Path:
    """Scores records of three systems on ``sequences`` sequences (NR, coherence, GROOVIST), imported."""
    rng = np.random.default_rng(0)
    lines = ["story_id,metric,value,system,sequence_id"]
    for k in range(sequences):
        for j, system in enumerate(("reference", "model-x", "model-y")):
            lines.append(f"s{k},R,{0.9 - 0.05 * j + rng.normal(0, 0.02):.6f},{system},q{k}")
            lines.append(f"s{k},C,{0.7 - 0.01 * j + rng.normal(0, 0.05):.6f},{system},q{k}")
            lines.append(f"s{k},G,{0.2 * j + rng.normal(0, 0.1):.6f},{system},q{k}")
    source = folder / "long.csv"
    source.write_text("\n".join(lines) + "\n")
    out = folder / "scores.jsonl"
    assert main(["import-scores", str(source), "--long", "--out", str(out)]) == 0
    return out


def test_the_command_writes_the_pairwise_fields_and_the_signature(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = imported_scores(tmp_path)
    out = tmp_path / "compare.json"
    folder = tmp_path / "csv"
    code = main(["compare", str(scores), "--json", str(out), "--csv", str(folder), "--permutations", "2000"])
    assert code == 0
    printed = capsys.readouterr().out
    document = json.loads(out.read_text())
    rows = document["pairwise"]
    assert rows and all(set(REQUIRED) <= set(row) for row in rows)
    assert {row["metric"] for row in rows} == {"NR", "coherence", "GROOVIST", "GROOVIST raw"}
    assert len(rows) == 4 * 3 and all(row["n"] == 14 and row["permutations"] >= 2000 and row["p_se"] > 0 for row in rows)
    signature = document["signature"]
    assert signature["permutations"] == 2000 and signature["resamples"] == 1000 and len(signature["id"]) == 12
    assert f"compare sig {signature['id']}" in printed and "2,000 sign-flip permutations" in printed
    nr = [s for s in document["leaderboard"] if s["metric"] == "NR"]
    assert [s["system"] for s in nr] == ["reference", "model-x", "model-y"] and nr[0]["ci_low"] is not None
    assert {d["system"] for d in document["dhm"]} == {"model-x", "model-y"}  # against the reference stories
    table = pd.read_csv(folder / "pairwise.csv")  # a plain read_csv: what produced it in a column
    assert "p_holm" in table and set(table["signature_id"].astype(str)) == {signature["id"]}
    assert str(table["provenance"].iat[0]).startswith(f"compare sig {signature['id']}")
    standings = pd.read_csv(folder / "leaderboard.csv")  # the Leaderboard page's file: its words and letters
    assert "95% low" in standings and set(standings["cluster"].dropna().astype(str)) <= set("ABCDEFGH")
    # the Python door gives the same numbers
    import vst_core as vst

    records, _ = vst.read_scores(scores)
    board = vst.compare(records, permutations=2000)
    assert [t.p for t in board.pairs] == [row["p"] for row in rows]
    assert [t.mean_difference for t in board.pairs] == pytest.approx([row["mean_difference"] for row in rows])


def test_the_paper_tables_carry_the_numbers_the_marks_and_the_signature(tmp_path: Path) -> None:
    lines = ["story_id,metric,value,system,sequence_id"]
    for k in range(12):  # "a&b_#1" beats "x%y" on every sequence: its own cluster, Holm's p < 0.05
        lines += [f"s{k},R,0.{80 + k},a&b_#1,q{k}", f"s{k},R,0.{40 + k},x%y,q{k}"]
    source, scores = tmp_path / "long.csv", tmp_path / "scores.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["import-scores", str(source), "--long", "--out", str(scores)]) == 0
    tex, md, out = tmp_path / "t.tex", tmp_path / "t.md", tmp_path / "c.json"
    assert (
        main(["compare", str(scores), "--latex", str(tex), "--markdown", str(md), "--json", str(out), "--permutations", "999"])
        == 0
    )
    document = json.loads(out.read_text())
    latex, markdown = tex.read_text(), md.read_text()
    assert latex.count("\\toprule") == 2 and latex.count("\\bottomrule") == 2 and "\\label{tab:pairwise}" in latex
    assert "a\\&b\\_\\#1" in latex and "x\\%y" in latex  # names from files escaped for LaTeX
    assert "<" not in latex.split("\\begin{tabular}")[1] and "\\textless{}" in latex  # "p < 0.05" as LaTeX text
    (nr,) = [s for s in document["leaderboard"] if s["metric"] == "NR" and s["rank"] == 1]
    # brackets escaped in Markdown (no cell becomes a link): the text renders as the number and its interval
    assert nr["system"] == "a&b_#1" and f"{nr['mean']:.4f} \\[{nr['ci_low']:.4f}, {nr['ci_high']:.4f}\\] #1·A" in markdown
    (test,) = document["pairwise"]
    assert test["p_holm"] < 0.05 and f"{test['p_holm']:.4f}\\*" in markdown and f"{test['mean_difference']:+.4f}" in latex
    assert f"compare sig {document['signature']['id']}" in latex and f"compare sig {document['signature']['id']}" in markdown


def test_the_command_says_what_it_cannot_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = imported_scores(tmp_path, sequences=3)
    assert main(["compare", str(scores), "--systems", "model-x"]) != 0
    assert main(["compare", str(scores), "--systems", "model-x,nobody"]) != 0
    assert main(["compare", str(tmp_path / "none.jsonl")]) != 0
    assert main(["compare", str(scores), "--permutations", "-1"]) != 0
    assert main(["compare", str(scores), "--systems", "model-x,model-y", "--permutations", "200"]) == 0
    out = capsys.readouterr().out
    assert "†" in out and "model-y" in out and "reference" not in out.split("dHM")[0]


def test_the_command_prints_names_from_files_as_plain_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["story_id,metric,value,system,sequence_id"]
    for k in range(3):
        lines += [f's{k},R,0.{k + 5},"evil\x1b[31m",q{k}', f"s{k},R,0.{k + 3},plain,q{k}"]
    source = tmp_path / "long.csv"
    source.write_text("\n".join(lines) + "\n")
    scores = tmp_path / "scores.jsonl"
    assert main(["import-scores", str(source), "--long", "--out", str(scores)]) == 0
    assert main(["compare", str(scores), "--permutations", "100"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil\\x1b[31m" in out


# --------------------------------------------------------------------------- the page (AppTest)


@pytest.mark.slow  # AppTest of the Leaderboard page
def test_the_page_shows_the_commands_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    from vst_core.analysis.leaderboard import cell

    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))
    scores = imported_scores(tmp_path)
    out = tmp_path / "compare.json"
    assert main(["compare", str(scores), "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["leaderboard"])
    app.session_state["source"] = "Scores JSONL (no model needed)"
    app.session_state["scores_path"] = str(scores)
    app.run()
    assert not app.exception, app.exception
    assert app.title[0].value == "Leaderboard"
    glance = next(d.value for d in app.dataframe if "NR" in d.value.columns and "system" in d.value.columns)
    glance = glance.set_index("system")
    from vst_core.analysis.intervals import SMALL_N_MARK
    from vst_core.analysis.leaderboard import Standing

    for row in document["leaderboard"]:
        assert glance.loc[row["system"], row["metric"]] == cell(Standing(**row))
    numbers = next(d.value for d in app.dataframe if "95% low" in d.value.columns)  # "Every number": no raw None
    assert set(numbers["cluster"]) <= {"A", "B", "C", "D", "E", "—", ""} and "small_n" not in numbers.columns
    assert all(v is not None for v in numbers["95% low"])
    pairs = next(d.value for d in app.dataframe if "p_holm" in d.value.columns)
    assert list(pairs["p"]) == [row["p"] for row in document["pairwise"]]
    assert list(pairs["p_holm"]) == [row["p_holm"] for row in document["pairwise"]]
    assert list(pairs["mean_difference"]) == pytest.approx([row["mean_difference"] for row in document["pairwise"]])
    assert list(pairs["ci_low"]) == [SMALL_N_MARK if row["ci_low"] is None else row["ci_low"] for row in document["pairwise"]]
    assert any(f"compare sig {document['signature']['id']} · " in c.value for c in app.caption)
    assert {"dl-board", "dl-pairs", "dl-compare", "dl-board-tex", "dl-board-md"} <= {b.key for b in app.get("download_button")}


@pytest.mark.slow  # AppTest of Compare two systems
def test_compare_two_systems_shows_the_leaderboards_test_of_the_pair() -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["systems"])
    app.run()
    assert not app.exception
    summary = app.dataframe[0].value.set_index("metric")
    a, b = app.selectbox(key="system_a").value, app.selectbox(key="system_b").value
    leaderboard_app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["leaderboard"])
    leaderboard_app.session_state["board_systems"] = [a, b]
    leaderboard_app.run()
    pairs = next(d.value for d in leaderboard_app.dataframe if "p_holm" in d.value.columns).set_index("metric")
    for metric in ("NR", "inter"):
        assert summary.loc[metric, "p"] == pytest.approx(pairs.loc[metric, "p"], abs=5e-5)  # shown rounded to 4 places
    assert summary.loc["NR", "95% interval"] == "†"  # two sequences: no interval


def test_a_paired_test_reads_the_same_at_any_scale_and_says_nothing_of_overflowing_differences() -> None:
    """p, d_z and the better system do not depend on the unit (×1e-300, ×1e200, subnormal); differences
    too large for a float are undefined (no mean, no p, no better side), not a confident answer."""
    from vst_core.analysis.paired_tests import paired_test
    from vst_core.data.exports import json_text

    x = np.random.default_rng(0).normal(0.3, 1, 50)
    tests = [paired_test(x * scale, "NR", "A", "B", permutations=2000) for scale in (1, 1e-300, 1e200, 1e-310)]
    assert len({t.p for t in tests}) == 1 and {t.better for t in tests} == {"A"}
    assert max(t.effect_size or 0 for t in tests) - min(t.effect_size or 0 for t in tests) < 1e-9
    huge = np.random.default_rng(1).choice([-1e308, 1e308], 40) * 2  # inf after the difference
    with np.errstate(over="ignore"):
        undefined = paired_test(huge, "NR", "A", "B", permutations=200)
    assert undefined.p is None and undefined.better is None and undefined.effect_size is None
    assert json_text({"mean": undefined.mean_difference}) == '{"mean": null}'


def test_a_pairs_p_near_alpha_is_the_same_with_a_third_system_and_on_the_two_system_page() -> None:
    """The refinement near α follows one rule for every pair: adding a system adds no threshold, so
    the pair's p (and its permutations) do not move, and the Compare two systems page agrees."""
    rng = np.random.default_rng(116)
    x = rng.normal(0.5, 0.1, 60)
    y = x - 0.0105 + rng.normal(0, 0.035, 60)  # p of a - b 0.0252 at 10,000 flips: near 0.025 = 0.05 / 2
    z = x + rng.normal(0, 0.05, 60)
    two = leaderboard(table_of({"a": x, "b": y}), resamples=0, permutations=10_000)
    three = leaderboard(table_of({"a": x, "b": y, "c": z}), resamples=0, permutations=10_000)
    ab = next(t for t in three.pairs if {t.system_a, t.system_b} == {"a", "b"})
    assert (ab.p, ab.permutations) == (two.pairs[0].p, two.pairs[0].permutations)
    (page,) = paired_tests(
        paired_sequences(table_of({"a": x, "b": y}), "a", "b", ["NR"]), ["NR"], "a", "b", resamples=0, permutations=10_000
    )
    assert (page.p, page.permutations) == (ab.p, ab.permutations)
