"""Metric against metric, against people: Williams' test from its formula by hand, PERM-BOTH and
the paired bootstrap against loops written here (and scipy's permutation test), direction, and a run
on VIST-Edit's layout through the reader and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_public_judgements import VIST_EDIT_HEADER, write_scores

from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.versus import (
    VersusSettings,
    accuracy_difference,
    correlation_difference,
    pair_verdicts,
    versus_accuracy,
    versus_correlations,
    versus_matrix,
    williams_test,
)
from vst_core.cli import main
from vst_core.metrics.clipscore import ClipScoreScores
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores


def test_williams_t_equals_the_formula_worked_by_hand() -> None:
    # r12 = 0.6, r13 = 0.4, r23 = 0.5, n = 100:
    # |R| = 1 - 0.36 - 0.16 - 0.25 + 2(0.6)(0.4)(0.5) = 0.47
    # denominator = 2 (99/97) 0.47 + (1.0² / 4)(0.5)³ = 0.959381... + 0.03125 = 0.990631...
    # t = 0.2 √(99 · 1.5) / √0.990631 = 2.437212 / 0.995305 = 2.44871
    t, p = williams_test(0.6, 0.4, 0.5, 100)
    assert t == pytest.approx(2.44871, abs=1e-4)
    assert p == pytest.approx(2 * (1 - stats.t.cdf(2.44871, 97)), rel=1e-3)
    t2, p2 = williams_test(0.4, 0.6, 0.5, 100)
    assert t2 == pytest.approx(-t) and p2 == pytest.approx(p)
    assert math.isnan(williams_test(0.5, 0.4, 0.3, 3)[0])


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = rng.normal(size=n)
    return 3 * h + 2 * rng.normal(size=n) + 10, h + 1.5 * rng.normal(size=n), h


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def test_perm_both_and_the_bootstrap_equal_a_plain_loop() -> None:
    a, b, h = _data(60, 1)
    settings = VersusSettings("pearson", 300, seed=5)
    found = correlation_difference(a, b, h, settings)
    # the loop: z-score both metrics, swap per story with probability 1/2, then resample stories
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    observed = _pearson(a, h) - _pearson(b, h)
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(300):
        swap = rng.random(60) < 0.5
        d = _pearson(np.where(swap, zb, za), h) - _pearson(np.where(swap, za, zb), h)
        hits += abs(d) >= abs(observed) - 1e-12
    boot = []
    for _ in range(300):
        i = rng.integers(0, 60, 60)
        boot.append(_pearson(a[i], h[i]) - _pearson(b[i], h[i]))
    assert found["difference"] == pytest.approx(observed)
    assert found["p_permutation"] == pytest.approx((1 + hits) / 301)
    assert (found["ci_low"], found["ci_high"]) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])))
    t, p = williams_test(_pearson(a, h), _pearson(b, h), _pearson(a, b), 60)
    assert (found["williams_t"], found["p_williams"]) == pytest.approx((t, p))


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_perm_both_agrees_with_scipys_paired_permutation_test() -> None:
    a, b, h = _data(40, 2)
    b = a + 0.05 * np.random.default_rng(3).normal(size=40) * a.std()  # nearly the same metric: p is large
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    for method, coef in (("pearson", _pearson), ("spearman", lambda x, y: float(stats.spearmanr(x, y).statistic))):
        found = correlation_difference(a, b, h, VersusSettings(method, 4000, seed=0))
        ref = stats.permutation_test(
            (za, zb),
            lambda x, y, coef=coef: coef(x, h) - coef(y, h),
            permutation_type="samples",
            n_resamples=4000,
            alternative="two-sided",
            random_state=1,
        )
        # two Monte-Carlo estimates of one p: within 4 standard errors of 4,000 draws
        se = math.sqrt(max(ref.pvalue * (1 - ref.pvalue), 1e-4) / 4000)
        assert found["p_permutation"] == pytest.approx(ref.pvalue, abs=4 * se + 2e-3)


def test_pairwise_accuracy_permutation_equals_a_loop() -> None:
    rng = np.random.default_rng(4)
    ca = (rng.random(80) < 0.75).astype(float)
    cb = (rng.random(80) < 0.55).astype(float)
    cb[3] = np.nan  # a pair the second metric did not judge is left out
    settings = VersusSettings(permutations=500, seed=9)
    found = accuracy_difference(ca, cb, settings)
    keep = ~np.isnan(cb)
    x, y = ca[keep], cb[keep]
    observed = x.mean() - y.mean()
    loop = np.random.default_rng(9)
    hits = 0
    for _ in range(500):
        swap = loop.random(79) < 0.5
        hits += abs(np.where(swap, y, x).mean() - np.where(swap, x, y).mean()) >= abs(observed) - 1e-12
    boot = [(x[i] - y[i]).mean() for i in (loop.integers(0, 79, 79) for _ in range(500))]
    assert found["n"] == 79 and found["difference"] == pytest.approx(observed)
    assert found["p_permutation"] == pytest.approx((1 + hits) / 501)
    assert (found["ci_low"], found["ci_high"]) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])))


def test_a_lower_is_better_metric_is_negated_before_correlating() -> None:
    a, b, h = _data(50, 6)
    data = pd.DataFrame({"NR": a, "inter": -b, "overall": h})  # inter: lower is better
    table = versus_correlations(data, ["NR", "inter"], ["overall"], VersusSettings(permutations=50))
    row = table.iloc[0]
    assert row["r_b"] == pytest.approx(_pearson(b, h)) and row["r_b"] > 0
    matrix = versus_matrix(table, ["NR", "inter"])
    assert matrix.at["NR", "inter"].startswith(f"{row['difference']:+.3f}")
    assert matrix.at["inter", "NR"].startswith(f"{-row['difference']:+.3f}") and matrix.at["NR", "NR"] == ""
    pairs = pd.DataFrame({"better": ["s1", "s2"], "worse": ["s2", "s3"]})
    verdicts = pair_verdicts(pairs, pd.Series({"s1": 0.1, "s2": 0.5, "s3": 0.5}), "inter")
    assert list(verdicts) == [1.0, 0.0]  # lower inter is better; the tie is wrong


def test_the_matrix_marks_only_significant_differences() -> None:
    table = pd.DataFrame(
        [
            {"metric_a": "A", "metric_b": "B", "difference": 0.2, "p_permutation": 0.01},
            {"metric_a": "A", "metric_b": "C", "difference": -0.1, "p_permutation": 0.2},
            {"metric_a": "B", "metric_b": "C", "difference": None, "p_permutation": None},
        ]
    )
    m = versus_matrix(table, ["A", "B", "C"])
    assert (m.at["A", "B"], m.at["B", "A"], m.at["A", "C"], m.at["C", "A"], m.at["B", "C"]) == (
        "+0.200*",
        "-0.200*",
        "-0.100",
        "+0.100",
        "",
    )


def _vist_edit_file(path: Path, sequences: int = 24) -> dict[str, float]:
    """Made-up ratings in VIST-Edit's GLAC.csv shape: per photo sequence the generated story and
    its human edit, two raters, six aspects; returns each story's mean 'focused' rating."""
    rng = np.random.default_rng(0)
    rows, focused = [], {}
    for k in range(sequences):
        seq = "-".join(str(100 * k + i) for i in range(1, 6))
        for team, system in (("auto-gen", "GLAC"), ("human-edit", "GLAC-human-edit")):
            values = []
            for rater in ("00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"):
                v = rng.integers(1, 6, size=6)
                values.append(v[0])
                rows.append(f"{team},{seq},649651,{rater}," + ",".join(map(str, v)))
            focused[f"{seq}:{system}"] = float(np.mean(values))
    path.write_bytes("\r\n".join([VIST_EDIT_HEADER, *rows]).encode())
    return focused


