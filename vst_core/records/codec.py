"""Records as JSON and back: :func:`encode` (dataclass -> object, tuple -> list) and
:func:`decode`, which validates JSON data against a record type's hints and names the first bad
field (:class:`RecordError`)."""

from __future__ import annotations

import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar, Union

T = TypeVar("T")


class RecordError(ValueError):
    """A JSON value that does not fit the record type; the message names the field."""


_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_JSON_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}


def encode(value: Any) -> Any:
    """A record (or any value inside one) as JSON data: dataclass -> object, tuple -> list."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple or kind is list:
        return [v if type(v) in _PLAIN else encode(v) for v in value]
    names = _JSON_NAMES.get(kind)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _JSON_NAMES[kind] = tuple((f.metadata.get("json", f.name), f.name) for f in fields(value))
    if names is not None:
        return {key: encode(getattr(value, name)) for key, name in names}
    if isinstance(value, (tuple, list)):
        return [v if type(v) in _PLAIN else encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def decode(kind: type[T], data: Any, where: str = "") -> T:
    """A record of type ``kind`` from JSON data; :class:`RecordError` names the first bad field.

    Missing fields with a default take it; fields the type does not know are ignored."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where or kind.__name__}: expected an object, got {type(data).__name__}")
    hints = _HINTS.get(kind) or _HINTS.setdefault(kind, typing.get_type_hints(kind))
    values: dict[str, Any] = {}
    for f in fields(kind):  # type: ignore[arg-type]
        key = f.metadata.get("json", f.name)
        path = f"{where}.{key}" if where else key
        if key in data:
            values[f.name] = _value(hints[f.name], data[key], path)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise RecordError(f"{path}: missing")
    return kind(**values)


def _value(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None and type(None) in options:
            return None
        (inner,) = [o for o in options if o is not type(None)]
        return _value(inner, data, where)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{k}]") for k, v in enumerate(data))
        if len(data) != len(args):
            raise RecordError(f"{where}: expected {len(args)} values, got {len(data)}")
        return tuple(_value(a, v, f"{where}[{k}]") for k, (a, v) in enumerate(zip(args, data)))
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise RecordError(f"{where}: expected a finite number, got {data!r:.40}")
        return float(data)
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise RecordError(f"{where}: expected a whole number, got {data!r:.40}")
        return data
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        if data not in allowed or isinstance(data, bool):
            raise RecordError(f"{where}: expected one of {', '.join(map(repr, allowed))}, got {data!r:.40}")
        return data
    if hint in (str, bool):
        if not isinstance(data, hint):
            raise RecordError(f"{where}: expected {hint.__name__}, got {type(data).__name__}")
        return data
    if isinstance(hint, type) and is_dataclass(hint):
        return decode(hint, data, where)
    raise TypeError(f"no JSON decoder for {hint!r}")  # pragma: no cover - a record type the decoder lacks


def record_problem(kind: type, value: Any, max_bytes: int | None = None) -> str | None:
    """Why ``value`` cannot be written as a ``kind`` record and read back the same (not JSON, a
    non-finite number, a field the reader refuses, over ``max_bytes`` as JSON), or None.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Scores:
    ...     score: float | None
    ...     pairs: tuple[float, ...]
    >>> record_problem(Scores, Scores(float("nan"), ()))  # doctest: +ELLIPSIS
    'ValueError: Out of range float values are not JSON compliant...'
    """
    try:
        text = json.dumps(encode(value), allow_nan=False)
        decode(kind, json.loads(text))
    except (TypeError, ValueError, RecursionError) as exc:  # RecordError is a ValueError
        return f"{type(exc).__name__}: {exc}"
    if max_bytes is not None and len(text) > max_bytes:
        return f"{len(text):,} bytes as JSON, over {max_bytes:,}"
    return None
