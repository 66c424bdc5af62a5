"""Hostile and unusual inputs to a study: markup and control characters in what raters read, a
token with path characters, formula-like ids in the exported tables, an enormous study refused
with its limit, and studies made from VWP's release layout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from vst_core.data import Story
from vst_core.study import (
    AnswerStore,
    Aspect,
    Sample,
    StudyError,
    copy_photos,
    export_study,
    find_study,
    load_study,
    new_study,
    photos_folder,
    plan_for,
    rater_for,
    read_sources,
    save_study,
    study_photo,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

HOSTILE = [
    "<script>alert('x')</script><img src=x onerror=alert(1)>",
    "**bold** [link](javascript:alert(1)) <!-- c -->",
    r"$\input{/etc/passwd}$ \def\x{y} %comment",
    "right-to-left \u202e txet and zero\u200bwidth, emoji 🙂",
]


def stories() -> list[Story]:
    return [Story(f"{q}", f"seq{q}", m, (f"A {m} story.", "The end."), (f"{q}.jpg",)) for q in range(3) for m in ("a", "b")]


@pytest.mark.parametrize("text", HOSTILE)
def test_markup_in_instructions_labels_and_stories_is_kept_as_text_exactly(tmp_path: Path, text: str) -> None:
    hostile = [Story("h", "seqh", "a", (text, text)), Story("h", "seqh", "b", ("Plain.",))]
    aspect = Aspect("clear", text[:100], text, (text[:50], "middle", "top"))
    study = new_study([*stories(), *hostile], aspects=(aspect,), instructions=text, title=text[:100], seed=1)
    back = load_study(save_study(study, tmp_path / "h.study.json"))
    assert back == study and back.instructions == text and back.aspects[0].question == text
    assert any(s.sentences == (text, text) for i in back.items for s in i.stories)


def test_control_characters_in_a_story_are_shown_as_spaces_and_refused_in_what_the_researcher_writes() -> None:
    study = new_study([Story("c", "q", "a", ("bell\x07 and escape\x1b[31m red", "nul\x00"))], seed=1)
    assert study.items[0].stories[0].sentences == ("bell  and escape [31m red", "nul ")
    with pytest.raises(StudyError, match="control character"):
        new_study(stories(), instructions="read\x1b[2J this")
    with pytest.raises(StudyError, match="control character"):
        new_study(stories(), aspects=(Aspect("k", "label\x00", "q"),))
    with pytest.raises(StudyError, match="may hold only"):
        new_study(stories(), raters=["ann", "../bo"])


@pytest.mark.parametrize(
    "token",
    [
        "../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "/" * 32,
        "A" * 31 + "/",
        "A" * 200,
        "",
        "A" * 31 + "\x00",
        "ÄÖÜäöüßÄÖÜäöüßÄÖÜäöüßÄÖÜäöü",
    ],
)
def test_a_token_with_path_characters_finds_nothing(tmp_path: Path, token: str) -> None:
    study = new_study(stories(), seed=1)
    save_study(study, tmp_path / "s.study.json")
    assert rater_for(study, token) is None and find_study(token, tmp_path) is None
    assert find_study(study.raters[0].token, tmp_path) is not None


def test_formula_like_ids_are_escaped_in_the_exported_tables(tmp_path: Path) -> None:
    evil = [Story('=HYPERLINK("http://x")', "q1", "@SUM(A1)", ("One.",)), Story("ok", "q1", "b", ("Two.",))]
    study = new_study(evil, raters=1, seed=1, study_id="f")
    store = AnswerStore(tmp_path / "a.sqlite")
    rater = study.raters[0]
    for step in plan_for(study, rater):
        store.record(study, rater, step, {a.key: 3 for a in study.aspects}, 1.0)
    export_study(study, store.answers(study), tmp_path)
    items = (tmp_path / "f-items.csv").read_text()
    assert "'=HYPERLINK" in items and "'@SUM(A1)" in items
    assert not any(line.startswith(("=", "@", "+")) for line in items.splitlines())


def test_an_enormous_study_is_refused_with_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VST_MAX_STUDY_ITEMS", "5")
    with pytest.raises(StudyError, match=r"6 items, over the limit of 5 a study \(VST_MAX_STUDY_ITEMS raises it\)"):
        new_study(stories(), seed=1)
    monkeypatch.delenv("VST_MAX_STUDY_ITEMS")
    path = save_study(new_study(stories(), seed=1), tmp_path / "big.study.json")
    monkeypatch.setenv("VST_MAX_STUDY_BYTES", "1000")
    with pytest.raises(StudyError, match="over the limit of 1,000 a study file"):
        load_study(path)
    monkeypatch.delenv("VST_MAX_STUDY_BYTES")
    with pytest.raises(StudyError, match="over the limit of 20,000"):
        new_study(stories(), instructions="x" * 20_001)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(StudyError, match="nested too deeply|not a study"):
        load_study(path)


def test_a_study_from_vwp_as_released_and_a_models_stories(tmp_path: Path) -> None:
    from vwp_data import write_vwp_set

    people, model = write_vwp_set(tmp_path)
    read = read_sources([people, model])
    assert read.source["shared_ids"] == "yes"  # the human and the model story of a scene share an id
    likert = new_study(read.stories, seed=1, source=read.source)
    shown = next(s for i in likert.items for s in i.stories if s.system == "human" and s.story_id == "A1")
    assert len(shown.photos) == 10 and shown.frames and len(shown.photo_texts()) == 10
    pairwise = new_study(read.stories, protocol="pairwise", raters=3, seed=1, source=read.source, study_id="vwp")
    assert len(pairwise.items) == 2 and {s.system for s in pairwise.items[0].stories} == {"human", "llava"}
    path = save_study(pairwise, tmp_path / "vwp.study.json", photos_from=Path(read.source["folder"]))
    assert (photos_folder(path) / "images").is_dir()
    assert study_photo(path, pairwise.items[0].stories[0].photos[0]) is not None
    assert study_photo(path, "../vwp_test.csv") is None
    store = AnswerStore(tmp_path / "a.sqlite")
    for rater in pairwise.raters:
        for step in plan_for(pairwise, rater):
            store.record(pairwise, rater, step, {"preferred": 0}, 3.0)
    export_study(pairwise, store.answers(pairwise), tmp_path / "out")
    pairs = pd.read_csv(tmp_path / "out" / "vwp-pairwise.csv", comment="#")
    assert set(pairs["story_a"]) <= {"A1 (human)", "A2 (human)", "A1 (llava)", "A2 (llava)"}  # keyed as meta-eval keys them


def test_sources_in_different_folders_are_refused(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent / "assets" / "sample"
    other = tmp_path / "s.jsonl"
    other.write_text(json.dumps({"story_id": "x", "sequence_id": "q", "system": "m", "sentences": ["A."]}) + "\n")
    with pytest.raises(StudyError, match="different folders"):
        read_sources([root / "stories.jsonl", other])


def test_photos_outside_the_source_folder_are_not_copied(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.jpg").write_bytes(b"x")
    (tmp_path / "secret.jpg").write_bytes(b"s")
    study = new_study([Story("1", "q", "a", ("One.",), ("in.jpg", "../secret.jpg", "missing.jpg"))], seed=1)
    copied, skipped = copy_photos(study, tmp_path / "data", tmp_path / "out")
    assert copied == 1 and skipped == ["../secret.jpg", "missing.jpg"]
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["in.jpg"]


def test_a_sample_draw_is_stratified_and_seeded() -> None:
    many = [Story(f"{q}", f"seq{q}", m, ("One.",)) for q in range(30) for m in ("a", "b", "c")]
    one = new_study(many, sample=Sample(sequences=10), seed=4)
    assert len(one.items) == 30 and pd.Series([i.stories[0].system for i in one.items]).value_counts().tolist() == [10, 10, 10]
    assert one.items == new_study(many, sample=Sample(sequences=10), seed=4).items
    assert one.items != new_study(many, sample=Sample(sequences=10), seed=5).items
