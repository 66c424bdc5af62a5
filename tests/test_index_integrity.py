"""The scores index proves what it read: a file changed while it is indexed (rewritten, appended
to) is never stored under a digest of other bytes; a stored index that is damaged, truncated or
another index's is rebuilt from the source, never read; a same-size rewrite with its mtime restored
is a new file; special files in the index folder never block; conflicts name the value used after
every file; and a property test damaging the stored files at random (budget: ``examples``)."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from vst_core.data import ScoresWriter, index_build, index_lines, index_store
from vst_core.data import index as index_module
from vst_core.data.access import FileIdentity
from vst_core.data.importing import imported_records
from vst_core.data.index import IndexError_, ScoresIndex
from vst_core.data.index_build import build_index
from vst_core.data.index_store import index_folder, load_index
from vst_core.data.merge import Conflict, merge_records
from vst_core.data.scores_io import load_records
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores

COMPUTED = {"id": "computed01", "settings": {"metrics": ["redundancy"]}}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Indexes go under this test's folder, never the user's cache (nor the session's)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VST_CACHE_DIR", str(folder))
    return folder


def story(sid: str, nr: float, system: str = "x") -> StoryScores:
    return StoryScores(
        sid, sid, system, (f"story {sid}.",), metrics={"redundancy": RedundancyScores(nr, 1 - nr, 1 - nr, "paper", 4)},
        signature=COMPUTED,
    )  # fmt: skip


def write(path: Path, records: Sequence[StoryScores]) -> Path:
    with ScoresWriter(path) as out:
        for r in records:
            out.write(r)
    return path


def numbers(index: ScoresIndex) -> dict[tuple[str, str], float]:
    return {(y, s): float(v) for y, s, v in zip(index.table["system"], index.table["story"], index.table["NR"], strict=True)}


def nr_file(path: Path, n: int, offset: float = 0.0) -> Path:
    return write(path, [story(str(k), round((k * 37 % 100) / 100 + offset, 6) % 1) for k in range(n)])


def on_line(monkeypatch: pytest.MonkeyPatch, at: int, action: Callable[[], None], times: int = 1) -> list[int]:
    """Run ``action`` when the build parses line ``at`` (the first ``times`` builds that reach it)."""
    done: list[int] = []
    real = index_lines._read_line

    def hooked(raw: bytes, number: int, *args: Any) -> Any:
        if number == at and len(done) < times:
            done.append(number)
            action()
        return real(raw, number, *args)

    monkeypatch.setattr(index_lines, "_read_line", hooked)
    return done


# --------------------------------------------------------------------------- the source changing during the build


def test_a_file_rewritten_during_the_build_is_indexed_again_from_the_bytes_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = nr_file(tmp_path / "s.jsonl", 200)
    original = path.read_bytes()
    other = nr_file(tmp_path / "other.jsonl", 200, offset=0.5).read_bytes()
    on_line(monkeypatch, 100, lambda: path.write_bytes(other))
    index = load_index([path])
    assert numbers(index) == numbers(build_index([tmp_path / "other.jsonl"]))  # the bytes the file holds now
    assert index.files[0].sha256 == index_build.hashlib.sha256(other).hexdigest()
    path.write_bytes(original)  # restored: the stored index of the other bytes is never read for it
    monkeypatch.undo()
    again = load_index([path])
    assert numbers(again) == numbers(build_index([path])) and again.digest != index.digest


@pytest.mark.slow  # starts worker processes (twice), and waits out the granule of a file just written
def test_a_file_rewritten_while_processes_read_it_is_indexed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = nr_file(tmp_path / "s.jsonl", 300)
    other = nr_file(tmp_path / "other.jsonl", 300, offset=0.5).read_bytes()
    monkeypatch.setattr(index_build, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(index_build.os, "cpu_count", lambda: 2)
    real, calls = index_build._hash_count, []

    def rewrite_first(*args: Any, **kwargs: Any) -> int:
        if not calls:  # the first share is given to the workers: the file is rewritten under them
            path.write_bytes(other)
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(index_build, "_hash_count", rewrite_first)
    index = load_index([path])
    assert numbers(index) == numbers(build_index([tmp_path / "other.jsonl"]))
    assert index.files[0].sha256 == index_build.hashlib.sha256(other).hexdigest()


def test_a_file_that_keeps_changing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = nr_file(tmp_path / "s.jsonl", 50)
    versions = iter([0.25, 0.5, 0.75])
    done = on_line(monkeypatch, 10, lambda: nr_file(path, 50, offset=next(versions)), times=3)
    with pytest.raises(IndexError_, match="changed while it was being indexed"):
        load_index([path])
    assert len(done) == 2  # built once again, then refused
    assert not list(index_folder().glob("*.parquet"))  # nothing stored


def test_lines_appended_during_the_build_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = nr_file(tmp_path / "s.jsonl", 50)

    def append() -> None:
        with path.open("ab") as fh:
            fh.write(path.read_bytes().splitlines(keepends=True)[0].replace(b'"0"', b'"extra"'))

    on_line(monkeypatch, 25, append)
    index = load_index([path])
    lines = path.read_bytes().count(b"\n")
    assert lines == 51 and len(index) == 51  # indexed again, as the file now is: never more rows than lines
    assert index.files[0].sha256 == index_build.hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(index.sources) == lines


def test_a_file_checked_by_the_caller_is_refused_when_it_changes_during_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = nr_file(tmp_path / "s.jsonl", 50)
    checked = [FileIdentity.of(os.stat(path))]
    on_line(monkeypatch, 10, lambda: nr_file(path, 50, offset=0.5))
    with pytest.raises(IndexError_, match="changed"):
        load_index([path], expected=checked)


def test_a_digest_remembered_for_other_bytes_is_never_stored_under(tmp_path: Path) -> None:
    path = nr_file(tmp_path / "s.jsonl", 20)
    wrong = "0" * 64
    index = build_index([path], digests=[wrong])  # told a digest the bytes do not have: hashed and indexed again
    assert index.files[0].sha256 == index_build.hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- the stored index


def test_a_file_changed_after_its_digest_was_found_is_not_given_the_stored_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = nr_file(tmp_path / "s.jsonl", 30)
    first = load_index([path])
    then = first.files[0].identity
    other = nr_file(tmp_path / "other.jsonl", 30, offset=0.5).read_bytes()

    def remembered(folder: Path, paths: Sequence[Path], expected: Any = None, seen: Any = None) -> list[str]:
        path.write_bytes(other)  # rewritten right after its digest was looked up
        if seen is not None:
            seen.append(then)
        return [first.files[0].sha256]

    monkeypatch.setattr(index_store, "_known_digests", remembered)
    index = load_index([path])
    monkeypatch.undo()
    assert numbers(index) == numbers(build_index([path])) != numbers(first)


def stored(key: str, suffix: str) -> Path:
    return index_folder() / f"{key}.{suffix}"


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_a_flipped_bit_in_the_stored_parquet_rebuilds_the_index(tmp_path: Path) -> None:
    path = nr_file(tmp_path / "s.jsonl", 200)
    first = load_index([path])
    truth = numbers(first)
    table = stored(first.digest, "table.parquet")
    data = bytearray(table.read_bytes())
    rng = random.Random(0)
    for _ in range(50):
        damaged = bytearray(data)
        bit = rng.randrange(len(damaged) * 8)
        damaged[bit // 8] ^= 1 << (bit % 8)
        table.write_bytes(bytes(damaged))
        assert numbers(load_index([path])) == truth
    assert table.read_bytes() == bytes(data)  # rebuilt and stored again


def test_another_files_index_copied_under_the_key_is_not_read(tmp_path: Path) -> None:
    a, b = nr_file(tmp_path / "a.jsonl", 30), nr_file(tmp_path / "b.jsonl", 30, offset=0.5)
    ia, ib = load_index([a]), load_index([b])
    for suffix in ("json", "table.parquet", "sources.parquet", "phrases.parquet"):
        shutil.copyfile(stored(ib.digest, suffix), stored(ia.digest, suffix))
    again = load_index([a])
    assert numbers(again) == numbers(ia) != numbers(ib)
    for suffix in ("table.parquet",):  # only the Parquet swapped, the description kept: still refused
        load_index([a])
        shutil.copyfile(stored(ib.digest, suffix), stored(ia.digest, suffix))
        assert numbers(load_index([a])) == numbers(ia)


def test_a_truncated_stored_file_rebuilds_the_index(tmp_path: Path) -> None:
    path = nr_file(tmp_path / "s.jsonl", 40)
    first = load_index([path])
    for suffix in ("json", "table.parquet", "sources.parquet", "phrases.parquet"):
        target = stored(first.digest, suffix)
        target.write_bytes(target.read_bytes()[: len(target.read_bytes()) // 2])
        again = load_index([path])
        assert numbers(again) == numbers(first) and len(again.sources) == len(first.sources)


def test_a_same_size_rewrite_with_its_mtime_restored_is_indexed_again(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", [story("1", 0.111), story("2", 0.5)])
    index = load_index([path])
    before = os.stat(path)
    path.write_bytes(path.read_bytes().replace(b'"score":0.111', b'"score":1.000').replace(b'"score": 0.111', b'"score": 1.000'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # cp -p, rsync -t
    now = os.stat(path)
    assert (now.st_size, now.st_mtime_ns) == (before.st_size, before.st_mtime_ns) and now.st_ctime_ns != before.st_ctime_ns
    assert not index.files[0].same(now)  # the old index's evidence is refused, not shown
    assert FileIdentity.of(now) != FileIdentity.of(before)  # the dashboard's cache key changes with it
    again = load_index([path])
    row = again.row_of("x", "1")
    assert row is not None and again.table["NR"].iat[row] == pytest.approx(1.0)
    record, problems = again.record(row)
    assert problems == [] and record is not None and record.metrics.get("redundancy") is not None
    assert record.metrics["redundancy"].score == pytest.approx(1.0)  # table and evidence agree


def in_time(run: Callable[[], Any], seconds: float = 10) -> Any:
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(run()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked"
    return out[0] if out else None


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_special_files_in_the_index_folder_never_block_or_are_read(tmp_path: Path, kind: str) -> None:
    path = nr_file(tmp_path / "s.jsonl", 20)
    truth = numbers(build_index([path]))
    folder = index_folder()
    folder.mkdir(parents=True)
    digest = index_build.hashlib.sha256(path.read_bytes()).hexdigest()
    key = index_module.index_key([digest])
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    for name in ("digests.json", f"{key}.json", f"{key}.table.parquet"):
        target = folder / name
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "folder":
            target.mkdir()
        else:
            target.symlink_to(outside)
    index = in_time(lambda: load_index([path]))
    assert numbers(index) == truth
    assert numbers(in_time(lambda: load_index([path]))) == truth


# --------------------------------------------------------------------------- conflicts


def imported(tmp_path: Path, name: str, values: dict[tuple[str, str], dict[str, float]]) -> Path:
    source = tmp_path / f"{name}.csv"
    source.write_text(f"released {name}\n")
    return write(tmp_path / f"{name}.jsonl", imported_records(values, source, {"redundancy": "released"}))


def test_three_files_name_the_value_used_after_every_file(tmp_path: Path) -> None:
    a = imported(tmp_path, "a", {("x", "1"): {"redundancy": 0.2}})
    b = imported(tmp_path, "b", {("x", "1"): {"redundancy": 0.3}})
    c = write(tmp_path / "c.jsonl", [story("1", 0.9)])  # computed: replaces a's imported value
    index = load_index([a, b, c])
    assert index.table["NR"].iat[0] == pytest.approx(0.9)
    expected = [
        Conflict("x", "1", "redundancy", 0.9, "c.jsonl", 0.2, "a.jsonl"),
        Conflict("x", "1", "redundancy", 0.9, "c.jsonl", 0.3, "b.jsonl"),
    ]
    assert index.conflicts == expected
    assert all(str(conflict).endswith("c.jsonl is used") for conflict in index.conflicts)
    records = [(r, p.name) for p in (a, b, c) for r in load_records(p)[0]]
    merged, conflicts = merge_records(records)
    assert (
        conflicts == expected
        and merged[0].metrics.get("redundancy") is not None
        and merged[0].metrics["redundancy"].score == pytest.approx(0.9)
    )
    assert load_index([a, b, c]).conflicts == expected  # the stored index says the same


def test_dhm_prints_the_value_used_after_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli.common import note_conflicts

    a = imported(tmp_path, "a", {("x", "1"): {"redundancy": 0.2}})
    b = imported(tmp_path, "b", {("x", "1"): {"redundancy": 0.3}})
    c = write(tmp_path / "c.jsonl", [story("1", 0.9)])
    note_conflicts(load_index([a, b, c]).conflicts)
    err = capsys.readouterr().err
    assert "1 stories have two values of redundancy or more" in err
    assert "0.9 in c.jsonl and 0.2 in a.jsonl; c.jsonl is used" in err and "a.jsonl is used" not in err


def test_compare_says_when_two_files_give_a_story_different_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Which file is named first decides a conflicting story's value: compare says so, as dhm does."""
    from vst_core.cli import main

    one = write(tmp_path / "one.jsonl", [story(str(k), 0.5, s) for k in range(6) for s in ("A", "B")])
    two = write(tmp_path / "two.jsonl", [story(str(k), 0.9 if k < 3 else 0.5, "A") for k in range(6)])
    assert main(["compare", str(one), str(two), "--permutations", "100", "--resamples", "100"]) == 0
    err = capsys.readouterr().err
    assert "3 stories have two values of redundancy or more" in err and "one.jsonl is used" in err


