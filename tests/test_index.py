"""The scores index (:mod:`vst_core.data.index`) against the exact reader and the identity rules:
files in the release's layout (systems sharing story ids, a computed NR file beside an imported
G/C/R file), merging per ``(system, story_id)`` and metric, the stored index (reused, re-indexed,
moved, unwritable, written twice at once), lazy records and what they say when a file changed, and
a property test over generated hostile files (budget: VST_HYPOTHESIS_EXAMPLES)."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.analysis.meta_eval.identity import keyed_judgements, keys_of, ratings_of, shared_ids
from vst_core.analysis.meta_eval.judgements import Judgements
from vst_core.contract import registry
from vst_core.data import ScoresWriter, index_build, index_store
from vst_core.data.importing import imported_records
from vst_core.data.index import IndexError_, ScoresIndex
from vst_core.data.index_build import build_index
from vst_core.data.index_store import index_folder, load_index
from vst_core.data.merge import Conflict, is_imported, merge_records
from vst_core.data.scores_io import load_records
from vst_core.metrics.groovist.record import GroundingScores
from vst_core.metrics.rovist_c.record import CoherenceScores
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores
from vst_core.viz.tables import scores_table

EXAMPLES = int(os.environ.get("VST_HYPOTHESIS_EXAMPLES", "150"))
COMPUTED = {"id": "computed01", "settings": {"metrics": ["redundancy"]}}
NUMBER_COLUMNS = [f.column for f in registry().fields]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Indexes go under this test's folder, never the user's cache (nor the session's)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VST_CACHE_DIR", str(folder))
    return folder


def story(sid: str, system: str, nr: float | None = None, **extra: Any) -> StoryScores:
    """A computed record: NR with its parts, five sentences (``sentences=`` to change them)."""
    metrics: dict[str, Any] = {}
    if nr is not None:
        metrics["redundancy"] = RedundancyScores(nr, 1 - nr, 1 - nr, "paper", 4)
    if "coherence" in extra:
        metrics["coherence"] = CoherenceScores(extra.pop("coherence"), (), None, "bert-nsp")
    if "grounding" in extra:
        u = extra.pop("grounding")
        metrics["grounding"] = GroundingScores(math.tanh(u), u, 0.6, 0.2, (0.2,), 0.3, ())
    sentences = extra.pop("sentences", (f"{system} story {sid} one.", "Two."))
    return StoryScores(sid, extra.pop("sequence_id", sid), system, tuple(sentences), metrics=metrics, signature=COMPUTED, **extra)


def write(path: Path, records: Sequence[StoryScores]) -> Path:
    with ScoresWriter(path) as out:
        for r in records:
            out.write(r)
    return path


def imported_file(tmp_path: Path, name: str, values: dict[tuple[str, str], dict[str, float]]) -> Path:
    """An imported G/C/R file as ``vst import-scores`` writes it (released ids are sequence ids)."""
    source = tmp_path / f"{name}.csv"
    source.write_text(f"released values {name}\n")
    variants = {"grounding": "released", "coherence": "released", "redundancy": "released"}
    return write(tmp_path / f"{name}.jsonl", imported_records(values, source, variants, sequence_from="story_id"))


def exact(paths: Sequence[Path]) -> tuple[list[StoryScores], list[Conflict]]:
    """What the exact reader gives: every file's validated records, merged per (system, story);
    records with text a table cannot hold (half a surrogate pair) are left out, as the index does."""
    parts = []
    for path in paths:
        records, _ = load_records(path)
        parts.extend((r, path.name) for r in records if storable(r))
    return merge_records(parts)


def storable(record: StoryScores) -> bool:
    texts = [
        record.story_id,
        record.sequence_id,
        record.system,
        *record.sentences,
        *(x for kv in record.errors.items() for x in kv),
    ]
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def value(index: ScoresIndex, system: str, sid: str, column: str) -> float:
    row = index.row_of(system, sid)
    assert row is not None, (system, sid)
    return float(index.table[column].iat[row]) if column in index.table else math.nan


# --------------------------------------------------------------------------- the release's layout


def test_two_systems_sharing_ids_get_their_own_rows_and_numbers(tmp_path: Path) -> None:
    path = write(
        tmp_path / "nr.jsonl", [story("45530", "reference", 0.9), story("45530", "llava", 0.6), story("7", "llava", 0.7)]
    )
    index = load_index([path])
    assert len(index) == 3
    assert value(index, "reference", "45530", "NR") == pytest.approx(0.9)
    assert value(index, "llava", "45530", "NR") == pytest.approx(0.6)
    assert index.rows_of_story("45530") == [0, 1]
    assert index.row_of("reference", "7") is None
    record, problems = index.record(index.row_of("llava", "45530") or 0)
    assert record is not None and record.system == "llava" and record.metrics.get("redundancy") is not None
    assert record.metrics["redundancy"].score == pytest.approx(0.6) and problems == []


def test_computed_nr_and_imported_gcr_merge_into_one_row_per_story(tmp_path: Path) -> None:
    nr = write(tmp_path / "nr.jsonl", [story("1", "reference", 0.9), story("1", "llava", 0.6)])
    gcr = imported_file(
        tmp_path,
        "gcr",
        {("reference", "1"): {"grounding": 0.4, "coherence": 0.7}, ("llava", "1"): {"grounding": -0.2, "coherence": 0.5}},
    )
    for paths in ([nr, gcr], [gcr, nr]):
        index = load_index(paths)
        assert len(index) == 2 and index.conflicts == []
        assert value(index, "llava", "1", "NR") == pytest.approx(0.6)
        assert value(index, "llava", "1", "coherence") == pytest.approx(0.5)
        assert value(index, "llava", "1", "GROOVIST raw") == pytest.approx(-0.2)
        assert value(index, "reference", "1", "GROOVIST") == pytest.approx(math.tanh(0.4))
        assert value(index, "reference", "1", "inter") == pytest.approx(0.1)  # the computed record's parts
        row = index.row_of("reference", "1") or 0
        assert index.table["sentences"].iat[row] == 2  # the imported record has none: the computed one's
        assert index.table["text"].iat[row] == "reference story 1 one. Two."
        record, problems = index.record(row)
        assert record is not None and problems == []
        assert record.sentences == ("reference story 1 one.", "Two.")
        assert set(record.metrics) == {"redundancy", "coherence", "grounding"}
        assert record.metrics.get("redundancy") is not None and record.metrics["redundancy"].variant == "paper"
        assert is_imported(record.signature)  # merged: names both sources


@pytest.mark.parametrize("computed_first", [True, False])
def test_a_computed_value_beats_an_imported_one_whatever_the_order(tmp_path: Path, computed_first: bool) -> None:
    nr = write(tmp_path / "nr.jsonl", [story("1", "llava", 0.6)])
    imported = imported_file(tmp_path, "released", {("llava", "1"): {"redundancy": 0.55, "coherence": 0.5}})
    paths = [nr, imported] if computed_first else [imported, nr]
    index = load_index(paths)
    assert value(index, "llava", "1", "NR") == pytest.approx(0.6)
    assert value(index, "llava", "1", "inter") == pytest.approx(0.4)  # the computed record, whole
    (conflict,) = index.conflicts
    assert conflict == Conflict("llava", "1", "redundancy", 0.6, "nr.jsonl", 0.55, "released.jsonl")
    assert "nr.jsonl is used" in str(conflict)
    record, _ = index.record(0)
    assert (
        record is not None
        and record.metrics.get("redundancy") is not None
        and record.metrics["redundancy"].score == pytest.approx(0.6)
    )
    assert exact(paths)[1] == index.conflicts  # the same rule as merge_records


def test_two_imported_values_conflict_and_the_first_file_wins(tmp_path: Path) -> None:
    a = imported_file(tmp_path, "a", {("llava", "1"): {"coherence": 0.5}, ("llava", "2"): {"coherence": 0.3}})
    b = imported_file(tmp_path, "b", {("llava", "1"): {"coherence": 0.8}, ("llava", "2"): {"coherence": 0.3}})
    index = load_index([b, a])
    assert value(index, "llava", "1", "coherence") == pytest.approx(0.8)
    assert index.conflicts == [Conflict("llava", "1", "coherence", 0.8, "b.jsonl", 0.5, "a.jsonl")]  # equal values agree
    assert exact([b, a])[1] == index.conflicts


def test_two_computed_values_conflict_in_one_file_and_the_first_line_wins(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.5), story("1", "x", 0.7), story("1", "x", 0.5 + 1e-12)])
    index = load_index([path])
    assert len(index) == 1 and value(index, "x", "1", "NR") == pytest.approx(0.5)
    assert index.conflicts == [Conflict("x", "1", "redundancy", 0.5, "s.jsonl", 0.7, "s.jsonl")]  # within TOLERANCE: same


@pytest.mark.slow  # the signature of a CLIP setting imports open_clip and torch (about 5 s)
def test_record_equals_the_exact_readers_merged_record_evidence_included(tmp_path: Path) -> None:
    from vst_core.scoring.synthetic import write_scores_file

    synthetic = tmp_path / "synthetic.jsonl"
    write_scores_file(synthetic, 12, systems=("reference", "llava", "gpt"))
    ids = sorted({r.story_id for r in load_records(synthetic)[0]})
    gcr = imported_file(
        tmp_path, "gcr", {("llava", ids[0]): {"coherence": 0.1, "grounding": 0.3}, ("gpt", "new"): {"coherence": 0.2}}
    )
    paths = [synthetic, gcr]
    index = load_index(paths)
    merged, conflicts = exact(paths)
    assert len(index) == len(merged) == 13
    assert {(c.system, c.story_id, c.metric) for c in index.conflicts} == {(c.system, c.story_id, c.metric) for c in conflicts}
    for expected in merged:
        row = index.row_of(expected.system, expected.story_id)
        assert row is not None
        record, problems = index.record(row)
        assert record == expected and problems == []
    assert_table_matches(index, merged)


@pytest.mark.slow  # starts worker processes
def test_a_file_read_by_several_processes_indexes_as_one_read_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above PARALLEL_BYTES a file is cut into shares at line starts and parsed by processes; the
    table, the byte ranges, the problems (with line numbers) and the conflicts are the serial ones."""
    from vst_core.scoring.synthetic import write_scores_file

    big = tmp_path / "big.jsonl"
    write_scores_file(big, 60, systems=("reference", "llava"))
    with big.open("a") as fh:  # a bad line, a blank one and a conflicting second line near the end
        fh.write("{broken\n\n" + big.read_text().splitlines()[3].replace('"score": ', '"score": 0.5, "x": ', 1) + "\n")
    serial = build_index([big])
    monkeypatch.setattr(index_build, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(index_build.os, "cpu_count", lambda: 3)
    parallel = build_index([big])
    pd.testing.assert_frame_equal(parallel.table, serial.table)
    pd.testing.assert_frame_equal(parallel.sources, serial.sources)
    assert parallel.problems == serial.problems and [str(p) for p in serial.problems][0].startswith("error (line 61")
    assert serial.conflicts and parallel.conflicts == serial.conflicts and parallel.signatures == serial.signatures
    assert parallel.record(5) == serial.record(5)


def assert_table_matches(index: ScoresIndex, merged: Sequence[StoryScores]) -> None:
    """The index's table is the exact reader's :func:`scores_table` of the merged records, row by row."""
    expected = scores_table(merged, [f.metric for f in registry().fields]).set_index(["system", "story"])
    table = index.table.set_index(["system", "story"])
    assert sorted(table.index) == sorted(expected.index)
    table = table.loc[expected.index]
    for column in NUMBER_COLUMNS:
        got = table[column].to_numpy(float) if column in table else np.full(len(table), np.nan)
        np.testing.assert_allclose(got, expected[column].to_numpy(float), rtol=0, atol=0, err_msg=column)
    for column in ("sequence", "sentences", "text", "error"):
        assert table[column].tolist() == expected[column].tolist(), column


# --------------------------------------------------------------------------- lines the index must not misread


def test_a_story_whose_first_line_has_no_sentences_takes_them_from_a_later_line(tmp_path: Path) -> None:
    gcr = imported_file(tmp_path, "gcr", {("llava", "1"): {"coherence": 0.5}})
    nr = write(tmp_path / "nr.jsonl", [story("1", "llava", 0.6, sequence_id="seq-9", sentences=("A.", "B.", "C."))])
    index = load_index([gcr, nr])
    row = index.row_of("llava", "1") or 0
    assert index.table.loc[row, ["sequence", "sentences", "text"]].tolist() == ["seq-9", 3, "A. B. C."]
    record, _ = index.record(row)
    assert record is not None and record.sequence_id == "seq-9" and record.sentences == ("A.", "B.", "C.")


def test_errors_follow_the_merged_record(tmp_path: Path) -> None:
    """An error of a metric another source scored is gone; an error of a later line is kept."""
    failed = story("1", "x", None, errors={"redundancy": "ValueError: empty", "coherence": "no model"})
    later = story("1", "x", 0.7, errors={"grounding": "no images"})
    path = write(tmp_path / "s.jsonl", [failed, later])
    index = load_index([path])
    assert index.table["error"].iat[0] == "coherence: no model; grounding: no images"
    assert index.table["problems"].iat[0] == "coherence error,grounding error"
    assert_table_matches(index, exact([path])[0])


def test_the_first_line_of_a_file_with_a_bom_is_read_lazily_too(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.6), story("2", "x", 0.7)])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    index = load_index([path])
    assert len(index) == 2 and index.problems == []
    record, problems = index.record(0)
    assert problems == [] and record is not None and record.story_id == "1"


