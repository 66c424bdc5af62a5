"""A study's answers on disk: one SQLite file in write-ahead-log mode, one transaction an answer.

An answer is acknowledged when :meth:`AnswerStore.record` returns, which is after its transaction
committed with ``synchronous=FULL``: a process killed after that, a tab closed or two raters
answering at once lose nothing acknowledged. A store keeps one connection per process, used by one
call at a time, so threads and processes share a file freely. A rater who changes an answer adds a revision (the history stays;
the latest revision is the answer). Unlike the caches of :mod:`vst_core.stores`, a store that cannot
be written is never skipped: the answer is refused with a :class:`StudyError` saying why.

>>> import tempfile
>>> store = AnswerStore(Path(tempfile.mkdtemp()) / "a.answers.sqlite")
>>> store.count()
0
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vst_core.study.plan import assigned
from vst_core.study.records import (
    Answer,
    Presented,
    Rater,
    Study,
    StudyError,
    canonical,
    finite_seconds,
    value_problem,
)

__all__ = ["AnswerStore"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS answers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        study_signature TEXT NOT NULL,
        rater TEXT NOT NULL,
        item_id TEXT NOT NULL,
        presented TEXT NOT NULL,
        value TEXT NOT NULL,
        seconds REAL NOT NULL,
        answered_at TEXT NOT NULL,
        revision INTEGER NOT NULL,
        request TEXT,
        UNIQUE (study_signature, rater, item_id, revision)
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS answers_request ON answers (study_signature, rater, request) WHERE request IS NOT NULL",
)
#: How long a writer waits for another's transaction, in seconds.
BUSY_SECONDS = 60.0


class AnswerStore:
    """The answers of one or more studies in the SQLite file ``path`` (made when missing).

    ``record`` validates and writes one answer in one transaction; ``answers`` and ``answered``
    read them back. Safe across threads (one call at a time on the process's connection) and
    processes (SQLite's locks; a writer waits up to :data:`BUSY_SECONDS` for another)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        if self.path.exists() and not self.path.is_file():
            raise StudyError(f"cannot keep answers in {self.path}: not a regular file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connection() as db:
                db.execute("PRAGMA journal_mode=WAL")
                for statement in _SCHEMA:
                    db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise StudyError(f"cannot keep answers in {self.path}: {exc}") from None
        except OSError as exc:
            raise StudyError(f"cannot keep answers in {self.path}: {exc.strerror or exc}") from None

    @classmethod
    def beside(cls, study_path: str | Path) -> AnswerStore:
        """The store a study file's answers are kept in by default (its suffix ``.answers.sqlite``)."""
        from vst_core.study.files import answers_path

        return cls(answers_path(study_path))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """This process's connection to the file, one call at a time (SQLite takes one writer at a
        time anyway). It stays open between calls: closing the last connection to a WAL file
        checkpoints it, which would double the time an answer takes. A call that fails closes it;
        the next opens a new one (as does a forked process)."""
        with self._lock:
            if self._db is None or self._pid != os.getpid():
                self._db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
                self._pid = os.getpid()
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
            try:
                yield self._db
            except BaseException:
                self.close_connection()
                raise

    def close_connection(self) -> None:
        """Close this process's connection (the next call opens another)."""
        db, self._db = self._db, None
        if db is not None and self._pid == os.getpid():
            try:
                db.close()
            except sqlite3.Error:
                pass

    def record(
        self,
        study: Study,
        rater: Rater,
        presented: Presented,
        value: Mapping[str, int | str],
        seconds: float,
        *,
        request: str | None = None,
    ) -> Answer:
        """Write one answer of ``rater`` to ``presented``'s item and return it once committed.

        The value is checked against the study's protocol (story indices, not screen positions),
        the order shown against the item, the rater against the study (a revoked rater or an item
        not theirs is refused): StudyError says why, and nothing is written. An answer to an item
        the rater answered before is its next revision. ``request``, an id the caller makes once per
        submission, makes a resubmission (a page run twice, a retry after a lost reply) return the
        answer already written instead of adding a revision."""
        live = study.rater(rater.name)
        if live is None or live.token != rater.token:
            raise StudyError(f"{rater.name!r} is not a rater of study {study.study_id}")
        if live.revoked:
            raise StudyError(f"rater {rater.name!r}'s link was revoked; the answer is not kept")
        item = study.item(presented.item_id)
        if item.item_id not in {i.item_id for i in assigned(study, live)}:
            raise StudyError(f"item {item.item_id} is not one of rater {rater.name!r}'s items")
        if sorted(presented.order) != list(range(len(item.stories))):
            raise StudyError(f"the order shown {presented.order} is not an order of the item's {len(item.stories)} stories")
        problem = value_problem(study, item, value)
        if problem:
            raise StudyError(f"item {item.item_id}: {problem}")
        taken = finite_seconds(seconds)
        if request is not None and (not isinstance(request, str) or not 0 < len(request) <= 200):
            raise StudyError("a request id is text of 1-200 characters")
        signature = study.signature
        stored_value = canonical(value)
        shown = json.dumps(list(presented.order))
        try:
            with self._connection() as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    if request is not None:
                        row = db.execute(
                            f"SELECT {_COLUMNS} FROM answers WHERE study_signature = ? AND rater = ? AND request = ?",
                            (signature, rater.name, request),
                        ).fetchone()
                        if row is not None:
                            db.execute("COMMIT")
                            return _answer(row)
                    (last,) = db.execute(
                        "SELECT COALESCE(MAX(revision), 0) FROM answers WHERE study_signature = ? AND rater = ? AND item_id = ?",
                        (signature, rater.name, item.item_id),
                    ).fetchone()
                    at = datetime.now(UTC).isoformat(timespec="milliseconds")
                    db.execute(
                        "INSERT INTO answers (study_signature, rater, item_id, presented, value, seconds, answered_at, "
                        "revision, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (signature, rater.name, item.item_id, shown, stored_value, taken, at, last + 1, request),
                    )
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as exc:
            raise StudyError(f"the answer was not saved ({exc}); try again") from None
        return Answer(signature, rater.name, item.item_id, tuple(presented.order), dict(value), taken, at, last + 1)

    def answers(self, study: Study, latest_only: bool = True) -> list[Answer]:
        """The study's answers (those given under its signature), oldest first: the latest
        revision of each (rater, item), or every revision with ``latest_only=False``."""
        latest = (
            " AND revision = (SELECT MAX(b.revision) FROM answers b WHERE b.study_signature = a.study_signature "
            "AND b.rater = a.rater AND b.item_id = a.item_id)"
            if latest_only
            else ""
        )
        query = f"SELECT {_COLUMNS} FROM answers a WHERE study_signature = ?{latest} ORDER BY id"
        try:
            with self._connection() as db:
                rows = db.execute(query, (study.signature,)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StudyError(f"cannot read the answers in {self.path}: {exc}") from None
        return [_answer(row) for row in rows]

    def answered(self, study: Study, rater: Rater) -> dict[str, Answer]:
        """Item id -> ``rater``'s latest answer to it."""
        return {a.item_id: a for a in self.answers(study) if a.rater == rater.name}

    def count(self) -> int:
        """Every answer row the file holds, of every study and revision."""
        with self._connection() as db:
            (n,) = db.execute("SELECT COUNT(*) FROM answers").fetchone()
        return int(n)


_COLUMNS = "study_signature, rater, item_id, presented, value, seconds, answered_at, revision"


def _answer(row: tuple[Any, ...]) -> Answer:
    signature, rater, item_id, presented, value, seconds, at, revision = row
    return Answer(signature, rater, item_id, tuple(json.loads(presented)), json.loads(value), float(seconds), at, int(revision))
