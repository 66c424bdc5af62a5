"""The Python API: every documented name resolves and its numbers equal the commands' (the README's
Python example is run by tests/test_readme.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vst_core as vst
from vst_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"


def test_every_documented_name_resolves() -> None:
    assert sorted(vst.__all__) == sorted(vst._WHERE)
    for name in vst.__all__:
        assert getattr(vst, name) is not None
    with pytest.raises(AttributeError):
        vst.no_such_name  # noqa: B018


def test_score_stories_equals_vst_score(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    records = vst.score_stories(vst.read_story_set(SAMPLE), metrics=["redundancy"])
    assert [(r.system, r.story_id) for r in records] == [(x["system"], x["story_id"]) for x in lines]
    assert [r.to_json()["metrics"] for r in records] == [x["metrics"] for x in lines]
    assert records[0].signature["id"] == lines[0]["signature"]["id"]


def test_read_scores_merges_a_storys_lines(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    again = tmp_path / "again.jsonl"
    again.write_text(out.read_text())
    records, problems = vst.read_scores(out, again)
    assert len(records) == 8 and problems == []


def test_dir_lists_the_documented_names_only() -> None:
    import vst_core as vst

    public = [n for n in dir(vst) if not n.startswith("_")]
    assert public == sorted(vst.__all__) and "import_module" not in public and "TYPE_CHECKING" not in public


def test_a_notebook_user_is_told_the_setting_to_pass_not_a_flag(tmp_path: Path) -> None:
    import vst_core as vst
    from vst_core.models.hub import ModelLoadError

    settings = vst.Settings(metrics=("vrank",), vrank_model=str(tmp_path / "absent"))
    stories = vst.read_story_set(SAMPLE)
    with pytest.raises(ModelLoadError) as caught:
        vst.score_stories(stories, settings=settings)
    assert "Settings(vrank_model=DIR)" in str(caught.value) and "--vrank-model" not in str(caught.value)


@pytest.mark.slow  # trains a tiny BERT for an epoch
def test_the_readmes_vrank_notebook_example_runs(tmp_path: Path, tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python API page's Vrank block, run as written on a generated VHED-layout file with a tiny local
    encoder in place of the named one (no hub here) and one epoch."""
    import re

    from test_damaged_models import _tiny_bert
    from test_vrank import write_vhed

    import vst_core as vst

    text = (ROOT / "docs" / "python-api.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "train_vrank" in b)
    base = tmp_path / "base"
    base.mkdir()
    _tiny_bert(base, tokenizer_dir)
    write_vhed(tmp_path / "VHED.csv", sequences=12)
    monkeypatch.chdir(tmp_path)
    code = block.replace("sentence-transformers/all-MiniLM-L6-v2", str(base)).replace("epochs=5", "epochs=1, max_length=48")
    namespace: dict[str, object] = {"vst": vst, "stories": vst.read_story_set(SAMPLE)}
    exec(compile(code, "docs/python-api.md (Vrank)", "exec"), namespace)
    records = namespace["records"]
    assert isinstance(records, list) and len(records) == 8 and (tmp_path / "vrank-model" / "head.safetensors").is_file()


def test_a_story_shows_its_evidence_in_a_notebook_escaped() -> None:
    import vst_core as vst

    story = vst.Story.from_sentences(
        ["The <b>dog</b> ran to the park.", "The <b>dog</b> ran to the park again."], story_id="<i>x</i>", system="s<1>"
    )
    (record,) = vst.score_stories([story], "redundancy")
    shown = vst.show(record)._repr_html_()
    assert "<b>" not in shown and "&lt;b&gt;dog&lt;/b&gt;" in shown and "&lt;i&gt;x&lt;/i&gt;" in shown
    assert "repeats sentence 1" in shown and "NR" in shown  # the repeated span, and the score card
    assert f"{record.metrics['redundancy'].score:.3f}"[:4] in shown
    plain = vst.show(record, content_only=False)._repr_html_()
    assert plain.count("repeats sentence 1") > shown.count("repeats sentence 1")  # "the", "to" marked too


def test_a_record_naming_sentences_the_story_lacks_still_shows() -> None:
    """Evidence read from a file may point past the story (an edited or damaged record): it is left
    out of the drawing, never an error."""
    import dataclasses

    import vst_core as vst

    story = vst.Story.from_sentences(["The dog ran to the park.", "The dog ran to the park."], story_id="x")
    (record,) = vst.score_stories([story], "redundancy")
    nr = record.metrics["redundancy"]
    bad = [dataclasses.replace(r, sentence=9) for r in nr.inter_repeats] + [
        dataclasses.replace(r, spans=tuple((-5, e) for _, e in r.spans)) for r in nr.inter_repeats
    ]
    damaged = dataclasses.replace(record, metrics={"redundancy": dataclasses.replace(nr, inter_repeats=tuple(bad))})
    shown = vst.show(damaged)._repr_html_()
    assert "The dog ran" in shown and "repeats sentence 1" in shown


def test_the_leaderboard_and_the_dhm_report_display_as_tables_in_a_notebook_escaped(tmp_path: Path) -> None:
    import vst_core as vst

    stories = [
        vst.Story.from_sentences(["A <b>dog</b> ran.", "The dog ran home."], story_id=f"s{k}", system=system)
        for k in range(3)
        for system in ("<script>x</script>", "human")
    ]
    records = vst.score_stories(stories, "redundancy")
    board = vst.compare(records, permutations=100)._repr_html_()
    dhm = vst.human_likeness(records)._repr_html_()
    for shown in (board, dhm):
        assert "<table" in shown and "<script>x" not in shown and "&lt;script&gt;x" in shown and " sig " in shown
