"""The scores JSONL on disk: reading its lines (the JSON boundary) and appending records."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields, is_dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import IO, Any

from vst_core.data.access import FileIdentity, PathNotAllowed, open_confined
from vst_core.data.merge import is_imported
from vst_core.data.readers import MAX_LINE_BYTES, load_json, story_from_record, story_object
from vst_core.data.sizes import size_text
from vst_core.data.types import Problem, Story
from vst_core.hashing import json_digest, json_line
from vst_core.records import StoryScores, read_record

logger = logging.getLogger(__name__)

#: Most bytes of scores files the dashboard reads in one load (its files together): 1 GiB. The
#: authors' released VIST test scores (10,110 stories, two files) are 58 MB and a generated file of
#: 100,000 stories with every metric's evidence 564 MB (benchmarks/bench_scale.py), so both load;
#: a runaway file is refused with a message before anything is read instead of stalling a shared
#: server for minutes. ``VST_MAX_SCORES_BYTES`` (bytes, or a number with K, M or G: 2G) sets
#: another limit; 0 turns it off.
MAX_SCORES_BYTES = 1 << 30
LIMIT_ENV = "VST_MAX_SCORES_BYTES"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _score_line(raw: bytes, number: int) -> tuple[dict[str, Any] | None, Problem | None]:
    """One line of a scores JSONL as a record, or the problem that keeps it out (a BOM on line 1 is
    dropped; the readers' limits on line length, nesting and number size apply)."""
    if len(raw) > MAX_LINE_BYTES:
        return None, Problem(f"scores line longer than {MAX_LINE_BYTES} bytes; skipped", "line", line=number)
    try:
        text = raw.decode("utf-8")
        record = load_json(text.removeprefix("\ufeff") if number == 1 else text)
    except (UnicodeDecodeError, ValueError) as exc:
        return None, Problem(f"unreadable scores line ({exc}); skipped", "line", line=number)
    if not isinstance(record, dict) or "story_id" not in record:
        return None, Problem("scores line without story_id; skipped", "line", line=number)
    return record, None


def max_scores_bytes(value: str | None = None) -> int:
    """The limit on scores bytes per load: ``value`` (default: ``$VST_MAX_SCORES_BYTES``) as bytes,
    or a number with K, M, G or T (binary units); 0 means no limit. Unset or unreadable (logged):
    :data:`MAX_SCORES_BYTES`."""
    text = (os.environ.get(LIMIT_ENV, "") if value is None else value).strip().upper().removesuffix("B").removesuffix("I")
    if not text:
        return MAX_SCORES_BYTES
    number, unit = (text[:-1], text[-1]) if text[-1] in _UNITS else (text, "")
    try:
        limit = int(float(number) * _UNITS[unit])
        if limit < 0:
            raise ValueError(text)
        return limit
    except (ValueError, OverflowError):
        logger.warning(
            "%s=%r is not a size (e.g. 2G or 500000000); the default %d bytes is used", LIMIT_ENV, text, MAX_SCORES_BYTES
        )
        return MAX_SCORES_BYTES


def too_large(total: int, limit: int, files: int) -> str:
    """The message for scores files over the limit: both sizes, the setting and the two fixes."""
    these = "this scores file is" if files == 1 else f"these {files} scores files are"
    return (
        f"{these} {size_text(total)}, over the dashboard's limit of {size_text(limit)} per load ({LIMIT_ENV}); "
        f"split the file (e.g. one file per system) and load fewer stories at a time, or ask whoever runs the "
        f"dashboard to raise {LIMIT_ENV} (bytes, or e.g. 2G; 0 turns the limit off)"
    )


def checked_scores(paths: Sequence[Path], roots: Sequence[Path], limit: int | None = None) -> list[FileIdentity]:
    """The identity of each scores file as :func:`~vst_core.data.access.open_confined` opened it
    (a regular file inside ``roots``, no link swapped in after the check), their sizes together,
    taken from the open descriptors before anything is read, within ``limit`` (default
    :func:`max_scores_bytes`; 0: none). PathNotAllowed, with a message for the page, otherwise."""
    found: list[FileIdentity] = []
    for path in paths:
        with open_confined(path, roots, what="scores file") as fh:
            found.append(FileIdentity.of(os.fstat(fh.fileno())))
    limit = max_scores_bytes() if limit is None else limit
    total = sum(f.size for f in found)
    if limit and total > limit:
        logger.warning("refused %d scores files of %d bytes together: over %s=%d", len(paths), total, LIMIT_ENV, limit)
        raise PathNotAllowed(too_large(total, limit, len(paths)))
    return found


@contextmanager
def _binary(source: str | Path | IO[bytes]) -> Iterator[IO[bytes]]:
    """``source`` opened for reading when it is a path; an open binary file as it is (not closed)."""
    if isinstance(source, (str, Path)):
        with Path(source).open("rb") as fh:
            yield fh
    else:
        yield source


def read_score_lines(source: str | Path | IO[bytes]) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """The JSON objects of a scores JSONL (a path, or a binary file open at its start, e.g. from
    :func:`~vst_core.data.access.open_confined`) with their line numbers (the JSON boundary): a
    malformed, truncated, too deep or too long line, or one without ``story_id``, is a problem, not
    an exception."""
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    with _binary(source) as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            record, problem = _score_line(raw, number)
            if record is not None:
                records.append((number, record))
            elif problem is not None:
                problems.append(problem)
    return records, problems


def read_scores(source: str | Path | IO[bytes]) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The JSON objects of a scores JSONL (a path or an open binary file), as written (see
    :func:`load_records` for typed records)."""
    lines, problems = read_score_lines(source)
    return [record for _, record in lines], problems


class ScoresWriter:
    """Append score records to a JSONL file, one line per story, flushed as written.

    Opening an existing file repairs its last line first: a complete record that lost only its
    newline gets it back (resume counts it as done), a half-written one is dropped, so appending
    never glues two records together and never loses a finished story.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                if _complete(data[cut:]):
                    with self.path.open("ab") as fh:
                        fh.write(b"\n")
                else:
                    with self.path.open("r+b") as fh:
                        fh.truncate(cut)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: StoryScores) -> None:
        self.write_line(record_line(record))

    def write_line(self, line: str) -> None:
        """Append one line :func:`record_line` made (a stored record's, served as it is)."""
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ScoresWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Per record type: its fields' JSON names, and a getter of their values in the same order.
_FIELD_GETTERS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the values of the attributes ``names`` of an object, as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return lambda value: ()