@pytest.mark.parametrize(
    "line",
    [
        '{"story_id": 123456789012345678901234, "sentences": ["A."], "system": "x"}',  # past 64 bits: orjson's float
        '{"story_id": "deep", "sentences": ["A."], "x": ' + "[" * 70 + "]" * 70 + "}",  # past the nesting limit
        '{"story_id": "deep2", "sentences": ["A."], "x": ' + "[" * 62 + "1" + "]" * 62 + "}",  # just inside it
        '{"story_id": "text", "sentences": ["[[[[ ]]]] \\" [[[ 1234567890123456789012"], "x": ' + "[" * 62 + "]" * 62 + "}",
        '{"story_id": "nan", "sentences": ["A."], "metrics": {"redundancy": {"score": NaN, "inter": 0.1, "intra": 0.1, '
        '"variant": "paper", "n": 4}}}',
        '{"story_id": "inf", "sentences": ["A."], "metrics": {"redundancy": {"score": 1e400, "inter": 0.1, "intra": 0.1, '
        '"variant": "paper", "n": 4}}}',
        '{"story_id": "lone", "system": "\\ud800", "sentences": ["A."]}',
    ],
)
def test_lines_orjson_reads_differently_are_indexed_as_the_exact_reader_reads_them(tmp_path: Path, line: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(line + "\n" + json.dumps(story("ok", "x", 0.5).to_json()) + "\n")
    index = load_index([path])
    merged, _ = exact([path])
    assert sorted(zip(index.table["system"], index.table["story"], strict=True)) == sorted((r.system, r.story_id) for r in merged)
    assert_table_matches(index, merged)
    for row in range(len(index)):
        assert index.record(row)[0] in merged


def test_a_metric_whose_own_fields_do_not_fit_is_an_error_not_a_number(tmp_path: Path) -> None:
    good = story("1", "x", 0.6).to_json()
    bad = {**good, "story_id": "2", "metrics": {"redundancy": {**good["metrics"]["redundancy"], "inter": "0.4"}}}
    short = {**good, "story_id": "3", "metrics": {"redundancy": {"score": 0.5}}}
    boolean = {**good, "story_id": "4", "metrics": {"redundancy": {**good["metrics"]["redundancy"], "score": True}}}
    listed = {**good, "story_id": "5", "metrics": {"redundancy": [0.5]}}
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (good, bad, short, boolean, listed)))
    index = load_index([path])
    assert value(index, "x", "1", "NR") == pytest.approx(0.6)
    for sid in "2345":
        assert math.isnan(value(index, "x", sid, "NR")) and math.isnan(value(index, "x", sid, "inter"))
    assert (
        index.table["error"].iat[1]
        == "redundancy: unreadable record: metrics.redundancy.inter: expected a finite number, got '0.4'"
    )
    assert any(p.line == 2 and "unreadable redundancy record" in p.message for p in index.problems)
    assert_table_matches(index, exact([path])[0])


