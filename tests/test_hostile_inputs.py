"""Hostile and careless input to the story-set readers: generated files never raise out of a
reader, every valid story is read exactly once under a unique id, and each named defect has its
regression test. The budget is small for CI; VST_HYPOTHESIS_EXAMPLES raises it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.data import StorySetError, read_story_set
from vst_core.data.paths import check_image

EXAMPLES = int(os.environ.get("VST_HYPOTHESIS_EXAMPLES", "150"))

VALID = st.fixed_dictionaries(
    {"story_id": st.text(min_size=1, max_size=6), "sentences": st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4)}
)
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
HOSTILE_LINES = st.sampled_from(
    [
        "[" * 5000 + "]" * 5000,  # deeper than Python's recursion limit
        '{"story_id": "deep", "x": ' + "[" * 100 + "]" * 100 + "}",  # over our nesting limit
        '{"story_id": "big", "n": ' + "9" * 5000 + "}",  # an integer over Python's digit limit
        '{"story_id": "nul", "sentences": ["A."], "images": ["a\\u0000b.png"]}',
        '{"story_id": "long", "sentences": ["A."], "images": ["' + "x" * 300 + '.png"]}',
        '{"story_id": "bad", "sentences": "not a list"}',
        "\udcff not utf8",
        "{not json",
    ]
)


def _write(path: Path, lines: list[str]) -> None:
    path.write_bytes(b"\n".join(line.encode("utf-8", "surrogateescape") for line in lines) + b"\n")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(VALID.map(json.dumps), JUNK.map(json.dumps), HOSTILE_LINES), max_size=12))
def test_a_jsonl_reader_never_raises_and_keeps_every_valid_story_once(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, lines)
    ss = read_story_set(path, check_images=False)
    ids = [s.story_id for s in ss]
    assert len(ids) == len(set(ids))  # unique, renames included
    valid = sum(1 for line in lines if line.startswith('{"story_id": ') and '"sentences": [' in line and line.endswith("]}"))
    assert len(ss) >= valid - sum(
        1 for line in lines if line.startswith('{"story_id": "nul"') or line.startswith('{"story_id": "long"')
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JUNK)
def test_a_json_reader_never_raises_anything_but_its_own_error(tmp_path: Path, data: object) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    try:
        read_story_set(path, check_images=False)
    except StorySetError:
        pass


def test_a_bom_keeps_the_first_story(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf" + b'{"story_id": "first", "sentences": ["A."]}\n{"story_id": "second", "sentences": ["B."]}\n'
    )
    assert [s.story_id for s in read_story_set(path)] == ["first", "second"]


def test_jsonl_in_a_json_file_is_read_even_when_a_line_is_junk(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('\n{"story_id": "a", "sentences": ["A."]}\n[1, 2]\n{"story_id": "b", "sentences": ["B."]}\n')
    ss = read_story_set(path)
    assert [s.story_id for s in ss] == ["a", "b"] and len(ss.problems) == 1


def test_deep_and_huge_values_are_one_problem_each(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write(
        path, ["[" * 5000 + "]" * 5000, '{"story_id": "big", "n": ' + "9" * 5000 + "}", '{"story_id": "ok", "sentences": ["A."]}']
    )
    ss = read_story_set(path)
    assert [s.story_id for s in ss] == ["ok"] and [p.line for p in ss.problems] == [1, 2]
    whole = tmp_path / "deep.json"
    whole.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(StorySetError, match="nested deeper"):
        read_story_set(whole)


def test_duplicate_ids_never_collide_with_existing_ones(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, [json.dumps({"story_id": sid, "sentences": [f"{k}."]}) for k, sid in enumerate(["a", "a", "a#2", "a"])])
    ids = [s.story_id for s in read_story_set(path)]
    assert ids == ["a", "a#3", "a#2", "a#4"] and len(set(ids)) == 4


def test_hostile_image_paths_are_problems_of_their_story(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo.jpg")
    refs = ["a\x00b.png", "x" * 300 + ".png", "loop/a.png", "fifo.jpg", "../outside.png"]
    path = tmp_path / "s.jsonl"
    _write(path, [json.dumps({"story_id": f"s{k}", "sentences": ["A."], "images": [ref]}) for k, ref in enumerate(refs)])
    ss = read_story_set(path)  # checks images: must not hang on the FIFO
    assert len(ss) == len(refs) and all(any(p.kind == "image" for p in s.problems) for s in ss)
    assert "not a regular file" in check_image(tmp_path / "fifo.jpg")  # type: ignore[operator]


def test_a_decompression_bomb_and_a_truncated_png_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    Image.new("RGB", (100, 100), "red").save(tmp_path / "big.png")
    Image.new("RGB", (50, 50), "blue").save(tmp_path / "whole.png")
    data = (tmp_path / "whole.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 10,000 px is now more than twice the limit
    assert "DecompressionBomb" in str(check_image(tmp_path / "big.png"))
    assert check_image(tmp_path / "cut.png") is not None


def test_a_vist_file_with_odd_shapes_is_read_or_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "sis.json"
    path.write_text(json.dumps({"annotations": {"not": "a list"}}))
    with pytest.raises(StorySetError, match="'annotations' must be a list"):
        read_story_set(path)
    entry = {"story_id": "1", "photo_flickr_id": "7", "text": "a .", "worker_arranged_photo_order": "first"}
    path.write_text(json.dumps({"annotations": [[entry], [{**entry, "photo_flickr_id": "8", "worker_arranged_photo_order": 0}]]}))
    (story,) = read_story_set(path, check_images=False)
    assert story.images[0].endswith("8.jpg")  # a non-numeric order sorts last


# ------------------------------------------------------------------ writing: resume, locks, unwritable outputs


def _score(*args: str) -> int:
    from vst_core.cli import main

    return main(["score", *args, "--no-progress"])


def test_a_complete_last_record_without_its_newline_is_kept_on_resume(tmp_path: Path) -> None:
    from conftest import SAMPLE

    out = tmp_path / "o.jsonl"
    assert _score(str(SAMPLE), "--out", str(out)) == 0
    data = out.read_bytes()
    out.write_bytes(data[:-1])  # the last record lost only its newline
    assert _score(str(SAMPLE), "--out", str(out)) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 8 and len({json.loads(line)["story_id"] for line in lines}) == 8


def test_a_second_run_on_the_same_output_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import fcntl

    from conftest import SAMPLE

    out = tmp_path / "o.jsonl"
    with (tmp_path / "o.jsonl.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running job holds it
        assert _score(str(SAMPLE), "--out", str(out)) == 2
    assert "another run is writing" in capsys.readouterr().err and not out.exists()
    assert _score(str(SAMPLE), "--out", str(out)) == 0  # released: the run goes ahead


@pytest.mark.parametrize("case", ["directory", "under a file", "name too long"])
def test_an_unwritable_output_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    from conftest import SAMPLE

    if case == "directory":
        out = tmp_path / "d.jsonl"
        out.mkdir()
    elif case == "under a file":
        (tmp_path / "f").write_text("x")
        out = tmp_path / "f" / "o.jsonl"
    else:  # refused by the file system for anyone, root included
        out = tmp_path / ("o" * 300 + ".jsonl")
    assert _score(str(SAMPLE), "--out", str(out)) == 3
    assert "cannot write" in capsys.readouterr().err
