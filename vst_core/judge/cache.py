"""On-disk cache of the judge's answers, keyed by everything that can change one.

Key: ``sha256(kind | template digest | model weights id | story content digest | aspect |
paraphrase | images)``; the value is a small JSON object (the rating tokens' log-probabilities, or
a generated rationale). A rerun with the same template, weights and stories makes no model call.
SQLite, as the embedding cache (:mod:`vst_core.grounding.embeddings`), in the product's cache folder.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vst_core.hashing import json_digest

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


class JudgeCache:
    """A SQLite file of JSON answers by key (in memory when ``path`` is None); counts hits and misses."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path) if self.path else ":memory:", check_same_thread=False, timeout=120)
        self._db.execute("CREATE TABLE IF NOT EXISTS judge (key TEXT PRIMARY KEY, value TEXT)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, value in self._db.execute(f"SELECT key, value FROM judge WHERE key IN ({marks})", chunk):
                    found[key] = json.loads(value)
        self.hits += len(set(found))
        self.misses += len(set(keys) - set(found))
        return found

    def put_many(self, items: dict[str, Any]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO judge VALUES (?, ?)", [(k, json.dumps(v)) for k, v in items.items()])
            self._db.commit()

    def size(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM judge").fetchone()
        return int(count)

    def clear(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM judge")
            self._db.commit()