# --------------------------------------------------------------------------- damage at random


DAMAGE = st.sampled_from(["truncate", "flip", "random", "swap", "delete", "empty"])
TARGETS = st.sampled_from(["json", "table.parquet", "sources.parquet", "phrases.parquet", "digests.json"])
_SOURCES: dict[str, tuple[Path, Path, dict[tuple[str, str], float], int]] = {}


def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[tuple[str, str], float], int]:
    """Two scores files (the second's index is what a swap copies in), the first's numbers as built
    with no cache, and the number of its lines."""
    if "files" not in _SOURCES:
        folder = tmp_path_factory.mktemp("damage")
        a = write(folder / "a.jsonl", [story(str(k), (k * 7919 % 1000) / 1000, system=f"s{k % 3}") for k in range(60)])
        b = write(folder / "b.jsonl", [story(str(k), (k * 31 % 1000) / 1000, system=f"s{k % 3}") for k in range(60)])
        _SOURCES["files"] = (a, b, numbers(build_index([a])), 60)
    return _SOURCES["files"]


def damage(path: Path, how: str, data: bytes, rng: random.Random, other: Path) -> None:
    """``path`` damaged ``how`` (``data``: its bytes; ``other``: the same file of another index)."""
    if how == "truncate":
        path.write_bytes(data[: rng.randrange(len(data) + 1)])
    elif how == "flip":
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if damaged:
                damaged[rng.randrange(len(damaged))] ^= rng.randrange(1, 256)
        path.write_bytes(bytes(damaged))
    elif how == "random":
        path.write_bytes(rng.randbytes(rng.randrange(1, max(2, len(data)))))
    elif how == "swap":
        path.write_bytes(other.read_bytes() if other.exists() else b"")
    elif how == "delete":
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(b"")


