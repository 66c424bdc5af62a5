"""Finished records of earlier runs, kept in the cache folder (``records.sqlite``), so a rerun whose
stories were all scored before under the same settings reads their records back instead of
recomputing them (every image vector fetched, every story re-aggregated).

A record is stored under a key of everything it depends on:

* the run: :data:`RECORD_STORE_VERSION`, the scores format, the settings id of the run's signature
  (settings, each model's weights digest, preprocessing, text pipelines, library and metric
  package versions), the options of its metrics the signature leaves out that change what a record
  holds (RoViST-NR's ``spans``), and with image metrics the image budgets, the
  regions file's content and the idf fitted over the set;
* the story: its id, system, sequence id, sentences, image refs, groups, characters and the
  problems reading it found; with image metrics the content digest of each photo and crop it reads
  (from the inputs memo by the file's stamp, so a rerun re-hashes nothing and a changed photo
  changes the key); with a metric over a sequence (Vrank's pairs, COSMic's reference story) the
  same of every story of its sequence (of the whole set for an installed one).

A story whose photo the memo does not know by its current stamp has no key before it is scored;
once its chunk is done (the grounder hashed it) it gets one. Records with an error (a missing
photo, a model that failed on a batch) and stories refused by the length limits are never stored,
so a fixed cause is tried again and the limits of the run are applied. The signature (which names
the run's input file) is stamped again on every record served. Only a run whose models are the
ones its settings name is served (:meth:`Models.known_models`): a test's or a caller's own
model is not in the signature.

>>> store = RecordStore(None)
>>> store.put({"k": ('{"format": 1}', ())})
>>> store.lines(["k", "other"])
{'k': ('{"format": 1}', ())}
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import Story, StorySet
from vst_core.data.images import max_bytes, max_pixels
from vst_core.data.paths import resolve_images
from vst_core.data.scores_io import record_line, settings_id
from vst_core.hashing import file_digest, json_digest, text_digest
from vst_core.images.memo import InputMemo, file_stamp
from vst_core.images.options import image_settings
from vst_core.records import SCORES_FORMAT, StoryScores
from vst_core.stores import SqliteStore, rows_in, write_many

FILE_NAME = "records.sqlite"
#: Bumped whenever what a record holds, or how any metric computes it, changes without a change of
#: the package's version: every record stored before is then computed again.
RECORD_STORE_VERSION = 1

Key = tuple[str, str]
#: A stored record: its scores line (the signature a placeholder) and its warnings.
Row = tuple[str, tuple[str, ...]]

_SCHEMA = ("CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, line TEXT, warnings TEXT, checksum TEXT)",)
#: The signature a stored line holds in place of the run's, replaced when the line is served.
_PLACEHOLDER: Mapping[str, Any] = {"\x00": "signature of the run that writes this line"}


def _signature_text(signature: Mapping[str, Any]) -> str:
    """``signature`` as :func:`record_line` writes it inside a record (the same encoder, so a
    served line is byte for byte the line a recomputation writes)."""
    probe = StoryScores("", "", "", ())
    empty = record_line(replace(probe, signature={}))
    prefix = empty[: -len("{}}")]
    line = record_line(replace(probe, signature=signature))
    if not (empty.endswith('"signature": {}}') and line.startswith(prefix) and line.endswith("}")):
        raise ValueError("a record's signature is no longer its line's last field")
    return line[len(prefix) : -1]


PLACEHOLDER_TEXT = _signature_text(_PLACEHOLDER)


def stored_line(record: StoryScores) -> str | None:
    """The line to store for ``record`` (its signature the placeholder), or None when it cannot be
    stored: it has an error, or its line holds the placeholder's text elsewhere too.

    >>> stored_line(StoryScores("s1", "q1", "sys", ("A dog.",))).endswith('"signature": {"\\\\u0000": "signature of the run that writes this line"}}')
    True
    >>> stored_line(StoryScores("s1", "q1", "sys", ("A dog.",), errors={"grounding": "no image"})) is None
    True
    """
    if record.errors:
        return None
    try:
        line = record_line(replace(record, signature=_PLACEHOLDER))
    except (TypeError, ValueError):  # a value JSON cannot hold: computed on every run instead
        return None
    return line if line.count(PLACEHOLDER_TEXT) == 1 else None


def served_line(line: str, signature_text: str) -> str:
    """A stored line with the run's signature (:func:`signature_text`) in place of the placeholder."""
    return line.replace(PLACEHOLDER_TEXT, signature_text, 1)


