"""SQLite files in the cache folder (embeddings, the judge's answers, the inputs memo) opened the same
way: a file that cannot be read, or is not a regular file, is set aside (renamed ``NAME.damaged``,
with a warning) and a new one started, and a file damaged while in use is set aside at the first
query that fails; the query then answers as if nothing were stored. A full disk or a read-only file
or folder is not damage: the write is skipped (or the run keeps its cache in memory) and the file is
kept, so what it holds is reused later. A cache can only ever cost the work it saves: no run fails
because of one.

>>> store = SqliteStore(None, ("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)",), probe="SELECT COUNT(*) FROM t")
>>> store.run(lambda db: db.execute("SELECT COUNT(*) FROM t").fetchone()[0], default=-1)
0
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

#: What a damaged file is renamed to, beside the new one.
DAMAGED_SUFFIX = ".damaged"

#: SQLite's result code for a write to a read-only database.
SQLITE_READONLY = 8
#: SQLite's primary result codes that say nothing about the file's content: a full disk, a read-only
#: file or folder, an I/O error, a file that cannot be opened, another writer holding it. A store
#: never sets a file aside for one of these (but a read-only refusal of a file it may write, whose
#: header is damaged): the write is skipped, the file kept.
_NOT_DAMAGE = frozenset({5, 6, 8, 10, 13, 14})  # BUSY, LOCKED, READONLY, IOERR, FULL, CANTOPEN


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether an SQLite error says the file's content is unreadable (set it aside), rather than
    that the disk or the folder refused a write (keep it).

    >>> full = sqlite3.OperationalError("database or disk is full"); full.sqlite_errorcode = 13
    >>> corrupt = sqlite3.DatabaseError("file is not a database"); corrupt.sqlite_errorcode = 26
    >>> is_damage(full), is_damage(corrupt)
    (False, True)
    """
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) not in _NOT_DAMAGE
    text = str(exc).lower()
    return not any(words in text for words in ("disk is full", "readonly", "read-only", "unable to open", "locked", "disk i/o"))


class SqliteStore:
    """One SQLite connection behind a lock (in memory when ``path`` is None), created with
    ``schema`` and checked with ``probe`` (a query that reads the file)."""

    def __init__(self, path: str | Path | None, schema: Sequence[str], *, probe: str) -> None:
        self.path = Path(path) if path is not None else None
        self.schema, self.probe = tuple(schema), probe
        self.set_aside: list[str] = []  # the reasons files were set aside, for reports and tests
        self._refused = False  # a write was refused (full disk, read-only file): said once
        self.lock = threading.Lock()
        self.db = self._open()

    def _connect(self, where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where, check_same_thread=False, timeout=120)
        try:
            for statement in self.schema:
                db.execute(statement)
            db.execute(self.probe).fetchall()  # a damaged file fails here, not later
        except BaseException:
            db.close()
            raise
        return db

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            return self._connect(":memory:")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:  # a folder that cannot be made or read: this run keeps its cache in memory
            return self._in_memory(f"{type(exc).__name__}: {exc}")
        if info is not None and not stat.S_ISREG(info.st_mode):
            return self._aside("not a regular file")
        try:
            return self._connect(str(self.path))
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # text that is not UTF-8: a flipped byte
            if not self._damage(exc):  # a read-only folder, a full disk: the file (if any) is left as it is
                return self._in_memory(f"{type(exc).__name__}: {exc}")
            return self._aside(f"{type(exc).__name__}: {exc}")

    def _in_memory(self, why: str) -> sqlite3.Connection:
        log.warning("%s cannot be used (%s); this run keeps its cache in memory", self.path, why)
        return self._connect(":memory:")

    def _aside(self, why: str) -> sqlite3.Connection:
        """Rename the file to ``NAME.damaged`` and start a new one (in memory when that fails too)."""
        assert self.path is not None
        aside = self.path.with_name(self.path.name + DAMAGED_SUFFIX)
        self.set_aside.append(why)
        try:
            if aside.is_dir() and not aside.is_symlink():
                raise OSError(f"{aside.name} is a folder")
            os.replace(self.path, aside)
            log.warning("%s could not be read (%s); set aside as %s and started anew", self.path, why, aside.name)
            return self._connect(str(self.path))
        except (OSError, sqlite3.DatabaseError) as exc:
            log.warning("%s could not be read (%s) nor set aside (%s); this run keeps its cache in memory", self.path, why, exc)
            return self._connect(":memory:")

    def _damage(self, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> bool:
        """Whether ``exc`` says this store's file is damaged (:func:`is_damage`; text SQLite returns
        that is not UTF-8 is a damaged page), a read-only refusal of a file this process may write,
        with its folder, included: its header says so (a damaged write-version byte), which is
        damage, not a refusal."""
        if isinstance(exc, UnicodeDecodeError) or is_damage(exc):
            return True
        code = getattr(exc, "sqlite_errorcode", None)
        readonly = (code & 0xFF) == SQLITE_READONLY if isinstance(code, int) else "readonly" in str(exc).lower()
        path = self.path
        return bool(readonly and path is not None and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))

    def run(self, query: Callable[[sqlite3.Connection], T], *, default: T) -> T:
        """``query(connection)`` under the lock; when the file turns out damaged, it is set aside, a
        new one started and the query run once more there (a write lands in the new file), else
        ``default`` returned. A refused write (a full disk, a read-only file) is not damage: the
        query gives ``default`` and the file stays as it is."""
        with self.lock:
            try:
                return query(self.db)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                if self.path is None:
                    raise
                if not self._damage(exc):
                    # a full disk or a read-only file: this write is skipped, the file kept
                    if not self._refused:
                        log.warning("%s refused a write (%s); what it holds stays, what is new is not kept", self.path, exc)
                    self._refused = True
                    return default
                try:
                    self.db.close()
                except sqlite3.Error:
                    pass
                self.db = self._aside(f"{type(exc).__name__}: {exc}")
            try:
                return query(self.db)
            except (sqlite3.DatabaseError, UnicodeDecodeError):
                return default


def rows_in(db: sqlite3.Connection, select: str, keys: Sequence[str], size: int = 500) -> Iterator[tuple[Any, ...]]:
    """The rows of ``select`` (whose ``WHERE ... IN ({marks})`` takes the keys) over every key of
    ``keys``, ``size`` keys a query (SQLite's bound on parameters).

    >>> db = sqlite3.connect(":memory:"); _ = db.execute("CREATE TABLE t (k TEXT)")
    >>> _ = db.executemany("INSERT INTO t VALUES (?)", [("a",), ("b",), ("c",)])
    >>> sorted(k for (k,) in rows_in(db, "SELECT k FROM t WHERE k IN ({marks})", ["a", "c", "x"], size=2))
    ['a', 'c']
    """
    for start in range(0, len(keys), size):
        chunk = keys[start : start + size]
        yield from db.execute(select.format(marks=",".join("?" * len(chunk))), chunk)


def write_many(db: sqlite3.Connection, statement: str, rows: Sequence[tuple[object, ...]]) -> None:
    """``executemany`` then commit: the write a store's ``put`` methods run."""
    db.executemany(statement, rows)
    db.commit()


__all__ = ["DAMAGED_SUFFIX", "SqliteStore", "is_damage", "rows_in", "write_many"]
