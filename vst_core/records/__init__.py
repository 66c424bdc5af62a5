"""Typed scores records: the contract between scoring, the CLI, the dashboard and meta-evaluation.

A :class:`StoryScores` is one story's metadata, one typed record per metric it was scored with
(its story score and the evidence: phrases and regions, sentence pairs, repeated spans), per-metric
errors as data, warnings and the settings signature. On disk it is one JSON object per line of a
scores JSONL (``format`` 1, the layout of every earlier version); :meth:`StoryScores.to_json` writes
it, :func:`read_record` reads one back and turns whatever is wrong into reported problems.

Frozen stdlib dataclasses rather than pydantic: no new dependency, mypy checks every use of a
field, and validation is needed at one boundary only (JSON in), which :func:`decode` does from
the type hints with a path to the offending field. :data:`FIELDS` are the numbers a record
carries, declared by each metric's module and read by tables, cards, exports and meta-evaluation.

One module per job: ``types`` (the built-in record types), ``story`` (a scores line),
``codec`` (JSON in and out), ``fields`` (the numbers and their directions), ``reader``.
"""

from __future__ import annotations

from typing import Any

from vst_core.metric_spec import OTHER_DIRECTIONS, Direction, MetricField, registry
from vst_core.records.codec import RecordError, decode, encode, record_problem
from vst_core.records.fields import column_help, direction_of, field_by_column, fields_of
from vst_core.records.reader import EXPECTED_FIELDS, read_record
from vst_core.records.story import SCORES_FORMAT, StoryScores
from vst_core.records.types import (
    ClipScoreScores,
    GroundingScores,
    InterRepeat,
    IntraRepeat,
    MetricScores,
    NounMatch,
    NounRegion,
    PhraseMatch,
    RedundancyScores,
    RovistVGClipScores,
    RovistVGScores,
    Span,
)

__all__ = [
    "EXPECTED_FIELDS",
    "FIELDS",
    "FIELD_BY_COLUMN",
    "METRIC_TYPES",
    "OTHER_DIRECTIONS",
    "SCORES_FORMAT",
    "ClipScoreScores",
    "CoherencePair",
    "CoherenceScores",
    "CosmicScores",
    "CosmicSentence",
    "Direction",
    "GroundingScores",
    "InterRepeat",
    "IntraRepeat",
    "JudgeAspect",
    "JudgeScores",
    "MetricField",
    "MetricScores",
    "NounMatch",
    "NounRegion",
    "PhraseMatch",
    "Preference",
    "RecordError",
    "RedundancyScores",
    "RovistVGClipScores",
    "RovistVGScores",
    "Span",
    "StoryScores",
    "VrankScores",
    "column_help",
    "decode",
    "direction_of",
    "field_by_column",
    "encode",
    "fields_of",
    "read_record",
    "record_problem",
]

#: Metric name (as in settings and on disk) -> its record type: from the registry
#: (:func:`vst_core.metric_spec.registry`), built-in and installed metrics alike.
METRIC_TYPES: dict[str, type]
#: Every number of every metric's record, in registry order (each metric module declares its own).
FIELDS: tuple[MetricField, ...]
#: Table column -> its field.
FIELD_BY_COLUMN: dict[str, MetricField]


#: Record types that live in their metric's package, kept here under their former names
#: (``from vst_core.records import VrankScores``): name -> the module of its metric's package that defines it.
MOVED: dict[str, str] = {
    **dict.fromkeys(("VrankScores", "Preference"), "vst_core.metric_modules.vrank.record"),
    **dict.fromkeys(("CosmicScores", "CosmicSentence"), "vst_core.metric_modules.cosmic.record"),
    **dict.fromkeys(("JudgeScores", "JudgeAspect"), "vst_core.metric_modules.judge.record"),
    **dict.fromkeys(("CoherenceScores", "CoherencePair"), "vst_core.metric_modules.rovist_c.record"),
}


def __getattr__(name: str) -> Any:
    """The registry's views, read when asked (a metric installed later is seen after a reload), and
    the record types of :data:`MOVED` from their metric's package."""
    if name in MOVED:  # not through the registry: a metric module may import them while it is built
        import importlib

        return getattr(importlib.import_module(MOVED[name]), name)
    if name not in ("METRIC_TYPES", "FIELDS", "FIELD_BY_COLUMN"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    reg = registry()
    if name == "METRIC_TYPES":
        return reg.types
    if name == "FIELDS":
        return reg.fields
    return field_by_column()