def check_damage(tmp_path_factory: pytest.TempPathFactory, hits: list[tuple[str, str]], seed: int) -> None:
    a, b, truth, lines = sources(tmp_path_factory)
    folder = tmp_path_factory.mktemp("store")
    first, second = load_index([a], folder=folder), load_index([b], folder=folder)
    rng = random.Random(seed)
    for target, how in hits:
        name = "digests.json" if target == "digests.json" else f"{first.digest}.{target}"
        path = folder / name
        other = folder / ("digests.json" if target == "digests.json" else f"{second.digest}.{target}")
        damage(path, how, path.read_bytes() if path.exists() else b"", rng, other)
    index = load_index([a], folder=folder)  # never raises, never wrong
    assert numbers(index) == truth
    assert len(index.sources) == lines and np.array_equal(index.sources["row"].to_numpy(), np.arange(lines))
    record, problems = index.record(index.row_of("s1", "1") or 0)
    assert problems == [] and record is not None and record.story_id == "1"


@settings(
    # 150 in a full run; VST_HYPOTHESIS_EXAMPLES=10000 gives the 10,000-example run (about ten minutes)
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(TARGETS, DAMAGE), min_size=1, max_size=4), st.integers(0, 2**32 - 1))
def test_a_damaged_store_gives_the_right_numbers_or_a_rebuild(
    tmp_path_factory: pytest.TempPathFactory, hits: list[tuple[str, str]], seed: int
) -> None:
    check_damage(tmp_path_factory, hits, seed)


