"""Tables read within a budget (vst_core.data.tables): a Parquet file checked from its footer before
a page is decompressed and measured from its dictionaries before a value is expanded, a CSV counted
as it is parsed; the upload, the judgements and the imported scores read through it. Budgets are
lowered for speed."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vst_core.analysis.meta_eval import JudgementsError, read_judgements
from vst_core.analysis.meta_eval.judgements import JudgementsTooLarge
from vst_core.data import tables
from vst_core.data.importing import read_long_file, read_released
from vst_core.data.scores_io import size_text
from vst_core.data.tables import (
    TableBudget,
    TableBudgetError,
    check_table,
    parquet_figures,
    read_csv_budgeted,
    read_table_budgeted,
)
from vst_core.data.uploads import UploadBudget, story_set_from_files

KIB, MIB = 2**10, 2**20


def _repeated(path: Path, value_bytes: int, rows: int, **columns: pa.Array) -> Path:
    """A Parquet file whose ``text`` column is one ``value_bytes`` string in every one of ``rows``
    rows, written as a dictionary (never expanded here): a few hundred bytes on disk."""
    text = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * value_bytes]))
    pq.write_table(pa.table({**columns, "text": text}), path, compression="zstd", store_schema=False)  # read back as text
    return path


class Recorder:
    """A progress callback: the totals it was given and the updates it saw."""

    def __init__(self) -> None:
        self.totals: list[tuple[int, str]] = []
        self.updates: list[int] = []
        self.closed = 0

    def __call__(self, total: int, unit: str) -> Recorder:
        self.totals.append((total, unit))
        return self

    def update(self, n: int) -> None:
        self.updates.append(n)

    def close(self) -> None:
        self.closed += 1


def test_a_repeated_string_is_refused_from_its_dictionary_before_it_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,300 rows of one 900 KiB string: 1.2 GB decoded from under 1 KiB on disk, and under 1 MiB
    declared by the footer (so only the decoded count catches it). No value is expanded: Arrow holds
    under 16 MiB whenever a batch is measured, and no frame is made."""
    path = _repeated(tmp_path / "bomb.parquet", 900 * KIB, 1300)
    assert path.stat().st_size < KIB and parquet_figures(path).declared < MIB
    held: list[int] = []
    measure = tables._expanded

    def spy(array: pa.Array, target: pa.DataType) -> int:
        held.append(pa.total_allocated_bytes())
        return measure(array, target)

    monkeypatch.setattr(tables, "_expanded", spy)
    monkeypatch.setattr(tables, "_frame", lambda table: pytest.fail("a frame was made"))
    with pytest.raises(TableBudgetError) as caught:
        read_table_budgeted(path)
    error = caught.value
    assert error.budget == "bytes" and error.limit == 200 * MIB and error.found > 200 * MIB
    assert "bomb.parquet decodes to more than 1.12 GiB" in str(error) and "VST_MAX_DATA_FILE_BYTES" in str(error)
    assert held and max(held) < 16 * MIB


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_the_footer_refuses_rows_declared_bytes_and_nested_values_before_any_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    many = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"n": list(range(1001))}), many)
    packed = tmp_path / "packed.parquet"  # 20 MiB of plain pages zstd-packed into a few KiB
    pq.write_table(pa.table({"text": ["y" * (2 * MIB)] * 10}), packed, compression="zstd", use_dictionary=False)
    nulls = tmp_path / "nulls.parquet"  # one row holding a list of 30 million nulls: 546 bytes on disk
    pq.write_table(
        pa.table({"l": pa.ListArray.from_arrays(pa.array([0, 30_000_000], pa.int32()), pa.nulls(30_000_000, pa.int64()))}), nulls
    )
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", lambda *a, **k: pytest.fail("a page was read"))
    budget = TableBudget(rows=1000)
    with pytest.raises(TableBudgetError, match=r"rows\.parquet holds 1,001 rows, over the budget of 1,000 rows") as rows:
        read_table_budgeted(many, budget)
    assert (rows.value.budget, rows.value.found) == ("rows", 1001)
    with pytest.raises(TableBudgetError, match="packed.parquet declares 20 MiB from .* more than 200 times") as ratio:
        read_table_budgeted(packed)
    assert ratio.value.budget == "ratio" and ratio.value.found > 200
    with pytest.raises(TableBudgetError, match="nulls.parquet is read into .* over the budget of 200 MiB") as nested:
        check_table(nulls)
    assert nested.value.budget == "bytes"


