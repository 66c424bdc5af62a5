"""On-disk embedding cache keyed by model signature and content, shared by the CLI and the app.

Keys: ``sha256(model signature | "image" | sha256(image bytes) | box)`` for regions and
``sha256(model signature | "text" | text)`` for phrases, so a changed model never reuses
stale vectors and the same image under another name is encoded once.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from vst_core.hashing import text_digest
from vst_core.stores import SqliteStore, rows_in, write_many

log = logging.getLogger(__name__)


def region_key(model: str, image_hash: str, box_key: str) -> str:
    return text_digest(f"{model}|image|{image_hash}|{box_key}")


def text_key(model: str, text: str) -> str:
    return text_digest(f"{model}|text|{text}")


def tokens_key(model: str, text: str) -> str:
    """The cache key of a text's token count under ``model`` (stored as ``[tokens, context length]``)."""
    return text_digest(f"{model}|tokens|{text}")


#: The condition a stored row meets to be read back: an integer width and that many float32 bytes.
_WELL_FORMED = "AND typeof(dim) = 'integer' AND dim > 0 AND typeof(vec) = 'blob' AND length(vec) = 4 * dim"


_SCHEMA = ("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)",)
_PROBE = "SELECT COUNT(*) FROM emb"
_INSERT = "INSERT OR REPLACE INTO emb VALUES (?, ?, ?)"

#: Vectors queued for the writer thread at most before :meth:`EmbeddingCache.put_many` waits for it
#: (128 MiB at ViT-B-32's width).
MAX_QUEUED = 65536