@pytest.mark.parametrize("fault", ["full", "not-a-folder", "device"])
def test_an_export_that_cannot_be_written_is_one_error_line_and_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    """compare's --json, --csv and --markdown on a full disk, under a file, or onto a device: one
    line, exit 3, nothing half written (and never a device replaced)."""
    import errno
    import os

    from vst_core.cli import main
    from vst_core.data import exports

    scores = write(tmp_path / "s.jsonl", [story(str(k), 0.5 + k / 20, s) for k in range(6) for s in ("A", "B")])
    out = tmp_path / "out"
    out.mkdir()
    target = out / "board.json"
    if fault == "full":

        def full(src: str, dst: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(exports.os, "replace", full)
    elif fault == "not-a-folder":
        (out / "file").write_text("x")
        target = out / "file" / "board.json"
    else:
        target = Path(os.devnull)
    args = ["compare", str(scores), "--permutations", "50", "--resamples", "50", "--json", str(target)]
    assert main([*args, "--markdown", str(out / "board.md")]) == 3
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "cannot write" in lines[0] and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == (["file"] if fault == "not-a-folder" else [])
    assert Path(os.devnull).exists() and not Path(os.devnull).is_file()


def test_a_system_named_with_a_comma_can_be_selected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import main

    scores = write(tmp_path / "s.jsonl", [story(str(k), 0.5 + k / 20, s) for k in range(6) for s in ("a,b", "c", "d")])
    out = tmp_path / "board.json"
    assert main(["compare", str(scores), "--systems", '"a,b",c', "--permutations", "50", "--json", str(out)]) == 0
    board = json.loads(out.read_text())
    assert {row["system"] for row in board["leaderboard"]} == {"a,b", "c"}
