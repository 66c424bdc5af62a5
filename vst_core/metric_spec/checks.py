"""What registration refuses of an installed metric (:func:`check_plugin`): a spec that would be
ambiguous beside the others, or a record the JSON reader could not read back
(:func:`readable_record`). The registry (:mod:`vst_core.metric_spec`) leaves such a metric out
with the reason; the other metrics keep working."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import is_dataclass
from typing import Any, Literal, Union

from vst_core.metric_spec.spec import (
    CLI_COMMANDS,
    FETCH_FLAGS,
    NAME_PATTERN,
    OTHER_DIRECTIONS,
    SHARED_SETTINGS,
    MetricSpec,
    Need,
    OptionKind,
)

#: Column names a story table already has: no metric field may take one.
RESERVED_COLUMNS: frozenset[str] = frozenset(
    {"story", "sequence", "system", "sentences", "text", "error", "problems", "images", "story_id", "sequence_id"}
)


def _others(name: str) -> bool:
    return any(name == o or name.startswith(o + "-") or name.startswith(o + " ") for o in OTHER_DIRECTIONS)


def check_plugin(spec: MetricSpec, taken: Mapping[str, MetricSpec]) -> None:
    """Refuse a plugin spec that would be ambiguous or unreadable: its name, aliases, columns and
    report names are one namespace with every other metric's, the table's own columns and the
    baselines'; its record must be a dataclass the JSON reader can read back; its needs must be known
    and cover its image hooks (``image_record``: images; ``texts``: images and CLIP); its
    ``model_fields`` name its own options (names no other metric's options have), no ``switch``, no ``region_model``, no ``dhm`` aspect, no ``reaggregate`` and
    no ``formerly`` name that is in use."""
    if not NAME_PATTERN.fullmatch(spec.name):
        raise ValueError(f"metric name {spec.name!r} must be lower-case letters, digits and _ (at most 40)")
    names = {n for s in taken.values() for n in (s.name, *s.reading.aliases)}
    if spec.name in names:
        owner = next(s.module for s in taken.values() if spec.name in (s.name, *s.reading.aliases))
        raise ValueError(f"the name {spec.name!r} is taken by {owner}")
    for alias in spec.reading.aliases:
        if alias in names or alias == spec.name or alias != alias.strip().lower() or not alias:
            raise ValueError(f"alias {alias!r} is taken or not lower-case")
    if not (isinstance(spec.record, type) and is_dataclass(spec.record)):
        raise TypeError("record must be a dataclass type")
    if any(s.record is spec.record for s in taken.values()):
        raise ValueError(f"record type {spec.record.__name__} is another metric's")
    readable_record(spec.record)
    if not spec.fields:
        raise ValueError("a metric declares at least one field")
    used = {n for s in taken.values() for f in s.fields for n in (f.column, f.report) if n}
    attrs = set(spec.record.__dataclass_fields__)
    for f in spec.fields:
        if f.metric != spec.name:
            raise ValueError(f"field {f.column!r} names metric {f.metric!r}, not {spec.name!r}")
        for label in (f.column, f.report):
            if label is None:
                continue
            if not isinstance(label, str) or not label.strip() or label in RESERVED_COLUMNS or _others(label):
                raise ValueError(f"column {label!r} is reserved (the table's own columns, the baselines, dHM)")
            if label in used:
                raise ValueError(f"column {label!r} is another metric's")
        used.update(n for n in {f.column, f.report} if n)
        if f.attr not in attrs:
            raise ValueError(f"field {f.column!r} reads {f.attr!r}, which {spec.record.__name__} lacks")
        if f.direction not in ("higher", "lower", "none"):
            raise ValueError(f"field {f.column!r}: direction must be higher, lower or none")
    if spec.reading.main_value not in attrs:
        raise ValueError(f"main_value {spec.reading.main_value!r} is not a field of {spec.record.__name__}")
    own = {o.setting for o in spec.signing.options}
    if any(f.setting not in own for f in spec.showing.model_fields) or spec.showing.switch is not None:
        raise ValueError("a model field names one of the metric's own options; a switch is the built-in RoViST-C's")
    taken_options = {o.setting: s.name for s in taken.values() for o in s.signing.options}
    taken_flags = {o.cli_flag: s.name for s in taken.values() for o in s.signing.options}
    for o in spec.signing.options:
        if not NAME_PATTERN.fullmatch(o.setting):
            raise ValueError(f"option {o.setting!r} must be lower-case letters, digits and _ (at most 40)")
        if o.setting in SHARED_SETTINGS:
            raise ValueError(f"option {o.setting!r} is a setting every metric shares")
        if o.setting in taken_options:
            raise ValueError(f"option {o.setting!r} is metric {taken_options[o.setting]!r}'s")
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", o.cli_flag) or o.cli_flag in taken_flags:
            raise ValueError(
                f"option flag {o.cli_flag!r} is not --lower-case-words, or it is metric {taken_flags.get(o.cli_flag)!r}'s"
            )
        if o.kind not in typing.get_args(OptionKind):
            raise ValueError(f"option {o.setting!r}: kind must be one of {', '.join(typing.get_args(OptionKind))}")
        if o.refuse(o.default) is not None:
            raise ValueError(f"option {o.setting!r}: its default is refused: {o.refuse(o.default)}")
    others = {c: s.name for s in taken.values() for c in s.tools.commands}
    for command in spec.tools.commands:
        if command in CLI_COMMANDS or command in others or not re.fullmatch(r"[a-z][a-z0-9-]{0,39}", command):
            raise ValueError(f"command {command!r} is vst's own or another metric's, or not lower-case words with -")
    used_fetch = {a.flag: s.name for s in taken.values() if s.tools.fetch is not None for a in s.tools.fetch.arguments}
    for a in spec.tools.fetch.arguments if spec.tools.fetch is not None else ():
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", a.flag) or a.flag in FETCH_FLAGS or a.flag in used_fetch:
            owner = f"metric {used_fetch[a.flag]!r}'s" if a.flag in used_fetch else "the command's own"
            raise ValueError(f"fetch-models option {a.flag!r} is not --lower-case-words, or it is {owner}")
    asks = (
        spec.showing.diagnostics.measure.asks
        if spec.showing.diagnostics is not None and spec.showing.diagnostics.measure is not None
        else ()
    )
    if any(a not in own for a in asks):
        raise ValueError("a measurement asks only for the metric's own options")
    if spec.tools.trained_folder and spec.tools.trained_folder not in own:
        raise ValueError(f"trained_folder {spec.tools.trained_folder!r} is not one of the metric's own options")
    if spec.computing.region_model is not None:  # the grounder runs one region model, RoViST-VG's
        raise ValueError("region_model is the built-in RoViST-VG's (the grounder runs its model over the regions)")
    for old in spec.reading.formerly:  # another metric's records are never read as this one's
        if old in names or old == spec.name:
            raise ValueError(f"formerly {old!r} is a name in use: only names no metric has any more can be read as this one's")
    if any(f.dhm for f in spec.fields):  # dHM's distances are the paper's (and the judge's)
        raise ValueError("dhm aspects are the built-in metrics' (the paper's G, C and R, and the judge's J)")
    if spec.computing.reaggregate is not None:  # the scores index keeps one metric's items
        raise ValueError("reaggregate is the built-in GROOVIST's (the scores index keeps one metric's items)")
    unknown = set(spec.computing.needs) - set(typing.get_args(Need))
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; a metric may need {', '.join(typing.get_args(Need))}")
    if spec.computing.image_record is not None and "images" not in spec.computing.needs:
        raise ValueError("an image_record hook works on the story's images: declare needs={'images', ...}")
    if spec.computing.texts is not None and not {"images", "clip"} <= spec.computing.needs:
        raise ValueError("a texts hook is encoded by CLIP beside the regions: declare needs={'images', 'clip'}")


def readable_record(kind: type, seen: frozenset[type] = frozenset()) -> None:
    """Refuse a record type whose fields the JSON reader cannot read back: each field's hint must be
    str, int, float, bool, None, a Literal, a union with None, a tuple (``tuple[X, ...]`` or fixed)
    or another such dataclass.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Bad:
    ...     score: list[float]
    >>> readable_record(Bad)
    Traceback (most recent call last):
    ...
    TypeError: Bad.score: list[float] cannot be read back from JSON (use a tuple)
    """
    if kind in seen:
        return
    try:
        hints = typing.get_type_hints(kind)
    except Exception as exc:
        raise TypeError(f"{kind.__name__}: its type hints cannot be resolved ({exc})") from exc
    for f in dataclasses.fields(kind):
        _readable_hint(hints[f.name], f"{kind.__name__}.{f.name}", seen | {kind})


def _readable_hint(hint: Any, where: str, seen: frozenset[type]) -> None:
    origin = typing.get_origin(hint)
    if hint in (str, int, float, bool, type(None)) or origin is Literal:
        return
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            _readable_hint(option, where, seen)
        if len([o for o in typing.get_args(hint) if o is not type(None)]) != 1:
            raise TypeError(f"{where}: a union other than X | None cannot be read back from JSON")
        return
    if origin is tuple:
        for arg in typing.get_args(hint):
            if arg is not Ellipsis:
                _readable_hint(arg, where, seen)
        return
    if isinstance(hint, type) and is_dataclass(hint):
        readable_record(hint, seen)
        return
    shown = getattr(hint, "__name__", None) if origin is None else None
    raise TypeError(f"{where}: {shown or hint} cannot be read back from JSON (use a tuple)")
