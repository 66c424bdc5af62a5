"""The stored side of the scores index: a built :class:`~vst_core.data.index.ScoresIndex` saved as
Parquet under the cache folder, keyed by the files' content digests, and read back only when it
proves its contents; :func:`load_index`, the entry point, reads the stored index or builds and
stores it.

>>> index = load_index(["scores.jsonl"])                     # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from vst_core.data.access import FileIdentity, PathNotAllowed, open_regular, probe, shown
from vst_core.data.index import ID_COLUMNS, INDEX_FORMAT, TAIL_COLUMNS, IndexedFile, Progress, ScoresIndex, index_key
from vst_core.data.index_build import _stat_files, build_index
from vst_core.data.index_lines import (
    IndexError_,
)
from vst_core.data.merge import Conflict
from vst_core.problems import Problem


def _digest_memo(folder: Path) -> Path:
    return folder / "digests.json"


logger = logging.getLogger(__name__)


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