def test_a_parquet_file_reads_as_pandas_reads_it_with_progress(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "story_id": [f"s{k}" for k in range(300)],
            "text": ["We went out."] * 150 + [None] * 150,
            "score": [k / 7 for k in range(300)],
            "names": [["Ann", "Bob"], [], None] * 100,
        },
        index=pd.Index([f"i{k}" for k in range(300)], name="row"),
    )
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, row_group_size=64)
    seen = Recorder()
    got = read_table_budgeted(path, progress=seen)
    pd.testing.assert_frame_equal(got, pd.read_parquet(path))
    assert seen.totals == [(300, "row")] and sum(seen.updates) == 300 and seen.closed == 1


def test_a_csv_stops_one_row_past_its_budget_and_reads_as_pandas_within_it(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["story_id", "value"])
        writer.writerows([f"s{k}", str(k)] for k in range(200_000))
    seen = Recorder()
    with pytest.raises(TableBudgetError, match=r"t\.csv holds more than 1,000 rows, over the budget of 1,000 rows") as caught:
        read_table_budgeted(path, TableBudget(rows=1000), progress=seen)
    assert caught.value.budget == "rows" and seen.closed == 1
    assert seen.totals == [(path.stat().st_size, "B")] and sum(seen.updates) < path.stat().st_size / 10  # parsing stopped
    pd.testing.assert_frame_equal(read_table_budgeted(path, dtype=str), pd.read_csv(path, dtype=str))
    (tmp_path / "t.tsv").write_text("a\tb\n1\t2\n")
    assert read_table_budgeted(tmp_path / "t.tsv").to_dict("records") == [{"a": 1, "b": 2}]
    with pytest.raises(TableBudgetError, match=f"is {size_text(path.stat().st_size)}, over the budget of 1 MiB") as size:
        read_table_budgeted(path, TableBudget(bytes=MIB))
    assert size.value.budget == "bytes"
    with pytest.raises(TableBudgetError, match=r"the table holds at least \d+ bytes, over the budget of 64 bytes"):
        read_csv_budgeted(io.StringIO("a\n" + "1\n" * 100), TableBudget(bytes=64))


def _vwp_upload(tmp_path: Path, rows: int, value_bytes: int) -> bytes:
    """A VWP table (its marker columns) whose text repeats one string in every row."""
    columns = {"scene_full_id": pa.array([f"tt{k}" for k in range(rows)]), "link0": pa.array(["a.jpg"] * rows)}
    return _repeated(tmp_path / "made.parquet", value_bytes, rows, **columns).read_bytes()


def test_an_uploaded_parquet_bomb_is_the_uploads_error_and_nothing_is_read_whole(tmp_path: Path) -> None:
    """Read whole, these 300 rows of one 200 KiB story are 60 MB from a file of about 1 KiB, and a
    story set: refused at the upload's budget instead, with the figures."""
    budget = UploadBudget(
        data_file=256 * KIB, image=256 * KIB, upload=MIB, session=MIB, server=2 * MIB, ratio=50, ratio_floor=64 * KIB
    )
    data = _vwp_upload(tmp_path, 300, 200 * KIB)
    assert len(data) < 4 * KIB
    found, error, _ = story_set_from_files([("stories.parquet", data)], tmp_path / "up", budget=budget)
    assert found is None and error is not None
    assert error.startswith("stories.parquet ") and "more than 50 times its size, the limit for a packed table" in error
    assert str(tmp_path) not in error


def test_a_table_is_told_by_its_bytes_not_its_name(tmp_path: Path) -> None:
    """The story reader reads a Parquet file (and a CSV with VWP's header) whatever its name: so is
    the budget applied, and a damaged Parquet file is refused before any reader sees it."""
    budget = UploadBudget(
        data_file=256 * KIB, image=256 * KIB, upload=MIB, session=MIB, server=2 * MIB, ratio=50, ratio_floor=64 * KIB
    )
    data = _vwp_upload(tmp_path, 300, 200 * KIB)
    found, error, _ = story_set_from_files([("stories.jsonl", data)], tmp_path / "up", budget=budget)
    assert found is None and error is not None and error.startswith("stories.jsonl ") and "50 times its size" in error
    found, error, _ = story_set_from_files([("broken.parquet", data[:200] + data[-8:])], tmp_path / "up2", budget=budget)
    assert found is None and error is not None and error.startswith("broken.parquet: cannot be read as a table (")
    assert str(tmp_path) not in error
    assert tables.table_kind(tmp_path / "up" / "stories.jsonl") == "parquet"


