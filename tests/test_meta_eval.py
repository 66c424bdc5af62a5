"""Meta-evaluation: every statistic against scipy or a hand computation, readers and bad input."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, SAMPLE
from scipy import stats

from vst_core.analysis.meta_eval import (
    Judgements,
    JudgementsError,
    MetaSettings,
    aggregate,
    best_per_aspect,
    binned_correlations,
    bootstrap_samples,
    correlate,
    correlation_table,
    error_table,
    inter_rater,
    match_report,
    mode_split,
    pairs_from_ratings,
    pairwise_accuracy,
    pairwise_table,
    read_judgements,
    run_meta_eval,
    system_means,
)
from vst_core.cli import main
from vst_core.data import load_records
from vst_core.formulas.baselines import baseline_scores, normalize, reference_sets
from vst_core.records import StoryScores

EXAMPLE = ROOT / "assets" / "sample" / "human_example.csv"
SCIPY = {
    "spearman": lambda x, y: stats.spearmanr(x, y),
    "pearson": lambda x, y: stats.pearsonr(x, y),
    "kendall_b": lambda x, y: stats.kendalltau(x, y, variant="b"),
    "kendall_c": lambda x, y: stats.kendalltau(x, y, variant="c"),
}


def csv(text: str) -> bytes:
    return text.strip().encode() + b"\n"


# ------------------------------------------------------------------ correlations


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_coefficient_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=60)
    y = np.round(0.5 * x + rng.normal(size=60), 1)  # rounded: ties, where τ-b and τ-c differ
    result = correlate(x, y, resamples=0)
    for method, reference in SCIPY.items():
        expected = reference(x, y)
        assert result[method].value == pytest.approx(expected.statistic, abs=1e-12)
        assert result[method].p == pytest.approx(expected.pvalue, rel=1e-9)
        assert result[method].n == 60 and result[method].undefined is None
    assert result["kendall_b"].value != pytest.approx(result["kendall_c"].value, abs=1e-6)


def test_bootstrap_interval_contains_estimate_and_is_seeded() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    first = correlate(x, y, resamples=400, seed=7)
    again = correlate(x, y, resamples=400, seed=7)
    other = correlate(x, y, resamples=400, seed=8)
    for method, r in first.items():
        assert r.ci_low is not None and r.ci_high is not None
        assert r.ci_low <= r.value <= r.ci_high
        assert (again[method].ci_low, again[method].ci_high) == (r.ci_low, r.ci_high)
        assert (other[method].ci_low, other[method].ci_high) != (r.ci_low, r.ci_high)
    wider = correlate(x, y, resamples=400, seed=7, confidence=0.99)["pearson"]
    assert wider.ci_low < first["pearson"].ci_low and wider.ci_high > first["pearson"].ci_high


@pytest.mark.parametrize("method", list(SCIPY))
def test_vectorised_bootstrap_equals_scipy_on_each_resample(method: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, 30).astype(float)  # many ties
    y = np.round(x + rng.normal(0, 1.5, 30))
    boot = bootstrap_samples(method, x, y, 60, seed=11)
    idx = np.random.default_rng(11).integers(0, 30, size=(60, 30))
    expected = np.array([SCIPY[method](x[i], y[i]).statistic for i in idx])
    np.testing.assert_allclose(boot, expected, atol=1e-12)


def test_undefined_is_reported_never_zero() -> None:
    constant = correlate([0.5] * 6, [1, 2, 3, 4, 5, 6], resamples=10)
    assert all(r.value is None and "metric is constant" in (r.undefined or "") for r in constant.values())
    flat_human = correlate([1, 2, 3, 4], [3, 3, 3, 3], resamples=10)["spearman"]
    assert flat_human.value is None and "human score is constant" in (flat_human.undefined or "")
    few = correlate([1.0, np.nan, 3.0, 4.0], [1.0, 2.0, np.nan, 5.0])["pearson"]
    assert few.value is None and few.n == 2 and "fewer than 3" in (few.undefined or "")
    with_nan = correlate([1, 2, np.nan, 4, 5, 7], [2, 1, 9, 4, 6, 5], resamples=0)["spearman"]
    assert with_nan.n == 5
    assert with_nan.value == pytest.approx(stats.spearmanr([1, 2, 4, 5, 7], [2, 1, 4, 6, 5]).statistic)


def test_system_level_on_a_hand_computed_example() -> None:
    data = pd.DataFrame(
        {
            "system": ["A", "A", "B", "C", "C"],
            "m": [1.0, 3.0, 5.0, 0.0, 2.0],
            "h": [2.0, 4.0, 1.0, 5.0, np.nan],
        }
    )
    means = system_means(data, ["m", "h"])
    assert means.loc["A"].tolist() == [2.0, 3.0]
    assert means.loc["B"].tolist() == [5.0, 1.0]
    assert means.loc["C"].tolist() == [1.0, 5.0]  # the missing rating is left out of C's mean
    table = correlation_table(data, ["m"], ["h"], MetaSettings(resamples=0), level="system")
    rho = table.set_index("method").loc["spearman"]
    assert rho["value"] == pytest.approx(-1.0) and rho["n"] == 3  # C<A<B by metric, B<A<C by humans
    pearson = table.set_index("method").loc["pearson", "value"]
    assert pearson == pytest.approx(np.corrcoef([2, 5, 1], [3, 1, 5])[0, 1])


def test_best_metric_per_aspect_ignores_undefined() -> None:
    table = pd.DataFrame(
        {
            "metric": ["a", "b", "c", "a", "b"],
            "aspect": ["g", "g", "g", "o", "o"],
            "method": ["pearson"] * 5,
            "value": [0.2, 0.5, np.nan, -0.1, -0.1],
        }
    )
    assert best_per_aspect(table, "pearson") == {"g": {"b"}, "o": {"a", "b"}}
    alone = table[table["metric"] == "a"]
    assert best_per_aspect(alone, "pearson") == {}  # one metric: nothing to compare, no "best"


def test_correlation_cells_give_n_the_small_n_flag_and_the_reason() -> None:
    from vst_core.viz import correlation_cells

    table = pd.DataFrame(
        {
            "metric": ["a", "a", "b"],
            "aspect": ["g", "o", "g"],
            "method": ["pearson"] * 3,
            "value": [0.5, np.nan, 0.25],
            "p": [0.01, np.nan, 0.2],
            "n": [40, 2, 3],
            "ci_low": [0.2, np.nan, 0.25],
            "ci_high": [0.7, np.nan, 0.25],
            "undefined": [None, "fewer than 3 stories", None],
        }
    )
    cells = correlation_cells(table, "pearson")
    assert cells.loc["a", "g"] == "+0.500 [+0.20, +0.70] * (N 40)"
    assert cells.loc["a", "o"] == "undefined: fewer than 3 stories (N 2)"
    assert cells.loc["b", "g"] == "+0.250 (N 3)†"  # a zero-width interval over 3 points is not shown


# ------------------------------------------------------------------ pairwise accuracy


def hand_pairs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sequence_id": ["s"] * 5,
            "better": ["a", "c", "e", "g", "i"],
            "worse": ["b", "d", "f", "h", "j"],
            "gap": [0.05, 0.15, 0.15, 0.4, 0.3],
            "agreement": [3, 4, 5, 5, 4],
        }
    )


def test_pairwise_accuracy_ties_count_as_wrong() -> None:
    scores = {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.5, "e": 0.2, "f": 0.3, "g": 1.0, "h": 0.0, "i": 0.4}
    result = pairwise_accuracy(hand_pairs(), scores)
    # a>b correct, c=d tie (wrong), e<f wrong, g>h correct, j unscored (left out)
    assert result == {"n": 4, "correct": 2, "ties": 1, "missing": 1, "accuracy": 0.5, "undefined": None}


def test_pairwise_table_by_agreement_and_gap_bins() -> None:
    data = pd.DataFrame(
        {"m": {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.5, "e": 0.2, "f": 0.3, "g": 1.0, "h": 0.0, "i": 0.4, "j": 0.1}}
    )
    table = pairwise_table(hand_pairs(), data, ["m"], edges=[0, 0.1, 0.2, 0.5])
    by = table.set_index("subset")
    assert by.loc["all pairs", "n"] == 5 and by.loc["all pairs", "accuracy"] == pytest.approx(3 / 5)
    assert by.loc["agreement = 3", "accuracy"] == 1.0  # a>b
    assert by.loc["agreement = 4", "correct"] == 1 and by.loc["agreement = 4", "n"] == 2  # c=d tie, i>j
    assert by.loc["agreement = 5", "accuracy"] == 0.5  # e<f, g>h
    assert by.loc["gap [0, 0.1]", "accuracy"] == 1.0  # the first bin is closed: it holds the smallest gap
    assert by.loc["gap (0.1, 0.2]", "n"] == 2 and by.loc["gap (0.1, 0.2]", "correct"] == 0
    assert by.loc["gap (0.2, 0.5]", "n"] == 2 and by.loc["gap (0.2, 0.5]", "accuracy"] == 1.0


def test_pairs_derived_from_ratings_of_one_sequence() -> None:
    human = pd.Series({"x": 3.0, "y": 1.0, "z": 3.0, "w": 2.0})
    seqs = pd.Series({"x": "s1", "y": "s1", "z": "s1", "w": "s2"})
    ratings = pd.DataFrame(
        {
            "story_id": ["x", "x", "y", "y", "z", "z"],
            "rater": ["r1", "r2"] * 3,
            "aspect": ["o"] * 6,
            "value": [4.0, 2.0, 1.0, 1.0, 3.0, 3.0],
            "system": [None] * 6,
        }
    )
    pairs = pairs_from_ratings(human, seqs, ratings, "o")
    assert sorted(zip(pairs["better"], pairs["worse"], pairs["gap"])) == [("x", "y", 2.0), ("z", "y", 2.0)]
    assert dict(zip(pairs["better"], pairs["agreement"])) == {"x": 2.0, "z": 2.0}  # x=z: no pair; w alone


def test_pairwise_file_reader_orders_by_rank_and_drops_ties() -> None:
    j = read_judgements(
        csv("""
