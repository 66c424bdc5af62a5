"""Tables read within a budget: a Parquet, CSV or TSV file (or CSV text) becomes a pandas frame only
when it fits, by the rules :mod:`vst_core.data.upload_files` applies to an upload:

* rows: at most 500,000 (``VST_MAX_TABLE_ROWS``);
* bytes: the table decompressed and decoded, as Arrow or the CSV parser holds its values, at most
  what a story or scores file may weigh (``VST_MAX_DATA_FILE_BYTES``, 200 MiB), so a Parquet file
  unpacks to what a CSV file may be;
* ratio: decoded bytes over the file's bytes at most 200, checked once 1 MiB is decoded (the rule
  of a zip member).

A Parquet file is checked from its footer before any page is decompressed: its rows, the
uncompressed size its column chunks declare, and what reading it with every text column as a
dictionary materialises (each column's values × their width, plus the declared bytes). It is then
read in batches of rows with its text columns as dictionaries; each batch's decoded size is
computed from the lengths of the dictionary values its rows point to, before one value is expanded,
so one long string repeated in every row is refused at its first batch (a 713-byte file that
decodes to 1.2 GB: ``pandas.read_parquet`` reads it whole in 11 s at 2.2 GB of peak memory; here
it is refused in 1.2 s by a process that peaks at 96 MB, its imports included). A CSV is not compressed: its bytes are counted as the parser reads them, its
rows in chunks, and parsing stops one row past the budget.

Each refusal is a :class:`TableBudgetError` naming the budget, the figures and the setting that
raises it. Long reads report progress through ``progress(total, unit)`` (a bar with ``update`` and
``close``, as :func:`vst_core.terminal.bar` makes).

>>> import io
>>> read_csv_budgeted(io.StringIO("a,b\\n1,2\\n3,4\\n"), TableBudget(rows=2)).shape
(2, 2)
>>> read_csv_budgeted(io.StringIO("a,b\\n1,2\\n3,4\\n"), TableBudget(rows=1), name="t.csv")
Traceback (most recent call last):
...
vst_core.data.tables.TableBudgetError: t.csv holds more than 1 rows, over the budget of 1 rows for a table (VST_MAX_TABLE_ROWS raises it); read a part of it at a time
"""

from __future__ import annotations

import io
import json
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar

from vst_core.data.images import env_int
from vst_core.data.sizes import size_text
from vst_core.data.upload_files import DEFAULT_MAX_DATA_FILE_BYTES, MAX_RATIO, RATIO_FLOOR, UploadBudget

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

#: Rows of one table, unless ``VST_MAX_TABLE_ROWS`` says otherwise.
DEFAULT_MAX_TABLE_ROWS = 500_000
#: Rows decoded at a time: a Parquet batch, a CSV chunk.
BATCH_ROWS = 65_536
#: Bytes of a file whose read a command shows a progress bar for (about a second's reading or more).
LONG_READ_BYTES = 16 * 2**20
#: Bytes a value of each Parquet physical type takes once read (a text value: its dictionary index).
_WIDTH = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12, "BYTE_ARRAY": 4}

Progress = Callable[[int, str], Any]
T = TypeVar("T")


class TableBudgetError(ValueError):
    """A table over one of its budgets: ``budget`` says which (``"rows"``, ``"bytes"`` or
    ``"ratio"``), ``limit`` the budget and ``found`` what the table has, or more than (a read stops
    at the first figure past the budget)."""

    def __init__(self, message: str, *, budget: Literal["rows", "bytes", "ratio"], limit: float, found: float) -> None:
        super().__init__(message)
        self.budget = budget
        self.limit = limit
        self.found = found


