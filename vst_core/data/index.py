"""A columnar index of one or more scores JSONL files: the per-story numbers in a table, the
evidence read only for the stories shown.

Building it reads every line once (orjson; the line reader is :mod:`vst_core.data.index_lines`), keeps the numbers of :data:`vst_core.records.FIELDS` (the registry's),
the ids, the text and the byte range of each line, and merges the lines of one story
``(system, story_id)`` metric by metric with the rule of :mod:`vst_core.data.merge` (conflicts
reported). The table and the byte ranges are stored as Parquet under the cache folder, keyed by the
files' content digests, so a second load reads two small files instead of parsing the evidence
again. :meth:`ScoresIndex.record` reads, validates and merges one story's lines when it is shown.

Why Parquet (pyarrow) rather than DuckDB or SQLite: the pages filter and plot pandas frames, and a
Parquet file of 100,000 rows is read into one in a few tens of milliseconds with no server, no
query language and no second copy of the numbers; pyarrow is already what pandas stores strings in.

The index's parts, by job: this module the :class:`ScoresIndex` and its lookups;
:mod:`vst_core.data.index_lines` the line reader; :mod:`vst_core.data.index_build` the build;
:mod:`vst_core.data.index_store` the stored copy and :func:`~vst_core.data.index_store.load_index`,
the entry point (stored, else built and stored).

>>> from vst_core.data.index_store import load_index         # doctest: +SKIP
>>> index = load_index(["scores.jsonl"])                     # doctest: +SKIP
>>> index.table[["system", "story", "NR"]].head()            # doctest: +SKIP
>>> index.record(index.row_of("llava", "45530"))[0].metrics["redundancy"]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vst_core.contract import registry
from vst_core.data.access import FileIdentity, reason
from vst_core.data.index_lines import (
    IndexError_,
    by_metric,
    open_same,
)
from vst_core.data.merge import Conflict, is_imported, main_attr, merge_story, story_key
from vst_core.data.scores_io import _score_line
from vst_core.hashing import json_digest
from vst_core.problems import Problem
from vst_core.records import RecordError, StoryScores, decode, read_record

#: Bumped when the stored layout, or what a line's numbers are read as, changes (old indexes are
#: then rebuilt, not misread): 5 reads a record an earlier version wrote under another metric's name
#: as the metric now named so (``MetricSpec.reading.formerly``); 6 says which lines name no system.
INDEX_FORMAT = 6
ID_COLUMNS = ["story", "sequence", "system"]
TAIL_COLUMNS = ["sentences", "text", "error", "problems"]


#: The column of each metric's main value (what conflicts compare: :func:`~vst_core.data.merge.main_attr`).
#: (The judge's ``score`` has no column of its own: its ``overall`` aspect, which it is, stands in.)
def main_columns() -> dict[str, str]:
    """Each metric's column of its main value (what conflicts compare)."""
    return {m: next((c for c, a in cs if a == main_attr(m)), cs[0][0]) for m, cs in by_metric().items()}


Progress = Callable[[int, int], None]
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexedFile:
    """A file the index was built from: its path, content digest and the stat it had then (device,
    inode and ctime 0: not known)."""

    path: str
    sha256: str
    size: int
    mtime_ns: int
    device: int = 0
    inode: int = 0
    ctime_ns: int = 0

    def same(self, info: os.stat_result) -> bool:
        """Whether an opened file is this one as indexed: size and mtime; device, inode and ctime
        when known (a same-size rewrite with its mtime restored still has another ctime)."""
        if (info.st_size, info.st_mtime_ns) != (self.size, self.mtime_ns):
            return False
        if self.ctime_ns and info.st_ctime_ns != self.ctime_ns:
            return False
        return not self.inode or (info.st_dev, info.st_ino) == (self.device, self.inode)

    @property
    def identity(self) -> FileIdentity:
        return FileIdentity(self.device, self.inode, self.size, self.mtime_ns, self.ctime_ns)

    @classmethod
    def of(cls, path: str | Path, sha256: str, info: os.stat_result) -> IndexedFile:
        return cls(str(Path(path).resolve()), sha256, info.st_size, info.st_mtime_ns, info.st_dev, info.st_ino, info.st_ctime_ns)