sequence_id,story_a,story_b,rank_a,rank_b,agreement
s,a,b,1.2,3.4,4
s,c,d,2.5,1.5,3
s,e,f,2,2,3
""")
    )
    assert j.layout == "pairwise"
    assert list(zip(j.pairs["better"], j.pairs["worse"])) == [("a", "b"), ("d", "c")]
    assert j.pairs["gap"].tolist() == pytest.approx([2.2, 1.0])
    assert any("equal human ranks" in p for p in j.problems)


# ------------------------------------------------------------------ bins and error labels


def test_misalignment_and_proportion_bins_on_a_hand_built_set() -> None:
    data = pd.DataFrame(
        {
            "T": [0.2, 0.5, 0.9, 1.0, 1.2, 1.5, 0.3],
            "P": [0.2, 0.2, 0.3, 0.2, 0.4, 0.25, 0.1],
            "m": [0.1, 0.4, 0.3, 0.9, 0.5, 0.7, 0.2],
            "h": [1.0, 3.0, 2.0, 5.0, 4.0, 3.0, 2.0],
        }
    )
    t_bins = binned_correlations(data, ["m"], "h", "T", 1.0, "kendall_c").set_index("bin")
    low, high = t_bins.loc["low T (< 1)"], t_bins.loc["high T (≥ 1)"]  # T = 1.0 is high
    assert low["n"] == 4 and high["n"] == 3
    assert low["value"] == pytest.approx(stats.kendalltau([0.1, 0.4, 0.3, 0.2], [1, 3, 2, 2], variant="c").statistic)
    assert high["value"] == pytest.approx(stats.kendalltau([0.9, 0.5, 0.7], [5, 4, 3], variant="c").statistic)
    assert mode_split(data["P"]) == 0.2
    p_bins = binned_correlations(data, ["m"], "h", "P", 0.2, "kendall_c", high_inclusive=False).set_index("bin")
    assert p_bins.loc["low P (≤ 0.2)", "n"] == 4 and p_bins.loc["high P (> 0.2)", "n"] == 3


def test_mode_split_breaks_ties_low() -> None:
    assert mode_split(pd.Series([0.3, 0.3, 0.1, 0.1, 0.5])) == 0.1
    assert mode_split(pd.Series([np.nan])) is None


def test_point_biserial_error_correlation_matches_scipy() -> None:
    rng = np.random.default_rng(4)
    err = rng.integers(0, 2, 40).astype(float)
    metric = rng.normal(size=40) - err
    data = pd.DataFrame({"m": metric, "repetition": err, "grammar": np.zeros(40)})
    table = error_table(data, ["m"], ["repetition", "grammar"]).set_index("error")
    expected = stats.pointbiserialr(err, metric)
    assert table.loc["repetition", "r_pb"] == pytest.approx(expected.statistic)
    assert table.loc["repetition", "p"] == pytest.approx(expected.pvalue)
    assert table.loc["repetition", "r_pb"] < 0
    assert pd.isna(table.loc["grammar", "r_pb"]) and "grammar = 0" in table.loc["grammar", "undefined"]


# ------------------------------------------------------------------ readers and bad input


def test_long_reader_aggregates_raters_and_splits_error_labels() -> None:
    j = read_judgements(
        csv("""