def test_unreadable_and_other_version_lines_are_problems_with_line_numbers(tmp_path: Path) -> None:
    good = json.dumps(story("1", "x", 0.6).to_json())
    old = json.dumps({"story_id": "2", "sentences": ["A."], "metrics": {}})
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        "\n".join([good, "{not json", "", old, '{"sentences": ["A."]}', '{"story_id": "3"}', '{"story_id": "4", "sentences": ["A."], '
                   '"images": [1]}', good[: len(good) // 2]]).encode() + b"\n\xff\xfe\n"
    )  # fmt: skip
    index = load_index([path])
    assert sorted(index.table["story"]) == ["1", "2"]
    lines = {p.line: p for p in index.problems if "names no system" not in p.message}
    assert set(lines) == {2, 4, 5, 6, 7, 8, 9}
    assert lines[4].severity == "warning" and "another version" in lines[4].message
    assert [p.line for p in index.problems if "names no system" in p.message] == [4]  # read as 'unknown', and said
    assert lines[6].story_id == "3" and "without sentences" in lines[6].message
    assert "images" in lines[7].message
    assert all(lines[n].severity == "error" for n in (2, 5, 6, 7, 8, 9))


def test_a_signature_with_odd_merged_parts_is_read_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = [
        {**story(str(k), "x", 0.5).to_json(), "signature": sig}
        for k, sig in enumerate([{"merged": 5}, {"merged": None}, [1], "s"])
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in odd))
    index = load_index([path])
    assert len(index) == 4 and not any(is_imported(r.signature) for r in exact([path])[0])


# --------------------------------------------------------------------------- the stored index


def test_the_stored_index_is_reused_and_a_changed_file_is_indexed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.6), story("1", "y", 0.4)])
    first = load_index([path])
    assert index_folder() == tmp_path / "cache" / "index" and any(index_folder().glob("*.table.parquet"))

    def fail(*args: Any, **kwargs: Any) -> ScoresIndex:
        raise AssertionError("built again")

    with monkeypatch.context() as patch:
        patch.setattr(index_store, "build_index", fail)
        again = load_index([path])
    pd.testing.assert_frame_equal(again.table, first.table)
    pd.testing.assert_frame_equal(again.sources, first.sources)
    assert (again.digest, again.conflicts, again.problems, again.metrics) == (
        first.digest,
        first.conflicts,
        first.problems,
        first.metrics,
    )
    assert again.record(1)[0] == first.record(1)[0]

    write(path, [story("2", "x", 0.3)])  # appended: another content
    changed = load_index([path])
    assert changed.digest != first.digest and len(changed) == 3
    assert value(changed, "x", "2", "NR") == pytest.approx(0.3)