@dataclass
class ScoresIndex:
    """The numbers of every story of some scores files, one row per ``(system, story_id)``.

    ``table``: story, sequence, system, one column per registry field present (NaN: undefined),
    sentences, text, error, problems. ``sources``: row, file, offset, length of every line behind
    a row (a merged story has several), sorted by row. ``phrases``: row, cosine, weight of every
    noun phrase of the GROOVIST records used (computed ones: imported scores have none), so θ and
    the −P / −C ablations are re-applied to the whole table with no evidence read."""

    files: tuple[IndexedFile, ...]
    table: pd.DataFrame
    sources: pd.DataFrame
    conflicts: list[Conflict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    phrases: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({"row": [], "cosine": [], "weight": []}))
    _rows: dict[tuple[str, str], int] | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        """Content digest of the indexed files, in order (what the index is keyed by)."""
        return index_key([f.sha256 for f in self.files])

    def __len__(self) -> int:
        return len(self.table)

    def row_of(self, system: str, story_id: str) -> int | None:
        """The row of a story, or None."""
        if self._rows is None:
            self._rows = story_rows(self.table)
        return self._rows.get((system, story_id))

    def rows_of_story(self, story_id: str) -> list[int]:
        """Every row with this story id (one per system that has it)."""
        return rows_with_id(self.table, story_id)

    def record(self, row: int) -> tuple[StoryScores | None, list[Problem]]:
        """The full record of row ``row`` (evidence included), read from its lines now, validated and
        merged; a file changed since indexing (or a line that is no longer this story's) is a
        problem, not a wrong record."""
        if not 0 <= row < len(self.table):
            return None, [Problem(f"no row {row} in the index", "id")]
        want = (str(self.table["system"].iat[row]), str(self.table["story"].iat[row]))
        starts = np.searchsorted(self.sources["row"].to_numpy(), [row, row + 1])
        parts: list[tuple[StoryScores, str]] = []
        problems: list[Problem] = []
        lines = self.sources.iloc[starts[0] : starts[1]][["file", "offset", "length", "line"]]
        for file_no, offset, length, line in lines.itertuples(index=False):
            source = self.files[int(file_no)]
            name = Path(source.path).name
            try:
                with open_same(source.path, None) as fh:
                    if not source.same(os.fstat(fh.fileno())):
                        problems.append(Problem(f"{name} changed since it was indexed; load it again", "file"))
                        continue
                    fh.seek(int(offset))
                    raw = fh.read(int(length))
            except IndexError_ as exc:
                problems.append(Problem(str(exc), "file"))
                continue
            except OSError as exc:
                problems.append(Problem(f"cannot read {name}: {reason(exc)}", "file"))
                continue
            data, problem = _score_line(raw, int(line))
            if data is None:
                problems.append(problem or Problem(f"unreadable line in {name}", "line", line=int(line)))
                continue
            record, found = read_record(data, line=int(line))
            problems.extend(found)
            if record is None:
                continue
            if story_key(record.system, record.story_id) != want:
                problems.append(Problem(f"{name} changed since it was indexed; load it again", "file", line=int(line)))
                continue
            parts.append((record, name))
        if not parts:
            return None, problems
        merged, _ = merge_story(parts)
        return merged, problems

    def metric_records(self, rows: Sequence[int], metric: str) -> dict[int, Any]:
        """One metric's record (e.g. Vrank's preferences) of many rows at once: each file opened
        once and its lines read in offset order, only that metric decoded and validated (its type
        in :data:`~vst_core.records.METRIC_TYPES`); of a story with several lines the first that
        has the metric wins, as :meth:`record` merges them. A row whose line changed, cannot be read or does not fit is left out.
        For reading one metric's evidence of thousands of stories (:meth:`record` reads and merges
        a whole story, about 2 ms a story)."""
        kind = registry().types.get(metric)
        wanted = np.unique(np.asarray(rows, dtype=np.int64))
        if kind is None or not len(wanted):
            return {}
        lines = self.sources[self.sources["row"].isin(wanted)].sort_values(["file", "offset"])
        out: dict[int, Any] = {}
        order: dict[int, int] = {}
        for file_no, part in lines.groupby("file", sort=True):
            source = self.files[int(file_no)]
            try:
                with open_same(source.path, None) as fh:
                    if not source.same(os.fstat(fh.fileno())):
                        continue
                    for row, offset, length, line in part[["row", "offset", "length", "line"]].itertuples(index=False):
                        fh.seek(int(offset))
                        data, _ = _score_line(fh.read(int(length)), int(line))
                        if not isinstance(data, dict):
                            continue
                        found = data.get("metrics", {})
                        stored = _stored_as(found, metric) if isinstance(found, dict) else None
                        if stored is None:
                            continue
                        if (str(data.get("system", "")), str(data.get("story_id", ""))) != (
                            str(self.table["system"].iat[int(row)]),
                            str(self.table["story"].iat[int(row)]),
                        ):
                            continue
                        try:
                            value: Any = decode(kind, found[stored], metric)
                        except RecordError:
                            continue
                        rank = int(file_no) * (1 << 40) + int(offset)
                        if rank <= order.get(int(row), rank):
                            out[int(row)], order[int(row)] = value, rank
            except (IndexError_, OSError):
                continue
        return out

    def provenance(self, regrounded: dict[str, Any] | None = None) -> dict[str, Any]:
        """The signature of numbers read from these files: every file by its sha256, the signature
        each line was written with, and θ / −P / −C when GROOVIST was re-applied (``regrounded``).
        What the dashboard and the command line sign their figures and exports with."""
        ids = sorted(self.signatures)
        files = [{"file": Path(f.path).name, "sha256": f.sha256} for f in self.files]
        sig: dict[str, Any] = {
            "id": json_digest({"files": [f["sha256"] for f in files], "signatures": ids, "regrounded": regrounded}, 12),
            "scores_files": files,
            "recorded": [self.signatures[i] for i in ids],
        }
        if regrounded is not None:
            sig["regrounded"] = regrounded
        return sig

    def first_signature(self) -> dict[str, Any]:
        """The signature of the first computed record (else the first): the settings shown."""
        for sig in self.signatures.values():
            if not is_imported(sig):
                return sig
        return next(iter(self.signatures.values()), {})


