"""On-disk cache of the judge's answers, keyed by everything that can change one.

Key: ``sha256(kind | template digest | model weights id | story content digest | aspect |
paraphrase | images)``; the value is a small JSON object (the rating tokens' log-probabilities, or
a generated rationale). A rerun with the same template, weights and stories makes no model call.
SQLite, as the embedding cache (:mod:`vst_core.images.embeddings`), in the product's cache folder.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vst_core.hashing import json_digest, text_digest
from vst_core.stores import SqliteStore, rows_in, write_many

#: The cache file's name in the product's cache folder.
FILE_NAME = "judge.sqlite"


@dataclass(frozen=True, slots=True)
class JudgeKey:
    """What one cached answer depends on."""

    kind: str  # "rating", "pair" or "rationale"
    template: str  # the template's sha256
    weights: str  # model name@weights digest
    story: str  # content digest of the story (or the two stories, in order)
    aspect: str
    paraphrase: int
    images: bool

    def digest(self) -> str:
        return json_digest([self.kind, self.template, self.weights, self.story, self.aspect, self.paraphrase, self.images])


#: How far the stored probabilities of the asked tokens may sum above 1 (float32 log-softmax).
MASS_TOLERANCE = 1e-3
#: The longest rationale kept from the cache.
MAX_RATIONALE = 100_000


def valid_answer(kind: str, value: Any, labels: int | None = None) -> bool:
    """Whether a stored answer is one the judge can have given.

    A rating or pairwise answer is the log-probabilities of its ``labels`` tokens (5 ratings, or 2):
    finite numbers (an impossible token is stored as -1e30), each a log-probability (<= 0), whose
    probabilities sum to at most 1 (they are a share of one distribution). A rationale is
    ``{"text": str}``. Anything else is dropped on read and asked again.

    >>> valid_answer("rating", [-0.1, -3.0, -5.0, -7.0, -9.0]), valid_answer("rating", [0, 0, 0, 0, 0])
    (True, False)
    """
    if kind == "rationale":
        return isinstance(value, dict) and isinstance(value.get("text"), str) and len(value["text"]) <= MAX_RATIONALE
    want = labels if labels is not None else (5 if kind == "rating" else 2)
    if not isinstance(value, list) or len(value) != want:
        return False
    if not all(type(v) in (int, float) and math.isfinite(v) and v <= 1e-6 for v in value):
        return False
    return sum(math.exp(v) for v in value) <= 1.0 + MASS_TOLERANCE


def _checksum(key: str, value: str) -> str:
    """What ties a stored answer to its key: a bit flipped in either, or an answer copied under
    another key, no longer matches."""
    return text_digest(f"{key}\x1f{value}")[:32]


class JudgeCache:
    """A SQLite file of JSON answers by key (in memory when ``path`` is None); counts hits and misses.
    Each entry is checked on read (its checksum, then :func:`valid_answer`): a bad one counts as a
    miss and is asked again; an unreadable file is set aside and a new one started (:mod:`vst_core.stores`)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._store = SqliteStore(
            self.path,
            ("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT, checksum TEXT)",),
            probe="SELECT COUNT(*) FROM answers",
        )
        self.hits = 0
        self.misses = 0
        self.dropped = 0  # entries read back that were not valid answers

    @property
    def set_aside(self) -> list[str]:
        """Why the cache file was set aside during this run (empty when it never was)."""
        return self._store.set_aside

    def damage_note(self) -> str:
        """What this run found wrong with the cache, for the user ('' when nothing)."""
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} stored answer(s) were not valid and were asked again")
        if self.set_aside:
            parts.append(f"the cache file could not be read ({self.set_aside[0]}) and was set aside as {self.path}.damaged")
        return f"judge cache: {'; '.join(parts)}" if parts else ""

    def get_many(self, keys: Sequence[str], kind: str | None = None, labels: int | None = None) -> dict[str, Any]:
        """The valid stored answers of ``keys`` (checked as ``kind`` answers when given)."""

        def query(db: Any) -> dict[str, Any]:
            found: dict[str, Any] = {}
            for key, value, checksum in rows_in(
                db, "SELECT key, value, checksum FROM answers WHERE key IN ({marks})", list(keys)
            ):
                answer = None
                if isinstance(value, str) and checksum == _checksum(key, value):
                    try:
                        answer = json.loads(value)
                    except (ValueError, RecursionError):
                        pass
                if answer is not None and (kind is None or valid_answer(kind, answer, labels)):
                    found[key] = answer
                else:
                    self.dropped += 1
            return found

        found: dict[str, Any] = self._store.run(query, default=dict[str, Any]())
        self.hits += len(set(found))
        self.misses += len(set(keys) - set(found))
        return found

    def put_many(self, items: dict[str, Any]) -> None:
        rows = [(k, text, _checksum(k, text)) for k, text in ((k, json.dumps(v, allow_nan=False)) for k, v in items.items())]
        self._store.run(lambda db: write_many(db, "INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", rows), default=None)

    def size(self) -> int:
        return int(self._store.run(lambda db: db.execute("SELECT COUNT(*) FROM answers").fetchone()[0], default=0))

    def clear(self) -> None:
        def clear(db: Any) -> None:
            db.execute("DELETE FROM answers")
            db.commit()

        self._store.run(clear, default=None)
