"""Story-set readers, VIST readers, scores writer; every bad input gives a clear message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE, write_jsonl

from vst_core.data import (
    ImagePathError,
    ScoresWriter,
    StorySetError,
    read_scores,
    read_story_set,
    resolve_image,
)
from vst_core.metrics.clipscore import ClipScoreScores
from vst_core.records import StoryScores


def story(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "story_id": "s1",
        "system": "m",
        "sequence_id": "q",
        "images": ["a.png", "b.png"],
        "sentences": ["A red square.", "A green square."],
    }
    base.update(kw)
    return base


def test_sample_reads_cleanly() -> None:
    ss = read_story_set(SAMPLE)
    assert len(ss) == 8 and ss.all_problems() == []
    assert set(ss.sequences()) == {"space-trip", "home-day"}
    assert {"reference", "model-a", "model-b", "model-c"} == set(ss.systems())
    assert all(s.images_ok and len(s.images) == 5 == len(s.sentences) for s in ss)


def test_jsonl_fields_and_paths(image_dir: Path) -> None:
    ss = read_story_set(write_jsonl(image_dir / "s.jsonl", [story()]))
    (s,) = ss.stories
    assert s.sentences == ("A red square.", "A green square.") and s.images_ok
    assert ss.image_path("a.png") == (image_dir / "a.png").resolve()


def test_json_list_dict_and_text_layouts(image_dir: Path) -> None:
    (image_dir / "l.json").write_text(json.dumps({"stories": [story()]}))
    assert len(read_story_set(image_dir / "l.json")) == 1
    (image_dir / "d.json").write_text(json.dumps({"x1": "We went out. It rained."}))
    (s,) = read_story_set(image_dir / "d.json").stories
    assert s.story_id == "x1" and s.sentences == ("We went out.", "It rained.")
    assert s.sequence_id == "x1" and s.system == "unknown"


def test_missing_and_unreadable_image_are_reported_and_story_kept(image_dir: Path) -> None:
    (image_dir / "broken.png").write_bytes(b"not an image at all")
    ss = read_story_set(
        write_jsonl(image_dir / "s.jsonl", [story(images=["a.png", "nope.png", "broken.png"], sentences=["x.", "y.", "z."])])
    )
    (s,) = ss.stories
    messages = [p.message for p in s.problems]
    assert any("image 2: image not found" in m for m in messages)
    assert any("image 3: image cannot be read" in m for m in messages)
    assert not s.images_ok and s.sentences == ("x.", "y.", "z.")


@pytest.mark.parametrize("ref", ["../outside.png", "sub/../../outside.png", "/etc/passwd", "http://example.org/a.png"])
def test_paths_may_not_leave_the_folder(image_dir: Path, ref: str) -> None:
    with pytest.raises(ImagePathError):
        resolve_image(image_dir, ref)
    ss = read_story_set(write_jsonl(image_dir / "s.jsonl", [story(images=[ref])]))
    (s,) = ss.stories
    assert any(p.kind == "image" for p in s.problems) and not s.images_ok


def test_empty_story_is_kept_with_an_error(image_dir: Path) -> None:
    ss = read_story_set(
        write_jsonl(
            image_dir / "s.jsonl",
            [story(sentences=[]), story(story_id="s2", sentences=["  "]), story(story_id="s3", sentences=None, text="")],
        )
    )
    assert len(ss) == 3
    for s in ss:
        assert s.is_empty and any(p.kind == "empty" and p.severity == "error" for p in s.problems)


def test_more_sentences_than_images(image_dir: Path) -> None:
    ss = read_story_set(write_jsonl(image_dir / "s.jsonl", [story(sentences=["a.", "b.", "c."])]))
    (p,) = [p for p in ss.stories[0].problems if p.kind == "alignment"]
    assert "3 sentences but 2 images" in p.message


def test_malformed_json_line_reports_line_number_and_keeps_going(image_dir: Path) -> None:
    path = image_dir / "s.jsonl"
    path.write_text(
        json.dumps(story())
        + "\n"
        + '{"story_id": "bad", "sentences": [\n'
        + "\n"
        + '["not", "an", "object"]\n'
        + json.dumps(story(story_id="s2", sentences="oops"))
        + "\n"
        + json.dumps(story(story_id="s3"))
        + "\n"
    )
    ss = read_story_set(path)
    assert [s.story_id for s in ss] == ["s1", "s3"]
    lines = {p.line: p.message for p in ss.problems}
    assert set(lines) == {2, 4, 5}
    assert "malformed JSON" in lines[2] and "line skipped" in lines[2]
    assert "expected a JSON object" in lines[4]
    assert "'sentences' must be a list of strings" in lines[5]


def test_non_utf8_files(image_dir: Path) -> None:
    bad = image_dir / "latin1.json"
    bad.write_bytes(json.dumps([story(sentences=["café"])]).replace("é", "\\u00e9").encode().replace(b"caf\\u00e9", b"caf\xe9"))
    with pytest.raises(StorySetError, match="not UTF-8.*0xe9"):
        read_story_set(bad)
    lines = image_dir / "mixed.jsonl"
    lines.write_bytes(
        json.dumps(story()).encode() + b"\n" + b'{"story_id": "caf\xe9"}\n' + json.dumps(story(story_id="s3")).encode() + b"\n"
    )
    ss = read_story_set(lines)
    assert [s.story_id for s in ss] == ["s1", "s3"]
    (p,) = ss.problems
    assert p.line == 2 and "not UTF-8" in p.message


def test_whole_file_errors(tmp_path: Path) -> None:
    with pytest.raises(StorySetError, match="not found"):
        read_story_set(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"a": [1, 2}')
    with pytest.raises(StorySetError, match="malformed JSON at line 1"):
        read_story_set(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("42")
    with pytest.raises(StorySetError, match="expected a list of stories"):
        read_story_set(tmp_path / "y.json")


def test_duplicate_ids_are_renamed_not_dropped(image_dir: Path) -> None:
    ss = read_story_set(write_jsonl(image_dir / "s.jsonl", [story(), story()]))
    assert [s.story_id for s in ss] == ["s1", "s1#2"]
    assert any("duplicate story_id" in p.message for p in ss.problems)


def _vist_sis(ids: list[str]) -> dict[str, object]:
    order = [2, 0, 1]
    return {
        "images": [{"id": i} for i in ids],
        "annotations": [
            [
                {
                    "story_id": "45530",
                    "album_id": "7",
                    "photo_flickr_id": ids[k],
                    "worker_arranged_photo_order": order[k],
                    "text": f"[male] saw picture {order[k]} .",
                    "original_text": f"Tom saw picture {order[k]}.",
                    "storylet_id": str(k),
                }
            ]
            for k in range(3)
        ],
    }


def test_vist_sis(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    from PIL import Image

    for name in ("101", "102"):
        Image.new("RGB", (8, 8)).save(images / f"{name}.jpg")
    (tmp_path / "test.story-in-sequence.json").write_text(json.dumps(_vist_sis(["101", "102", "103"])))
    ss = read_story_set(tmp_path / "test.story-in-sequence.json")
    (s,) = ss.stories
    assert s.story_id == "45530" and s.system == "reference"
    assert s.sentences == ("[male] saw picture 0 .", "[male] saw picture 1 .", "[male] saw picture 2 .")
    assert s.images == ("images/102.jpg", "images/103.jpg", "images/101.jpg")
    assert s.sequence_id == "102-103-101"
    assert any("image 2: image not found" in p.message for p in s.problems)  # 103 is missing
    original = read_story_set(tmp_path / "test.story-in-sequence.json", vist_text_field="original_text")
    assert original.stories[0].sentences[0] == "Tom saw picture 0."


def test_vist_dii(tmp_path: Path) -> None:
    data = {
        "annotations": [
            [{"album_id": "7", "worker_id": "w1", "photo_flickr_id": "2", "photo_order_in_story": 1, "text": "a dog on grass ."}],
            [{"album_id": "7", "worker_id": "w1", "photo_flickr_id": "1", "photo_order_in_story": 0, "text": "a red car ."}],
            [{"album_id": "7", "worker_id": "w2", "photo_flickr_id": "1", "photo_order_in_story": 0, "text": "a car ."}],
        ]
    }
    (tmp_path / "dii.json").write_text(json.dumps(data))
    ss = read_story_set(tmp_path / "dii.json", check_images=False)
    assert [(s.story_id, s.sentences, s.system) for s in ss] == [
        ("7-w1", ("a red car .", "a dog on grass ."), "reference-dii"),
        ("7-w2", ("a car .",), "reference-dii"),
    ]


def test_scores_writer_recovers_from_a_truncated_line(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    out.write_text('{"story_id": "a", "x": 1}\n{"story_id": "b", "x"')
    with ScoresWriter(out) as w:
        w.write(StoryScores("c", "c", "m", ("C.",)))
    records, problems = read_scores(out)
    assert [r["story_id"] for r in records] == ["a", "c"] and problems == []
    with pytest.raises(ValueError):  # NaN is never written as a number
        with ScoresWriter(tmp_path / "n.jsonl") as w:
            w.write(StoryScores("n", "n", "m", ("N.",), metrics={"clipscore": ClipScoreScores(float("nan"), ())}))


def test_story_set_writer_round_trip(image_dir: Path) -> None:
    from vst_core.data import write_story_set

    original = read_story_set(write_jsonl(image_dir / "s.jsonl", [story(), story(story_id="s2", system="other")]))
    write_story_set(original, image_dir / "copy.jsonl")
    again = read_story_set(image_dir / "copy.jsonl")
    assert again.stories == original.stories


def test_a_story_input_that_is_not_a_file_says_what_it_is(tmp_path: Path) -> None:
    """A folder, a FIFO or a device given as the story file is named for what it is, never opened
    (a FIFO would block), instead of 'not found'."""
    import os

    from vst_core.data import StorySetError, read_story_set

    fifo = tmp_path / "stories.jsonl"
    os.mkfifo(fifo)
    for path, words in (
        (tmp_path, "is a folder"),
        (fifo, "(a FIFO)"),
        (Path("/dev/zero"), "(a device)"),
        (tmp_path / "no.jsonl", "not found"),
    ):
        with pytest.raises(StorySetError, match=words.replace("(", r"\(").replace(")", r"\)")):
            read_story_set(path)


def test_a_malformed_json_line_is_said_in_plain_words(tmp_path: Path) -> None:
    """json's message for a control character ends in 'at'; the problem says 'at column' once."""
    from vst_core.data import read_story_set

    path = tmp_path / "stories.jsonl"
    path.write_text('{"story_id": "a", "text": "x\x01y"}\n{"story_id": "b", "text": "We went."}\n')
    messages = [p.message for p in read_story_set(path, check_images=False).problems]
    assert any("Invalid control character at column" in m for m in messages), messages
    assert not any("at at" in m for m in messages)