def _records(focused: dict[str, float]) -> list[StoryScores]:
    rng = np.random.default_rng(1)
    out = []
    for story_id, value in focused.items():
        seq, system = story_id.split(":")
        nr = float(np.clip(0.5 + 0.08 * value + rng.normal(0, 0.05), 0, 1))
        clip = float(0.6 + 0.1 * rng.normal())
        out.append(
            StoryScores(
                story_id=story_id,
                sequence_id=seq,
                system=system,
                sentences=("A story.", "Another sentence."),
                metrics={
                    "redundancy": RedundancyScores(score=nr, inter=1 - nr, intra=1 - nr, variant="paper", n=4),
                    "clipscore": ClipScoreScores(score=clip, pairs=(clip,)),
                },
            )
        )
    return out


def test_it_runs_on_vist_edit_ratings_through_the_reader(tmp_path: Path) -> None:
    human = tmp_path / "GLAC.csv"
    focused = _vist_edit_file(human)
    records = _records(focused)
    report = run_meta_eval(records, read_judgements(human), MetaSettings(resamples=0, baselines=False))
    assert report.match["matched"] == 48
    table = versus_correlations(report.data, report.metrics, report.aspects, VersusSettings(permutations=200))
    row = table[(table["aspect"] == "focused")].iloc[0]
    keys = list(focused)
    nr = [r.metrics["redundancy"].score for r in records]  # type: ignore[union-attr]
    clip = [r.metrics["clipscore"].score for r in records]  # type: ignore[union-attr]
    h = [focused[k] for k in keys]
    assert {row["metric_a"], row["metric_b"]} == {"NR", "CLIPScore"} and row["n"] == 48
    expected = _pearson(np.array(nr), np.array(h)) - _pearson(np.array(clip), np.array(h))
    assert row["difference"] == pytest.approx(expected if row["metric_a"] == "NR" else -expected)
    accuracy = versus_accuracy(report.pairs, report.data, report.metrics, VersusSettings(permutations=200))
    assert len(accuracy) == 1 and 0 < accuracy.iloc[0]["n"] <= 24

    scores = write_scores(tmp_path / "scores.jsonl", records)
    out = tmp_path / "report.json"
    args = ["meta-eval", str(scores), str(human), "--out", str(out), "--no-baselines", "--no-progress", "--resamples", "0"]
    assert main([*args, "--permutations", "200"]) == 0
    section = json.loads(out.read_text())["metric_vs_metric"]
    assert "200 permutations" in section["settings"]
    cli_row = next(r for r in section["correlations"] if r["aspect"] == "focused")
    assert cli_row["difference"] == pytest.approx(row["difference"]) and cli_row["p_permutation"] == pytest.approx(
        row["p_permutation"]
    )
    assert len(section["pairwise_accuracy"]) == 1


