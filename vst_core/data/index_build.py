"""Building a :class:`~vst_core.data.index.ScoresIndex`: every line of the scores files read once
(in several processes for a large file), the per-story numbers kept in a table, the lines of one
story merged metric by metric, conflicts and problems reported."""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vst_core.contract import registry
from vst_core.data.access import FileIdentity, reason, shown
from vst_core.data.index import TAIL_COLUMNS, IndexedFile, Progress, ScoresIndex, main_columns
from vst_core.data.index_lines import (
    IndexError_,
    _Changed,
    _cuts,
    _hash_count,
    _Packed,
    _ranges,
    _read_range,
    _serial,
    by_metric,
    open_same,
)
from vst_core.data.merge import Conflict, conflicts_of, prefer
from vst_core.problems import Problem

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
    main_column = main_columns()
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
                    main = main_column[metric]
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
    kept = [f.column for f in registry().fields if f.metric in present]
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
    metrics_present = tuple(m for m in dict.fromkeys(f.metric for f in registry().fields) if m in present)
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
        for column, _ in by_metric()[metric]:
            values = np.concatenate([c[0][column] for c in chunks])
            out[column] = np.full(len(state), np.nan)
            out[column][rows] = values[lines]
    return out


def _phrases_of(state: Sequence[_Row], chunks: Sequence[_Chunk]) -> pd.DataFrame:
    """row, cosine, weight of the items each row's record of the re-aggregated metric keeps
    (GROOVIST's phrases: :attr:`vst_core.contract.Registry.reaggregated`)."""
    again = registry().reaggregated
    rows, lines = _used_lines(state, chunks, again[0] if again is not None else "")
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
