"""The scores JSONL on disk: reading its lines (the JSON boundary) and appending records."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from vst_core.data.merge import is_imported
from vst_core.data.readers import MAX_LINE_BYTES, load_json, story_from_record, story_object
from vst_core.data.types import Problem, Story
from vst_core.hashing import json_digest, json_line
from vst_core.records import StoryScores, read_record


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


def read_score_lines(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """The JSON objects of a scores JSONL with their line numbers (the JSON boundary): a malformed,
    truncated, too deep or too long line, or one without ``story_id``, is a problem, not an exception."""
    records: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    with Path(path).open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            record, problem = _score_line(raw, number)
            if record is not None:
                records.append((number, record))
            elif problem is not None:
                problems.append(problem)
    return records, problems


def read_scores(path: str | Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The JSON objects of a scores JSONL, as written (see :func:`load_records` for typed records)."""
    lines, problems = read_score_lines(path)
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
        self._fh.write(json_line(record.to_json(), allow_nan=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ScoresWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def load_records(path: str | Path) -> tuple[list[StoryScores], list[Problem]]:
    """A scores JSONL as validated records: what cannot be read is a problem, never an exception
    (see :func:`vst_core.records.read_record`)."""
    raw, problems = read_score_lines(path)
    records: list[StoryScores] = []
    for number, data in raw:
        record, found = read_record(data, line=number)
        problems.extend(found)
        if record is not None:
            records.append(record)
    return records, problems


def story_of_record(record: StoryScores, root: Path) -> Story:
    """The story behind a score record, its images checked under ``root``, so a scores file can be
    shown without any model (an imported score has no text, and needs none); ValueError when the
    story cannot be rebuilt."""
    story = story_from_record(story_object(record), root=root, check_images=True)
    if is_imported(record.signature):
        story = replace(story, problems=tuple(p for p in story.problems if p.kind != "empty"))
    return story