@dataclass(frozen=True)
class TableBudget:
    """What one table may hold: ``rows``; ``bytes`` decoded (values and offsets as Arrow or the CSV
    parser holds them); ``ratio`` of decoded bytes over the file's bytes, checked once
    ``ratio_floor`` bytes are decoded.

    >>> TableBudget().rows, size_text(TableBudget().bytes)
    (500000, '200 MiB')
    """

    rows: int = DEFAULT_MAX_TABLE_ROWS
    bytes: int = DEFAULT_MAX_DATA_FILE_BYTES
    ratio: float = MAX_RATIO
    ratio_floor: int = RATIO_FLOOR

    @classmethod
    def from_env(cls) -> TableBudget:
        """The defaults, with ``VST_MAX_TABLE_ROWS`` and ``VST_MAX_DATA_FILE_BYTES`` applied."""
        return cls(
            rows=env_int("VST_MAX_TABLE_ROWS", DEFAULT_MAX_TABLE_ROWS),
            bytes=env_int("VST_MAX_DATA_FILE_BYTES", DEFAULT_MAX_DATA_FILE_BYTES),
        )

    @classmethod
    def of_upload(cls, upload: UploadBudget) -> TableBudget:
        """The budget of a table that came in ``upload``: its data file's bytes and its ratio rule."""
        return cls(
            rows=env_int("VST_MAX_TABLE_ROWS", DEFAULT_MAX_TABLE_ROWS),
            bytes=upload.data_file,
            ratio=upload.ratio,
            ratio_floor=upload.ratio_floor,
        )


def _rows_error(name: str, found: int, budget: TableBudget, *, more: bool) -> TableBudgetError:
    return TableBudgetError(
        f"{name} holds {'more than ' if more else ''}{found:,} rows, over the budget of {budget.rows:,} rows for a table "
        "(VST_MAX_TABLE_ROWS raises it); read a part of it at a time",
        budget="rows",
        limit=budget.rows,
        found=found,
    )


def _bytes_error(name: str, found: int, budget: TableBudget, what: str) -> TableBudgetError:
    return TableBudgetError(
        f"{name} {what} {size_text(found)}, over the budget of {size_text(budget.bytes)} for a table "
        "(VST_MAX_DATA_FILE_BYTES raises it); split it into smaller files",
        budget="bytes",
        limit=budget.bytes,
        found=found,
    )


def _check_ratio(name: str, decoded: int, packed: int, budget: TableBudget, what: str) -> None:
    if packed and decoded >= budget.ratio_floor and decoded > budget.ratio * packed:
        raise TableBudgetError(
            f"{name} {what} {size_text(decoded)} from {size_text(packed)} on disk, more than {budget.ratio:g} times "
            "its size, the limit for a packed table (the mark of a decompression bomb); write it without "
            "compression or as CSV",
            budget="ratio",
            limit=budget.ratio,
            found=decoded / packed,
        )


