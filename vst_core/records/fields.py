"""The numbers records carry, from the registry (:func:`vst_core.contract.registry`): which
way is better for each and what it means, for tables, tooltips and every comparison."""

from __future__ import annotations

import typing

from vst_core.contract import OTHER_DIRECTIONS, Direction, MetricField, registry


def field_by_column() -> dict[str, MetricField]:
    """Table column -> its field, from the registry."""
    return {f.column: f for f in registry().fields}


def _by_report() -> dict[str, MetricField]:
    return {f.report: f for f in registry().fields if f.report}


def direction_of(column: str) -> Direction:
    """Which way is better for a table column or report name: the registry's ``direction``, the
    baselines' ``higher``, else ``none`` (not a quality number).

    >>> direction_of("NR"), direction_of("inter"), direction_of("P"), direction_of("BLEU-4"), direction_of("sentences")
    ('higher', 'lower', 'none', 'higher', 'none')
    """
    field = field_by_column().get(column) or _by_report().get(column)
    if field is not None:
        return field.direction
    for name, direction in OTHER_DIRECTIONS.items():
        if column == name or column.startswith(name + "-") or column.startswith(name + " "):
            return direction
    return "none"


def column_help(column: str) -> str | None:
    """What a table column means and which way is better, for a header's tooltip (None: not a metric).

    >>> column_help("inter")
    'repetition across sentences: mean Jaccard with earlier sentences (lower is better)'
    """
    field = field_by_column().get(column)
    if field is None:
        return None
    way = {"higher": " (higher is better)", "lower": " (lower is better)", "none": " (a descriptor)"}[field.direction]
    return field.help + way


def fields_of(metrics: typing.Iterable[str]) -> list[MetricField]:
    """The registry rows of the metrics run, in registry order."""
    wanted = set(metrics)
    return [f for f in registry().fields if f.metric in wanted]