def test_a_file_changed_after_indexing_gives_a_problem_not_a_wrong_record(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.6), story("2", "x", 0.4)])
    index = load_index([path])
    path.write_text(json.dumps(story("2", "x", 0.9).to_json()) + "\n" + json.dumps(story("1", "x", 0.1).to_json()) + "\n")
    record, problems = index.record(0)
    assert record is None and "changed since it was indexed" in problems[0].message

    # the same size and time as indexed (mtime restored), another story at the offset: still caught
    same_size = write(tmp_path / "t.jsonl", [story("1", "x", 0.6), story("2", "x", 0.4)])
    index = load_index([same_size])
    lines = same_size.read_bytes().splitlines(keepends=True)
    before = os.stat(same_size)
    same_size.write_bytes(lines[1] + lines[0])
    os.utime(same_size, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(same_size).st_size == before.st_size
    record, problems = index.record(0)
    assert record is None and "changed since it was indexed" in problems[0].message
    assert load_index([same_size]).record(0)[0] == story("2", "x", 0.4)  # ctime is part of the digest memo's key

    same_size.unlink()
    record, problems = index.record(1)
    assert record is None and "cannot read" in problems[0].message
    assert index.record(99) == (None, [index.record(99)[1][0]]) and index.record(-1)[0] is None


def test_a_moved_file_with_the_same_content_reuses_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.6), story("2", "x", 0.4)])
    first = load_index([path])
    moved = tmp_path / "elsewhere" / "renamed.jsonl"
    moved.parent.mkdir()
    path.rename(moved)
    monkeypatch.setattr(index_store, "build_index", lambda *a, **k: pytest.fail("built again"))
    again = load_index([moved])
    assert again.digest == first.digest and again.files[0].path == str(moved.resolve())
    assert again.record(1)[0] == story("2", "x", 0.4)  # read from where it now lies


