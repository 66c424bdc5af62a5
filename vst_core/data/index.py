"""A columnar index of one or more scores JSONL files: the per-story numbers in a table, the
evidence read only for the stories shown.

Building it reads every line once (orjson; the line reader is :mod:`vst_core.data.index_lines`), keeps the numbers of :data:`vst_core.records.FIELDS`,
the ids, the text and the byte range of each line, and merges the lines of one story
``(system, story_id)`` metric by metric with the rule of :mod:`vst_core.data.merge` (conflicts
reported). The table and the byte ranges are stored as Parquet under the cache folder, keyed by the
files' content digests, so a second load reads two small files instead of parsing the evidence
again. :meth:`ScoresIndex.record` reads, validates and merges one story's lines when it is shown.

Why Parquet (pyarrow) rather than DuckDB or SQLite: the pages filter and plot pandas frames, and a
Parquet file of 100,000 rows is read into one in a few tens of milliseconds with no server, no
query language and no second copy of the numbers; pyarrow is already what pandas stores strings in.

>>> index = load_index(["scores.jsonl"])                     # doctest: +SKIP
>>> index.table[["system", "story", "NR"]].head()            # doctest: +SKIP
>>> index.record(index.row_of("llava", "45530")).redundancy  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from vst_core.data.access import FileIdentity, PathNotAllowed, open_regular, probe, reason, shown
from vst_core.data.index_lines import (
    _BY_METRIC,
    IndexError_,
    _Changed,
    _cuts,
    _hash_count,
    _Packed,
    _ranges,
    _read_range,
    _serial,
    open_same,
)
from vst_core.data.merge import MAIN_VALUE, Conflict, conflicts_of, is_imported, merge_story, prefer, story_key
from vst_core.data.scores_io import _score_line
from vst_core.hashing import json_digest
from vst_core.problems import Problem
from vst_core.records import FIELDS, METRIC_TYPES, RecordError, StoryScores, decode, read_record

#: Bumped when the stored layout changes (old indexes are then rebuilt, not misread).
INDEX_FORMAT = 4
ID_COLUMNS = ["story", "sequence", "system"]
TAIL_COLUMNS = ["sentences", "text", "error", "problems"]

#: The column of each metric's main value (what conflicts compare: :data:`~vst_core.data.merge.MAIN_VALUE`).
#: (The judge's ``score`` has no column of its own: its ``overall`` aspect, which it is, stands in.)
_MAIN_COLUMN = {m: next((c for c, a in cs if a == MAIN_VALUE.get(m)), cs[0][0]) for m, cs in _BY_METRIC.items()}

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
        kind = METRIC_TYPES.get(metric)
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
                        if not isinstance(found, dict) or metric not in found:
                            continue
                        if (str(data.get("system", "")), str(data.get("story_id", ""))) != (
                            str(self.table["system"].iat[int(row)]),
                            str(self.table["story"].iat[int(row)]),
                        ):
                            continue
                        try:
                            value = decode(kind, found[metric], metric)
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
    return json_digest({"format": INDEX_FORMAT, "files": list(digests)}, 24)


# --------------------------------------------------------------------------- building


#: A file read by several processes is read only once this long has passed since its status last
#: changed: a rewrite within the file system's timestamp granule (1 s on the coarsest Linux ones)
#: could leave its ctime as it was, which the several-process read's end check relies on.
RACY_NS = 1_000_000_000


def _stat_files(
    paths: Sequence[str | Path], digests: Sequence[str] | None, expected: Sequence[FileIdentity] | None = None
) -> list[IndexedFile]:
    """Each file as opened now (``expected[k]``, when given, must be what is opened: see
    :func:`open_same`), hashed from that opened file unless its digest is known."""
    files: list[IndexedFile] = []
    for k, p in enumerate(paths):
        path = Path(p)
        try:
            with open_same(path, expected[k] if expected is not None else None) as fh:
                info = os.fstat(fh.fileno())
                digest = digests[k] if digests is not None else hashlib.file_digest(fh, "sha256").hexdigest()
                if digests is None and FileIdentity.of(os.fstat(fh.fileno())) != FileIdentity.of(info):
                    raise _Changed(f"scores file {shown(path.name)} changed while it was being hashed")
            files.append(IndexedFile.of(path, digest, info))
        except OSError as exc:
            raise IndexError_(f"cannot read scores file {shown(path.name)} ({reason(exc)})") from None
    return files


@dataclass
class _Row:
    """What the lines of one story add up to while indexing (see :func:`merge_story`)."""

    origin: dict[str, tuple[str, bool, int, int]] = field(default_factory=dict)  # metric -> (file, imported, chunk, line in it)
    sources: dict[str, list[tuple[float | None, str]]] = field(
        default_factory=dict
    )  # metric -> (value, file) of each, when several
    used: dict[str, int] = field(default_factory=dict)  # metric -> which of its sources is used
    errors: dict[str, str] = field(default_factory=dict)
    input_problems: bool = False


#: Files above this size are read by several processes (below, starting them costs more than it saves).
PARALLEL_BYTES = 48 << 20


def _parsed(
    files: Sequence[IndexedFile], progress: Progress | None, proof: dict[int, str]
) -> Iterable[tuple[int, _Packed, dict[str, dict[str, Any]]]]:
    """(file number, parsed lines packed by :func:`_pack`, signatures seen) in file and line order; large files are read by
    up to ``os.cpu_count()`` processes at once, each a contiguous share. ``proof[file number]``:
    the sha256 of the bytes parsed (hashed as they are read by one process; with several, hashed
    here while they read, each share, the hash and the end checked to be of the very file, inode,
    size, mtime and ctime, as at the start: the bytes did not change in between)."""
    total, done = sum(f.size for f in files) or 1, 0
    workers = min(os.cpu_count() or 1, 8)
    for file_no, source in enumerate(files):
        name = Path(source.path).name
        want = source.identity  # every read, here or in a worker, is of the file as it was when the build began
        if source.size < PARALLEL_BYTES or workers < 2:
            yield from _serial(source.path, name, file_no, want, proof)
        else:
            from concurrent.futures import ProcessPoolExecutor
            from concurrent.futures.process import BrokenProcessPool
            from multiprocessing import get_context

            wait = source.ctime_ns + RACY_NS - time.time_ns()
            if wait > 0:  # just written: the granule of its ctime closes first
                time.sleep(wait / 1e9)
            ranges: list[tuple[int, int, int]] = []
            given = 0  # shares already yielded: merged here while the workers read the next ones
            digest = None
            try:
                with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                    futures = []
                    hasher, number = hashlib.sha256(), 1
                    with open_same(source.path, want) as fh:  # each share given as soon as its first line's number is known
                        cuts = _cuts(source.path, source.size, workers * 2, want)
                        for a, b in zip(cuts, cuts[1:], strict=False):
                            ranges.append((a, b, number))
                            futures.append(pool.submit(_read_range, source.path, name, a, b, number, want))
                            number += _hash_count(fh, b - a, hasher, name)
                        if fh.read(1) or FileIdentity.of(os.fstat(fh.fileno())) != want:
                            raise _Changed(f"scores file {shown(name)} changed while it was being indexed")
                    digest = hasher.hexdigest()  # hashed while they read: the file is want's from start to end
                    for (a, b, _), future in zip(ranges, futures, strict=True):
                        packed, signatures = future.result()
                        given += 1
                        done += b - a
                        if progress is not None:
                            progress(done, total)
                        yield file_no, packed, signatures
            except (BrokenProcessPool, OSError):  # no worker could start (e.g. a main module that cannot be re-imported)
                for a, b, n in _ranges(source.path, source.size, workers * 2, want)[given:]:
                    packed, signatures = _read_range(source.path, name, a, b, n, want)
                    yield file_no, packed, signatures
            proof[file_no] = digest or _digest(source.path, want)
            _digest(source.path, want, hash_it=False)  # and still is, once every share is read
        if source.size < PARALLEL_BYTES:
            done += source.size
            if progress is not None:
                progress(done, total)


def _digest(path: str, want: FileIdentity, hash_it: bool = True) -> str:
    """The sha256 of the file ``want`` at ``path`` (or only the check that it is ``want``, before
    and after): :class:`_Changed` when it is not, or stops being ``want`` while hashed."""
    with open_same(path, want) as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest() if hash_it else ""
        if FileIdentity.of(os.fstat(fh.fileno())) != want:
            raise _Changed(f"scores file {shown(Path(path).name)} changed while it was being indexed")
    return digest


def build_index(
    paths: Sequence[str | Path],
    progress: Progress | None = None,
    *,
    digests: Sequence[str] | None = None,
    expected: Sequence[FileIdentity] | None = None,
) -> ScoresIndex:
    """Index ``paths`` in order (see the module). Unreadable lines are problems; a missing or
    unreadable file is :class:`IndexError_`. ``digests``: the files' content digests when known;
    ``expected``: the files as they were checked (see :func:`open_same`): every read, here or in a
    worker process, is of those very files, else IndexError_.

    A line is indexed when :func:`vst_core.records.read_record` would read it, and a metric's
    numbers when its record's own fields fit their types (the evidence inside, e.g. each phrase's
    fields, is checked when :meth:`ScoresIndex.record` reads the story). Files above
    :data:`PARALLEL_BYTES` are parsed by several processes; the merge runs here, in order.

    The index is of the bytes parsed: each file's digest is of those very bytes (see
    :func:`_parsed`), never more lines than the file had when the build began. A file that changes
    meanwhile (its size, mtime, ctime or inode, or its digest, differ at the end) is indexed again
    once from the start; a second change is IndexError_ (and a file checked by the caller,
    ``expected``, is never read in another state: IndexError_ at once)."""
    try:
        return _build(paths, progress, digests, expected)
    except _Changed:
        if expected is not None:
            raise
    try:
        return _build(paths, progress, None, None)
    except _Changed as exc:
        raise IndexError_(f"{exc}, twice; index it again once it is written") from None


def _build(
    paths: Sequence[str | Path],
    progress: Progress | None,
    digests: Sequence[str] | None,
    expected: Sequence[FileIdentity] | None,
) -> ScoresIndex:
    files = _stat_files(paths, digests, expected)
    total = sum(f.size for f in files)
    rows: dict[tuple[str, str], int] = {}
    ids: list[list[str]] = [[], [], []]
    tail: dict[str, list[Any]] = {c: [] for c in TAIL_COLUMNS}
    state: list[_Row] = []
    src_rows: list[int] = []  # the row of each line kept, in order
    src_files: list[np.ndarray] = []
    src_places: list[np.ndarray] = []  # (offset, length, line) of each line kept, a chunk at a time
    chunks: list[
        tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]
    ] = []  # numbers, phrase starts, cosines, weights
    problems: list[Problem] = []
    signatures: dict[str, dict[str, Any]] = {}
    present: set[str] = set()
    names = [Path(f.path).name for f in files]
    proof: dict[int, str] = {}
    for file_no, packed, seen in _parsed(files, progress, proof):
        (order, sids, systems, sequences, sentences, texts, sig_ids, imported, errors, metrics, values, counts, cosines,
         weights, inputs, places, line_problems) = packed  # fmt: skip
        chunk = len(chunks)
        chunks.append((values, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), cosines, weights))
        src_files.append(np.full(len(sids), file_no, dtype=np.int32))
        src_places.append(places)
        name = names[file_no]
        n_sentences, is_imported_, has_input = sentences.tolist(), imported.tolist(), inputs.tolist()
        k = 0
        for entry in order:
            if entry is not None:
                problems.append(entry)
                continue
            found = line_problems.get(k)
            if found:
                problems.extend(found)
            sig_id = sig_ids[k]
            if sig_id not in signatures:
                signatures[sig_id] = seen[sig_id]
            sid, system = sids[k], systems[k]
            key = (system, sid)
            row = rows.get(key)
            if row is None:
                row = rows[key] = len(ids[0])
                ids[0].append(sid)
                ids[1].append(sequences[k])
                ids[2].append(system)
                tail["sentences"].append(n_sentences[k])
                tail["text"].append(texts[k])
                state.append(_Row())
            else:
                if n_sentences[k] and not tail["sentences"][row]:
                    tail["sentences"][row] = n_sentences[k]
                    tail["text"][row] = texts[k]
                if sequences[k] != sid and ids[1][row] == sid:
                    ids[1][row] = sequences[k]
            here = state[row]
            src_rows.append(row)
            line_imported = is_imported_[k]
            for metric in metrics[k]:
                present.add(metric)
                seen_at = here.origin.get(metric)
                if seen_at is not None:  # every source's value kept: conflicts are named once the last is read
                    main = _MAIN_COLUMN[metric]
                    given = here.sources.get(metric)
                    if given is None:
                        first = chunks[seen_at[2]][0][main][seen_at[3]]
                        given = here.sources[metric] = [(_opt(float(first)), seen_at[0])]
                        here.used[metric] = 0
                    given.append((_opt(float(values[main][k])), name))
                    if not prefer(line_imported, seen_at[1]):  # the earlier source stays
                        continue
                    here.used[metric] = len(given) - 1
                here.origin[metric] = (name, line_imported, chunk, k)
            line_errors = errors.get(k)
            if line_errors:
                for metric, message in line_errors.items():
                    here.errors.setdefault(metric, message)
            if has_input[k]:
                here.input_problems = True
            k += 1
    if progress is not None:
        progress(total, total)
    for f_no, f in enumerate(files):
        if proof.get(f_no) != f.sha256:  # the digest known beforehand is not of the bytes parsed
            raise _Changed(f"scores file {shown(names[f_no])} changed while it was being indexed")
    conflicts: list[Conflict] = []
    for row, here in enumerate(state):
        if here.sources:
            used = {m: (here.used[m], here.sources[m]) for m in here.origin if m in here.sources}
            conflicts.extend(conflicts_of(ids[2][row], ids[0][row], used))
    numbers = _numbers_of(state, chunks, present)
    for here in state:
        left = {k: v for k, v in here.errors.items() if k not in here.origin}
        tail["error"].append("; ".join(f"{k}: {v}" for k, v in left.items()))
        kinds = [f"{k} error" for k in left] + (["input"] if here.input_problems else [])
        tail["problems"].append(",".join(kinds))
    table = pd.DataFrame({"story": ids[0], "sequence": ids[1], "system": ids[2]})
    kept = [f.column for f in FIELDS if f.metric in present]
    for column in kept:
        table[column] = np.asarray(numbers[column], dtype=float)
    table["sentences"] = np.asarray(tail["sentences"], dtype=np.int32)
    for column in ("text", "error", "problems"):
        table[column] = tail[column]
    places = np.concatenate(src_places) if src_places else np.zeros((0, 3), dtype=np.int64)
    sources = pd.DataFrame(
        {
            "row": np.asarray(src_rows, dtype=np.int64),
            "file": np.concatenate(src_files) if src_files else np.zeros(0, dtype=np.int32),
            "offset": places[:, 0].astype(np.int64),
            "length": places[:, 1].astype(np.int64),
            "line": places[:, 2].astype(np.int64),
        }
    ).sort_values("row", kind="stable", ignore_index=True)
    metrics_present = tuple(m for m in dict.fromkeys(f.metric for f in FIELDS) if m in present)
    phrases = _phrases_of(state, chunks)
    return ScoresIndex(tuple(files), table, sources, conflicts, problems, signatures, metrics_present, phrases)


_Chunk = tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]  # numbers, phrase starts, cosines, weights


def _used_lines(state: Sequence[_Row], chunks: Sequence[_Chunk], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, line) of the rows that have ``metric``: the line used, numbered across all chunks."""
    offsets = np.concatenate([[0], np.cumsum([len(c[1]) - 1 for c in chunks])]).astype(np.int64)
    rows, lines = [], []
    for row, here in enumerate(state):
        used = here.origin.get(metric)
        if used is not None:
            rows.append(row)
            lines.append(offsets[used[2]] + used[3])
    return np.asarray(rows, dtype=np.int64), np.asarray(lines, dtype=np.int64)


