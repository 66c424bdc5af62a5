"""Scores computed elsewhere, as records: the released files of the dHM authors (``*_G.json``:
``{story_id: GROOVIST before tanh}``; ``*_C.csv`` / ``*_R.csv``: ``story_id,<X>_score``) and a
generic long CSV (``story_id,metric,value[,system]``, metric ``grounding``/``G``, ``coherence``/``C``
or ``redundancy``/``R``). An imported record holds the score only (no evidence), says so in a
note, and is signed with the source file's digest and the metric's variant as the user declares
it, so imported and computed scores never share a signature."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vst_core.hashing import file_digest, json_digest
from vst_core.problems import Problem
from vst_core.records import CoherenceScores, GroundingScores, MetricScores, RedundancyScores, StoryScores

METRIC_NAMES: dict[str, str] = {
    "g": "grounding",
    "grounding": "grounding",
    "groovist": "grounding",
    "c": "coherence",
    "coherence": "coherence",
    "rovist-c": "coherence",
    "r": "redundancy",
    "redundancy": "redundancy",
    "rovist-nr": "redundancy",
}


class ImportError_(ValueError):
    """A file that cannot be imported as a whole (unknown layout, unknown metric)."""


def metric_of(path: Path, declared: str | None) -> str:
    """The metric a released file holds: declared, else its ``_G``/``_C``/``_R`` suffix."""
    if declared:
        name = METRIC_NAMES.get(declared.lower())
        if name is None:
            raise ImportError_(f"unknown metric {declared!r}; use grounding, coherence or redundancy")
        return name
    suffix = path.stem.rsplit("_", 1)[-1].lower()
    if suffix in ("g", "c", "r"):
        return METRIC_NAMES[suffix]
    raise ImportError_(f"{path.name}: cannot tell the metric from the name (no _G/_C/_R suffix); pass --metric")


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def read_released(path: Path, metric: str) -> tuple[dict[str, float], list[Problem]]:
    """story_id -> value of one released file; empty or non-finite values are reported and left out."""
    problems: list[Problem] = []
    text = path.read_text(encoding="utf-8-sig")
    values: dict[str, float] = {}
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ImportError_(f"{path.name}: expected {{story_id: value}}")
        items = [(str(k), v) for k, v in data.items()]
    else:
        rows = list(csv.reader(io.StringIO(text)))
        if not rows or len(rows[0]) < 2:
            raise ImportError_(f"{path.name}: expected a CSV story_id,<score>")
        items = [(r[0].strip(), r[1].strip()) for r in rows[1:] if r]
    for sid, raw in items:
        number = _number(raw)
        if number is None:
            problems.append(Problem(f"{path.name}: no usable {metric} value ({raw!r}); left out", "line", story_id=sid))
        else:
            values[sid] = number
    return values, problems


def read_long(path: Path) -> tuple[dict[tuple[str, str], dict[str, float]], list[Problem]]:
    """(system, story_id) -> {metric: value} of a long CSV ``story_id,metric,value[,system]``."""
    problems: list[Problem] = []
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig")))
    if not {"story_id", "metric", "value"} <= set(reader.fieldnames or []):
        raise ImportError_(f"{path.name}: a long CSV needs columns story_id, metric, value (and optionally system)")
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in reader:
        metric = METRIC_NAMES.get((row.get("metric") or "").strip().lower())
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
    return out, problems


def metric_record(metric: str, value: float, note: str) -> MetricScores:
    """A record holding only an imported score (GROOVIST: the unbounded value, tanh as its score)."""
    if metric == "grounding":
        return GroundingScores(math.tanh(value), value, None, None, (), None, (), (note,))
    if metric == "coherence":
        return CoherenceScores(value, (), None, "imported", (note,))
    return RedundancyScores(value, None, None, "imported", 4, (note,))


def imported_records(
    values: Mapping[tuple[str, str], Mapping[str, float]], source: Path, variants: Mapping[str, str]
) -> list[StoryScores]:
    """Records of imported values, signed with the file's digest and each metric's declared variant."""
    digest = file_digest(source)
    payload = {"imported": {"file": source.name, "sha256": digest, "variants": dict(variants)}}
    signature = {"id": json_digest(payload, 12), **payload}
    note = f"imported from {source.name} (sha256 {digest[:12]}): the score only, no evidence"
    return [
        StoryScores(
            story_id=sid,
            sequence_id=sid,
            system=system,
            sentences=(),
            metrics={m: metric_record(m, v, note) for m, v in metrics.items()},
            signature=signature,
        )
        for (system, sid), metrics in values.items()
    ]
