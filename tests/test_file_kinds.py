"""A file of the wrong kind is named for what it is, with the command that reads it, and nothing is
scored or written: scores or judgements given as stories, stories or scores given as judgements,
judgements given as scores. A mistyped option shows the command's own usage and the option meant,
and a bad output path stops ``vst report`` before it writes anything."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE

from vst_core.analysis.meta_eval import JudgementsError, read_judgements
from vst_core.cli import main
from vst_core.data import StorySetError, read_story_set
from vst_core.data.kinds import content_kind

HUMAN = ROOT / "assets" / "sample" / "human_example.csv"
PANDAS_WORDS = ("ParserError", "tokenizing", "Expected", "no story_id column")


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scored") / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    return out


@pytest.fixture
def files(scores: Path, tmp_path: Path) -> dict[str, Path]:
    """Each kind of file, in a folder of its own (the outputs go to ``tmp_path/out``)."""
    folder = tmp_path / "in"
    folder.mkdir()
    table = folder / "gt_test_C.csv"
    table.write_text("story_id,C_score\n45530,0.7\n")
    return {
        "scores": Path(shutil.copy(scores, folder / "scores.jsonl")),
        "judgements": HUMAN,
        "stories": SAMPLE,
        "score table": table,
    }


CASES = [
    # (command, the kind given, where it is given, what it is named, the command said)
    ("score", "scores", "stories", "holds scores (each line a scored story with its metrics), not stories", "vst compare"),
    ("score", "judgements", "stories", "holds human judgements (ratings of stories), not stories", "vst meta-eval scores.jsonl"),
    ("score", "score table", "stories", "holds scores computed elsewhere", "vst import-scores"),
    ("meta-eval", "stories", "judgements", "holds stories, not judgements", "vst score"),
    (
        "meta-eval",
        "scores",
        "judgements",
        "holds scores (each line a scored story with its metrics), not judgements",
        "vst meta-eval",
    ),
    (
        "compare",
        "scores",
        "judgements",
        "holds scores (each line a scored story with its metrics), not judgements",
        "vst meta-eval",
    ),
    ("report", "stories", "judgements", "holds stories, not judgements", "vst score"),
    ("dhm", "judgements", "scores", "holds human judgements (ratings of stories), not scores", "--judgements"),
    ("compare", "score table", "scores", "holds scores computed elsewhere", "vst import-scores"),
    ("import-scores", "stories", "score table", "holds stories, not scores to import", "vst score"),
    (
        "import-scores",
        "scores",
        "score table",
        "holds scores (each line a scored story with its metrics), not scores to",
        "vst compare",
    ),
    ("import-scores", "judgements", "score table", "holds human judgements (ratings of stories), not scores to", "--judgements"),
]


def _argv(command: str, given: Path, where: str, scores: Path, out: Path) -> list[str]:
    if command == "score":
        return ["score", str(given), "--out", str(out / "s.jsonl"), "--no-progress"]
    if command == "meta-eval":
        return ["meta-eval", str(scores), str(given), "--out", str(out / "r.json")]
    if command == "compare":
        return ["compare", str(scores), "--judgements", str(given)] if where == "judgements" else ["compare", str(given)]
    if command == "report":
        return ["report", str(scores), "--judgements", str(given), "--out", str(out / "r.html")]
    if command == "import-scores":
        return ["import-scores", str(given), "--long", "--out", str(out / "i.jsonl")]
    return ["dhm", str(given), "--out", str(out / "d.json")]


@pytest.mark.parametrize(("command", "kind", "where", "named", "said"), CASES)
def test_a_file_of_another_kind_is_named_with_the_command_that_reads_it(
    command: str,
    kind: str,
    where: str,
    named: str,
    said: str,
    files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    given = files[kind]
    assert main(_argv(command, given, where, files["scores"], out)) == 3
    err = capsys.readouterr().err
    assert f"error: {given} {named}" in err and said in err, err
    assert not any(word in err for word in PANDAS_WORDS) and "image not found" not in err
    assert list(out.iterdir()) == []  # nothing scored, nothing written


def test_the_readers_name_the_kind_they_were_given(files: dict[str, Path]) -> None:
    """The Python API says the same as the commands, without the command line's words."""
    for kind in ("scores", "judgements", "score table"):
        with pytest.raises(StorySetError, match=f"holds {'human judgements' if kind == 'judgements' else 'scores'}"):
            read_story_set(files[kind])
    for kind in ("scores", "stories"):
        with pytest.raises(JudgementsError, match=f"holds {kind}"):
            read_judgements(files[kind])
    assert len(read_story_set(files["stories"])) == 8 and read_judgements(HUMAN).story_ids


def test_each_kind_is_told_from_its_content(tmp_path: Path, files: dict[str, Path]) -> None:
    found = {kind: content_kind(path) for kind, path in files.items()}
    assert found == {kind: kind for kind in files}
    cases = {
        "vwp.csv": ("scene_full_id,link0,text0\n1,a.jpg,Hi\n", "stories"),
        "wide.csv": ("story_id,grounding,coherence\na,3,4\n", "judgements"),
        "texts.csv": ("story_id,text\na,A dog ran.\n", None),
        "pairs.tsv": ("story_a\tstory_b\trank_a\trank_b\na\tb\t1\t2\n", "judgements"),
        "long.csv": ("story_id,metric,value\na,NR,0.5\n", "score table"),
        "map.json": ('{"45530": "A story."}', "stories"),
        "vist.json": ('{"annotations": [], "images": []}', "stories"),
        "rows.json": ('[{"story_id": "a", "sentences": ["A."]}]', "stories"),
        "other.json": ('{"name": 1}', None),
    }
    for name, (text, kind) in cases.items():
        (tmp_path / name).write_text(text)
        assert content_kind(tmp_path / name) == kind, name


def test_a_mistyped_option_shows_the_commands_usage_and_the_option_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["score", str(SAMPLE), "--out", str(tmp_path / "s.jsonl"), "--metrcs", "redundancy"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: vst score ") and "vst score: error: unrecognized arguments: --metrcs" in err
    assert "did you mean --metrics" in err and not list(tmp_path.iterdir())
    with pytest.raises(SystemExit):
        main(["compare", str(SAMPLE), "--jsn", "x.json"])
    assert "usage: vst compare " in (err := capsys.readouterr().err) and "did you mean --json" in err
    with pytest.raises(SystemExit):  # the typo is named even when a required option is missing too
        main(["score", str(SAMPLE), "--metrcs", "redundancy"])
    err = capsys.readouterr().err
    assert "did you mean --metrics" in err and "required" not in err
    with pytest.raises(SystemExit) as fine:  # an abbreviation argparse takes is not a typo
        main(["score", str(SAMPLE), "--metric", "redundancy"])
    assert fine.value.code == 2 and "required: --out" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["latex", "markdown", "figures", "out"])
def test_report_checks_every_output_before_writing_any(
    bad: str, scores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--latex DIR`` (a folder where a file goes), or ``--figures`` under a file: refused before
    the HTML is written."""
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_file").write_text("")
    outputs = {
        "out": tmp_path / "r.html",
        "latex": tmp_path / "t.tex",
        "markdown": tmp_path / "t.md",
        "figures": tmp_path / "fig",
    }
    outputs[bad] = tmp_path / "a_file" / "fig" if bad == "figures" else tmp_path / "a_folder"
    argv = ["report", str(scores), "--resamples", "0", "--permutations", "0"]
    for name, path in outputs.items():
        argv += [f"--{name}", str(path)]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert f"cannot write {outputs[bad]}" in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "a_folder"] and not list((tmp_path / "a_folder").iterdir())
