"""The score command end to end: sample, resume, interruption, bad input, --help."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, write_jsonl

from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import read_scores, read_story_set
from vst_core.scoring.runs import score_story_set
from vst_core.scoring.story import score_story


def run(*args: str) -> int:
    return main(list(args))


def test_sample_repetitive_stories_score_lower(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress") == 0
    records, problems = read_scores(out)
    assert problems == [] and len(records) == 8
    nr = {r["story_id"]: r["metrics"]["redundancy"]["score"] for r in records}
    for seq in ("space", "home"):
        others = [nr[f"{seq}-{k}"] for k in ("ref", "grounded", "offtopic")]
        assert nr[f"{seq}-generic"] < min(others) - 0.15
    generic = next(r for r in records if r["story_id"] == "space-generic")
    repeats = generic["metrics"]["redundancy"]["inter_repeats"]
    sentence = generic["sentences"][1]
    spans = [sentence[s:e] for rep in repeats if rep["sentence"] == 1 for s, e in rep["spans"]]
    assert spans == ["We", "had", "a", "great", "time"]
    assert generic["signature"]["settings"]["nr_variant"] == "paper"
    assert len(generic["signature"]["id"]) == 12


def test_rerun_skips_and_interrupted_run_resumes(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress") == 0
    full = out.read_text().splitlines()
    # interrupt: keep 3 whole lines and half of the 4th
    out.write_text("\n".join(full[:3]) + "\n" + full[3][: len(full[3]) // 2])
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress") == 0
    resumed = out.read_text().splitlines()
    assert sorted(resumed) == sorted(full)
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress") == 0
    assert out.read_text().splitlines() == resumed  # nothing added twice


def test_rerun_with_other_settings_refuses_to_mix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scores.jsonl"
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress") == 0
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress", "--nr-variant", "reference") == 2
    assert "other settings" in capsys.readouterr().err
    assert run("score", str(SAMPLE), "--out", str(out), "--no-progress", "--nr-variant", "reference", "--overwrite") == 0
    records, _ = read_scores(out)
    assert {r["signature"]["settings"]["nr_variant"] for r in records} == {"reference"}


def test_unknown_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "redundancy,bleurt") == 2
    err = capsys.readouterr().err
    assert "unknown metric 'bleurt'" in err and "available: redundancy" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_bad_lines_and_empty_story_lose_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.jsonl"
    src.write_text(
        json.dumps({"story_id": "ok", "sentences": ["We ate.", "We ate again."]})
        + "\n"
        + "{broken\n"
        + json.dumps({"story_id": "empty", "sentences": []})
        + "\n"
        + json.dumps({"story_id": "one", "sentences": ["Just one sentence here."]})
        + "\n"
    )
    out = tmp_path / "o.jsonl"
    assert run("score", str(src), "--out", str(out), "--no-progress") == 0
    err = capsys.readouterr().err
    assert "line 2" in err and "malformed JSON" in err and "1 unreadable input lines" in err
    records = {r["story_id"]: r for r in read_scores(out)[0]}
    assert set(records) == {"ok", "empty", "one"}
    assert records["empty"]["errors"]["redundancy"] == "empty story: no sentences"
    assert "redundancy" not in records["empty"]["metrics"]
    one = records["one"]["metrics"]["redundancy"]
    assert one["inter"] is None and any("no inter-sentence part" in n for n in one["notes"])


def test_missing_image_story_still_scored_for_repetition(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "s.jsonl", [{"story_id": "x", "images": ["gone.jpg"], "sentences": ["A cat."]}])
    out = tmp_path / "o.jsonl"
    assert run("score", str(src), "--out", str(out), "--no-progress") == 0
    (record,) = read_scores(out)[0]
    assert "redundancy" in record["metrics"] and "image not found" in record["problems"][0]


def test_non_utf8_input_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.json"
    src.write_bytes(b'[{"story_id": "caf\xe9", "sentences": ["x."]}]')
    assert run("score", str(src), "--out", str(tmp_path / "o.jsonl")) == 3
    assert "not UTF-8" in capsys.readouterr().err


def test_batch_and_single_story_scoring_agree(tmp_path: Path) -> None:
    ss = read_story_set(SAMPLE)
    settings = Settings()
    summary = score_story_set(ss, settings, tmp_path / "o.jsonl")
    assert summary.scored == 8 and summary.failed == []
    batch = {r["story_id"]: r for r in read_scores(tmp_path / "o.jsonl")[0]}
    from vst_core.signature import inputs_of, signature

    sig = signature(settings, inputs_of(ss))
    for s in ss:
        assert batch[s.story_id] == json.loads(json.dumps(score_story(s, settings, sig).to_json()))


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = capsys.readouterr().out
    for option in (
        "--out",
        "--metrics",
        "--nr-n",
        "--nr-variant",
        "--spacy-model",
        "--vist-images",
        "--vist-text-field",
        "--no-check-images",
        "--overwrite",
        "--no-progress",
    ):
        assert option in text


@pytest.mark.slow  # two interpreter starts
def test_console_script_equals_module(tmp_path: Path) -> None:
    module = subprocess.run([sys.executable, "-m", "vst_core", "score", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert module.returncode == 0 and "--nr-variant" in module.stdout
    script = shutil.which("vst", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("package not installed with pip install -e . (no vst script next to this python)")
    console = subprocess.run([script, "score", "--help"], capture_output=True, text=True)
    assert console.stdout.replace("vst_core", "vst") == module.stdout.replace("vst_core", "vst")


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import commands

    assert set(commands()) == {
        "score", "train-sop", "train-vrank", "train-cosmic", "fetch-models", "bench", "cache", "meta-eval", "import-scores", "dhm", "judge-bias",
        "compare",
        "report",
        "metrics",
        "study",
    }  # fmt: skip
    for command in commands():
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0
        assert "usage: vst " + command in capsys.readouterr().out


@pytest.mark.slow  # tries to load every default model
def test_fetch_models_offline_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from conftest import point_at

    empty = tmp_path / "empty"
    point_at(
        monkeypatch,
        {
            "HF_HOME": str(empty),
            "HF_HUB_CACHE": str(empty / "hub"),
            "XDG_CACHE_HOME": str(empty),
            "TORCH_HOME": str(empty),
            "HF_HUB_OFFLINE": "1",
        },
    )
    assert main(["fetch-models"]) == 4
    out = capsys.readouterr().out  # the result, model by model, on stdout
    assert "missing  CLIP ViT-B-32/openai" in out and "cannot be downloaded from here" in out
    assert str(empty / "hub") in out


def test_no_spans_gives_the_same_numbers_and_the_spans_come_back(tmp_path: Path) -> None:
    from vst_core.records import read_record
    from vst_core.scoring.story import completed

    full, fast = tmp_path / "full.jsonl", tmp_path / "fast.jsonl"
    assert run("score", str(SAMPLE), "--out", str(full), "--no-progress") == 0
    assert run("score", str(SAMPLE), "--out", str(fast), "--no-progress", "--no-spans") == 0
    a, _ = read_scores(full)
    b, _ = read_scores(fast)
    assert a[0]["signature"]["id"] == b[0]["signature"]["id"]  # same numbers, same settings
    for x, y in zip(a, b):
        nx, ny = x["metrics"]["redundancy"], y["metrics"]["redundancy"]
        assert ny["inter_repeats"] is None and any("--no-spans" in note for note in ny["notes"])
        for key in ("score", "inter", "intra"):
            assert ny[key] == pytest.approx(nx[key], abs=1e-12)
        typed, _ = read_record(y)
        assert typed is not None
        filled = completed(typed).to_json()["metrics"]["redundancy"]
        assert filled["inter_repeats"] == nx["inter_repeats"] and filled["intra_repeats"] == nx["intra_repeats"]
        assert filled["notes"] == nx["notes"]


def test_a_metric_whose_model_cannot_load_leaves_the_others_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Partial runs: NR needs no model, so it is scored when the coherence model is missing; each
    record names the metric not run and the exit code says so (6); --strict stops (4), writing nothing."""
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    args = ["score", str(SAMPLE), "--metrics", "redundancy,coherence", "--coherence-model", f"rovist-c:{tmp_path / 'absent.pt'}"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 6
    assert "coherence is not run" in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 8 and all(r["metrics"]["redundancy"]["score"] is not None for r in records)
    assert all(r["errors"]["coherence"].startswith("not run: RoViST-C checkpoint not found") for r in records)
    strict = tmp_path / "strict.jsonl"
    assert main([*args, "--out", str(strict), "--no-progress", "--strict"]) == 4
    assert not strict.exists() and not (tmp_path / "strict.jsonl.lock").exists()


def test_no_option_states_its_default_twice(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    from vst_core.cli import commands

    for command in commands():
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert not re.search(r"\(default[^)]*\) \(default: ", text), (
            command,
            re.findall(r"\(default[^)]*\) \(default: [^)]*\)", text),
        )


@pytest.mark.parametrize("command", ["compare", "meta-eval", "dhm", "report"])
def test_a_story_set_given_for_scores_says_what_to_run_first(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A story file where scores are expected is named as what it is, with the command that scores
    it (exit 3), instead of a warning per line and an empty result."""
    extra = {
        "compare": [],
        "meta-eval": [str(ROOT / "assets/sample/human_example.csv"), "--out", str(tmp_path / "r.json")],
        "dhm": ["--out", str(tmp_path / "d.json")],
        "report": ["--out", str(tmp_path / "r.html")],
    }[command]
    stories = ROOT / "assets/sample/stories.jsonl"
    assert main([command, str(stories), *extra]) == 3
    err = capsys.readouterr().err
    assert "holds stories, not scores" in err and f"vst score {stories} --out scores.jsonl" in err
    assert "another version" not in err and not list(tmp_path.iterdir())


def test_vst_dhm_marks_distances_over_too_few_stories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A dHM over fewer stories than an interval needs is marked †, with the note, as the pages mark it."""
    scores = tmp_path / "s.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["dhm", str(scores), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("model-")]
    assert len(rows) == 3 and all(line.rstrip().endswith("†") for line in rows)
    assert "† N < 10: no interval is given" in out


@pytest.mark.slow  # an interpreter start
def test_a_command_piped_into_head_ends_quietly() -> None:
    """``vst metrics | head -1``: the reader closes the pipe early; the command ends without a traceback."""
    import subprocess
    import sys

    done = subprocess.run(
        f"{sys.executable} -m vst_core metrics | head -1", shell=True, capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.stdout.startswith("redundancy") and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