def test_an_index_folder_that_cannot_be_written_still_gives_the_index(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", "x", 0.6)])
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    index = load_index([path], folder=blocked / "index")
    assert len(index) == 1 and index.record(0)[0] == story("1", "x", 0.6)
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        assert len(load_index([path], folder=read_only)) == 1
        assert list(read_only.iterdir()) == [] or os.geteuid() == 0  # root writes anyway
    finally:
        read_only.chmod(0o700)


def test_text_a_table_cannot_hold_is_a_problem_and_a_damaged_store_costs_only_speed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        '{"story_id": "\\ud800", "system": "x", "sentences": ["A."]}',
        '{"story_id": "\\ud83d\\ude00", "sentences": ["\\u2028"]}',
    ]
    path.write_text("\n".join(lines) + "\n")  # half a surrogate pair; a whole pair and an escaped line break are fine
    index = load_index([path])
    assert index.table["story"].tolist() == ["\U0001f600"] and index.table["text"].tolist() == ["\u2028"]
    assert [(p.line, "not Unicode" in p.message) for p in index.problems if p.severity == "error"] == [(1, True)]
    good = write(tmp_path / "g.jsonl", [story("1", "x", 0.6)])
    stored = load_index([good])
    for damaged in index_folder().glob(f"{stored.digest}.*"):
        damaged.write_bytes(b"\x00 damaged")
    assert len(load_index([good])) == 1
    (index_folder() / "digests.json").write_text("[1, 2]")
    assert len(load_index([good])) == 1
    assert not list(index_folder().glob("*.tmp"))  # nothing left half-written