def _regular_size(path: Path) -> int:
    """The bytes of ``path``; ValueError when it is not a regular file (a FIFO never ends)."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path.name} is not a regular file (a FIFO, a device or a folder)")
    return info.st_size


# --------------------------------------------------------------------------- Parquet


@dataclass(frozen=True)
class ParquetFigures:
    """What a Parquet file's footer says, read before any page is decompressed: ``rows``,
    ``declared`` (uncompressed bytes of its column chunks), ``materialised`` (what reading it with
    text as dictionaries holds at most before a value is expanded), ``packed`` (the file's bytes)."""

    rows: int
    declared: int
    materialised: int
    packed: int
    text_columns: tuple[str, ...]  # the column paths read as dictionaries (Parquet's BYTE_ARRAY leaves)


def parquet_figures(path: Path, budget: TableBudget | None = None) -> ParquetFigures:
    """The footer's figures of the Parquet file at ``path``, checked against ``budget``
    (:meth:`TableBudget.from_env` when None): TableBudgetError over its rows, its declared bytes,
    what reading it materialises, or the ratio of either to the file's size; nothing decompressed."""
    import pyarrow.parquet as pq

    budget = budget or TableBudget.from_env()
    packed = _regular_size(path)
    meta = pq.ParquetFile(path).metadata
    return _figures(path.name, meta, packed, budget)


def _figures(name: str, meta: pq.FileMetaData, packed: int, budget: TableBudget) -> ParquetFigures:
    if meta.num_rows > budget.rows:
        raise _rows_error(name, meta.num_rows, budget, more=False)
    declared = materialised = 0
    leaves = [meta.schema.column(c) for c in range(meta.num_columns)]
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk, leaf = group.column(c), leaves[c]
            declared += max(chunk.total_uncompressed_size, 0)
            # each value (a null too) takes its width once read, text its dictionary index, and a validity bit
            materialised += max(chunk.num_values, 0) * (_width(leaf.physical_type, leaf.length, str(leaf.logical_type)) + 1)
    text = tuple(leaf.path for leaf in leaves if leaf.physical_type == "BYTE_ARRAY")
    materialised += declared
    if declared > budget.bytes:
        raise _bytes_error(name, declared, budget, "declares")
    if materialised > budget.bytes:
        raise _bytes_error(name, materialised, budget, "is read into")
    _check_ratio(name, declared, packed, budget, "declares")
    _check_ratio(name, materialised, packed, budget, "is read into")
    return ParquetFigures(meta.num_rows, declared, materialised, packed, text)


def _plain_text() -> dict[str, bool]:
    """The reader's option that reads JSON and BSON columns as text, so that they come as
    dictionaries too (pyarrow 19 on; before, they always came as text)."""
    import inspect

    import pyarrow.parquet as pq

    return (
        {"arrow_extensions_enabled": False} if "arrow_extensions_enabled" in inspect.signature(pq.ParquetFile).parameters else {}
    )


def _width(physical: str, length: int | None, logical: str) -> int:
    """Bytes one value of a Parquet column takes once read: its type's, a decimal's 32 at most, a
    text value's dictionary index (4).

    >>> _width("FIXED_LEN_BYTE_ARRAY", 16, "UUID"), _width("BYTE_ARRAY", None, "String")
    (16, 4)
    """
    if logical.startswith("Decimal"):
        return 32
    if physical == "FIXED_LEN_BYTE_ARRAY":
        return max(length or 0, 1)
    return _WIDTH.get(physical, 8)


def _expanded(array: pa.Array, target: pa.DataType) -> int:
    """The bytes of ``array`` once cast to ``target``: a dictionary the target does not keep counts
    the values its indices point to (and their offsets), never expanding them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind) and not pa.types.is_dictionary(target):
        values = kind.value_type
        if (
            pa.types.is_binary(values)
            or pa.types.is_string(values)
            or pa.types.is_large_binary(values)
            or pa.types.is_large_string(values)
        ):
            lengths = pc.take(pc.binary_length(array.dictionary), array.indices)
            total = pc.sum(lengths).as_py() or 0
        else:
            per_value = array.dictionary.nbytes / max(len(array.dictionary), 1)
            total = int(per_value * len(array))
        return int(total) + 8 * len(array) + len(array) // 8 + 1
    if isinstance(array, pa.MapArray) and pa.types.is_map(target):
        return 8 * len(array) + _expanded(array.keys, target.key_type) + _expanded(array.items, target.item_type)
    if isinstance(array, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)) and hasattr(target, "value_type"):
        return 8 * len(array) + _expanded(array.flatten(), target.value_type)
    if isinstance(array, pa.StructArray) and pa.types.is_struct(target):
        fields = [_expanded(array.field(k), target.field(k).type) for k in range(kind.num_fields)]
        return len(array) // 8 + 1 + sum(fields)
    return int(array.nbytes)


def read_parquet_budgeted(path: Path, budget: TableBudget | None = None, *, progress: Progress | None = None) -> pd.DataFrame:
    """The Parquet file at ``path`` as ``pandas.read_parquet`` gives it, within ``budget``
    (:meth:`TableBudget.from_env` when None): checked from its footer first
    (:func:`parquet_figures`), then read in :data:`BATCH_ROWS`-row batches, text as dictionaries,
    each batch's decoded size counted before its values are expanded. TableBudgetError past a
    budget; ``progress(rows, "row")`` is advanced per batch."""
    import pyarrow as pa

    schema, found = _parquet_batches(path, budget or TableBudget.from_env(), progress)
    batches = list(found)
    table = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else schema.empty_table()
    return _frame(table.cast(schema))


def _parquet_batches(path: Path, budget: TableBudget, progress: Progress | None) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The file's Arrow schema and its batches, text as dictionaries, each checked (footer first)."""
    import pyarrow.parquet as pq

    packed = _regular_size(path)
    with pq.ParquetFile(path) as plain:
        figures = _figures(path.name, plain.metadata, packed, budget)
        schema = plain.schema_arrow

    def batches() -> Iterator[pa.RecordBatch]:
        decoded = 0
        bar = progress(figures.rows, "row") if progress is not None else None
        try:
            with pq.ParquetFile(path, read_dictionary=list(figures.text_columns), **_plain_text()) as source:
                # a row group at a time: one dictionary per column of a batch (a nested one cannot come in chunks)
                groups = range(source.num_row_groups)
                for batch in (b for g in groups for b in source.iter_batches(BATCH_ROWS, [g], use_pandas_metadata=True)):
                    aligned = batch.num_columns == len(schema)
                    decoded += sum(
                        _expanded(batch.column(k), (schema.field(k) if aligned else schema.field(batch.schema.names[k])).type)
                        for k in range(batch.num_columns)
                    )
                    if decoded > budget.bytes:
                        raise _bytes_error(path.name, decoded, budget, "decodes to more than")
                    _check_ratio(path.name, decoded, packed, budget, "decodes to more than")
                    if bar is not None:
                        bar.update(batch.num_rows)
                    yield batch
        finally:
            if bar is not None:
                bar.close()

    return schema, batches()


def _frame(table: pa.Table) -> pd.DataFrame:
    """``table`` as pandas' own Parquet reader converts it (its string dtype, the index and the
    attributes its pandas metadata names)."""
    try:
        from pandas.io._util import arrow_table_to_pandas
    except ImportError:  # an older pandas: pyarrow's conversion
        frame: pd.DataFrame = table.to_pandas()
    else:
        frame = arrow_table_to_pandas(table)
    attrs = (table.schema.metadata or {}).get(b"PANDAS_ATTRS")
    if attrs is not None:
        frame.attrs = json.loads(attrs)
    return frame


# --------------------------------------------------------------------------- CSV


class _Counted:
    """A file's reads counted against the byte budget (and reported to a progress bar)."""

    def __init__(self, source: IO[Any], name: str, budget: TableBudget, bar: Any) -> None:
        self.source, self.name, self.budget, self.bar = source, name, budget, bar
        self.done = 0

    def read(self, size: int = -1) -> Any:
        data = self.source.read(size)
        self.done += len(data)
        if self.done > self.budget.bytes:
            raise _bytes_error(self.name, self.done, self.budget, "holds at least")
        if self.bar is not None and data:
            self.bar.update(len(data))
        return data

    def __iter__(self) -> Iterator[Any]:
        while line := self.source.readline():
            self.done += len(line)
            if self.done > self.budget.bytes:
                raise _bytes_error(self.name, self.done, self.budget, "holds at least")
            yield line


def read_csv_budgeted(
    source: Path | IO[Any],
    budget: TableBudget | None = None,
    *,
    name: str | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> pd.DataFrame:
    """``pandas.read_csv(source, **options)`` within ``budget`` (:meth:`TableBudget.from_env` when
    None): the bytes counted as the parser reads them (a path is read uncompressed, whatever its
    suffix), the rows in :data:`BATCH_ROWS`-row chunks, and parsing stopped one row past the
    budget. TableBudgetError past a budget, naming ``name`` (the file's name by default);
    ``progress(bytes, "B")`` is advanced as a path is read."""
    import pandas as pd

    chunks = list(_csv_chunks(source, budget or TableBudget.from_env(), name, progress, options))
    if len(chunks) == 1:
        return chunks[0]
    return pd.concat(chunks) if chunks else pd.DataFrame()


def _csv_chunks(
    source: Path | IO[Any], budget: TableBudget, name: str | None, progress: Progress | None, options: dict[str, Any]
) -> Iterator[pd.DataFrame]:
    """The chunks of ``pandas.read_csv``, its bytes and rows counted against ``budget``."""
    import pandas as pd

    if "chunksize" in options or "iterator" in options:
        raise ValueError("a budgeted CSV is read in chunks of its own")
    label = name or (source.name if isinstance(source, Path) else "the table")
    wanted = options.pop("nrows", None)
    limit = budget.rows + 1 if wanted is None else min(int(wanted), budget.rows + 1)
    bar = None
    if isinstance(source, Path):
        size = check_bytes(source, budget)
        options = {"compression": None, **options}
        bar = progress(size, "B") if progress is not None else None
    rows = 0
    try:
        with source.open("rb") if isinstance(source, Path) else _Unclosed(source) as handle:
            counted = _Counted(handle, label, budget, bar)
            with pd.read_csv(counted, chunksize=BATCH_ROWS, nrows=limit, **options) as reader:
                for chunk in reader:
                    rows += len(chunk)
                    if rows > budget.rows:
                        raise _rows_error(label, budget.rows, budget, more=True)
                    yield chunk
    finally:
        if bar is not None:
            bar.close()


class _Unclosed:
    """A caller's open file as a context that leaves it open."""

    def __init__(self, source: IO[Any]) -> None:
        self.source = source

    def __enter__(self) -> IO[Any]:
        return self.source

    def __exit__(self, *_: object) -> None:
        return None


def counted_rows(rows: Iterable[T], budget: TableBudget | None = None, *, name: str = "the table") -> Iterator[T]:
    """``rows`` (a ``csv.reader`` or ``csv.DictReader``) passed on while there are at most
    ``budget.rows`` of them; TableBudgetError at the first past it.

    >>> list(counted_rows([["a"], ["b"]], TableBudget(rows=2)))
    [['a'], ['b']]
    """
    budget = budget or TableBudget.from_env()
    for count, row in enumerate(rows, start=1):
        if count > budget.rows:
            raise _rows_error(name, budget.rows, budget, more=True)
        yield row


def check_bytes(path: Path, budget: TableBudget | None = None) -> int:
    """The bytes of the file at ``path``; TableBudgetError over ``budget.bytes`` (a file read as it
    is, not decompressed), ValueError when it is not a regular file."""
    budget = budget or TableBudget.from_env()
    size = _regular_size(path)
    if size > budget.bytes:
        raise _bytes_error(path.name, size, budget, "is")
    return size


class _Progressing(io.RawIOBase):
    """A binary file whose reads advance a progress bar."""

    def __init__(self, source: IO[bytes], bar: Any) -> None:
        self.source, self.bar = source, bar

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.source.read(len(buffer))
        buffer[: len(data)] = data
        self.bar.update(len(data))
        return len(data)

    def close(self) -> None:
        self.source.close()
        self.bar.close()
        super().close()


def open_text_budgeted(path: Path, budget: TableBudget | None = None, *, progress: Progress | None = None) -> IO[str]:
    """``path`` opened as UTF-8 text for a ``csv`` reader (a BOM skipped, line ends left to it),
    after its size is checked against ``budget.bytes`` (:func:`check_bytes`: a CSV is not
    compressed, its bytes are what it holds); ``progress(bytes, "B")`` advances as it is read.
    Count its rows with :func:`counted_rows`."""
    size = check_bytes(path, budget)
    source: IO[bytes] = path.open("rb")
    if progress is not None:
        source = io.BufferedReader(_Progressing(source, progress(size, "B")))
    return io.TextIOWrapper(source, encoding="utf-8-sig", newline="")


# --------------------------------------------------------------------------- any table


TableKind = Literal["parquet", "csv", "tsv"]


def table_kind(path: Path) -> TableKind | None:
    """What a file holds as a table, from its first bytes whatever its suffix (as the story
    readers tell it): Parquet by its magic number; None for JSON (``[`` or ``{`` first) or an
    empty file; else delimited text, tab-separated for a ``.tsv`` name or a header with more tabs
    than commas. ValueError for what is not a regular file (a FIFO would never end).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.json").write_text("scene_full_id\\tlink0\\n")
    >>> _ = (folder / "b.csv").write_text('[{"a": 1}]')
    >>> table_kind(folder / "a.json"), table_kind(folder / "b.csv")
    ('tsv', None)
    """
    _regular_size(path)
    with path.open("rb") as fh:
        head = fh.read(65_536)
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if not text or text[:1] in (b"[", b"{"):
        return None
    header = head.split(b"\n", 1)[0]
    return "tsv" if path.suffix.lower() == ".tsv" or header.count(b"\t") > header.count(b",") else "csv"


def read_table_budgeted(
    path: Path,
    budget: TableBudget | None = None,
    *,
    kind: TableKind | None = None,
    progress: Progress | None = None,
    **csv_options: Any,
) -> pd.DataFrame:
    """The table at ``path`` within ``budget`` (:meth:`TableBudget.from_env` when None), read as
    ``kind`` (by default :func:`table_kind`: from its first bytes): Parquet by
    :func:`read_parquet_budgeted`, CSV or TSV by :func:`read_csv_budgeted` (``sep`` by the kind
    unless given; ``csv_options`` go to ``pandas.read_csv``). TableBudgetError past a budget,
    ValueError for a file that is not a table (JSON, empty).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "t.tsv").write_text("a\\tb\\n1\\t2\\n")
    >>> read_table_budgeted(folder / "t.tsv", dtype=str).to_dict("records")
    [{'a': '1', 'b': '2'}]
    """
    kind = kind or table_kind(path)
    if kind == "parquet":
        return read_parquet_budgeted(path, budget, progress=progress)
    if kind in ("csv", "tsv"):
        options = {"sep": "\t" if kind == "tsv" else ",", **csv_options}
        return read_csv_budgeted(path, budget, progress=progress, **options)
    raise ValueError(f"{path.name}: not a table (Parquet, CSV or TSV)")


def check_table(path: Path, budget: TableBudget | None = None, *, progress: Progress | None = None) -> int:
    """The rows of the table at ``path`` (its kind told by :func:`table_kind`), read within
    ``budget`` as :func:`read_table_budgeted` reads it (TableBudgetError past it) but kept one batch
    at a time, for a caller whose own reader then reads the file; a file that is not a table
    (JSON, empty): 0."""
    budget = budget or TableBudget.from_env()
    kind = table_kind(path)
    if kind == "parquet":
        return sum(batch.num_rows for batch in _parquet_batches(path, budget, progress)[1])
    if kind in ("csv", "tsv"):
        options = {"sep": "\t" if kind == "tsv" else ",", "dtype": str, "keep_default_na": False}
        return sum(len(chunk) for chunk in _csv_chunks(path, budget, None, progress, options))
    return 0


__all__ = [
    "BATCH_ROWS",
    "DEFAULT_MAX_TABLE_ROWS",
    "LONG_READ_BYTES",
    "TableKind",
    "ParquetFigures",
    "Progress",
    "TableBudget",
    "TableBudgetError",
    "check_bytes",
    "check_table",
    "counted_rows",
    "open_text_budgeted",
    "parquet_figures",
    "read_csv_budgeted",
    "read_parquet_budgeted",
    "read_table_budgeted",
    "table_kind",
]