def signature_text(signature: Mapping[str, Any]) -> str:
    """The run's signature as it stands in its records' lines."""
    return _signature_text(signature)


class RecordStore:
    """Stored scores lines by key, on disk (in memory when ``path`` is None); a row whose line does
    not match its checksum is left out (computed again)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._store = SqliteStore(self.path, _SCHEMA, probe="SELECT COUNT(*) FROM records")

    def present(self, keys: Iterable[str]) -> set[str]:
        """The keys of ``keys`` that have a stored record (their lines are not read)."""
        wanted = list(dict.fromkeys(keys))

        def query(db: sqlite3.Connection) -> set[str]:
            return {k for (k,) in rows_in(db, "SELECT key FROM records WHERE key IN ({marks})", wanted)}

        return self._store.run(query, default=set())

    def lines(self, keys: Iterable[str]) -> dict[str, Row]:
        """The stored rows of ``keys``, each checked against its checksum."""
        wanted = list(dict.fromkeys(keys))

        def query(db: sqlite3.Connection) -> dict[str, Row]:
            found: dict[str, Row] = {}
            select = "SELECT key, line, warnings, checksum FROM records WHERE key IN ({marks})"
            for key, line, warnings, checksum in rows_in(db, select, wanted):
                row = _row(line, warnings, checksum)
                if row is not None:
                    found[key] = row
            return found

        return self._store.run(query, default={})

    def put(self, rows: Mapping[str, Row]) -> None:
        """Store ``{key: (line, warnings)}`` (lines from :func:`stored_line`)."""
        if rows:
            values = [
                (key, line, orjson.dumps(list(warnings)).decode(), text_digest(line)) for key, (line, warnings) in rows.items()
            ]
            self._store.run(lambda db: write_many(db, "INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?)", values), default=None)


def _row(line: object, warnings: object, checksum: object) -> Row | None:
    """A stored row back, or None when it is not what :meth:`RecordStore.put` wrote."""
    if not isinstance(line, str) or not isinstance(warnings, str) or checksum != text_digest(line):
        return None
    try:
        found = orjson.loads(warnings)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(found, list) or not all(isinstance(w, str) for w in found):
        return None
    return line, tuple(found)


class RunKeys:
    """The store's key of each story of a run (:func:`run_key` and the story's own inputs).

    ``memo`` gives the photos' digests by their stamps; ``idf`` is the table fitted over the set
    (empty when the settings use none)."""

    def __init__(
        self,
        story_set: StorySet,
        settings: Settings,
        signature: Mapping[str, Any],
        *,
        memo: InputMemo | None,
        idf: Mapping[str, float] | None = None,
    ) -> None:
        reg = registry()
        metrics = set(settings.metrics)
        self.story_set = story_set
        self.images = bool(reg.with_need("images") & metrics)
        self.memo = memo
        self.refs_hooks = [
            spec.computing.image_refs
            for name, spec in reg.specs.items()
            if name in metrics and spec.computing.image_refs is not None
        ]
        together = [spec for name, spec in reg.specs.items() if name in metrics and spec.computing.together is not None]
        self.sequences = bool(together)
        self.whole_set = any(spec in reg.plugins for spec in together)  # an installed one may read any story
        self.run = run_key(settings, signature, images=self.images, idf=idf)
        self._base: Path | None = None

    def keys(self, stories: Sequence[Story]) -> dict[Key, str]:
        """The key of each story of ``stories`` whose inputs are all known now (a photo the memo
        does not know by its stamp, or that cannot be resolved, leaves the story out)."""
        groups = self._groups(stories) if self.sequences else {}
        needed = {s.key: s for s in stories}
        for group in groups.values():
            needed.update((s.key, s) for s in group)
        digests = self._digests(list(needed.values()))
        out: dict[Key, str] = {}
        for story in stories:
            own = digests.get(story.key)
            if own is None:
                continue
            parts = [self.run, own]
            if self.sequences:
                members = [digests.get(s.key) for s in groups[_group_of(story, self.whole_set)]]
                if any(m is None for m in members):
                    continue
                parts.append(text_digest("\n".join(m for m in members if m is not None)))
            out[story.key] = text_digest("|".join(parts))
        return out

    def _groups(self, stories: Sequence[Story]) -> dict[str, list[Story]]:
        wanted = {_group_of(s, self.whole_set) for s in stories}
        groups: dict[str, list[Story]] = {}
        for story in self.story_set:
            group = _group_of(story, self.whole_set)
            if group in wanted:
                groups.setdefault(group, []).append(story)
        return groups

    def _digests(self, stories: Sequence[Story]) -> dict[Key, str]:
        """Each story's content digest (with its photos' digests), for the stories whose photos are known."""
        refs = {s.key: self._refs(s) for s in stories} if self.images else {}
        photos = self._photos({r for rs in refs.values() for r in rs})
        out: dict[Key, str] = {}
        for story in stories:
            own: list[Any] = [
                story.story_id,
                story.system,
                story.sequence_id,
                story.sentences,
                story.images,
                story.frames,
                story.characters,
                [[str(p), p.kind, p.severity] for p in story.problems],
            ]
            if self.images:
                found = [photos.get(r) for r in refs[story.key]]
                if any(d is None for d in found):
                    continue
                own.append(found)
            out[story.key] = text_digest(orjson.dumps(own))
        return out

    def _refs(self, story: Story) -> list[str]:
        refs = list(story.images)
        for hook in self.refs_hooks:
            refs.extend(hook(story))
        return refs

    def _photos(self, refs: set[str]) -> dict[str, str]:
        """The content digest of each ref the memo knows by its file's current stamp."""
        if self.memo is None or not refs:
            return {}
        root = self.story_set.root
        if self._base is None:
            self._base = root.resolve()
        stamps: dict[str, str] = {}
        paths: dict[str, str] = {}
        read: dict[str, os.stat_result] = {}  # what resolving read of each file that is not a link
        for ref, path in resolve_images(root, refs, base=self._base, stats=read).items():
            if path is None:
                continue
            try:
                info = read.get(path) or os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                stamps[path] = file_stamp(info)
                paths[ref] = path
        known = self.memo.images(stamps)
        return {ref: known[path][0] for ref, path in paths.items() if path in known}