def _numbers_of(state: Sequence[_Row], chunks: Sequence[_Chunk], present: set[str]) -> dict[str, np.ndarray]:
    """Each column of the metrics present: the value of the line each row uses (NaN: none)."""
    out: dict[str, np.ndarray] = {}
    for metric in present:
        rows, lines = _used_lines(state, chunks, metric)
        for column, _ in _BY_METRIC[metric]:
            values = np.concatenate([c[0][column] for c in chunks])
            out[column] = np.full(len(state), np.nan)
            out[column][rows] = values[lines]
    return out


def _phrases_of(state: Sequence[_Row], chunks: Sequence[_Chunk]) -> pd.DataFrame:
    """row, cosine, weight of the phrases of the GROOVIST record each row uses."""
    rows, lines = _used_lines(state, chunks, "grounding")
    shift = np.concatenate([[0], np.cumsum([len(c[2]) for c in chunks])]).astype(np.int64)
    starts = np.concatenate([c[1][:-1] + shift[k] for k, c in enumerate(chunks)] or [np.zeros(0, dtype=np.int64)])
    ends = np.concatenate([c[1][1:] + shift[k] for k, c in enumerate(chunks)] or [np.zeros(0, dtype=np.int64)])
    first, lengths = starts[lines], ends[lines] - starts[lines]
    before = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    at = np.repeat(first - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
    cosines = np.concatenate([c[2] for c in chunks] or [np.zeros(0)])
    weights = np.concatenate([c[3] for c in chunks] or [np.zeros(0)])
    return pd.DataFrame(
        {"row": np.repeat(rows, lengths), "cosine": cosines[at].astype(float), "weight": weights[at].astype(float)}
    )


def _opt(value: float) -> float | None:
    return None if math.isnan(value) else value


# --------------------------------------------------------------------------- stored on disk


def _digest_memo(folder: Path) -> Path:
    return folder / "digests.json"


#: The most a stored file of the index folder may hold before it is read (a larger one is not ours).
MEMO_BYTES = 16 << 20
STORED_BYTES = 4 << 30


def _read_cached(path: Path, limit: int) -> bytes | None:
    """The bytes of a file of the index folder, or None when it is missing, not a regular file (a
    FIFO, a device, a folder: refused without blocking), a symbolic link, larger than ``limit`` or
    unreadable."""
    try:
        with open_regular(path, follow=False, what="index file") as fh:
            if os.fstat(fh.fileno()).st_size > limit:
                return None
            data = fh.read(limit + 1)
    except (PathNotAllowed, OSError):
        return None
    return data if len(data) <= limit else None


def _memo_key(path: str | Path, stat: os.stat_result) -> str:
    # ctime and inode too: a file rewritten with its size and mtime restored (cp -p, rsync -t) is not the same
    return f"{Path(path).resolve()}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"


def _read_memo(folder: Path) -> dict[str, Any]:
    data = _read_cached(_digest_memo(folder), MEMO_BYTES)
    try:
        memo = json.loads(data) if data is not None else {}
    except ValueError:
        return {}
    return memo if isinstance(memo, dict) else {}


def _known_digests(
    folder: Path, paths: Sequence[Path], expected: Sequence[FileIdentity] | None = None, seen: list[FileIdentity] | None = None
) -> list[str] | None:
    """The content digests of ``paths`` remembered for their current stat (which must be
    ``expected``'s when given; added to ``seen``), else None."""
    memo = _read_memo(folder)
    out = []
    for k, path in enumerate(paths):
        try:
            stat = path.stat()
            if expected is not None and FileIdentity.of(stat) != expected[k]:
                return None
            if seen is not None:
                seen.append(FileIdentity.of(stat))
            found = memo.get(_memo_key(path, stat))
        except OSError:
            return None
        if not isinstance(found, str) or not re.fullmatch(r"[0-9a-f]{64}", found):
            return None
        out.append(found)
    return out


def _remember_digests(folder: Path, files: Sequence[IndexedFile]) -> None:
    """Remember each file's digest under its stat, if the file is still as it was when hashed."""
    memo = _read_memo(folder)
    for f in files:
        try:
            stat = os.stat(f.path)
        except OSError:
            continue
        if FileIdentity.of(stat) != f.identity:
            continue
        key = _memo_key(f.path, stat)
        memo.pop(key, None)  # the last used at the end: the oldest are forgotten first
        memo[key] = f.sha256
    _atomic_write(_digest_memo(folder), json.dumps(dict(list(memo.items())[-2000:])).encode())


def _atomic_write(path: Path, data: bytes | Callable[[str], None]) -> None:
    """Write ``path`` beside itself, then rename into place (readers see the old or the new file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
        if not isinstance(data, bytes):
            data(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: What storing or reading a stored index may raise besides OSError (a bad or foreign file, text
#: Parquet cannot hold): the index is then built or kept in memory, never lost.
_STORE_ERRORS = (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, pa.ArrowException)
_FRAMES = ("table", "sources", "phrases")


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.to_parquet(out, index=False)
    return out.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save_index(index: ScoresIndex, folder: Path) -> None:
    """Store ``index`` under ``folder`` by its key (each file written beside, then renamed into
    place; the description last). The description names the source files' digests and the sha256
    of each stored Parquet file, and carries the sha256 of its own body: :func:`load_index` reads
    back only what they prove (a damaged or foreign file is rebuilt from the source)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = index.digest
    stored: dict[str, str] = {}
    for name, frame in (("table", index.table), ("sources", index.sources), ("phrases", index.phrases)):
        data = _parquet_bytes(frame)
        stored[name] = _sha256(data)
        _atomic_write(folder / f"{key}.{name}.parquet", data)
    meta = {
        "format": INDEX_FORMAT,
        "key": key,
        "digests": [f.sha256 for f in index.files],
        "stored": stored,
        "rows": len(index.table),
        "files": [asdict(f) for f in index.files],
        "conflicts": [asdict(c) for c in index.conflicts],
        "problems": [asdict(p) for p in index.problems],
        "signatures": index.signatures,
        "metrics": list(index.metrics),
    }
    body = json.dumps(meta)
    _atomic_write(folder / f"{key}.json", json.dumps({"sha256": _sha256(body.encode()), "body": body}).encode())
    _remember_digests(folder, index.files)


def _checked_meta(folder: Path, key: str, digests: Sequence[str]) -> dict[str, Any] | None:
    """The stored description of the index ``key`` when its checksum holds and it is this index's:
    this format, this key, these source digests in this order (another index copied under the key
    is not), else None."""
    data = _read_cached(folder / f"{key}.json", STORED_BYTES)
    if data is None:
        return None
    outer = json.loads(data)
    if not isinstance(outer, dict) or not isinstance(outer.get("body"), str):
        return None
    body = outer["body"]
    if outer.get("sha256") != _sha256(body.encode()):
        return None
    meta = json.loads(body)
    if not isinstance(meta, dict) or meta.get("format") != INDEX_FORMAT or meta.get("key") != key:
        return None
    if meta.get("digests") != list(digests) or [f.get("sha256") for f in meta["files"]] != list(digests):
        return None
    return meta


def _checked_frame(folder: Path, key: str, name: str, sha256: Any) -> pd.DataFrame | None:
    """A stored Parquet file read from the very bytes whose sha256 the description names, else None."""
    data = _read_cached(folder / f"{key}.{name}.parquet", STORED_BYTES)
    if data is None or not isinstance(sha256, str) or _sha256(data) != sha256:
        return None
    return pd.read_parquet(io.BytesIO(data))


def _whole(table: pd.DataFrame, sources: pd.DataFrame, phrases: pd.DataFrame, rows: Any, files: int) -> bool:
    """Whether stored frames have the shape of an index of ``rows`` rows over ``files`` files."""
    if rows != len(table) or not set(ID_COLUMNS + TAIL_COLUMNS) <= set(table.columns):
        return False
    if not {"row", "file", "offset", "length", "line"} <= set(sources.columns) or not {"row", "cosine", "weight"} <= set(
        phrases.columns
    ):
        return False
    for frame in (sources, phrases):
        if len(frame) and not (0 <= frame["row"].min() and frame["row"].max() < rows):
            return False
    return not len(sources) or (0 <= sources["file"].min() and sources["file"].max() < files)


def _read_stored(
    folder: Path,
    key: str,
    paths: Sequence[Path],
    expected: Sequence[FileIdentity] | None = None,
    digests: Sequence[str] | None = None,
) -> ScoresIndex | None:
    """The index stored under ``key`` for ``paths`` as they are now (``expected``, when given: the
    files as they were when checked or hashed; another file, or this one changed since, is no
    match) with the contents ``digests``, else None:
    also when a stored file is damaged, truncated, not a regular file, or another index's (each
    checked against the checksums of :func:`save_index`)."""
    try:
        meta = _checked_meta(folder, key, digests if digests is not None else [])
        if meta is None or len(meta["files"]) != len(paths):
            return None
        frames = [_checked_frame(folder, key, name, meta["stored"].get(name)) for name in _FRAMES]
        table, sources, phrases = frames
        if table is None or sources is None or phrases is None or not _whole(table, sources, phrases, meta["rows"], len(paths)):
            return None
        files = []
        for k, (path, stored) in enumerate(zip(paths, meta["files"], strict=True)):  # the same content, perhaps moved
            info = path.stat()
            if expected is not None and FileIdentity.of(info) != expected[k]:
                return None
            files.append(IndexedFile.of(path, str(stored["sha256"]), info))
        return ScoresIndex(
            tuple(files),
            table,
            sources,
            [Conflict(**c) for c in meta["conflicts"]],
            [Problem(**p) for p in meta["problems"]],
            meta["signatures"],
            tuple(meta["metrics"]),
            phrases,
        )
    except _STORE_ERRORS:
        return None


def index_folder() -> Path:
    """Where indexes are stored: ``$VST_CACHE_DIR/index`` (default ``~/.cache/vst-eval/index``)."""
    from vst_core.config import default_cache_dir

    return default_cache_dir() / "index"


def load_index(
    paths: Sequence[str | Path],
    folder: Path | None = None,
    progress: Progress | None = None,
    *,
    expected: Sequence[FileIdentity] | None = None,
) -> ScoresIndex:
    """The index of ``paths``: read from ``folder`` when stored for these contents (wherever the
    files now lie), else built and stored (a folder that cannot be written only costs the next load
    its speed). ``expected``: the files as they were checked (e.g. by
    :func:`vst_core.data.scores_io.checked_scores`): only those very files are hashed and read.
    IndexError_, naming a file but not its folder, when one cannot be read."""
    folder = folder or index_folder()
    files = [Path(p) for p in paths]
    for path in files:
        why = probe(path)
        if why is not None:
            raise IndexError_(f"scores file {why}: {shown(path.name)}")
    seen: list[FileIdentity] = []  # each file as it was when its digest was found
    digests = _known_digests(folder, files, expected, seen)
    if digests is None:
        hashed = _stat_files(files, None, expected)
        digests, seen = [f.sha256 for f in hashed], [f.identity for f in hashed]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _remember_digests(folder, hashed)
        except _STORE_ERRORS:
            pass
    stored = _read_stored(folder, index_key(digests), files, seen, digests)
    if stored is not None:
        return stored
    if (folder / f"{index_key(digests)}.json").exists():
        logger.info(
            "the stored index %s does not prove its contents; it is built again from the scores files", index_key(digests)
        )
    index = build_index(files, progress, digests=digests, expected=expected)
    try:
        save_index(index, folder)
    except _STORE_ERRORS:
        pass
    return index
