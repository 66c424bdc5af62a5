"""Typed scores records: the contract between scoring, the CLI, the dashboard and meta-evaluation.

A :class:`StoryScores` is one story's metadata, one typed record per metric it was scored with
(its story score and the evidence: phrases and regions, sentence pairs, repeated spans), per-metric
errors as data, warnings and the settings signature. On disk it is one JSON object per line of a
scores JSONL (``format`` 1, the layout of every earlier version); :meth:`StoryScores.to_json` writes
it, :func:`read_record` reads one back and turns whatever is wrong into reported problems.

Frozen stdlib dataclasses rather than pydantic: no new dependency, mypy checks every use of a
field, and validation is needed at one boundary only (JSON in), which :func:`decode` does from
the type hints with a path to the offending field. :func:`fields_of` are the numbers a
record carries, declared by each metric's module and read by tables, cards, exports and meta-evaluation.
Each metric's record type lives with its metric (:mod:`vst_core.metrics`: GROOVIST's in
``groovist/record.py``); the reader finds it by the metric's name in the registry.

One module per job: ``story`` (a scores line), ``codec`` (JSON in and out), ``fields`` (the numbers
and their directions: ``fields_of``, ``field_by_column``, ``direction_of``, from the registry),
``reader``.
"""

from __future__ import annotations

from vst_core.contract import OTHER_DIRECTIONS, Direction, MetricField
from vst_core.records.codec import RecordError, decode, encode, record_problem
from vst_core.records.fields import column_help, direction_of, field_by_column, fields_of
from vst_core.records.reader import EXPECTED_FIELDS, read_record
from vst_core.records.story import SCORES_FORMAT, MetricScores, StoryScores

__all__ = [
    "EXPECTED_FIELDS",
    "OTHER_DIRECTIONS",
    "SCORES_FORMAT",
    "Direction",
    "MetricField",
    "MetricScores",
    "RecordError",
    "StoryScores",
    "column_help",
    "decode",
    "direction_of",
    "field_by_column",
    "encode",
    "fields_of",
    "read_record",
    "record_problem",
]
