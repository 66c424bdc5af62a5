"""`vst study new|raters|status|export` on the bundled sample: results on stdout, notes and errors
on stderr, exit codes, a mistyped option named with the one meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vst_core.cli import main
from vst_core.study import AnswerStore, load_study, plan_for

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample"
SCORES = SAMPLE / "scores_nr_reference.jsonl"


def answer_all(path: Path) -> None:
    study = load_study(path)
    store = AnswerStore.beside(path)
    for n, rater in enumerate(r for r in study.raters if not r.revoked):
        for step in plan_for(study, rater):
            if study.protocol == "pairwise":
                value: dict[str, int | str] = {"preferred": (n + len(step.item_id)) % 2}
            else:
                value = {a.key: 1 + (n + len(step.item_id)) % 5 for a in study.aspects}
            store.record(study, rater, step, value, 5.0)


def test_new_raters_status_export_on_the_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pilot.study.json"
    assert main(["study", "new", str(SCORES), "--out", str(path), "--sequences", "2", "--seed", "1", "--title", "Pilot"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("study pilot study:") and "8 items" in out and f"wrote {path}" in err
    study = load_study(path)
    assert study.study_id == "pilot" and study.source["kind"] == "scores"

    assert main(["study", "raters", str(path), "--base-url", "https://lab.example/", "--add", "r4", "--revoke", "r2"]) == 0
    out, err = capsys.readouterr()
    study = load_study(path)
    assert f"https://lab.example/?rater={study.rater('r4').token}" in out  # type: ignore[union-attr]
    assert study.rater("r2").token not in out and "revoked" in out and "added r4" in err  # type: ignore[union-attr]

    answer_all(path)
    assert main(["study", "status", str(path), "--scores", str(SCORES), "--json", str(tmp_path / "status.json")]) == 0
    out, _ = capsys.readouterr()
    assert "answers" in out and "agreement:" in out and "correlations:" in out and "NR" in out
    assert json.loads((tmp_path / "status.json").read_text())["study_signature"] == study.signature

    assert main(["study", "export", str(path), "--out", str(tmp_path / "export")]) == 0
    out, _ = capsys.readouterr()
    assert str(tmp_path / "export" / "pilot-judgements.csv") in out.splitlines()
    report = tmp_path / "report.json"
    args = ["meta-eval", str(SCORES), str(tmp_path / "export" / "pilot-judgements.csv"), "--out", str(report)]
    assert main([*args, "--resamples", "0", "--no-baselines", "--no-progress", "--permutations", "0"]) == 0


def test_a_pairwise_study_of_listed_disagreements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = tmp_path / "disagreements.csv"
    listed.write_text("sequence_id,better,worse,gap\nspace-trip,space-ref,space-generic,2\nhome-day,home-ref,home-offtopic,3\n")
    path = tmp_path / "pairs.study.json"
    assert (
        main(["study", "new", str(SCORES), "--out", str(path), "--protocol", "pairwise", "--stories", str(listed), "--no-ties"])
        == 0
    )
    study = load_study(path)
    assert [tuple(s.story_id for s in i.stories) for i in study.items] == [
        ("space-ref", "space-generic"),
        ("home-ref", "home-offtopic"),
    ]
    assert not study.ties
    answer_all(path)
    assert main(["study", "export", str(path), "--out", str(tmp_path), "--exclude", "r1"]) == 0
    assert "raters excluded by name: r1" in (tmp_path / "pairs-pairwise.csv").read_text()


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["new", str(SAMPLE / "human_example.csv"), "--out", "x.study.json"], 3, "judgements"),
        (["new", str(SCORES), "--out", "x.study.json", "--systems", "nobody"], 3, "no story of system 'nobody'"),
        (["new", str(SCORES), "--out", "x.study.json", "--protocl", "pairwise"], 2, "did you mean --protocol"),
        (["new", str(SCORES), "--out", "x.study.json", "--rater-names", "ann,../bo"], 3, "may hold only"),
        (["status", "missing.study.json"], 3, "no study file"),
        (["export", "missing.study.json", "--out", "x"], 3, "no study file"),
        (["raters", "missing.study.json", "--revokee", "r1"], 2, "did you mean --revoke"),
    ],
)
def test_what_goes_wrong_is_said_with_its_exit_code(
    args: list[str], code: int, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        found = main(["study", *args])
    except SystemExit as exc:
        found = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert found == code and said in err and not out
    assert not (tmp_path / "x.study.json").exists()


def test_an_export_with_no_answers_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.study.json"
    assert main(["study", "new", str(SCORES), "--out", str(path)]) == 0
    assert main(["study", "export", str(path), "--out", str(tmp_path / "e")]) == 3
    assert "no answers yet" in capsys.readouterr().err and not (tmp_path / "e").exists()
    assert main(["study", "status", str(path)]) == 0 and not (tmp_path / "s.study.answers.sqlite").exists()
