"""VWP as the field publishes it: NCS's sampled stories (``tests/data/ncs_sampled``: two rows of
``sampled_60_stories.json`` with the photos and crops they list, MIT) read as released, whatever
the file's suffix and layout; shots and crops never paired with another scene's file of the same
name; and the whole release of 60 stories when a copy of it is at hand (``VST_NCS_RELEASE``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from vst_core.cli import main
from vst_core.data import load_records, read_story_set

SLICE = ROOT / "tests" / "data" / "ncs_sampled"
RELEASE_FILE = "sampled_60_stories.json"
SCENES = {"11719": "tt1059786_0003_0", "13683": "tt0985699_0010_1"}


def _rows() -> list[dict]:
    return [json.loads(line) for line in (SLICE / "sampled_60" / RELEASE_FILE).read_text(encoding="utf-8").splitlines()]


def _copy(tmp_path: Path) -> Path:
    """The slice's folder copied to ``tmp_path`` (the release's layout: ``sampled_60/...``)."""
    shutil.copytree(SLICE / "sampled_60", tmp_path / "sampled_60")
    return tmp_path / "sampled_60"


def _summary(path: Path) -> list[tuple]:
    return [(s.key, s.sequence_id, s.sentences, s.frames, s.images, s.characters) for s in read_story_set(path)]


def test_the_sampled_stories_read_as_released_with_every_photo_and_crop() -> None:
    """JSON lines under a ``.json`` name, each row listing its photos (``images``) and crops
    (``characters``: ``{"image", "name"}``) as paths from the folder above the file: every story,
    photo and crop is read, with no problem (the story reader skipped both rows on their
    character objects)."""
    stories = read_story_set(SLICE / "sampled_60" / RELEASE_FILE)
    assert [s.story_id for s in stories] == ["11719", "13683"] and not stories.all_problems()
    first = stories.get("11719", "human")
    assert first.sequence_id == SCENES["11719"] and first.images_ok
    assert first.images == tuple(f"images/11719_img{k}.jpg" for k in range(5))
    assert first.characters == (("Shia", "../characters/11719_char0.jpg"), ("Billy", "../characters/11719_char1.jpg"))
    assert len(first.frame_texts) == 5 and first.frame_texts[0] == _rows()[0]["text0"].strip()
    second = stories.get("13683", "human")
    assert len(second.images) == 6 and [n for n, _ in second.characters] == ["Tom", "Bill", "Terence", "Christian"]
    for story in stories:  # each crop is the file the row lists, as character alignment finds it
        for (_, crop), listed in zip(story.characters, _rows()[story.story_id == "13683"]["characters"], strict=True):
            found = (SLICE / "sampled_60" / Path(story.images[0]).parent / crop).resolve()
            assert found == (SLICE / listed["image"]).resolve()


@pytest.mark.parametrize(
    "name", ["stories.jsonl", "stories.txt", "list.json", "table.csv", "table.tsv", "table.parquet", "table.json"]
)
def test_the_release_reads_the_same_whatever_its_suffix_and_layout(tmp_path: Path, name: str) -> None:
    """The same rows as JSON lines under any name, a JSON list, CSV or TSV as pandas writes them
    (lists as Python's text) and Parquet (lists as list cells), read to the same stories."""
    import pandas as pd

    folder = _copy(tmp_path)
    want = _summary(folder / RELEASE_FILE)
    assert [key for key, *_ in want] == [("human", "11719"), ("human", "13683")]
    path = folder / name
    rows = _rows()
    if name.startswith("stories"):
        shutil.copy(folder / RELEASE_FILE, path)
    elif name == "list.json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    elif name.endswith(".parquet"):
        pd.DataFrame(rows).to_parquet(path)
    else:  # CSV, TSV, and a CSV under a .json name
        pd.DataFrame(rows).to_csv(path, sep="\t" if name.endswith(".tsv") else ",", index=False)
    assert _summary(path) == want


def test_a_crop_name_two_scenes_share_is_never_taken_silently(tmp_path: Path) -> None:
    """The two rows as VWP's links name their files (no ``images``/``characters`` lists): both
    scenes' first crop is ``char_0000.jpg``. In one flat folder the file is one scene's: each
    story says so, naming both scenes; in folders per scene each story gets its own crop."""
    source = _copy(tmp_path / "src")
    rows = [{k: v for k, v in row.items() if k not in ("images", "characters")} for row in _rows()]
    flat = tmp_path / "flat"
    for row in reversed(rows):  # the flat folder ends up with the first row's files
        scene = tmp_path / "by_scene" / "images" / row["scene_full_id"]
        scene.mkdir(parents=True)
        (flat / "images").mkdir(parents=True, exist_ok=True)
        sources = [source / "images" / f"{row['story_id']}_img{k}.jpg" for k in range(10) if row[f"link{k}"]]
        sources += [source / "characters" / f"{row['story_id']}_char{k}.jpg" for k in range(5) if row[f"char{k}_url"] != "{}"]
        links = [row[f"link{k}"] for k in range(10) if row[f"link{k}"]] + [
            row[f"char{k}_url"] for k in range(5) if row[f"char{k}_url"] != "{}"
        ]
        for file, link in zip(sources, links, strict=True):
            shutil.copy(file, scene / link.rsplit("/", 1)[1])
            shutil.copy(file, flat / "images" / link.rsplit("/", 1)[1])
    for folder in (flat, tmp_path / "by_scene"):
        (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    stories = read_story_set(flat / "rows.jsonl")
    for story in stories:
        shared = [p for p in story.problems if "char_0000.jpg" in p.message]
        assert len(shared) == 1 and shared[0].severity == "warning", story.problems
        assert all(scene in shared[0].message for scene in SCENES.values())
    assert not any("shot_" in p.message for s in stories for p in s.problems)  # the shots' names are the scenes' own

    stories = read_story_set(tmp_path / "by_scene" / "rows.jsonl")
    assert not stories.all_problems()
    for story in stories:
        scene = SCENES[story.story_id]
        assert story.images[0].startswith(f"images/{scene}/") and story.characters[0][1] == "char_0000.jpg"
        crop = tmp_path / "by_scene" / Path(story.images[0]).parent / story.characters[0][1]
        assert crop.read_bytes() == (source / "characters" / f"{story.story_id}_char0.jpg").read_bytes()


def test_vst_score_reads_the_release_file_as_it_is(tmp_path: Path) -> None:
    out = tmp_path / "nr.jsonl"
    assert (
        main(["score", str(SLICE / "sampled_60" / RELEASE_FILE), "--out", str(out), "--metrics", "redundancy", "--no-progress"])
        == 0
    )
    records, problems = load_records(out)
    assert not problems and [r.story_id for r in records] == ["11719", "13683"]
    assert all(r.metrics.get("redundancy") is not None and not r.errors and r.frames for r in records)


def test_a_run_that_gives_no_story_a_number_says_why_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Stories read, written, every one with errors only (empty texts): exit 3 and the reason,
    not exit 0 (the release read as plain stories gave 13 empty stories and exit 0)."""
    path = tmp_path / "empty.jsonl"
    path.write_text("".join(json.dumps({"story_id": f"s{k}", "text": " "}) + "\n" for k in range(3)))
    out = tmp_path / "nr.jsonl"
    assert main(["score", str(path), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 3
    assert "no story of" in capsys.readouterr().err and len(out.read_text().splitlines()) == 3
    good = tmp_path / "mixed.jsonl"
    good.write_text(path.read_text() + json.dumps({"story_id": "ok", "text": "We went out. It rained."}) + "\n")
    assert main(["score", str(good), "--out", str(tmp_path / "nr2.jsonl"), "--metrics", "redundancy", "--no-progress"]) == 0


# ---------------------------------------------------------------------- the whole release


def _release(tmp_path: Path) -> Path | None:
    """``data/`` of a copy of coherence-driven-humans: ``VST_NCS_RELEASE`` (a checkout, or its git
    folder, read with ``git archive``), else a checkout beside this one; None when there is none."""
    given = os.environ.get("VST_NCS_RELEASE")
    candidates = [Path(given)] if given else [ROOT.parent / "coherence-driven-humans"]
    for place in candidates:
        if (place / "data" / "sampled_60" / RELEASE_FILE).is_file():
            return place / "data"
        if (place / "HEAD").is_file() and (place / "objects").is_dir():  # a bare git folder
            archive = subprocess.run(
                ["git", f"--git-dir={place}", "archive", "--format=tar", "HEAD", "--", "data/sampled_60"],
                capture_output=True,
                timeout=300,
            )
            subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True, timeout=300)
            if (tmp_path / "data" / "sampled_60" / RELEASE_FILE).is_file():
                return tmp_path / "data"
    return None


@pytest.mark.real_layout
@pytest.mark.slow  # 60 stories with 483 images checked, and vst score on them
def test_the_whole_release_reads_60_stories_345_photos_138_crops(tmp_path: Path) -> None:
    data = _release(tmp_path)
    if data is None:
        pytest.skip("no copy of github.com/GU-CLASP/coherence-driven-humans: set VST_NCS_RELEASE to a checkout or its git folder")
    path = data / "sampled_60" / RELEASE_FILE
    stories = read_story_set(path)
    assert len(stories) == 60 and not stories.all_problems()
    assert sum(len(s.images) for s in stories) == 345 and all(s.images_ok for s in stories)
    assert sum(1 for s in stories for _, crop in s.characters if crop) == 138
    for story in stories:  # every crop is there, as character alignment finds it
        for _, crop in story.characters:
            assert (path.parent / Path(story.images[0]).parent / crop).resolve().is_file()
    out = tmp_path / "nr.jsonl"
    code = subprocess.run(
        [sys.executable, "-m", "vst_core", "score", str(path), "--out", str(out), "--metrics", "redundancy", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "VST_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert code.returncode == 0, code.stderr[-2000:]
    records, problems = load_records(out)
    assert len(records) == 60 and not problems and all(r.metrics.get("redundancy") is not None for r in records)
