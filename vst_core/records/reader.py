"""Reading a scores JSONL line back: :func:`read_record` validates it and turns whatever is wrong
into reported problems (a metric record that does not fit is an error of that metric only)."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from vst_core.contract import registry
from vst_core.problems import Problem
from vst_core.records.codec import RecordError, _value, decode
from vst_core.records.story import SCORES_FORMAT, MetricScores, StoryScores

#: Top-level fields every record of this format has; older ones are completed and reported.
EXPECTED_FIELDS = ("format", "sequence_id", "system", "images", "metrics", "errors", "warnings", "signature")


def read_record(data: Any, *, line: int | None = None) -> tuple[StoryScores | None, list[Problem]]:
    """Validate one scores-JSONL object. A record without id or sentences is None with an error;
    a metric record that does not fit its type becomes an error entry of that metric; fields an
    older version did not write take defaults with a warning."""
    if not isinstance(data, Mapping) or data.get("story_id") in (None, ""):
        return None, [Problem("scores line without story_id; skipped", "line", line=line)]
    sid = str(data["story_id"])

    def problem(message: str, severity: typing.Literal["error", "warning"] = "error") -> Problem:
        return Problem(message, "line", severity, line=line, story_id=sid)

    if not isinstance(data.get("sentences"), list):
        return None, [problem("scores record without sentences; skipped")]
    try:
        sentences = _value(tuple[str, ...], data.get("sentences"), "sentences")
        images = _value(tuple[str, ...], data.get("images", []), "images")
    except RecordError as exc:
        return None, [problem(f"unusable scores record ({exc}); skipped")]
    problems: list[Problem] = []
    missing = [k for k in EXPECTED_FIELDS if k not in data]
    if missing or data.get("format") != SCORES_FORMAT:
        problems.append(
            problem(
                f"record from another version (format {data.get('format', 'none')}; missing {', '.join(missing) or 'nothing'})",
                "warning",
            )
        )
    errors = {str(k): str(v) for k, v in _mapping(data.get("errors")).items()}
    metrics: dict[str, MetricScores] = {}
    for name, value in _mapping(data.get("metrics")).items():
        if isinstance(value, Mapping):
            name = registry().renamed(str(name), value)  # an earlier version's record, of the metric now named so
        kind = registry().types.get(str(name))
        if kind is None:
            problems.append(problem(f"unknown metric {str(name)!r} ignored", "warning"))
            continue
        try:
            metrics[str(name)] = decode(kind, value, f"metrics.{name}")
        except RecordError as exc:
            errors[str(name)] = f"unreadable record: {exc}"
            problems.append(problem(f"unreadable {name} record ({exc})"))
    signature = data.get("signature")
    record = StoryScores(
        story_id=sid,
        sequence_id=str(data.get("sequence_id") or sid),
        system=str(data.get("system") or "unknown"),
        sentences=sentences,
        images=images,
        metrics=metrics,
        errors=errors,
        warnings=tuple(str(w) for w in _list(data.get("warnings"))),
        signature=signature if isinstance(signature, Mapping) else {},
        problems=tuple(str(p) for p in _list(data.get("problems"))),
        format=SCORES_FORMAT,
        frames=_frames(data.get("frames"), len(sentences), problems, problem),
        characters=_characters(data.get("characters"), problems, problem),
    )
    return record, problems


def characters_of(value: Any) -> tuple[tuple[str, str], ...]:
    """``characters``: names, or [name, crop file] pairs (VWP's named characters)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("'characters' must be a list of names or [name, crop] pairs")
    out = []
    for item in value:
        if isinstance(item, str):
            out.append((item, ""))
        elif isinstance(item, list) and 1 <= len(item) <= 2 and all(isinstance(v, str) for v in item):
            out.append((item[0], item[1] if len(item) == 2 else ""))
        else:
            raise ValueError("'characters' must be a list of names or [name, crop] pairs")
    return tuple(out)


def _characters(value: Any, problems: list[Any], problem: Any) -> tuple[tuple[str, str], ...]:
    """A record's ``characters`` (names, or [name, crop] pairs), or none with a problem."""
    if value is None:
        return ()
    try:
        return characters_of(value)
    except ValueError as exc:
        problems.append(problem(f"unreadable 'characters' ignored: {exc}", "warning"))
        return ()


def _frames(value: Any, sentences: int, problems: list[Any], problem: Any) -> tuple[int, ...]:
    """A record's ``frames`` (one non-negative, non-decreasing integer per sentence), or none with a problem."""
    if value is None:
        return ()
    ok = (
        isinstance(value, list)
        and len(value) == sentences
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        and all(a <= b for a, b in zip(value, value[1:], strict=False))
    )
    if not ok:
        problems.append(problem("unreadable 'frames' (one image index per sentence, non-decreasing) ignored", "warning"))
        return ()
    return tuple(value)


def _mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