# made-up header line
story_id,rater,aspect,value
s1,r1,overall,4
s1,r2,overall,2
s1,r3,overall,5
s2,r1,overall,1
s2,r2,overall,2
s1,r1,Repetition,1
s1,r2,Repetition,0
s1,r3,repetition,1
s2,r1,rep,0
""")
    )
    assert j.layout == "long" and j.aspects == ["overall"] and j.error_tags == ["repetition"]
    mean = aggregate(j, "mean")
    assert mean.loc["s1", "overall"] == pytest.approx(11 / 3) and mean.loc["s2", "overall"] == 1.5
    assert aggregate(j, "median").loc["s1", "overall"] == 4.0
    assert mean.loc["s1", "repetition"] == 1.0 and mean.loc["s2", "repetition"] == 0.0  # majority vote


def test_wide_reader_with_system_column() -> None:
    j = read_judgements(
        csv("""
story_id,system,grounding,coherence
a,m1,4,3
b,m2,2,5
""")
    )
    assert j.layout == "wide" and j.aspects == ["grounding", "coherence"]
    assert set(j.ratings["system"]) == {"m1", "m2"}
    assert aggregate(j).loc["b"].tolist() == [2.0, 5.0]


def test_bad_input_is_reported_not_fatal() -> None:
    j = read_judgements(
        csv("""