def _group_of(story: Story, whole_set: bool) -> str:
    """The sequence a set metric compares ``story`` within (as :func:`vst_core.scoring.sets.sequences_of`)."""
    if whole_set:
        return ""
    return story.sequence_id or f"\0{story.system}\0{story.story_id}"


def run_key(settings: Settings, signature: Mapping[str, Any], *, images: bool, idf: Mapping[str, float] | None = None) -> str:
    """What every record of a run depends on, as one digest: besides the settings its signature
    names, the options of the run's metrics that it leaves out and that are not a model's file
    (:func:`unsigned_options`: whether RoViST-NR's records keep their spans).

    >>> a = run_key(Settings(metrics=("redundancy",)), {"id": "x", "settings": {}}, images=False)
    >>> a == run_key(Settings(metrics=("redundancy",), spans=False), {"id": "x", "settings": {}}, images=False)
    False
    """
    parts: dict[str, Any] = {
        "store": RECORD_STORE_VERSION,
        "format": SCORES_FORMAT,
        "settings": settings_id(dict(signature)),
        "unsigned": unsigned_options(settings),
    }
    if images:
        parts["image_budget"] = [max_pixels(), max_bytes()]
        parts["idf"] = json_digest(sorted(idf.items())) if idf else None
        image = image_settings(settings)
        regions = image.regions_file if image.regions == "csv" else None
        parts["regions_file"] = _file_content(regions) if regions else None
    return json_digest(parts)


def unsigned_options(settings: Settings) -> list[tuple[str, Any]]:
    """The options of the run's metrics set away from their defaults that its signature leaves out
    and that name no model's file or folder (the signature names those by digest): they change no
    number but may change what a record holds, so a stored record is read back only under the same.

    >>> unsigned_options(Settings(metrics=("redundancy",), spans=False))
    [('spans', False)]
    >>> unsigned_options(Settings(metrics=("coherence",), spans=False))  # not a metric of the run
    []
    """
    owners = registry().options
    return [
        (name, value)
        for name, value in settings.options
        if name in owners
        and getattr(owners[name][0], "name", None) in settings.metrics
        and not owners[name][1].signed
        and owners[name][1].kind not in ("file", "folder")
    ]


def _file_content(path: str) -> str:
    try:
        return file_digest(path)
    except OSError as exc:
        return f"unreadable: {type(exc).__name__}"


__all__ = [
    "FILE_NAME",
    "RECORD_STORE_VERSION",
    "RecordStore",
    "RunKeys",
    "run_key",
    "served_line",
    "signature_text",
    "stored_line",
]
