"""Hostile and careless input to the story-set readers: generated files never raise out of a
reader, every valid story is read exactly once under a unique id, and each named defect has its
regression test. The budget is small for CI; VST_HYPOTHESIS_EXAMPLES raises it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
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


VWP_ROW = st.fixed_dictionaries(
    {
        "story_id": st.text(max_size=6) | st.integers(),
        "scene_full_id": st.text(alphabet="tt0123_./ ", min_size=1, max_size=10).filter(str.strip),
        "link0": st.text(max_size=30),
        "link1": st.sampled_from(["", "http://x/s/a.jpg", "https://[bad/b.jpg"]),
        "char0": st.sampled_from(["", "{}", "Ann", "x" * 300]),
        "char0_url": st.sampled_from(["", "{}", "http://x/s/char_0000.jpg"]),
        "text0": st.text(alphabet=" \n\u2028[SEPNT]ab.", max_size=40),
        "sep_story": st.text(alphabet=" \t[SEPNT]a", max_size=40),
    },
    optional={"images": JUNK, "characters": JUNK, "extra": JUNK},
)
VWP_HOSTILE = st.sampled_from(
    [
        ("row", '{"scene_full_id": "s1", "link0": "a.jpg", "text0": "A\\u2028B"}'),  # an escaped U+2028
        ("row", '{"scene_full_id": "s1", "link0": "a.jpg", "text0": "A\u2028B", "text0": "twice"}'),  # a raw one, a key twice
        ("raw", '{"scene_full_id": "s1", "link0": ' + "[" * 3000 + "]" * 3000 + "}"),
        ("raw", '{"scene_full_id": "s1", "link0": "a.jpg", "n": ' + "9" * 5000 + "}"),
        ("raw", "\udcff not utf8"),
        ("raw", "{not json"),
    ]
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    VWP_ROW,
    st.lists(st.one_of(VWP_ROW.map(lambda r: ("row", r)), JUNK.map(lambda j: ("junk", j)), VWP_HOSTILE), max_size=10),
    st.sampled_from(["s.jsonl", "s.json", "list.json"]),
)
def test_a_vwp_reader_never_raises_and_keeps_every_row_once(tmp_path: Path, first: dict, rest: list, name: str) -> None:
    """VWP rows (ids of any text, repeated, lists of any shape, a 300-character name) among junk
    values and hostile lines, as JSON lines (under ``.jsonl`` or ``.json``) or a JSON list: the
    reader never raises, every row with a scene is one story under a unique id, each other row
    or line a problem."""
    items = [("row", first), *rest]
    if name == "list.json":
        items = [(kind, value) for kind, value in items if not isinstance(value, str) or kind == "junk"]
        (tmp_path / name).write_text(json.dumps([value for _, value in items]))
    else:
        lines = [
            value if isinstance(value, str) and kind != "junk" else json.dumps(value, ensure_ascii=False) for kind, value in items
        ]
        _write(tmp_path / name, lines)
    ss = read_story_set(tmp_path / name, check_images=False)
    ids = [s.story_id for s in ss]
    assert len(ids) == len(set(ids)) and all(s.system == "human" for s in ss)
    assert len(ss) == sum(1 for kind, _ in items if kind == "row")
    assert all(len(name) <= 200 for s in ss for name, _ in s.characters)
    assert len({p.line for p in ss.problems if p.kind == "line"}) >= sum(1 for kind, _ in items if kind == "raw")


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


def test_a_small_png_of_169_megapixels_is_refused_from_its_header(tmp_path: Path) -> None:
    import resource

    from PIL import Image

    from vst_core.data.images import image_size

    Image.new("1", (13000, 13000)).save(tmp_path / "huge.png")  # a few hundred KB on disk, 1.3 GB decoded
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert "over the 40 MP budget" in str(check_image(tmp_path / "huge.png"))
    with pytest.raises(ValueError, match="only JPEG can be decoded reduced"):
        image_size(tmp_path / "huge.png")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB: nothing was decoded


def test_a_large_jpeg_is_decoded_reduced_and_its_boxes_follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    from vst_core.data.images import open_image, reduction, scale_of
    from vst_core.data.regions import Box
    from vst_core.images.grounder import _crop

    image = Image.new("RGB", (400, 300), "white")
    image.paste((255, 0, 0), (200, 150, 400, 300))  # the bottom-right quarter is red
    image.save(tmp_path / "photo.jpg", quality=95)
    image.save(tmp_path / "photo.png")
    monkeypatch.setenv("VST_MAX_IMAGE_PIXELS", "10000")
    assert reduction((400, 300), "JPEG") == 4
    decoded = open_image(tmp_path / "photo.jpg")
    assert decoded.size == (100, 75)
    crop = _crop(decoded, Box(200, 150, 400, 300).scaled(*scale_of(decoded, (400, 300))))
    assert crop.size == (50, 38) and crop.getpixel((25, 18))[0] > 200 and crop.getpixel((25, 18))[1] < 60
    with pytest.raises(ValueError, match="over the 0.01 MP budget"):
        open_image(tmp_path / "photo.png")
    assert "memory budget" in str(check_image(tmp_path / "photo.png"))
    monkeypatch.setenv("VST_MAX_IMAGE_PIXELS", "nonsense")  # a bad setting keeps the default
    assert open_image(tmp_path / "photo.png").size == (400, 300)


def test_grounding_never_opens_a_fifo(tmp_path: Path) -> None:
    from vst_core.images.grounder import ImageEntry, _probe

    os.mkfifo(tmp_path / "x.jpg")
    entry = ImageEntry(tmp_path / "x.jpg")
    assert _probe(entry) == ("", None) and "not a regular file" in str(entry.error)


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


def test_a_full_disk_mid_run_is_exit_3_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from conftest import SAMPLE

    from vst_core.data.scores_io import ScoresWriter

    real = ScoresWriter.write_line  # every line goes through it: computed, or read from the record store
    count = [0]

    def filling(self: ScoresWriter, line: str) -> None:
        count[0] += 1
        if count[0] == 4:  # the disk fills in the middle of the fourth record
            self._fh.write(line[:50])
            self._fh.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, line)

    out = tmp_path / "o.jsonl"
    monkeypatch.setattr(ScoresWriter, "write_line", filling)
    assert _score(str(SAMPLE), "--metrics", "redundancy", "--out", str(out)) == 3
    assert "No space left on device" in capsys.readouterr().err
    monkeypatch.setattr(ScoresWriter, "write_line", real)
    assert _score(str(SAMPLE), "--metrics", "redundancy", "--out", str(out)) == 0
    ids = [json.loads(line)["story_id"] for line in out.read_text().splitlines()]
    assert len(ids) == 8 == len(set(ids))


@pytest.mark.parametrize("case", ["directory", "under a file", "name too long", "a device"])
def test_an_unwritable_output_is_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    from conftest import SAMPLE

    if case == "directory":
        out = tmp_path / "d.jsonl"
        out.mkdir()
    elif case == "under a file":
        (tmp_path / "f").write_text("x")
        out = tmp_path / "f" / "o.jsonl"
    elif case == "a device":
        out = Path("/dev/zero")  # reading it never ends; it is refused before anything is read
    else:  # refused by the file system for anyone, root included
        out = tmp_path / ("o" * 300 + ".jsonl")
    assert _score(str(SAMPLE), "--out", str(out)) == 3
    assert "cannot write" in capsys.readouterr().err


# ------------------------------------------------------------------ judgements, regions and scores files

SAMPLE_IDS = ["space-ref", "space-generic", "home-ref", "home-generic", "ghost"]
CELL = st.one_of(
    st.sampled_from(["", "3", "4.5", "inf", "-inf", "nan", "1e308", "-1e308", "x", " 2 ", '"q,uoted"', "r1", "r2"]),
    st.sampled_from(SAMPLE_IDS),
    st.integers(-3, 9).map(str),
    st.text(max_size=6),
)
HEADER = st.lists(
    st.sampled_from(
        [
            "story_id",
            "Story_ID",
            "STORY_ID ",
            "rater",
            "aspect",
            "value",
            "system",
            "overall",
            "coherence",
            "album_id",
            "team",
            "notes",
            "",
            "story_a",
            "story_b",
            "rank_a",
            "rank_b",
        ]
    ),
    min_size=1,
    max_size=6,
)


@st.composite
def judgement_files(draw: st.DrawFn) -> bytes:
    """CSV text with any header, ragged rows, trailing commas, comments, a BOM, odd numbers."""
    header = draw(HEADER)
    rows = draw(st.lists(st.lists(CELL, min_size=0, max_size=len(header) + 2), max_size=8))
    trailing = draw(st.booleans())
    lines = [",".join(header) + ("," if trailing else "")]
    lines += [",".join(row) + ("," if trailing else "") for row in rows]
    if draw(st.booleans()):
        lines.insert(0, "# a comment line")
    text = "\n".join(lines)
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode("utf-8", "surrogateescape")


@pytest.fixture(scope="module")
def nr_records(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    from conftest import SAMPLE

    from vst_core.data import load_records

    out = tmp_path_factory.mktemp("nr") / "scores.jsonl"
    assert _score(str(SAMPLE), "--metrics", "redundancy", "--out", str(out)) == 0
    return load_records(out)[0]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(judgement_files())
def test_judgement_files_are_read_or_refused_and_meta_eval_never_raises(nr_records: list[Any], data: bytes) -> None:
    import math

    from vst_core.analysis.meta_eval import JudgementsError, MetaSettings, read_judgements, run_meta_eval

    try:
        judgements = read_judgements(data)
    except JudgementsError as exc:
        assert str(exc)
        return
    assert all(isinstance(p, str) and p for p in judgements.problems)
    report = run_meta_eval(nr_records, judgements, MetaSettings(resamples=20, baselines=False))
    for table in (report.correlations, report.system_correlations, report.bins):  # every undefined value says why
        for _, row in table.iterrows():
            if row["value"] is None or not math.isfinite(float(row["value"])):
                assert str(row["undefined"] or ""), row.to_dict()


BOX = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=5).map(json.dumps),
    st.sampled_from(["[1,2,30,40]", "[" * 3000 + "]" * 3000, "[1e999,0,1,1]", "null", "{}", "[1,2,3,'x']", "", "nope"]),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.sampled_from(["a.jpg", "x/a.jpg", "./b.png", "", "c"]), BOX, st.sampled_from(["", "0.9", "nan", "x"]))),
    st.booleans(),
)
def test_a_regions_csv_never_raises_and_keeps_every_good_row(
    tmp_path: Path, rows: list[tuple[str, str, str]], ragged: bool
) -> None:
    import csv
    import io
    import math

    from vst_core.data.regions import read_regions_csv

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["image_name", "bbox", "score"])
    for name, box, score in rows:
        writer.writerow([name, box, score, *(["extra"] if ragged else [])])
    path = tmp_path / "regions.csv"
    path.write_text(buffer.getvalue())
    table, problems = read_regions_csv(path)

    def good(box: str, score: str) -> bool:
        try:
            coords = json.loads(box)
        except (ValueError, RecursionError):
            return False
        numbers = isinstance(coords, list) and len(coords) == 4
        numbers = numbers and all(isinstance(c, (int, float)) and math.isfinite(c) for c in coords)
        return numbers and (score == "" or (score != "x" and math.isfinite(float(score))))

    expected = sum(good(box, score) for _, box, score in rows)
    assert sum(len(boxes) for boxes in table.by_path.values()) == expected
    assert len(problems) == len(rows) - expected


def test_a_regions_csv_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    from vst_core.data.regions import read_regions_csv

    path = tmp_path / "latin.csv"
    path.write_bytes("image_name,bbox\ncaf\xe9.jpg,[1,2,3,4]\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin.csv.*not UTF-8"):
        read_regions_csv(path)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.just("GOOD"), JUNK.map(json.dumps), HOSTILE_LINES, st.just('{"story_id": "x", "metrics": []}'))))
def test_a_scores_file_never_raises_and_keeps_every_good_record(nr_records: list[Any], tmp_path: Path, lines: list[str]) -> None:
    from vst_core.data import load_records
    from vst_core.data.scores_io import scored_ids

    good = [json.dumps(record.to_json()) for record in nr_records]
    text = [good[i % len(good)] if line == "GOOD" else line for i, line in enumerate(lines)]
    path = tmp_path / "scores.jsonl"
    _write(path, text)
    records, problems = load_records(path)
    kept = [r for r in records if r.story_id in {x.story_id for x in nr_records} and not r.errors]
    assert len(kept) == lines.count("GOOD")
    ids, _ = scored_ids(path)
    assert {r.story_id for r in kept} <= ids


def test_judgement_files_named_in_the_robustness_report(nr_records: list[Any]) -> None:
    from vst_core.analysis.meta_eval import JudgementsError, read_judgements

    trailing = read_judgements(b"story_id,overall\nspace-ref,3,\nhome-ref,4,\n")
    assert trailing.story_ids == {"space-ref", "home-ref"} and "trailing comma" in trailing.problems[0]
    with pytest.raises(JudgementsError, match="both mean 'story_id'"):
        read_judgements(b"story_id,Story_ID ,overall\na,a,3\nb,b,4\n")
    extra = read_judgements(b"story_id,overall\na,3,5\nb,4\n")
    assert "more fields than the header" in extra.problems[0]


def _parsed(line: str) -> Any:
    """A scores line as JSON, or None for a line a killed run left unfinished."""
    try:
        return json.loads(line)
    except ValueError:
        return None


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(VALID.map(json.dumps), JUNK.map(json.dumps), HOSTILE_LINES), max_size=10), st.integers(0, 10))
def test_a_cli_run_on_any_story_file_writes_each_story_once_and_resumes(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], cut: int
) -> None:
    folder = tmp_path_factory.mktemp("cli")
    path, out = folder / "s.jsonl", folder / "o.jsonl"
    _write(path, lines)
    expected = {s.story_id for s in read_story_set(path, check_images=False)}
    code = _score(str(path), "--metrics", "redundancy", "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert sorted(r["story_id"] for r in records) == sorted(expected)
    # exit 3 says why when records were written and none got a number (each has errors only)
    assert code == (3 if records and not any(r["metrics"] for r in records) else 0) or (code == 3 and not expected)
    if out.exists() and cut:  # a run killed mid-record, then resumed
        data = out.read_bytes()
        out.write_bytes(data[: max(0, len(data) - cut)])
        kept = {r["story_id"] for r in map(_parsed, out.read_text().splitlines()) if r is not None}
        code = _score(str(path), "--metrics", "redundancy", "--out", str(out))
        again = [json.loads(line) for line in out.read_text().splitlines()]
        assert sorted(r["story_id"] for r in again) == sorted(expected)
        new = [r for r in again if r["story_id"] not in kept]
        assert code == (3 if new and not any(r["metrics"] for r in new) else 0)


@pytest.mark.slow
def test_two_processes_on_one_output_leave_each_story_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    stories = tmp_path / "many.jsonl"
    sentences = ["We went to the park.", "The park was full of dogs.", "A dog ran to the park gate."]
    _write(stories, [json.dumps({"story_id": f"s{k}", "sentences": [*sentences, f"Story {k} ended."]}) for k in range(3000)])
    out = tmp_path / "o.jsonl"
    command = [sys.executable, "-m", "vst_core", "score", str(stories), "--metrics", "redundancy", "--out", str(out)]
    from conftest import ROOT

    first, second = (subprocess.Popen([*command, "--no-progress"], stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(2))
    codes = [first.wait(timeout=300), second.wait(timeout=300)]
    errors = (first.stderr.read() if first.stderr else "") + (second.stderr.read() if second.stderr else "")
    assert sorted(codes) in ([0, 0], [0, 2]), errors
    if 2 in codes:
        assert "another run is writing" in errors
    ids = [json.loads(line)["story_id"] for line in out.read_text().splitlines()]
    assert len(ids) == 3000 and len(set(ids)) == 3000


def test_line_separators_inside_a_story_stay_inside_its_line(tmp_path: Path) -> None:
    path, out = tmp_path / "s.jsonl", tmp_path / "o.jsonl"
    _write(path, [json.dumps({"story_id": "\u0085", "sentences": ["A\u2028b.", "C\u2029d."]})])
    assert _score(str(path), "--metrics", "redundancy", "--out", str(out)) == 0
    lines = out.read_text(encoding="utf-8").splitlines()  # the way most readers split: U+0085 and U+2028 end lines
    assert len(lines) == 1 and json.loads(lines[0])["story_id"] == "\u0085"


# ------------------------------------------------------------------ generated image folders

IMAGE_KINDS = ["png", "jpg", "truncated", "fifo", "loop", "outside", "folder", "empty", "text", "huge", "missing", "mode_cmyk"]


def _make_image(folder: Path, name: str, kind: str) -> None:
    from PIL import Image

    path = folder / name
    if kind in ("png", "jpg"):
        Image.new("RGB", (24, 16), "red").save(path, format="PNG" if kind == "png" else "JPEG")
    elif kind == "truncated":
        Image.new("RGB", (64, 64), "blue").save(path, format="PNG")
        path.write_bytes(path.read_bytes()[:60])
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "outside":
        path.symlink_to("/etc/hostname")
    elif kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("not an image")
    elif kind == "huge":  # a small file that would decode to 169 megapixels
        Image.new("1", (13000, 13000)).save(path, format="PNG")
    elif kind == "mode_cmyk":
        Image.new("CMYK", (16, 16)).save(path, format="JPEG")


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(IMAGE_KINDS), min_size=1, max_size=6))
def test_generated_image_folders_never_hang_or_raise(tmp_path_factory: pytest.TempPathFactory, kinds: list[str]) -> None:
    from vst_core.images.grounder import ImageEntry, _probe

    folder = tmp_path_factory.mktemp("images")
    names = [f"{k}_{kind}.{'jpg' if kind != 'png' else 'png'}" for k, kind in enumerate(kinds)]
    for name, kind in zip(names, kinds, strict=True):
        _make_image(folder, name, kind)
    path = folder / "s.jsonl"
    _write(path, [json.dumps({"story_id": f"s{k}", "sentences": ["A dog."], "images": [n]}) for k, n in enumerate(names)])
    stories = read_story_set(path)  # checks every image: returns, never hangs on the FIFO
    assert [s.story_id for s in stories] == [f"s{k}" for k in range(len(names))]  # every story kept
    for story, kind in zip(stories, kinds, strict=True):
        good = kind in ("png", "jpg", "mode_cmyk")
        assert story.images_ok == good, (kind, story.problems)
        entry = ImageEntry(folder / story.images[0])
        digest, _fmt = _probe(entry)  # what grounding does first, from the header only (never blocks, never decodes)
        if kind != "truncated":  # a truncated body shows at read time (above) and when decoded, not in the header
            assert (digest != "" and entry.error is None) if good else entry.error is not None


def test_a_symbolic_link_to_the_output_shares_its_lock(tmp_path: Path) -> None:
    """Two runs, one writing through a link to the file the other writes: the second is refused."""
    from vst_core.scoring.runs import RunLockedError, locked

    real = tmp_path / "scores.jsonl"
    real.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with locked(real):
        with pytest.raises(RunLockedError):
            with locked(link):
                pass
    with locked(link):
        with pytest.raises(RunLockedError):
            with locked(real):
                pass


def test_a_record_that_names_no_system_is_said_to_be_read_as_unknown(tmp_path: Path) -> None:
    """A scores line whose system is missing or empty is read as system 'unknown' (where it merges
    with a story of a system named so): the index and the reader both say so, line by line."""
    from conftest import SAMPLE

    from vst_core.cli import main
    from vst_core.data import load_records
    from vst_core.data.index_store import load_index

    out = tmp_path / "s.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    lines[0]["system"] = ""
    del lines[1]["system"]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    index = load_index([out])
    said = [p for p in index.problems if "names no system" in p.message]
    assert [p.line for p in said] == [1, 2] and "unknown" in set(index.table["system"])
    records, problems = load_records(out)
    assert any("2 record(s) name no system (the first on line 1)" in p.message for p in problems)
    assert sum(r.system == "unknown" for r in records) == 2