def test_a_missing_path_is_an_index_error(tmp_path: Path) -> None:
    with pytest.raises(IndexError_):
        load_index([tmp_path / "none.jsonl"])
    with pytest.raises(IndexError_):
        load_index([tmp_path])
    with pytest.raises(IndexError_):
        build_index([tmp_path / "none.jsonl"])


def test_an_empty_file_is_an_empty_index(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n\n")
    for _ in range(2):
        index = load_index([path])
        assert len(index) == 0 and index.problems == [] and index.record(0)[0] is None


@pytest.mark.slow  # four threads saving and loading at once, like the processes above
def test_two_writers_of_one_index_at_once_leave_a_whole_index(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story(str(k), s, k / 100) for k in range(50) for s in ("x", "y")])
    built = build_index([path])
    errors: list[BaseException] = []

    def save() -> None:
        try:
            for _ in range(5):
                index_store.save_index(built, index_folder())
                read = load_index([path])
                pd.testing.assert_frame_equal(read.table, built.table)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not list(index_folder().glob("*.tmp"))
    assert load_index([path]).record(99)[0] == story("49", "y", 0.49)


def test_the_digest_memo_keeps_recent_files_and_forgets_the_oldest(tmp_path: Path) -> None:
    paths = [write(tmp_path / f"{k}.jsonl", [story(str(k), "x", 0.5)]) for k in range(3)]
    for path in paths:
        load_index([path])
    memo = json.loads((index_folder() / "digests.json").read_text())
    assert len(memo) == 3
    load_index([paths[0]])  # a hit moves nothing, a rebuild moves its file last
    index_store._remember_digests(index_folder(), load_index([paths[0]]).files)
    assert list(json.loads((index_folder() / "digests.json").read_text()))[-1].startswith(str(paths[0].resolve()))