@pytest.mark.slow  # an AppTest run of the Agreement page
def test_the_agreement_page_shows_the_matrix_the_library_computes() -> None:
    from conftest import ROOT
    from test_app import make

    from vst_core.analysis.meta_eval.scored import score_frame

    app = make("meta", resamples=0, vs_permutations=1000)
    matrices = [
        d.value for d in app.dataframe if getattr(d.value, "index", None) is not None and d.value.index.name == "row − column"
    ]
    assert matrices, "no metric-vs-metric matrix on the page"
    shown = matrices[0]
    keys = {b.key for b in app.get("download_button")}
    assert {"dl-versus", "dl-versus-latex", "dl-versus-markdown", "dl-latex", "dl-markdown"} <= keys
    # the same numbers from the library on the sample's NR scores and the made-up ratings
    from dashboard.choices import Choices, settings_for
    from vst_core.data import read_story_set
    from vst_core.scoring.story import score_story

    stories = read_story_set(ROOT / "assets/sample/stories.jsonl")
    settings = settings_for(Choices(coherence=False, grounding=False))
    records = [score_story(s, settings) for s in stories]
    report = run_meta_eval(records, read_judgements(ROOT / "assets/sample/human_example.csv"), MetaSettings(resamples=0))
    aspect = report.aspects[0]
    table = versus_correlations(report.data, report.metrics, [aspect], VersusSettings(permutations=1000))
    expected = versus_matrix(table, report.metrics)
    assert score_frame(records).shape[0] == 8
    assert shown.loc[expected.index, expected.columns].equals(expected)


