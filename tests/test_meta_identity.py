"""Meta-evaluation when a story is (system, story_id): released sets share ids across systems, so
ratings join by system and id; narrowing the metrics of a report filters it without changing a number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.identity import keys_of, ratings_of
from vst_core.analysis.meta_eval.report import narrowed
from vst_core.analysis.meta_eval.scored import score_frame


def shared_table(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """The dashboard's table of n ids written by two systems (the release's layout)."""
    rng = np.random.default_rng(seed)
    ids = [str(45530 + k) for k in range(n)]
    rows = []
    for system in ("reference", "llava"):
        for sid in ids:
            rows.append({"story": sid, "sequence": sid, "system": system, "NR": rng.uniform(0.5, 1), "coherence": rng.uniform()})
    return pd.DataFrame(rows).assign(sentences=5, text="a b c")


def test_shared_ids_get_one_key_per_system() -> None:
    table = shared_table(3)
    frame = score_frame(table)
    assert list(frame.index[:2]) == ["45530 (reference)", "45531 (reference)"]
    assert frame.loc["45530 (llava)", "NR"] == table[(table.system == "llava") & (table.story == "45530")]["NR"].item()
    unique = table[table.system == "llava"]
    assert list(keys_of(unique)) == list(unique["story"])  # no shared id: the plain id, as before


def test_ratings_join_each_system_by_its_own_scores() -> None:
    table = shared_table()
    llava = table[table.system == "llava"]
    csv = "story_id,system,overall\n" + "".join(f"{s},llava,{v:.6f}\n" for s, v in zip(llava.story, 2 * llava.NR, strict=True))
    report = run_meta_eval(table, read_judgements(csv.encode()), MetaSettings(resamples=0, baselines=False), signature_ids=["x"])
    assert report.match["matched"] == 40
    rho = report.correlations.query("metric == 'NR' and aspect == 'overall' and method == 'spearman'")["value"].item()
    assert rho == pytest.approx(1.0)  # joined with the reference story of the same id it would not be
    want = stats.spearmanr(llava.coherence, llava.NR).statistic
    got = report.correlations.query("metric == 'RoViST-C' and aspect == 'overall' and method == 'spearman'")["value"]
    assert got.item() == pytest.approx(want)


def test_ratings_without_a_system_on_a_shared_id_are_left_out_and_said() -> None:
    table = shared_table(5)
    csv = "story_id,overall\n45530,3\n45531,4\n"
    report = run_meta_eval(table, read_judgements(csv.encode()), MetaSettings(resamples=0, baselines=False), signature_ids=["x"])
    assert report.match["matched"] == 0
    assert any("several systems share" in p for p in report.problems)


def test_ratings_of_one_story_follow_its_system() -> None:
    judgements = read_judgements(b"story_id,system,rater,overall\n1,llava,a,2\n1,reference,a,5\n1,llava,b,4\n")
    (rating,) = ratings_of(judgements, "1", "llava")
    assert (rating.mean, rating.n) == (3.0, 2)


def test_narrowing_metrics_filters_the_full_report() -> None:
    table = shared_table()
    rng = np.random.default_rng(1)
    csv = "story_id,system,overall,fluency\n" + "".join(
        f"{s},{y},{rng.uniform(1, 5):.3f},{rng.uniform(1, 5):.3f}\n" for s, y in zip(table.story, table.system, strict=True)
    )
    settings = MetaSettings(resamples=200, baselines=False)
    judgements = read_judgements(csv.encode())
    full = run_meta_eval(table, judgements, settings, signature_ids=["x"])
    alone = run_meta_eval(table, judgements, settings, metrics=["NR"], signature_ids=["x"])
    cut = narrowed(full, ["NR"], settings)
    assert cut.signature == alone.signature and cut.metrics == ["NR"]
    pd.testing.assert_frame_equal(cut.correlations.reset_index(drop=True), alone.correlations.reset_index(drop=True))
    pd.testing.assert_frame_equal(cut.pairwise.reset_index(drop=True), alone.pairwise.reset_index(drop=True))


def test_ratings_of_another_system_under_a_scored_id_are_left_out_and_said() -> None:
    """Only llava's scores loaded, ratings of both the human and the llava story 45530: the human
    ratings must not be averaged into llava's story."""
    table = shared_table(5)
    llava = table[table.system == "llava"].reset_index(drop=True)
    csv = "story_id,system,overall\n" + "".join(
        f"{s},llava,{2 * v:.6f}\n{s},reference,1\n" for s, v in zip(llava.story, llava.NR)
    )
    report = run_meta_eval(llava, read_judgements(csv.encode()), MetaSettings(resamples=0, baselines=False), signature_ids=["x"])
    assert report.match["matched"] == 5
    assert report.data["overall"].tolist() == pytest.approx((2 * llava.NR).tolist(), abs=1e-6)  # llava's ratings alone
    assert any("another system's story" in p for p in report.problems)


def test_inspect_ratings_of_a_shared_id_need_their_system() -> None:
    judgements = read_judgements(b"story_id,rater,overall\n1,a,2\n")
    assert ratings_of(judgements, "1", "llava") and not ratings_of(judgements, "1", "llava", shared=True)


def test_meta_eval_merges_a_storys_lines_as_the_dashboard_does(tmp_path: Path) -> None:
    """`vst score` then `vst import-scores` into one file: two lines per story; the command merges
    them per metric (computed NR, imported coherence) instead of keeping the last line."""
    from vst_core.cli import main

    stories = tmp_path / "stories.jsonl"
    rng = np.random.default_rng(3)
    words = "we went to the park and the dog ran after a ball then we ate cake at home".split()
    lines, coherence = [], []
    for k in range(12):
        text = " | ".join(" ".join(rng.choice(words, 6)) + "." for _ in range(3))
        lines.append(json.dumps({"story_id": f"s{k}", "system": "m", "sentences": text.split(" | ")}))
        coherence.append(f"s{k},coherence,{rng.uniform():.6f},m")
    stories.write_text("\n".join(lines) + "\n")
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(stories), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    long = tmp_path / "c.csv"
    long.write_text("story_id,metric,value,system\n" + "\n".join(coherence) + "\n")
    assert main(["import-scores", str(long), "--long", "--out", str(scores)]) == 0
    human = tmp_path / "human.csv"
    human.write_text("story_id,system,overall\n" + "".join(f"s{k},m,{rng.uniform(1, 5):.3f}\n" for k in range(12)))
    out = tmp_path / "r.json"
    assert main(["meta-eval", str(scores), str(human), "--out", str(out), "--no-baselines", "--resamples", "0"]) == 0
    cells = {(c["metric"], c["method"]) for c in json.loads(out.read_text())["correlations"] if c["value"] is not None}
    assert ("NR", "spearman") in cells and ("RoViST-C", "spearman") in cells  # both metrics of each story


def test_two_systems_rating_a_shared_id_are_not_a_conflict() -> None:
    judgements = read_judgements(b"story_id,system,rater,aspect,value\ns1,a,r,overall,3\ns1,b,r,overall,5\n")
    assert not any("conflicting" in p for p in judgements.problems)
    again = read_judgements(b"story_id,system,rater,aspect,value\ns1,a,r,overall,3\ns1,a,r,overall,4\n")
    assert any("1 (story, rater, aspect) cell(s) with conflicting values" in p for p in again.problems)