# --------------------------------------------------------------------------- identity in meta-evaluation


def judgements(rows: list[tuple[str, str | None, float]], pairs: list[tuple[str, str]] | None = None) -> Judgements:
    ratings = pd.DataFrame(
        {
            "story_id": [r[0] for r in rows],
            "rater": "r1",
            "aspect": "overall",
            "value": [r[2] for r in rows],
            "system": [r[1] for r in rows],
        }
    )
    errors = pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []})
    pair_frame = pd.DataFrame(
        {
            "sequence_id": "s",
            "better": [p[0] for p in pairs or []],
            "worse": [p[1] for p in pairs or []],
            "gap": 1.0,
            "agreement": 1.0,
        }
    )
    return Judgements(ratings, errors, pair_frame, "test")


def test_judgements_take_the_key_of_their_system_when_ids_are_shared(tmp_path: Path) -> None:
    nr = write(tmp_path / "nr.jsonl", [story("1", "reference", 0.9), story("1", "llava", 0.6), story("2", "llava", 0.5)])
    table = load_index([nr]).table
    assert shared_ids(table) and keys_of(table).tolist() == ["1 (reference)", "1 (llava)", "2 (llava)"]
    given_ = judgements(
        [("1", "llava", 2.0), ("1", None, 3.0), ("2", None, 4.0), ("9", None, 1.0), ("1", "gpt", 5.0)], [("1", "2"), ("2", "9")]
    )
    keyed, notes = keyed_judgements(given_, table)
    assert keyed.ratings["story_id"].tolist() == ["1 (llava)", "2 (llava)", "9"]  # "1" with no system: which one?
    assert len(notes) == 3 and "another system's story" in notes[0] and "gpt / 1" in notes[0]  # gpt never scored 1
    assert "1 rating rows" in notes[1] and "1 judged pair" in notes[2]
    assert keyed.pairs[["better", "worse"]].values.tolist() == [["2 (llava)", "9"]]
    assert [r.mean for r in ratings_of(keyed, "1 (llava)")] == [2.0]


def test_judgements_are_unchanged_when_no_id_is_shared(tmp_path: Path) -> None:
    nr = write(tmp_path / "nr.jsonl", [story("1", "reference", 0.9), story("2", "llava", 0.6)])
    table = load_index([nr]).table
    given_ = judgements([("1", None, 3.0), ("2", "llava", 4.0)])
    keyed, notes = keyed_judgements(given_, table)
    assert keyed is given_ and notes == [] and keys_of(table).tolist() == ["1", "2"]
    assert [r.mean for r in ratings_of(given_, "2", "llava")] == [4.0] and ratings_of(given_, "2", "reference") == []


# --------------------------------------------------------------------------- generated files