def _record_object(value: Any) -> Any:
    """The JSON encoder's hook for what it cannot write itself: a record (dataclass) as an object
    of its fields under their JSON names, a non-dict mapping as a dict with string keys, as
    :func:`vst_core.records.encode` gives them; the encoder then writes the values."""
    kind = type(value)
    found = _FIELD_GETTERS.get(kind)
    if found is None and is_dataclass(value) and not isinstance(value, type):
        names = [(f.metadata.get("json", f.name), f.name) for f in fields(value)]
        found = _FIELD_GETTERS[kind] = (tuple(key for key, _ in names), _getter(tuple(name for _, name in names)))
    if found is not None:
        keys, values = found
        return dict(zip(keys, values(value), strict=True))
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")


def record_line(record: StoryScores) -> str:
    """The scores JSONL line of ``record`` (no newline): the same text as
    ``json_line(record.to_json(), allow_nan=False)``, with the metric records written by the C JSON
    encoder through a hook instead of converted to dicts and lists first (about 0.7x the time).

    >>> record_line(StoryScores("s1", "q1", "sys", ("A dog.",)))[:40]
    '{"format": 1, "story_id": "s1", "sequenc'
    """
    out = replace(record, metrics={}).to_json()  # the layout is the record's own; metrics filled in place
    out["metrics"] = {str(name): metric for name, metric in record.metrics.items()}
    # records are trees of frozen values built bottom-up: no cycle to look for
    return json_line(out, allow_nan=False, default=_record_object, check_circular=False)


def _complete(tail: bytes) -> bool:
    """Whether a last line without its newline is a whole scores record."""
    return _score_line(tail, 2)[0] is not None


def settings_id(signature: Any) -> str:
    """The id of a record's signature without the inputs it names: two records with one settings id
    were made the same way (settings, weights, versions), whatever file their stories came from.
    For a signature that names no inputs this is its id; an imported record's is its own."""
    if not isinstance(signature, dict):
        return str(None)
    if "inputs" not in signature:
        return str(signature.get("id"))
    return json_digest({k: v for k, v in signature.items() if k not in ("id", "inputs")}, 12)


def scored_keys(out: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """(``(system, story_id)`` keys, settings ids — see :func:`settings_id`) of the records in a
    scores JSONL, read line by line so only the keys stay in memory; unreadable lines (a
    half-written last one) are ignored. A record without a system is ``"unknown"``'s, as read."""
    keys: set[tuple[str, str]] = set()
    signatures: set[str] = set()
    with Path(out).open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            record = _score_line(raw, number)[0] if raw.strip() else None
            if record is not None:
                system = record.get("system")
                keys.add((str(system) if system not in (None, "") else "unknown", str(record["story_id"])))
                signatures.add(settings_id(record.get("signature")))
    return keys, signatures


def scored_ids(out: Path) -> tuple[set[str], set[str]]:
    """(story ids, signature ids) of the records in a scores JSONL (every system's), read line by
    line; unreadable lines are ignored. Resume uses :func:`scored_keys`."""
    ids: set[str] = set()
    signatures: set[str] = set()
    with Path(out).open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            record = _score_line(raw, number)[0] if raw.strip() else None
            if record is not None:
                ids.add(str(record["story_id"]))
                signature = record.get("signature")
                signatures.add(str(signature.get("id") if isinstance(signature, dict) else None))
    return ids, signatures


def load_records(source: str | Path | IO[bytes]) -> tuple[list[StoryScores], list[Problem]]:
    """A scores JSONL (a path or an open binary file) as validated records: what cannot be read is
    a problem, never an exception (see :func:`vst_core.records.read_record`)."""
    raw, problems = read_score_lines(source)
    records: list[StoryScores] = []
    unnamed: list[int] = []
    for number, data in raw:
        record, found = read_record(data, line=number)
        problems.extend(found)
        if record is not None:
            records.append(record)
            if data.get("system") in (None, ""):
                unnamed.append(number)
    if unnamed:  # merged with any story of a system named "unknown": said, never silent
        problems.append(
            Problem(
                f"{len(unnamed)} record(s) name no system (the first on line {unnamed[0]}): read as system 'unknown'",
                "line",
                "warning",
                line=unnamed[0],
            )
        )
    return records, problems


def story_of_record(record: StoryScores, root: Path) -> Story:
    """The story behind a score record, its images checked under ``root``, so a scores file can be
    shown without any model (an imported score has no text, and needs none); ValueError when the
    story cannot be rebuilt."""
    story = story_from_record(story_object(record), root=root, check_images=True)
    if is_imported(record.signature):
        story = replace(story, problems=tuple(p for p in story.problems if p.kind != "empty"))
    return story