def story_rows(table: pd.DataFrame) -> dict[tuple[str, str], int]:
    """``(system, story_id)`` -> row of a table with ``system`` and ``story`` columns."""
    return {key: k for k, key in enumerate(zip(table["system"], table["story"], strict=True))}


def rows_with_id(table: pd.DataFrame, story_id: str) -> list[int]:
    """The rows of a table whose ``story`` is ``story_id``: one per system that has the id."""
    return [int(k) for k in np.flatnonzero((table["story"] == story_id).to_numpy())]


def index_key(digests: Sequence[str]) -> str:
    """The stored index's key: the files' digests, the layout, and the installed metrics (their
    package, version and numbers), so a file indexed before a metric package was installed is
    indexed again with its columns (with the built-in metrics alone, the key of earlier versions)."""
    installed = [[s.name, s.module, s.signing.version, [[f.column, f.attr] for f in s.fields]] for s in registry().plugins]
    key: dict[str, object] = {"format": INDEX_FORMAT, "files": list(digests)}
    if installed:
        key["metrics"] = installed
    return json_digest(key, 24)


def _stored_as(metrics: dict[str, Any], metric: str) -> str | None:
    """The key ``metric``'s record is stored under in a line's metrics: its name, or a name an
    earlier version wrote it under (:meth:`~vst_core.contract.Registry.renamed`); None: absent."""
    reg = registry()
    return next((str(k) for k, v in metrics.items() if (reg.renamed(k, v) if isinstance(v, dict) else k) == metric), None)
