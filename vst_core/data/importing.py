"""Scores computed elsewhere, as records: the released files of the dHM authors (``*_G.json``:
``{story_id: GROOVIST before tanh}``; ``*_C.csv`` / ``*_R.csv``: ``story_id,<X>_score``) and a
generic long CSV (``story_id,metric,value[,system][,sequence_id]``, metric ``grounding``/``G``,
``coherence``/``C`` or ``redundancy``/``R``). An imported record holds the score only (no evidence),
says so in a note, and is signed with the source file's digest and the metric's variant as the user
declares it, so imported and computed scores never share a signature.

A story's sequence id comes from the long CSV's ``sequence_id`` column, or is its story id: declared
(``sequence_from="story_id"``, recorded in the signature: the ids are sequence ids, as in the dHM
release) or standing in for an unknown one (no column, nothing declared)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vst_core.contract import registry
from vst_core.data.tables import Progress, TableBudget, check_bytes, counted_rows, open_text_budgeted
from vst_core.hashing import file_digest, json_digest
from vst_core.problems import Problem
from vst_core.records import MetricScores, StoryScores, record_problem


class ImportError_(ValueError):
    """A file that cannot be imported as a whole (unknown layout, unknown metric)."""


def metric_of(path: Path, declared: str | None) -> str:
    """The metric a released file holds: declared, else its ``_G``/``_C``/``_R`` suffix."""
    if declared:
        spec = registry().named(declared)
        if spec is None or spec.reading.from_score is None:
            known = ", ".join(s.name for s in registry().specs.values() if s.reading.from_score is not None)
            raise ImportError_(f"unknown metric {declared!r}; use {known}")
        return spec.name
    suffix = path.stem.rsplit("_", 1)[-1].lower()
    spec = registry().named(suffix) if len(suffix) == 1 else None
    if spec is not None and spec.reading.from_score is not None:
        return spec.name
    raise ImportError_(f"{path.name}: cannot tell the metric from the name (no _G/_C/_R suffix); pass --metric")


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def read_released(
    path: Path, metric: str, *, budget: TableBudget | None = None, progress: Progress | None = None
) -> tuple[dict[str, float], list[Problem]]:
    """story_id -> value of one released file; empty or non-finite values are reported and left out.
    A CSV is read row by row within ``budget`` (:meth:`TableBudget.from_env` when None: its bytes and
    rows, TableBudgetError past them), ``progress(bytes, "B")`` advanced as it is read; a JSON file
    within its bytes."""
    problems: list[Problem] = []
    values: dict[str, float] = {}
    if path.suffix.lower() == ".json":
        check_bytes(path, budget)
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        if not isinstance(data, dict):
            raise ImportError_(f"{path.name}: expected {{story_id: value}}")
        items = [(str(k), v) for k, v in data.items()]
    else:
        with open_text_budgeted(path, budget, progress=progress) as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None or len(header) < 2:
                raise ImportError_(f"{path.name}: expected a CSV story_id,<score>")
            items = [
                (r[0].strip(), r[1].strip() if len(r) > 1 else "") for r in counted_rows(reader, budget, name=path.name) if r
            ]
    for sid, raw in items:
        number = _number(raw)
        if number is None:
            problems.append(Problem(f"{path.name}: no usable {metric} value ({raw!r}); left out", "line", story_id=sid))
        else:
            values[sid] = number
    return values, problems


Key = tuple[str, str]


@dataclass(frozen=True)
class LongFile:
    """A long CSV read: values by ``(system, story_id)`` (system ``""`` where the file names none),
    the sequence ids its ``sequence_id`` column gives (None: no such column), the problems found."""

    values: dict[Key, dict[str, float]]
    sequences: dict[Key, str] | None
    problems: list[Problem]


def read_long(path: Path, *, budget: TableBudget | None = None) -> tuple[dict[Key, dict[str, float]], list[Problem]]:
    """(system, story_id) -> {metric: value} of a long CSV (see :func:`read_long_file`)."""
    found = read_long_file(path, budget=budget)
    return found.values, found.problems


def read_long_file(path: Path, *, budget: TableBudget | None = None, progress: Progress | None = None) -> LongFile:
    """A long CSV ``story_id,metric,value[,system][,sequence_id]``: unusable rows, and a story given
    two sequence ids (the first is kept), are problems. Read row by row within ``budget``
    (:meth:`TableBudget.from_env` when None: its bytes and rows, TableBudgetError past them);
    ``progress(bytes, "B")`` is advanced as it is read."""
    with open_text_budgeted(path, budget, progress=progress) as fh:
        return _long_rows(path, csv.DictReader(fh), budget)


def _long_rows(path: Path, reader: csv.DictReader[str], budget: TableBudget | None) -> LongFile:
    problems: list[Problem] = []
    fields = set(reader.fieldnames or [])
    if not {"story_id", "metric", "value"} <= fields:
        raise ImportError_(f"{path.name}: a long CSV needs columns story_id, metric, value (and optionally system, sequence_id)")
    out: dict[Key, dict[str, float]] = {}
    sequences: dict[Key, str] | None = {} if "sequence_id" in fields else None
    for row in counted_rows(reader, budget, name=path.name):
        spec = registry().named(row.get("metric") or "")
        metric = spec.name if spec is not None and spec.reading.from_score is not None else None
        number = _number(row.get("value"))
        if metric is None or number is None:
            problems.append(
                Problem(
                    f"{path.name}: unusable row ({row.get('metric')!r}, {row.get('value')!r}); left out",
                    "line",
                    line=reader.line_num,
                )
            )
            continue
        key = ((row.get("system") or "").strip(), (row.get("story_id") or "").strip())
        out.setdefault(key, {})[metric] = number
        sequence = (row.get("sequence_id") or "").strip()
        if sequences is not None and sequence:
            known = sequences.setdefault(key, sequence)
            if known != sequence:
                problems.append(
                    Problem(
                        f"{path.name}: {key[1]} has sequence_id {known!r} and {sequence!r}; {known!r} is used",
                        "line",
                        line=reader.line_num,
                        story_id=key[1],
                    )
                )
    return LongFile(out, sequences, problems)


def metric_record(metric: str, value: float, note: str) -> MetricScores:
    """A record holding only an imported score (its module's ``from_score``; GROOVIST: the unbounded
    value, tanh as its score)."""
    spec = registry().spec(metric)
    if spec.reading.from_score is None:
        raise ImportError_(f"{metric} scores cannot be imported")
    record = spec.reading.from_score(value, note)
    problem = (
        f"gave a {type(record).__name__}, not a {spec.record.__name__}"
        if not isinstance(record, spec.record)
        else record_problem(spec.record, record)
    )
    if problem:
        raise ImportError_(f"{metric}: its from_score {problem}")
    outside = next((why for f in spec.fields if (why := f.outside(record)) is not None), None)
    if outside:
        raise ImportError_(f"{metric}: {outside}")
    found: MetricScores = record
    return found


def imported_records(
    values: Mapping[Key, Mapping[str, float]],
    source: Path,
    variants: Mapping[str, str],
    *,
    sequences: Mapping[Key, str] | None = None,
    sequence_from: str = "file",
) -> list[StoryScores]:
    """Records of imported values, signed with the file's digest and each metric's declared variant.
    Sequence ids: ``sequence_from="story_id"`` declares each story id a sequence id; else
    ``sequences`` (a long CSV's column) where it has the story, else the story id stands in. The
    signature says which (``"sequence_id"``: ``"story_id"`` or ``"column"``; absent: stand-in)."""
    digest = file_digest(source)
    imported: dict[str, Any] = {"file": source.name, "sha256": digest, "variants": dict(variants)}
    if sequence_from == "story_id":
        imported["sequence_id"] = "story_id"
        sequences = None
    elif sequences is not None:
        imported["sequence_id"] = "column"
    payload = {"imported": imported}
    signature = {"id": json_digest(payload, 12), **payload}
    note = f"imported from {source.name} (sha256 {digest[:12]}): the score only, no evidence"

    def record(system: str, sid: str, metric: str, value: float) -> MetricScores:
        try:
            return metric_record(metric, value, note)
        except ImportError_ as exc:  # a value its metric cannot hold (outside its range): say which story
            raise ImportError_(f"{source.name}: story {sid!r} of {system or 'unknown'!r}: {exc}") from None

    return [
        StoryScores(
            story_id=sid,
            sequence_id=(sequences or {}).get((system, sid)) or sid,
            system=system,
            sentences=(),
            metrics={m: record(system, sid, m, v) for m, v in metrics.items()},
            signature=signature,
        )
        for (system, sid), metrics in values.items()
    ]