def test_an_uploaded_table_over_its_rows_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VST_MAX_TABLE_ROWS", "5")
    rows = "".join(f"tt{k},a.jpg,We went out.\n" for k in range(6))
    found, error, _ = story_set_from_files([("s.csv", f"scene_full_id,link0,text0\n{rows}".encode())], tmp_path / "up")
    assert found is None and error == (
        "s.csv holds more than 5 rows, over the budget of 5 rows for a table (VST_MAX_TABLE_ROWS raises it); read a part of it at a time"
    )
    named = rows.replace(",", "\t")  # a TSV with VWP's header under a JSON name: read as a table, so counted
    found, error, _ = story_set_from_files([("s.json", f"scene_full_id\tlink0\ttext0\n{named}".encode())], tmp_path / "up1")
    assert found is None and error is not None and error.startswith("s.json holds more than 5 rows")
    monkeypatch.setenv("VST_MAX_TABLE_ROWS", "6")
    found, error, _ = story_set_from_files([("s.csv", f"scene_full_id,link0,text0\n{rows}".encode())], tmp_path / "up2")
    assert error is None and found is not None and len(found.stories) == 6


def test_judgements_over_their_rows_are_refused_before_they_are_parsed(tmp_path: Path) -> None:
    text = "story_id,rater,aspect,value\n" + "".join(f"s{k},r,overall,3\n" for k in range(50))
    assert len(read_judgements(text.encode(), budget=TableBudget(rows=50)).ratings) == 50
    with pytest.raises(JudgementsTooLarge, match="holds more than 49 rows, over the budget of 49 rows") as caught:
        read_judgements(text.encode(), budget=TableBudget(rows=49))
    assert isinstance(caught.value, JudgementsError) and isinstance(caught.value, TableBudgetError)
    assert caught.value.budget == "rows" and caught.value.limit == 49
    with pytest.raises(JudgementsTooLarge, match=f"is {len(text)} bytes, over the budget of 512 bytes") as size:
        read_judgements(text.encode(), budget=TableBudget(bytes=512))
    assert size.value.budget == "bytes"


def test_imported_scores_are_read_row_by_row_within_the_budget(tmp_path: Path) -> None:
    long = tmp_path / "long.csv"
    long.write_text("story_id,metric,value\n" + "".join(f"s{k},R,0.5\n" for k in range(20)))
    released = tmp_path / "x_R.csv"
    released.write_text("story_id,R_score\n" + "".join(f"s{k},0.5\n" for k in range(20)) + "lonely\n")
    seen = Recorder()
    assert len(read_long_file(long, budget=TableBudget(rows=20), progress=seen).values) == 20
    assert seen.totals == [(long.stat().st_size, "B")] and sum(seen.updates) == long.stat().st_size and seen.closed == 1
    with pytest.raises(TableBudgetError, match="long.csv holds more than 19 rows"):
        read_long_file(long, budget=TableBudget(rows=19))
    values, problems = read_released(released, "redundancy", budget=TableBudget(rows=21))
    assert len(values) == 20 and [p.story_id for p in problems] == ["lonely"]  # a row of one field is a problem, not a crash
    with pytest.raises(TableBudgetError, match="x_R.csv holds more than 20 rows"):
        read_released(released, "redundancy", budget=TableBudget(rows=20))


def test_a_fifo_is_never_read_as_a_table(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_table_budgeted(fifo)


def test_the_budget_comes_from_the_environment_and_the_upload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VST_MAX_TABLE_ROWS", "7")
    monkeypatch.setenv("VST_MAX_DATA_FILE_BYTES", "4096")
    assert TableBudget.from_env() == TableBudget(rows=7, bytes=4096)
    upload = UploadBudget(data_file=123, ratio=9, ratio_floor=10)
    assert TableBudget.of_upload(upload) == TableBudget(rows=7, bytes=123, ratio=9, ratio_floor=10)
    assert tables.DEFAULT_MAX_TABLE_ROWS == TableBudget().rows