class EmbeddingCache:
    """A SQLite file of float32 vectors by key (``:memory:``-like when ``path`` is None).

    On disk, :meth:`put_many` hands its vectors to one writer thread and returns: the thread that
    launches the model's work never waits for SQLite. Vectors queued are read back by
    :meth:`get_many` meanwhile; :meth:`flush` waits until they are written (the engine flushes at
    the end of a run, :meth:`size`, :meth:`report` and :meth:`clear` first, and the process at
    exit).

    >>> cache = EmbeddingCache(None)
    >>> cache.put_many({"k": np.ones(2, np.float32)}); cache.get_many(["k"])["k"].tolist()
    [1.0, 1.0]
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._queued: dict[str, np.ndarray] = {}  # written by the writer thread, readable meanwhile
        self._batches: collections.deque[dict[str, np.ndarray]] = collections.deque()
        self._writing = 0  # batches taken by the writer and not yet written
        self._cond = threading.Condition()
        self._writer: threading.Thread | None = None
        self._own: sqlite3.Connection | None = None  # the writer's connection to the file
        # a generous busy timeout (in the store): shards of one run may share the cache file
        self._store = SqliteStore(self.path, _SCHEMA, probe=_PROBE)
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored (or queued) vectors of ``keys``; an entry whose bytes are not ``dim`` finite
        float32 values is left out (computed again)."""
        queued: dict[str, np.ndarray] = {}
        if self._queued:
            with self._cond:
                queued = {k: self._queued[k] for k in keys if k in self._queued}
            keys = [k for k in keys if k not in queued]
            queued = {k: v for k, v in queued.items() if np.isfinite(v).all()}  # as a stored one is read back

        def query(db: sqlite3.Connection) -> dict[str, np.ndarray]:
            by_dim: dict[int, tuple[list[str], list[bytes]]] = {}
            # only rows whose bytes are ``dim`` float32 values come back
            for key, dim, blob in rows_in(db, "SELECT key, dim, vec FROM emb WHERE key IN ({marks}) " + _WELL_FORMED, keys):
                names, blobs = by_dim.get(dim) or by_dim.setdefault(dim, ([], []))
                names.append(key)
                blobs.append(blob)
            found: dict[str, np.ndarray] = {}
            for dim, (names, blobs) in by_dim.items():  # one buffer per width, checked in one pass
                vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(names), dim)
                finite = np.asarray(np.isfinite(vectors).all(axis=1))
                if finite.all():
                    found.update(zip(names, vectors))
                else:
                    found.update((key, vectors[k]) for k, key in enumerate(names) if finite[k])
            return found

        found: dict[str, np.ndarray] = self._store.run(query, default={}) if keys else {}
        return {**found, **queued} if queued else found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store ``items``: queued for the writer thread when the cache is on disk, else at once
        (and at once when no thread can be started)."""
        if not items:
            return
        if self.path is None:
            self._write(items)
            return
        items = {k: np.asarray(v, dtype=np.float32) for k, v in items.items()}  # the caller's dict is its own
        with self._cond:
            while len(self._queued) > MAX_QUEUED and (self._batches or self._writing):
                self._cond.wait()  # a disk slower than the model: the caller waits rather than memory growing
            self._queued.update(items)
            self._batches.append(items)
            if self._writer is not None:
                return  # the running writer takes it
            writer = threading.Thread(target=self._write_queued, name="vst-cache-writer", daemon=True)
            try:
                writer.start()
            except RuntimeError:  # no thread to be had (a limit, the interpreter ending): written here
                self._batches.pop()
                for key, vector in items.items():
                    if self._queued.get(key) is vector:
                        del self._queued[key]
            else:
                self._writer = writer
                _OPEN.add(self)
                return
        self._write(items)

    def flush(self) -> None:
        """Wait until every vector queued is written."""
        with self._cond:
            while self._batches or self._writing:
                self._cond.wait()

    def _write(self, items: dict[str, np.ndarray]) -> None:
        rows = _rows(items)
        self._store.run(lambda db: write_many(db, _INSERT, rows), default=None)

    def _write_own(self, items: dict[str, np.ndarray]) -> None:
        """The writer's write: on a connection of its own to the file, so the run's reads never
        wait behind it; any refusal (a file set aside and started anew by the run's connection,
        damage, a full disk) goes to the run's store instead, which says why and recovers, and the
        next write opens the file at the path again."""
        if self._own is None and _on_file(self._store):
            assert self.path is not None
            try:
                self._own = sqlite3.connect(str(self.path), check_same_thread=False, timeout=120)
            except sqlite3.Error:
                self._own = None
        if self._own is not None:
            try:
                write_many(self._own, _INSERT, _rows(items))
                return
            except sqlite3.Error:
                self._own.close()
                self._own = None
        self._write(items)

    def _write_queued(self) -> None:
        """The writer thread: writes what is queued, then ends (the next :meth:`put_many` starts another)."""
        while True:
            with self._cond:
                if not self._batches:
                    self._writer = None
                    return
                batches = list(self._batches)  # what piled up is written in one transaction
                self._batches.clear()
                self._writing = len(batches)
            items = {k: v for batch in batches for k, v in batch.items()}
            try:
                self._write_own(items)
            except Exception:  # the vectors are computed again by a later run
                log.warning("vectors could not be written to %s", self.path, exc_info=True)
            finally:
                with self._cond:
                    for key, vector in items.items():
                        if self._queued.get(key) is vector:
                            del self._queued[key]
                    self._writing = 0
                    self._cond.notify_all()

    def _forked(self) -> None:
        """In a child process: the parent's writer, queue and connection are the parent's."""
        self._cond = threading.Condition()
        self._queued, self._batches, self._writing, self._writer, self._own = {}, collections.deque(), 0, None, None

    def fetch(self, keys: Sequence[str], compute: Callable[[list[int]], np.ndarray]) -> np.ndarray:
        """Vectors for ``keys`` in order; ``compute(indices)`` encodes only the missing ones."""
        unique = list(dict.fromkeys(keys))
        found = self.get_many(unique)
        missing = [k for k in unique if k not in found]
        self.hits += len(unique) - len(missing)
        self.misses += len(missing)
        if missing:
            first_index: dict[str, int] = {}
            for i, k in enumerate(keys):
                first_index.setdefault(k, i)
            vectors = compute([first_index[k] for k in missing])
            new = {k: vectors[n] for n, k in enumerate(missing)}
            self.put_many(new)
            found.update(new)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)

    def size(self) -> tuple[int, int]:
        """(number of vectors, bytes on disk)."""
        self.flush()
        count = self._store.run(lambda db: int(db.execute("SELECT COUNT(*) FROM emb").fetchone()[0]), default=0)
        return count, (self.path.stat().st_size if self.path and self.path.is_file() else 0)

    def report(self) -> dict[str, object]:
        """Path, number of vectors, bytes on disk and vectors per dimension (one per model size)."""
        count, size = self.size()
        by_dim: dict[int, int] = self._store.run(
            lambda db: {int(d): int(c) for d, c in db.execute("SELECT dim, COUNT(*) FROM emb GROUP BY dim ORDER BY dim")},
            default=dict[int, int](),
        )
        return {"path": str(self.path) if self.path else ":memory:", "entries": count, "bytes": size, "by_dim": by_dim}

    def clear(self) -> None:
        self.flush()

        def clear(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM emb")
            db.commit()
            db.execute("VACUUM")

        self._store.run(clear, default=None)


def _rows(items: dict[str, np.ndarray]) -> list[tuple[str, int, bytes]]:
    return [(k, int(v.shape[-1]), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]


def _on_file(store: SqliteStore) -> bool:
    """Whether ``store`` is on its file (not kept in memory after its file could not be used)."""
    found = store.run(lambda db: db.execute("PRAGMA database_list").fetchone(), default=None)
    return found is not None and bool(found[2])


#: The caches whose writer thread has started: flushed when the process exits.
_OPEN: weakref.WeakSet[EmbeddingCache] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for cache in list(_OPEN):
        cache.flush()


def _after_fork() -> None:
    for cache in list(_OPEN):
        cache._forked()


os.register_at_fork(after_in_child=_after_fork)