def test_the_paired_bootstrap_agrees_with_scipys() -> None:
    a, b, h = _data(80, 7)
    found = correlation_difference(a, b, h, VersusSettings("pearson", 4000, seed=0))
    ref = stats.bootstrap(
        (a, b, h),
        lambda x, y, z: _pearson(x, z) - _pearson(y, z),
        paired=True,
        vectorized=False,
        n_resamples=4000,
        method="percentile",
        random_state=2,
    )
    # two Monte-Carlo estimates of the same percentiles: within a few hundredths of a correlation
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert found["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=0.08 * width)
    assert found["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=0.08 * width)


def test_vhed_pairs_compare_two_metrics_by_accuracy(tmp_path: Path) -> None:
    from dataclasses import replace

    from test_public_judgements import nr_record, vhed_bytes

    seq1, seq2 = "11-12-13-14-15", "21-22-23-24-25"
    base = [
        nr_record("s1:reference", seq1, "reference", 0.9),
        nr_record("s1:kg-story", seq1, "kg-story", 0.7),
        nr_record("s1:pr-vist", seq1, "pr-vist", 0.8),
        nr_record("s2:reference", seq2, "reference", 0.6),
        nr_record("s2:kg-story", seq2, "kg-story", 0.65),
    ]
    clip = [0.1, 0.5, 0.2, 0.9, 0.3]
    records = [
        replace(r, metrics={**r.metrics, "clipscore": ClipScoreScores(score=v, pairs=(v,))})
        for r, v in zip(base, clip, strict=True)
    ]
    scores = write_scores(tmp_path / "s.jsonl", records)
    (tmp_path / "VHED.csv").write_bytes(vhed_bytes())
    out = tmp_path / "r.json"
    args = ["meta-eval", str(scores), str(tmp_path / "VHED.csv"), "--out", str(out), "--resamples", "0"]
    assert main([*args, "--no-progress", "--no-baselines", "--permutations", "1000"]) == 0
    (row,) = json.loads(out.read_text())["metric_vs_metric"]["pairwise_accuracy"]
    # the three pairs with a gap (by hand, from VHED_ROWS): reference > kg-story (s1), pr-vist > reference (s1),
    # reference > kg-story (s2). NR gets the first right only; CLIPScore the second and the third.
    assert (row["metric_a"], row["metric_b"], row["n"]) == ("NR", "CLIPScore", 3)
    assert (row["accuracy_a"], row["accuracy_b"]) == pytest.approx((1 / 3, 2 / 3))
    # per pair d = (1, -1, -1): of the 8 sign patterns, |mean| >= 1/3 holds for all of them, so p = 1
    assert row["p_permutation"] == 1.0


@pytest.mark.slow  # starts Java for the baselines' PTB tokenizer
def test_the_csv_folder_holds_the_metric_vs_metric_tables_of_the_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import SAMPLE

    scores, out, folder = tmp_path / "scores.jsonl", tmp_path / "report.json", tmp_path / "csv"
    assert main(["score", str(SAMPLE), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    human = SAMPLE.parent / "human_example.csv"
    args = ["meta-eval", str(scores), str(human), "--out", str(out), "--csv", str(folder), "--no-progress", "--resamples", "0"]
    assert main([*args, "--permutations", "200"]) == 0
    document = json.loads(out.read_text())
    table = pd.read_csv(folder / "metric_vs_metric_correlations.csv")  # a plain read_csv
    assert len(table) == len(document["metric_vs_metric"]["correlations"]) > 0
    assert list(table["p_permutation"]) == pytest.approx(
        [r["p_permutation"] for r in document["metric_vs_metric"]["correlations"]]
    )
    about = str(table["provenance"].iat[0]).split(" | ")
    assert about[1].startswith("signature ") and "PERM-BOTH 200 permutations" in about[2]
    assert (folder / "metric_vs_metric_pairwise_accuracy.csv").exists()
    assert "CSV tables in" in capsys.readouterr().err


def test_metric_against_metric_reads_the_same_at_any_scale() -> None:
    """A correlation does not see a positive scale: metrics in units of 1e200 or 1e-300 give the
    difference, Williams' p and the permutation p of the same metrics in their own units."""
    from vst_core.analysis.meta_eval.versus import VersusSettings, correlation_difference

    rng = np.random.default_rng(0)
    h = rng.normal(size=60)
    a, b = h + rng.normal(size=60), h + 2 * rng.normal(size=60)
    found = [correlation_difference(a * s, b * s, h * s, VersusSettings("pearson", 300, 0, 0.95)) for s in (1, 1e200, 1e-300)]
    for other in found[1:]:
        for key in ("difference", "p_williams", "p_permutation", "ci_low"):
            assert other[key] == pytest.approx(found[0][key], rel=1e-9), key
