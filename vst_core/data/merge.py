"""Identity: a story is ``(system, story_id)``. Records of one story from several lines or files
(a computed NR file, the authors' imported G and C) become one record, metric by metric.

Which value is used when two sources give one metric: a computed record (one with evidence) wins
over an imported one (the score only); between two of the same kind the first source wins. Two
values that differ by more than :data:`TOLERANCE` are a :class:`Conflict`, reported with both
sources and the one used, never resolved silently; the value named as used is the one kept after
every source is read (three files: a later computed value replaces an imported one named earlier).

>>> NR = registry().spec("redundancy").record  # RoViST-NR's record type
>>> a = StoryScores("1", "1", "human", ("A cat.",), metrics={"redundancy": NR(0.9, 0.1, 0.1, "paper", 4)})
>>> b = StoryScores("1", "1", "llava", ("A dog.",), metrics={"redundancy": NR(0.8, 0.2, 0.2, "paper", 4)})
>>> merged, conflicts = merge_records([(a, "x.jsonl"), (b, "x.jsonl")])
>>> [(r.system, r.metrics["redundancy"].score) for r in merged], conflicts
([('human', 0.9), ('llava', 0.8)], [])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from vst_core.contract import registry
from vst_core.hashing import json_digest
from vst_core.records import MetricScores, StoryScores

#: Two values of one metric closer than this are the same value (JSON round trips, float32 sums).
TOLERANCE = 1e-9


def main_attr(metric: str) -> str:
    """The number of a metric record compared between sources: its module's ``main_value``
    (GROOVIST: before tanh, as released; ``score`` for a metric this installation does not know)."""
    spec = registry().specs.get(metric)
    return spec.reading.main_value if spec is not None else "score"


StoryKey = tuple[str, str]


def story_key(system: str, story_id: str) -> StoryKey:
    """The identity of a story: ``(system, story_id)``."""
    return (system, story_id)


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two sources give one story's metric different values; ``used`` is the one kept."""

    system: str
    story_id: str
    metric: str
    used: float | None
    used_source: str
    other: float | None
    other_source: str

    def __str__(self) -> str:
        def fmt(v: float | None) -> str:
            return "none" if v is None else f"{v:.6g}"

        return (
            f"{self.system} / {self.story_id}: {self.metric} is {fmt(self.used)} in {self.used_source} "
            f"and {fmt(self.other)} in {self.other_source}; {self.used_source} is used"
        )


def is_imported(signature: Mapping[str, Any]) -> bool:
    """Whether a record's signature marks it as imported (a score without its evidence)."""
    merged = signature.get("merged")
    parts = merged if isinstance(merged, list | tuple) else ()
    return "imported" in signature or any("imported" in s for s in parts if isinstance(s, Mapping))


def main_value(metric: str, record: MetricScores | None) -> float | None:
    """The number of ``record`` that :func:`merge_records` compares (see :func:`main_attr`)."""
    if record is None:
        return None
    value = getattr(record, main_attr(metric), None)
    return None if value is None else float(value)


def prefer(new_imported: bool, old_imported: bool) -> bool:
    """Whether a later source replaces an earlier one for a metric: only computed over imported."""
    return old_imported and not new_imported


def differ(a: float | None, b: float | None) -> bool:
    """Whether two values of one metric disagree (one undefined and the other not counts)."""
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(a - b) > TOLERANCE


def merged_signature(signatures: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One signature for a record made of several sources: the single one when they agree, else
    ``{"id": digest of the ids, "merged": [each source's signature]}``."""
    unique: dict[str, Mapping[str, Any]] = {}
    for sig in signatures:
        unique.setdefault(str(sig.get("id")), sig)
    if len(unique) == 1:
        return dict(next(iter(unique.values())))
    ids = sorted(unique)
    return {"id": json_digest({"merged": ids}, 12), "merged": [dict(unique[i]) for i in ids]}


def conflicts_of(system: str, story_id: str, sources: Mapping[str, tuple[int, list[tuple[float | None, str]]]]) -> list[Conflict]:
    """The conflicts of one story once every source is read: per metric (``(k, values)``: the k-th
    of ``(main value, source)`` is the one finally used), each other source whose value differs from
    the one used, named beside it (so a message never names as used a value a later source replaced)."""
    out: list[Conflict] = []
    for metric, (used_at, values) in sources.items():
        used, used_source = values[used_at]
        for k, (other, other_source) in enumerate(values):
            if k != used_at and differ(used, other):
                out.append(Conflict(system, story_id, metric, used, used_source, other, other_source))
    return out


def merge_records(sources: Iterable[tuple[StoryScores, str]]) -> tuple[list[StoryScores], list[Conflict]]:
    """One record per ``(system, story_id)`` from ``(record, source name)`` pairs, in first-seen
    order. Per metric, see the module's rule; sentences, images and a sequence id that is not the
    story id come from the first source that has them; errors of a metric some source scored are
    dropped, other errors, warnings and problems are kept once."""
    order: list[StoryKey] = []
    parts: dict[StoryKey, list[tuple[StoryScores, str]]] = {}
    for record, name in sources:
        key = story_key(record.system, record.story_id)
        if key not in parts:
            order.append(key)
            parts[key] = []
        parts[key].append((record, name))
    merged: list[StoryScores] = []
    conflicts: list[Conflict] = []
    for key in order:
        record, found = merge_story(parts[key])
        merged.append(record)
        conflicts.extend(found)
    return merged, conflicts


def merge_story(parts: list[tuple[StoryScores, str]]) -> tuple[StoryScores, list[Conflict]]:
    """The records of one story (same system and id) as one record, with the conflicts found."""
    first = parts[0][0]
    if len(parts) == 1 and not any(metric in first.metrics for metric in first.errors):
        return first, []
    metrics: dict[str, MetricScores] = {}
    origin: dict[str, tuple[int, bool]] = {}  # metric -> (which of seen[metric] is used, imported)
    seen: dict[str, list[tuple[float | None, str]]] = {}  # metric -> (main value, source) of every source
    for record, name in parts:
        imported = is_imported(record.signature)
        for metric, value in record.metrics.items():
            given = seen.setdefault(metric, [])
            given.append((main_value(metric, value), name))
            if metric not in metrics or prefer(imported, origin[metric][1]):
                metrics[metric], origin[metric] = value, (len(given) - 1, imported)
    conflicts = conflicts_of(first.system, first.story_id, {m: (origin[m][0], seen[m]) for m in metrics})
    records = [r for r, _ in parts]
    errors: dict[str, str] = {}
    for r in records:
        for metric, message in r.errors.items():
            if metric not in metrics:
                errors.setdefault(metric, message)
    sequence = next((r.sequence_id for r in records if r.sequence_id and r.sequence_id != r.story_id), first.sequence_id)
    record = replace(
        first,
        sequence_id=sequence,
        sentences=next((r.sentences for r in records if r.sentences), ()),
        images=next((r.images for r in records if r.images), ()),
        metrics=metrics,
        errors=errors,
        warnings=tuple(dict.fromkeys(w for r in records for w in r.warnings)),
        problems=tuple(dict.fromkeys(p for r in records for p in r.problems)),
        signature=merged_signature(r.signature for r in records),
    )
    return record, conflicts