story_id,rater,aspect,value
a,r1,overall,4
a,r1,overall,4
b,r1,overall,good
c,r1,overall,
d,r1,overall,3
d,r1,fluency,2
e,r1,fluency,2
""")
    )
    text = " | ".join(j.problems)
    assert "1 duplicated row" in text
    assert "non-numeric value(s) ('good'; lines [4])" in text
    assert "1 missing value" in text
    assert "aspect 'fluency' is constant" in text
    assert aggregate(j)["overall"].dropna().to_dict() == {"a": 4.0, "d": 3.0}
    alpha = inter_rater(j).set_index("aspect")
    assert pd.isna(alpha.loc["overall", "alpha"]) and alpha.loc["overall", "note"] == "undefined: only one rater"


def test_unreadable_files_raise_a_clear_error() -> None:
    with pytest.raises(JudgementsError, match="no story_id column"):
        read_judgements(csv("id,score\na,1"))
    with pytest.raises(JudgementsError, match="no usable numeric"):
        read_judgements(csv("story_id,overall\na,good\nb,bad"))
    with pytest.raises(JudgementsError, match="empty"):
        read_judgements(b"# only a comment\n")


def test_krippendorff_alpha_on_hand_examples() -> None:
    perfect = read_judgements(csv("story_id,rater,aspect,value\na,r1,o,1\nb,r1,o,2\nc,r1,o,3\na,r2,o,1\nb,r2,o,2\nc,r2,o,3"))
    assert inter_rater(perfect).loc[0, "alpha"] == pytest.approx(1.0)
    # two raters, two stories, interval level: values (1,2) and (2,1): D_o = 1, D_e = 2/3 -> α = 1 - 3/2
    crossed = read_judgements(csv("story_id,rater,aspect,value\na,r1,o,1\nb,r1,o,2\na,r2,o,2\nb,r2,o,1"))
    assert inter_rater(crossed).loc[0, "alpha"] == pytest.approx(-0.5)
    anonymous = read_judgements(csv("story_id,aspect,value\na,o,1\na,o,2"))
    assert "no rater column" in inter_rater(anonymous).loc[0, "note"]


def test_match_report_names_unmatched_ids() -> None:
    report = match_report(["a", "b", "c"], ["b", "c", "x", "y"])
    assert report["matched"] == 2 and report["judged_not_scored"] == ["x", "y"] and report["scored_not_judged"] == ["a"]


# ------------------------------------------------------------------ baselines


@pytest.mark.slow  # METEOR starts a Java process
def test_references_exclude_the_story_itself() -> None:
    records = [
        StoryScores("r1", "s", "reference", ("The dog ran.",)),
        StoryScores("r2", "s", "reference", ("A cat sat.",)),
        StoryScores("copy", "s", "model", ("The dog ran.",)),
        StoryScores("m", "s", "model", ("The cat sat.",)),
        StoryScores("o", "t", "model", ("Alone.",)),
    ]
    refs = reference_sets(records)
    # Vrank Eq. 3: a reference identical to the candidate is left out, as is the story itself
    assert refs == {
        "r1": ["a cat sat ."],
        "r2": ["the dog ran ."],
        "copy": ["a cat sat ."],
        "m": ["the dog ran .", "a cat sat ."],
    }
    scores, unavailable = baseline_scores(records)
    assert scores["m"]["BLEU-1"] == pytest.approx(1.0)  # every word is in some reference, same length
    assert scores["m"]["BLEU-2"] < 1.0 and 0 < scores["m"]["ROUGE-L"] < 1.0
    assert "o" not in scores  # no reference for its sequence: no number
    if shutil.which("java"):
        assert "METEOR" not in unavailable and 0 < scores["copy"]["METEOR"] < scores["m"]["METEOR"] < 1
    else:
        assert "Java" in unavailable["METEOR"]
    assert normalize("Hello, World!") == "hello , world !"


def test_no_references_means_every_baseline_is_unavailable() -> None:
    scores, unavailable = baseline_scores([StoryScores("m", "s", "model", ("x",))])
    assert scores == {} and set(unavailable) == {"BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "ROUGE-L", "CIDEr", "METEOR"}


# ------------------------------------------------------------------ end to end: library and CLI agree


@pytest.fixture(scope="module")
def sample_scores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("meta") / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--no-progress"]) == 0
    return out


def test_report_on_the_sample(sample_scores: Path) -> None:
    records, _ = load_records(sample_scores)
    settings = MetaSettings(resamples=200, baselines=False)
    report = run_meta_eval(records, read_judgements(EXAMPLE), settings)
    assert report.match["matched"] == 8 and report.metrics == ["NR"]
    assert report.aspects == ["grounding", "coherence", "non_redundancy", "overall"]
    nr = report.correlations.set_index(["aspect", "method"]).loc[("non_redundancy", "spearman")]
    human = aggregate(read_judgements(EXAMPLE))["non_redundancy"]
    metric = pd.Series({r.story_id: r.metrics["redundancy"].score for r in records if r.metrics.get("redundancy")})
    assert nr["value"] == pytest.approx(stats.spearmanr(metric[human.index], human).statistic)
    assert nr["value"] > 0.5  # the repetitive stories are the ones rated low on non-redundancy
    assert report.pairs_source.startswith("every two stories") and len(report.pairs) > 0
    assert report.signature["scores_signatures"] == [records[0].signature_id]
    table = pd.read_csv(io.StringIO(report.csv("pairwise_accuracy")))
    assert (table["signature_id"].astype(str) == report.signature["id"]).all()
    assert str(table["provenance"].iat[0]).startswith(f"meta-eval sig {report.signature['id']}")
    json.dumps(report.to_json())


@pytest.mark.slow  # the CLI with resamples and CSV tables; the CLI's matching is tested below
def test_cli_writes_the_same_numbers(sample_scores: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(
        [
            "meta-eval",
            str(sample_scores),
            str(EXAMPLE),
            "--out",
            str(out),
            "--csv",
            str(tmp_path / "csv"),
            "--resamples",
            "200",
            "--no-baselines",
        ]
    )
    assert code == 0
    written = json.loads(out.read_text())
    records, _ = load_records(sample_scores)
    expected = run_meta_eval(records, read_judgements(EXAMPLE), MetaSettings(resamples=200, baselines=False)).to_json()
    assert written["correlations"] == expected["correlations"]
    assert written["pairwise_accuracy"] == expected["pairwise_accuracy"]
    assert written["signature"]["id"] == expected["signature"]["id"]
    tables = sorted(p.name for p in (tmp_path / "csv").iterdir())
    assert "agreement_with_humans.csv" in tables and "bins.csv" in tables
    system_level = pd.read_csv(tmp_path / "csv" / "system_level.csv", dtype={"signature_id": str})
    assert str(system_level["provenance"].iat[0]).startswith("meta-eval sig ") and system_level["signature_id"].notna().all()


def test_cli_reports_ids_that_do_not_match(sample_scores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    human = tmp_path / "human.csv"
    human.write_text("story_id,overall\nnope-1,3\nnope-2,4\n")
    assert main(["meta-eval", str(sample_scores), str(human), "--out", str(tmp_path / "r.json"), "--no-baselines"]) == 3
    err = capsys.readouterr().err
    assert "matched 0 of 2 judged stories" in err and "nope-1" in err
    assert main(["meta-eval", str(sample_scores), str(tmp_path / "missing.csv"), "--out", str(tmp_path / "r.json")]) == 3
    assert main(["meta-eval", str(sample_scores), str(human), "--out", "r.json", "--gap-bins", "0.3,0.1"]) == 2


def test_partial_match_keeps_going(sample_scores: Path) -> None:
    records, _ = load_records(sample_scores)
    j: Judgements = read_judgements(csv("story_id,overall\nspace-ref,5\nspace-generic,1\nhome-ref,4\nhome-generic,2\nghost,3"))
    report = run_meta_eval(records, j, MetaSettings(resamples=0, baselines=False))
    assert report.match["matched"] == 4 and report.match["judged_not_scored"] == ["ghost"]
    assert any("1 judged story id(s) have no scores" in p for p in report.problems)
    assert report.correlations.set_index("method").loc["spearman", "n"] == 4


def test_pairs_can_be_ordered_by_another_aspect(sample_scores: Path) -> None:
    records, _ = load_records(sample_scores)
    j = read_judgements(EXAMPLE)
    default = run_meta_eval(records, j, MetaSettings(resamples=0, baselines=False))
    by_nr = run_meta_eval(records, j, MetaSettings(resamples=0, baselines=False, pair_aspect="non_redundancy"))
    assert "'overall'" in default.pairs_source and "'non_redundancy'" in by_nr.pairs_source
    assert by_nr.signature["id"] != default.signature["id"]
    nr_all = by_nr.pairwise.set_index(["metric", "subset"]).loc[("NR", "all pairs")]
    human = aggregate(j)
    metric = {r.story_id: r.metrics["redundancy"].score for r in records if r.metrics.get("redundancy")}
    correct = total = 0
    for seq in ("space", "home"):
        ids = [f"{seq}-{k}" for k in ("ref", "grounded", "generic", "offtopic")]
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                ha, hb = human.at[a, "non_redundancy"], human.at[b, "non_redundancy"]
                if ha != hb:
                    total += 1
                    correct += (metric[a] - metric[b]) * (ha - hb) > 0
    assert (nr_all["n"], nr_all["correct"]) == (total, correct)


def test_large_sets_bootstrap_kendall_with_scipy_per_resample() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(size=1200)
    y = np.round(x + rng.normal(size=1200))
    boot = bootstrap_samples("kendall_c", x, y, 3, seed=2)
    idx = np.random.default_rng(2).integers(0, 1200, size=(3, 1200))
    np.testing.assert_allclose(boot, [stats.kendalltau(x[i], y[i], variant="c").statistic for i in idx])


def test_aspect_named_like_a_metric_is_renamed(sample_scores: Path) -> None:
    records, _ = load_records(sample_scores)
    j = read_judgements(csv("story_id,NR,coherence\nspace-ref,5,4\nspace-generic,1,3\nhome-ref,4,5\nhome-generic,2,2"))
    report = run_meta_eval(records, j, MetaSettings(resamples=0, baselines=False))
    assert report.aspects == ["NR (human)", "coherence"]
    assert any("NR -> NR (human)" in p for p in report.problems)
    row = report.correlations.set_index(["aspect", "method"]).loc[("NR (human)", "pearson")]
    assert row["metric"] == "NR" and row["n"] == 4


# ------------------------------------------------------------------ exact gaps, common raters, pair aspect


def test_gaps_of_means_are_exact_and_bins_carry_their_true_edges() -> None:
    from vst_core.analysis.meta_eval import gap_edges, pairs_from_ratings, pairwise_table

    # means of five raters: 4.4 - 4.2 and 3.4 - 3.2 are both 0.2, though not in floating point
    human = pd.Series({"a": 22 / 5, "b": 21 / 5, "c": 17 / 5, "d": 16 / 5, "e": 4.0, "f": 3.6})
    sequences = pd.Series({"a": "s", "b": "s", "c": "t", "d": "t", "e": "u", "f": "u"})
    assert 22 / 5 - 21 / 5 != 17 / 5 - 16 / 5  # the float problem this guards against
    pairs = pairs_from_ratings(human, sequences)
    assert sorted(pairs["gap"]) == [0.2, 0.2, 0.4]
    assert gap_edges(pairs["gap"], 2) == [0.2, 0.4]
    table = pairwise_table(pairs, pd.DataFrame({"m": human}), ["m"], edges=[0.2, 0.4])
    by = table.set_index("subset")
    assert by.loc["gap [0.2, 0.4]", "n"] == 3  # the first bin holds the smallest gaps: no "(0.2, 0.2]"
    assert table.attrs["outside_bins"] == 0


def test_agreement_counts_only_raters_who_judged_both_stories() -> None:
    from vst_core.analysis.meta_eval import pairs_from_ratings, pairwise_table

    ratings = pd.DataFrame(
        [  # r1 and r2 judged a and b; r3 judged only a; c and d were judged by different raters
            ("a", "r1", 5),
            ("a", "r2", 4),
            ("a", "r3", 1),
            ("b", "r1", 3),
            ("b", "r2", 5),
            ("c", "r1", 4),
            ("d", "r2", 2),
        ],
        columns=["story_id", "rater", "value"],
    ).assign(aspect="overall", system=None)
    human = ratings.groupby("story_id")["value"].mean()
    pairs = pairs_from_ratings(human, pd.Series({"a": "s", "b": "s", "c": "t", "d": "t"}), ratings, "overall")
    ab = pairs[pairs["sequence_id"] == "s"].iloc[0]
    cd = pairs[pairs["sequence_id"] == "t"].iloc[0]
    assert (ab["better"], ab["raters"], ab["agreement"]) == ("b", 2.0, 1.0)  # mean b 4.0 > a 3.33; r2 agrees, r1 not
    assert cd["raters"] == 0 and np.isnan(cd["agreement"])  # no rater ordered this pair: not "agreement 0"
    subsets = set(pairwise_table(pairs, pd.DataFrame({"m": {"a": 0, "b": 1, "c": 1, "d": 0}}), ["m"])["subset"])
    assert {"agreement = 1", "no common rater"} <= subsets and "agreement = 0" not in subsets


def test_pairs_by_the_mean_of_aspects_are_stated_and_exported(sample_scores: Path, tmp_path: Path) -> None:
    records, _ = load_records(sample_scores)
    j = read_judgements(EXAMPLE)
    report = run_meta_eval(records, j, MetaSettings(resamples=0, baselines=False, pair_aspect="mean"))
    assert "mean of the mean ratings of grounding, coherence, non_redundancy, overall" in report.pairs_source
    human = aggregate(j)[["grounding", "coherence", "non_redundancy", "overall"]].mean(axis=1)
    for row in report.pairs.itertuples():
        assert human[row.better] > human[row.worse]
    assert "pairs" in report.tables() and report.csv("pairs").count("\n") == len(report.pairs) + 1  # the header and a line a pair
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "meta-eval",
                str(sample_scores),
                str(EXAMPLE),
                "--out",
                str(out),
                "--resamples",
                "0",
                "--no-baselines",
                "--pair-aspect",
                "mean",
                "--no-progress",
            ]
        )
        == 0
    )
    written = json.loads(out.read_text())
    assert "mean of the mean ratings" in written["pairs_source"]
    value = written["correlations"][0]["value"]
    assert value == report.correlations.iloc[0]["value"]  # full float precision in the JSON


def test_ratings_of_several_groups_under_one_id_are_refused() -> None:
    csv = b"story_id,team,overall\na,t1,3\na,t2,5\nb,t1,4\nb,t2,2\n"
    with pytest.raises(JudgementsError, match="column 'team' has 2 values under one story_id"):
        read_judgements(csv)
    ids = read_judgements(b"story_id,album_id,overall\na,17,3\nb,18,4\n")
    assert ids.aspects == ["overall"] and any("album_id" in p and "identifiers" in p for p in ids.problems)
    named = read_judgements(b"story_id,album_id,overall\na,17,3\nb,18,4\n", aspects=["album_id", "overall"])
    assert named.aspects == ["album_id", "overall"]


def test_non_finite_ratings_are_reported_and_left_out() -> None:
    j = read_judgements(b"story_id,overall,fluency\na,3,inf\nb,4,2\nc,5,1e308\nd,2,3\n")
    assert j.ratings[j.ratings["aspect"] == "fluency"]["value"].tolist() == [2.0, 3.0]
    assert any("infinite or out-of-range" in p for p in j.problems)


def test_the_meta_evaluation_signature_names_its_inputs(sample_scores: Path) -> None:
    records, _ = load_records(sample_scores)
    one = read_judgements(EXAMPLE)
    other = read_judgements(EXAMPLE.read_bytes().replace(b"\n", b"\n", 1) + b"\n")  # same content, other bytes
    settings = MetaSettings(resamples=0, baselines=False)
    a = run_meta_eval(records, one, settings)
    assert a.signature["judgements_sha256"] == one.digest and len(one.digest) == 64
    assert a.signature["metrics"] == a.metrics and a.signature["aspects"] == a.aspects
    assert run_meta_eval(records, other, settings).signature["id"] != a.signature["id"]
    assert run_meta_eval(records, one, settings, aspects=["overall"]).signature["id"] != a.signature["id"]


@pytest.mark.slow  # starts Java for the PTB tokenizer and METEOR
def test_baselines_only_for_judged_stories_with_the_ptb_tokenizer_when_java_runs() -> None:
    from vst_core.formulas.baselines import baseline_tokenizer, tokenize_stories

    records = [
        StoryScores("r1", "s", "reference", ("The dog ran to grandpa's house.",)),
        StoryScores("m", "s", "model", ("The dog ran home.",)),
        StoryScores("n", "s", "model", ("A cat sat.",)),
        StoryScores("x", "t", "model", ("Nobody judged me.",)),
        StoryScores("r2", "t", "reference", ("Nobody judged this either.",)),
    ]
    scores, _ = baseline_scores(records, only={"m"})
    assert set(scores) == {"m"}  # neither n nor the other sequence is tokenised or scored
    tokens = tokenize_stories({"a": "Grandpa's house, finally!"})
    if shutil.which("java"):
        assert "PTB" in baseline_tokenizer() and tokens == {"a": "grandpa 's house finally"}  # punctuation dropped
    else:
        assert "no Java" in baseline_tokenizer() and tokens == {"a": normalize("Grandpa's house, finally!")}


@pytest.mark.parametrize(
    "method",
    ["spearman", *(pytest.param(m, marks=pytest.mark.slow) for m in ("pearson", "kendall_b", "kendall_c"))],  # 0.4 s each
)
def test_bootstrap_intervals_equal_scipy_stats_bootstrap(method: str) -> None:
    """Same resamples (one draw of (resamples, n) indices from default_rng(seed)), same percentile
    rule: the interval equals scipy.stats.bootstrap(paired, percentile) to float rounding."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    y[:5] = np.round(y[:5])  # a few ties
    statistic = {
        "spearman": lambda a, b: stats.spearmanr(a, b).statistic,
        "pearson": lambda a, b: stats.pearsonr(a, b).statistic,
        "kendall_b": lambda a, b: stats.kendalltau(a, b).statistic,
        "kendall_c": lambda a, b: stats.kendalltau(a, b, variant="c").statistic,
    }[method]
    ours = correlate(x, y, [method], resamples=999, seed=3, confidence=0.9)[method]
    theirs = stats.bootstrap(
        (x, y),
        statistic,
        paired=True,
        vectorized=False,
        n_resamples=999,
        method="percentile",
        confidence_level=0.9,
        random_state=np.random.default_rng(3),
    ).confidence_interval
    assert ours.ci_low == pytest.approx(theirs.low, abs=1e-12)
    assert ours.ci_high == pytest.approx(theirs.high, abs=1e-12)


