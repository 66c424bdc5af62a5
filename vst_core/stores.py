"""SQLite files in the cache folder (embeddings, the judge's answers, the inputs memo) opened the same
way: a file that cannot be read, or is not a regular file, is set aside (renamed ``NAME.damaged``,
with a warning) and a new one started, and a file damaged while in use is set aside at the first
query that fails; the query then answers as if nothing were stored. A cache can only ever cost the
work it saves: no run fails because of one.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

#: What a damaged file is renamed to, beside the new one.
DAMAGED_SUFFIX = ".damaged"


class SqliteStore:
    """One SQLite connection behind a lock (in memory when ``path`` is None), created with
    ``schema`` and checked with ``probe`` (a query that reads the file)."""

    def __init__(self, path: str | Path | None, schema: Sequence[str], *, probe: str) -> None:
        self.path = Path(path) if path is not None else None
        self.schema, self.probe = tuple(schema), probe
        self.set_aside: list[str] = []  # the reasons files were set aside, for reports and tests
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            return self._aside("not a regular file")
        try:
            return self._connect(str(self.path))
        except sqlite3.DatabaseError as exc:
            return self._aside(f"{type(exc).__name__}: {exc}")

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

    def run(self, query: Callable[[sqlite3.Connection], T], *, default: T) -> T:
        """``query(connection)`` under the lock; when the file turns out damaged, it is set aside, a
        new one started and the query run once more there (a write lands in the new file), else
        ``default`` returned."""
        with self.lock:
            try:
                return query(self.db)
            except sqlite3.DatabaseError as exc:
                if self.path is None:
                    raise
                try:
                    self.db.close()
                except sqlite3.Error:
                    pass
                self.db = self._aside(f"{type(exc).__name__}: {exc}")
            try:
                return query(self.db)
            except sqlite3.DatabaseError:
                return default


def write_many(db: sqlite3.Connection, statement: str, rows: Sequence[tuple[object, ...]]) -> None:
    """``executemany`` then commit: the write a store's ``put`` methods run."""
    db.executemany(statement, rows)
    db.commit()


__all__ = ["DAMAGED_SUFFIX", "SqliteStore", "write_many"]
