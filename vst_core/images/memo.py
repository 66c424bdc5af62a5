"""What a rerun already knows about its inputs, kept in the cache folder (``inputs.sqlite``), so a
run whose vectors are all cached neither re-hashes the images nor re-parses the stories:

* an image's content digest, size and format, by (path, size, mtime_ns, ctime_ns, inode): any
  change to the file, a rewrite with its mtime restored included, changes the ctime and is missed;
* a story's noun phrases, by the digest of its sentences, the spaCy pipeline (name and version,
  spaCy's version) and the pronoun rule;
* the weights that built a model before (its signature, by the stamp of its file), so a rerun
  whose vectors are all cached need not build it to know it loads.

Read in bulk (one query per chunk); an unreadable file is set aside and a new one started, so the
memo can only ever cost the work it saves.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from vst_core.hashing import text_digest
from vst_core.stores import SqliteStore, rows_in, write_many
from vst_core.text.phrases import NounPhrase

FILE_NAME = "inputs.sqlite"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS images (path TEXT PRIMARY KEY, stamp TEXT, digest TEXT, width INTEGER, "
    "height INTEGER, format TEXT)",
    "CREATE TABLE IF NOT EXISTS phrases (key TEXT PRIMARY KEY, value BLOB)",
    "CREATE TABLE IF NOT EXISTS models (signature TEXT PRIMARY KEY, stamp TEXT)",
)
ImageFacts = tuple[str, tuple[int, int], str | None]  # digest, (width, height), format


def file_stamp(info: os.stat_result) -> str:
    """What identifies one version of a file: size, mtime, ctime and inode (and its device)."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_dev}"


class InputMemo:
    """Image facts and parsed noun phrases on disk (in memory when ``path`` is None)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._store = SqliteStore(self.path, _SCHEMA, probe="SELECT COUNT(*) FROM images")

    # ------------------------------------------------------------------ images

    def images(self, stamps: dict[str, str]) -> dict[str, ImageFacts]:
        """Facts of the paths whose stored stamp equals ``stamps[path]``."""
        paths = list(stamps)

        def query(db: sqlite3.Connection) -> dict[str, ImageFacts]:
            found: dict[str, ImageFacts] = {}
            select = "SELECT path, stamp, digest, width, height, format FROM images WHERE path IN ({marks})"
            for path, stamp, digest, width, height, fmt in rows_in(db, select, paths):
                if stamp == stamps[path] and isinstance(digest, str) and len(digest) == 64 and _size_ok(width, height):
                    found[path] = (digest, (int(width), int(height)), fmt if isinstance(fmt, str) else None)
            return found

        return self._store.run(query, default={})

    def put_images(self, facts: dict[str, tuple[str, ImageFacts]]) -> None:
        """Store ``{path: (stamp, facts)}``."""
        if facts:
            rows = [(p, s, d, w, h, f) for p, (s, (d, (w, h), f)) in facts.items()]
            self._store.run(
                lambda db: write_many(db, "INSERT OR REPLACE INTO images VALUES (?, ?, ?, ?, ?, ?)", rows), default=None
            )

    # ------------------------------------------------------------------ models

    def model_built(self, signature: str, stamp: str) -> bool:
        """Whether weights of this ``signature`` were built from the file of this ``stamp`` before."""
        found = self._store.run(
            lambda db: db.execute("SELECT stamp FROM models WHERE signature = ?", (signature,)).fetchone(), default=None
        )
        return found is not None and found[0] == stamp

    def put_model(self, signature: str, stamp: str) -> None:
        """Remember that the weights of ``signature`` built from the file of ``stamp``."""
        self._store.run(
            lambda db: write_many(db, "INSERT OR REPLACE INTO models VALUES (?, ?)", [(signature, stamp)]), default=None
        )

    # ------------------------------------------------------------------ noun phrases

    @staticmethod
    def phrase_key(sentences: Sequence[str], pipeline: str, whole_pronouns: bool) -> str:
        return text_digest("\x1f".join([pipeline, str(whole_pronouns), *sentences]))

    def phrases(self, keys: Iterable[str]) -> dict[str, list[NounPhrase]]:
        """The stored phrases of ``keys`` (an entry that does not decode is left out: parsed again)."""
        wanted = list(dict.fromkeys(keys))

        def query(db: sqlite3.Connection) -> dict[str, list[NounPhrase]]:
            found: dict[str, list[NounPhrase]] = {}
            for key, value in rows_in(db, "SELECT key, value FROM phrases WHERE key IN ({marks})", wanted):
                phrases = _phrases_of(value)
                if phrases is not None:
                    found[key] = phrases
            return found

        return self._store.run(query, default={})

    def phrases_known(self, keys: Iterable[str]) -> set[str]:
        """The keys of ``keys`` with stored phrases, their values not read (what is left to parse)."""
        wanted = list(dict.fromkeys(keys))

        def query(db: sqlite3.Connection) -> set[str]:
            return {k for (k,) in rows_in(db, "SELECT key FROM phrases WHERE key IN ({marks})", wanted)}

        return self._store.run(query, default=set())

    def put_phrases(self, items: dict[str, list[NounPhrase]]) -> None:
        if items:
            rows = [(k, orjson.dumps([_phrase_row(p) for p in v])) for k, v in items.items()]
            self._store.run(lambda db: write_many(db, "INSERT OR REPLACE INTO phrases VALUES (?, ?)", rows), default=None)


def _size_ok(width: object, height: object) -> bool:
    return type(width) is int and type(height) is int and 0 < width < 1 << 20 and 0 < height < 1 << 20


def _phrase_row(p: NounPhrase) -> list[object]:
    return [p.text, p.sentence, p.start, p.end, p.surface, p.root, list(p.words), list(p.lemmas)]


def _phrases_of(value: object) -> list[NounPhrase] | None:
    """Stored phrases back, or None for anything that is not what :func:`_phrase_row` wrote."""
    try:
        rows = orjson.loads(value)  # type: ignore[arg-type]
        out = []
        for text, sentence, start, end, surface, root, words, lemmas in rows:
            strings = (text, surface, root, *words, *lemmas)
            if not all(isinstance(s, str) for s in strings) or not all(type(n) is int for n in (sentence, start, end)):
                return None
            out.append(NounPhrase(text, sentence, start, end, surface, root, tuple(words), tuple(lemmas)))
        return out
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


def regular_stamp(path: Path) -> str | None:
    """:func:`file_stamp` of a regular file; None for anything else or a missing file."""
    try:
        info = path.stat()
    except OSError:
        return None
    return file_stamp(info) if stat.S_ISREG(info.st_mode) else None