def _metric_value() -> st.SearchStrategy[Any]:
    number = st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False),
        st.just(float("nan")),
        st.just(1e308),
        st.integers(-(2**70), 2**70),
        st.booleans(),
        st.none(),
    )
    complete = st.builds(
        lambda s, i, j, n: {"score": s, "inter": i, "intra": j, "variant": "paper", "n": n},
        number,
        number,
        number,
        st.one_of(st.integers(1, 6), st.floats(1, 6), st.text(max_size=2)),
    )
    return st.one_of(
        complete,
        st.dictionaries(st.sampled_from(["score", "inter", "n"]), number, max_size=3),
        number,
        st.lists(number, max_size=2),
    )


SYSTEMS = st.sampled_from(["reference", "llava", "", None, 7])
IDS = st.one_of(st.sampled_from(["1", "2", "45530", 1, 2.0, "", None, True]), st.text(max_size=3))
SIGNATURES = st.sampled_from(
    [
        COMPUTED,
        {"id": "imp1", "imported": {"file": "x.csv"}},
        {"id": "imp2", "merged": [{"imported": {}}]},
        {"merged": 3},
        [],
        None,
    ]
)
RECORD = st.fixed_dictionaries(
    {"story_id": IDS, "system": SYSTEMS, "sentences": st.lists(st.text(max_size=8), max_size=3), "format": st.just(1)},
    optional={
        "sequence_id": st.one_of(st.none(), st.text(max_size=3), st.integers()),
        "images": st.one_of(st.lists(st.text(max_size=4), max_size=2), st.just([1]), st.just("a.png")),
        "metrics": st.one_of(
            st.dictionaries(st.sampled_from(["redundancy", "coherence", "grounding", "bleu"]), _metric_value(), max_size=3),
            st.just([1]),
        ),
        "errors": st.one_of(
            st.dictionaries(st.sampled_from(["redundancy", "coherence"]), st.text(max_size=5), max_size=2), st.just(3)
        ),
        "problems": st.one_of(st.lists(st.text(max_size=3), max_size=1), st.just("x")),
        "signature": SIGNATURES,
        "warnings": st.lists(st.text(max_size=3), max_size=1),
    },
)


def _line(record: dict[str, Any]) -> bytes:
    # NaN, inf and 2**70 written as Python writes them: the exact reader takes them, orjson does not
    return json.dumps(record, allow_nan=True).encode("utf-8", "surrogatepass")


LINES = st.one_of(
    RECORD.map(_line),
    RECORD.map(_line).flatmap(lambda b: st.integers(0, len(b)).map(lambda k: b[:k])),  # truncated
    st.binary(max_size=20),
    st.sampled_from(
        [
            b"\xef\xbb\xbf",
            b"[1, 2]",
            b'{"story_id": "d", "sentences": [], "x": ' + b"[" * 70 + b"]" * 70 + b"}",
            b"\x00\r",
            b'{"a":1}',
        ]
    ),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.lists(LINES, max_size=8), min_size=1, max_size=3), st.booleans())
def test_any_generated_files_index_as_the_exact_reader_reads_and_merges_them(
    tmp_path: Path, files: list[list[bytes]], bom: bool
) -> None:
    folder = tmp_path / f"case-{os.urandom(6).hex()}"
    folder.mkdir()
    paths = []
    for k, lines in enumerate(files):
        path = folder / f"{k}.jsonl"
        path.write_bytes((b"\xef\xbb\xbf" if bom and k == 0 else b"") + b"\n".join(lines) + b"\n")
        paths.append(path)
    index = load_index(paths, folder=folder / "index")
    merged, conflicts = exact(paths)
    assert len(index) == len(merged)
    assert sorted(zip(index.table["system"], index.table["story"], strict=True)) == sorted((r.system, r.story_id) for r in merged)
    assert_table_matches(index, merged)
    assert sorted(map(str, index.conflicts)) == sorted(map(str, conflicts))
    for expected in merged:
        record, _ = index.record(index.row_of(expected.system, expected.story_id) or 0)
        assert record == expected
    stored = load_index(paths, folder=folder / "index")
    assert len(stored) == len(index) and stored.digest == index.digest