@pytest.mark.slow  # starts Java for the PTB tokenizer
def test_the_baselines_say_what_they_did_as_information_and_leave_meteor_to_a_request(tmp_path: Path) -> None:
    from conftest import SAMPLE

    from vst_core.cli import main

    scores, out = tmp_path / "scores.jsonl", tmp_path / "report.json"
    assert main(["score", str(SAMPLE), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    human = SAMPLE.parent / "human_example.csv"
    assert main(["meta-eval", str(scores), str(human), "--out", str(out), "--no-progress", "--resamples", "50"]) == 0
    report = json.loads(out.read_text())
    assert any(n.startswith("baselines: BLEU-1..4, ROUGE-L, CIDEr") and "METEOR on request" in n for n in report["notes"])
    assert "BLEU-4" in report["metrics"] and "METEOR" not in report["metrics"]
    assert not any("tokenised" in p for p in report.get("problems", []))


def test_a_cell_with_a_unicode_line_separator_keeps_its_row(tmp_path: Path) -> None:
    """Only CR and LF end a CSV row: a rater or aspect pasted with U+2028, U+2029, U+0085, \\v or \\f
    keeps every rating (splitting on them lost a third of a file's rows)."""
    from vst_core.analysis.meta_eval import read_judgements

    odd = ["ann\u2028a", "bob\u2029b", "cy\x85c", "dee\x0bd", "eve\x0ce"]
    rows = ["story_id,rater,aspect,value"] + [f"s{i},{r},overall,{i % 5 + 1}" for i in range(6) for r in odd]
    path = tmp_path / "j.csv"
    path.write_text("\r\n".join(rows) + "\r\n", encoding="utf-8")
    judgements = read_judgements(path)
    assert len(judgements.ratings) == 30
    assert set(judgements.ratings["rater"]) == set(odd)


def test_meta_eval_prints_its_table_with_the_coefficient_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``vst meta-eval`` prints the story-level agreement of each metric with each aspect, naming
    the coefficient, each cell the JSON's value and N."""
    from vst_core.cli import main

    scores, out = tmp_path / "s.jsonl", tmp_path / "r.json"
    assert main(["score", str(SAMPLE), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    capsys.readouterr()
    args = ["meta-eval", str(scores), str(SAMPLE.parent / "human_example.csv"), "--out", str(out), "--no-progress"]
    assert main([*args, "--resamples", "0", "--no-baselines", "--permutations", "0"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("Spearman ρ of each metric with the human ratings, story level")
    row = next(line.split() for line in printed if line.strip().startswith("NR "))
    want = next(
        r for r in json.loads(out.read_text())["correlations"]
        if (r["level"], r["metric"], r["aspect"], r["method"]) == ("story", "NR", "overall", "spearman")
    )  # fmt: skip
    overall = printed[1].split().index("overall")
    assert float(row[1 + 3 * (overall - 1)]) == pytest.approx(want["value"], abs=5e-4) and f"{want['n']}" in row
