"""A study's exports are read by the product with no conversion: `vst meta-eval` and
`vst compare --judgements` on an export made from the bundled sample's scores; the live view's
tables and its exclusion rule; exports written whole or not at all."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path

import pandas as pd
import pytest

from vst_core.analysis.meta_eval import read_judgements
from vst_core.cli import main
from vst_core.study import (
    AnswerStore,
    ExclusionRule,
    GoldSpec,
    Study,
    StudyError,
    export_study,
    live_view,
    new_study,
    plan_for,
    read_source,
)
from vst_core.study.records import Answer

ROOT = Path(__file__).resolve().parent.parent
SCORES = ROOT / "assets" / "sample" / "scores_nr_reference.jsonl"


def answered(study: Study, tmp_path: Path, *, seed: int = 0, careless: tuple[str, ...] = ()) -> list[Answer]:
    """Every rater answers every step: NR-like ratings (the reference best) with noise; a careless
    rater answers at random, gold items too."""
    store = AnswerStore(tmp_path / "answers.sqlite")
    rng = random.Random(seed)
    good = {"reference": 5, "model-a": 4, "model-b": 2, "model-c": 1}
    for rater in study.raters:
        for step in plan_for(study, rater):
            item = study.item(step.item_id)
            quality = [good[s.system] + rng.choice((-1, 0, 0, 1)) for s in item.stories]
            if rater.name in careless:
                quality = [rng.randint(1, 5) for _ in item.stories]
            if study.protocol == "likert":
                value: dict[str, int | str] = {a.key: max(1, min(5, quality[0])) for a in study.aspects}
                if item.gold is not None and rater.name in careless:
                    value = {a.key: 5 if item.gold.expected.get(a.key, 3) <= 2 else 1 for a in study.aspects}  # type: ignore[operator]
            elif study.protocol == "pairwise":
                value = {"preferred": "tie" if quality[0] == quality[1] else 0 if quality[0] > quality[1] else 1}
                if item.gold is not None and rater.name in careless:
                    value = {"preferred": 1 - int(item.gold.expected["preferred"])}
            else:
                ranked = sorted(range(len(quality)), key=lambda i: (-quality[i], i))
                value = {"best": ranked[0], "worst": ranked[-1]}
            store.record(study, rater, step, value, rng.uniform(2, 30))
    return store.answers(study)


def _meta_eval(judgements: Path, out: Path) -> int:
    """``vst meta-eval`` of the sample's scores against ``judgements`` (no intervals, baselines or
    permutations): its exit code, the report in ``out``."""
    options = ["--resamples", "0", "--no-baselines", "--no-progress", "--permutations", "0"]
    return main(["meta-eval", str(SCORES), str(judgements), "--out", str(out), *options])


def test_meta_eval_reads_a_likert_export_of_the_sample_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    read = read_source(SCORES)
    study = new_study(read.stories, raters=3, seed=1, source=read.source, study_id="pilot")
    paths = export_study(study, answered(study, tmp_path), tmp_path / "out")
    assert sorted(p.name for p in paths) == sorted(
        f"pilot-{n}" for n in ("judgements.csv", "raters.csv", "items.csv", "answers.csv", "provenance.json")
    )
    export = tmp_path / "out" / "pilot-judgements.csv"
    assert study.signature in export.read_text().splitlines()[0]
    judgements = read_judgements(export)
    assert judgements.layout == "long" and set(judgements.aspects) == {
        "focused",
        "coherent",
        "share",
        "human",
        "grounded",
        "detailed",
    }
    assert len(judgements.ratings) == 8 * 3 * 6 and not judgements.problems
    report = tmp_path / "report.json"
    assert _meta_eval(export, report) == 0
    err = capsys.readouterr().err
    assert "matched 8 of 8 judged stories" in err
    rho = pd.DataFrame(json.loads(report.read_text())["correlations"])
    focused = rho[(rho["metric"] == "NR") & (rho["aspect"] == "focused") & (rho["level"] == "story")]
    assert len(focused) and int(focused["n"].iloc[0]) == 8
    assert main(["compare", str(SCORES), "--judgements", str(export), "--permutations", "100"]) == 0


def test_meta_eval_reads_a_pairwise_export_and_its_gold_is_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    read = read_source(SCORES)
    gold = [GoldSpec((("reference", "home-ref"), ("model-c", "home-offtopic")), {"preferred": "reference"})]
    study = new_study(read.stories, protocol="pairwise", raters=3, seed=1, source=read.source, gold=gold, study_id="pairs")
    answers = answered(study, tmp_path)
    export_study(study, answers, tmp_path)
    export = tmp_path / "pairs-pairwise.csv"
    frame = pd.read_csv(export, comment="#")
    assert len(frame) == 12 and set(frame["raters"]) == {3}  # 2 sequences x 6 pairs of systems; the gold item left out
    assert _meta_eval(export, tmp_path / "r.json") == 0
    accuracy = pd.DataFrame(json.loads((tmp_path / "r.json").read_text())["pairwise_accuracy"])
    assert int(accuracy[(accuracy["metric"] == "NR") & (accuracy["group"] == "all")]["n"].iloc[0]) > 0


def test_a_best_worst_export_is_long_judgements(tmp_path: Path) -> None:
    read = read_source(SCORES)
    study = new_study(read.stories, protocol="best-worst", raters=3, seed=1, source=read.source, study_id="bw")
    export_study(study, answered(study, tmp_path), tmp_path)
    judgements = read_judgements(tmp_path / "bw-judgements.csv")
    assert judgements.aspects == ["best_worst"] and set(judgements.ratings["value"]) <= {-1.0, 0.0, 1.0}


def test_the_exclusion_rule_leaves_a_careless_rater_out_and_says_so(tmp_path: Path) -> None:
    read = read_source(SCORES)
    gold = [
        GoldSpec((("reference", "space-ref"),), {"focused": 5, "coherent": 5}),
        GoldSpec((("model-c", "space-offtopic"),), {"focused": 1, "grounded": 1}),
    ]
    study = new_study(read.stories, raters=4, seed=1, source=read.source, gold=gold, study_id="g")
    answers = answered(study, tmp_path, careless=("r4",))
    view = live_view(study, answers)
    assert view.excluded == ("r4",) and view.exclusion_rule == "raters with gold accuracy < 0.5 over ≥ 2 gold items excluded"
    row = view.per_rater.set_index("rater").loc["r4"]
    assert row["gold_items"] == 2 and row["gold_accuracy"] < 0.5 and bool(row["excluded"])
    export_study(study, answers, tmp_path / "x")
    provenance = json.loads((tmp_path / "x" / "g-provenance.json").read_text())
    assert provenance["excluded"] == ["r4"] and "gold accuracy < 0.5" in provenance["exclusion_rule"]
    judged = read_judgements(tmp_path / "x" / "g-judgements.csv")
    assert "r4" not in set(judged.ratings["rater"]) and "gold-01" not in set(judged.ratings["story_id"])
    assert "excluded: r4" in (tmp_path / "x" / "g-judgements.csv").read_text().splitlines()[1]
    kept = export_study(study, answers, tmp_path / "y", exclude=ExclusionRule(min_accuracy=0.0))
    assert "r4" in set(read_judgements(kept[0]).ratings["rater"])


def test_the_live_view_counts_answers_time_and_correlations_with_their_n(tmp_path: Path) -> None:
    read = read_source(SCORES)
    study = new_study(read.stories, raters=3, seed=1, source=read.source)
    answers = answered(study, tmp_path)
    view = live_view(study, answers[:10], scores=read.records)
    assert view.answers == 10 and view.per_rater["answered"].sum() == 10
    assert list(view.agreement.columns[:5]) == ["aspect", "alpha", "low", "high", "n_items"]
    assert set(view.correlations["metric"]) == {"NR"} and view.correlations["N"].max() <= 8
    whole = live_view(study, answers, scores=read.records)
    assert int(whole.correlations["N"].max()) == 8 and whole.scores_signature
    assert (whole.per_item["answered"] == 3).all() and whole.per_item["median_seconds"].notna().all()


def test_an_export_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    read = read_source(SCORES)
    study = new_study(read.stories, raters=3, seed=1, source=read.source, study_id="w")
    answers = answered(study, tmp_path)
    blocked = tmp_path / "out"
    blocked.mkdir()
    (blocked / "w-items.csv").mkdir()  # a folder where a file goes: the rename fails
    before = sorted(p.name for p in blocked.iterdir())
    with pytest.raises(OSError):
        export_study(study, answers, blocked)
    assert sorted(p.name for p in blocked.iterdir()) == before
    with pytest.raises(StudyError, match="no answers"):
        export_study(study, [], tmp_path / "none")


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_export_files_get_the_mode_the_umask_gives(tmp_path: Path, mask: int) -> None:
    read = read_source(SCORES)
    study = new_study(read.stories, raters=1, seed=1, source=read.source, study_id="m")
    answers = answered(study, tmp_path)
    old = os.umask(mask)
    try:
        paths = export_study(study, answers, tmp_path / "out")
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths} == {0o666 & ~mask}
