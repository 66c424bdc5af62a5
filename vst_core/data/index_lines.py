"""Reading scores lines for :mod:`vst_core.data.index`: each line parsed (orjson where it reads
it as the exact reader would, else the exact reader), its metric records checked, the numbers kept
and packed in columns; a file read serially (hashed as it is read) or a share of it read in a
worker process. What the worker processes import: no pandas, no pyarrow."""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np
import orjson

from vst_core.contract import Registry, registry
from vst_core.data.access import FileIdentity, PathNotAllowed, open_regular, shown
from vst_core.data.merge import is_imported
from vst_core.data.readers import MAX_DEPTH, MAX_LINE_BYTES
from vst_core.data.scores_io import _score_line
from vst_core.problems import Problem
from vst_core.records import EXPECTED_FIELDS, SCORES_FORMAT, RecordError, decode

_Items = Callable[[Any], list[tuple[float, float]]]
_VIEWS: dict[int, tuple[Registry, dict[str, list[tuple[str, str]]], dict[str, Any], dict[str, _Items], frozenset[str]]] = {}


def _views() -> tuple[dict[str, list[tuple[str, str]]], dict[str, Any], dict[str, _Items], frozenset[str]]:
    """The registry's numbers by metric ((column, attribute) each), each record type's quick check,
    the items the index keeps of the re-aggregated metric's records and the names earlier versions
    wrote another metric's records under (``formerly``), built once per registry (never at import:
    an installed metric may import this module)."""
    reg = registry()
    found = _VIEWS.get(id(reg))
    if found is None or found[0] is not reg:
        by_metric: dict[str, list[tuple[str, str]]] = {}
        for f in reg.fields:
            by_metric.setdefault(f.metric, []).append((f.column, f.attr))
        checks = {name: _check_of(kind, False) for name, kind in reg.types.items()}
        again = {s.name: s.computing.reaggregate.items for s in reg.specs.values() if s.computing.reaggregate is not None}
        found = _VIEWS[id(reg)] = (reg, by_metric, checks, again, reg.formerly)
    return found[1], found[2], found[3], found[4]


def by_metric() -> dict[str, list[tuple[str, str]]]:
    """Metric name -> [(table column, record attribute)] of every number in the registry."""
    return _views()[0]


class IndexError_(ValueError):
    """A scores file that cannot be indexed at all (missing, unreadable, not a file, changing)."""


class _Changed(IndexError_):
    """A scores file that is not (or no longer) the file it was when checked or when its build began."""


def open_same(path: str | Path, want: FileIdentity | None) -> io.BufferedReader:
    """``path`` opened for reading when it is a regular file and, when ``want`` is given, the very
    file ``want`` describes (device, inode, size, mtime: e.g. the descriptor the dashboard checked),
    so a file swapped for another or for a link since is never read. IndexError_ otherwise, naming
    the file, not its folder."""
    name = shown(Path(path).name)
    try:
        fh = open_regular(path, what="scores file")
    except PathNotAllowed as exc:
        raise IndexError_(f"cannot read scores file {name} ({exc.why})") from None
    if want is not None and FileIdentity.of(os.fstat(fh.fileno())) != want:
        fh.close()
        raise _Changed(f"scores file {name} changed since it was checked; load it again")
    return fh


def finite_number(value: Any) -> float:
    """A JSON value as a float when it is a finite int or float (not a bool), else NaN.

    >>> finite_number(2), finite_number(True), finite_number("1")
    (2.0, nan, nan)
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return math.nan


@dataclass(frozen=True, slots=True)
class _Line:
    """What one readable line contributes (read in a worker; merged in order by :func:`build_index`)."""

    story_id: str
    system: str
    sequence: str
    sentences: int
    text: str
    sig_id: str
    imported: bool
    errors: dict[str, str]
    values: list[tuple[str, dict[str, float]]]  # metric -> {column: value}, for records that fit
    phrases: list[tuple[float, float]]  # (best cosine, weight) of the GROOVIST record's phrases
    input_problems: bool
    offset: int
    length: int
    number: int
    problems: list[Problem]


def _read_line(raw: bytes, number: int, offset: int, name: str, signatures: dict[str, dict[str, Any]]) -> _Line | Problem:
    """One line as the exact reader sees it: a :class:`_Line`, or the problem that keeps it out
    (its signature is added to ``signatures`` the first time its id is seen)."""
    data = _fast_line(raw, number)
    if not isinstance(data, dict):
        return data
    sid = str(data["story_id"])
    sentences = data.get("sentences")
    if not isinstance(sentences, list):
        return Problem(f"{name}: scores record without sentences; skipped", "line", line=number, story_id=sid)
    images = data.get("images", [])
    if (
        not all(isinstance(s, str) for s in sentences)
        or not isinstance(images, list)
        or not all(isinstance(i, str) for i in images)
    ):
        what = "sentences" if not all(isinstance(s, str) for s in sentences) else "images"
        return Problem(
            f"{name}: unusable scores record ({what}: expected a list of text); skipped", "line", line=number, story_id=sid
        )
    if b"\\u" in raw and not _unicode(data, sentences):
        return Problem(f"{name}: text that is not Unicode (a lone surrogate escape); skipped", "line", line=number, story_id=sid)
    problems: list[Problem] = []
    if data.get("format") != SCORES_FORMAT or any(k not in data for k in EXPECTED_FIELDS):
        missing = ", ".join(k for k in EXPECTED_FIELDS if k not in data) or "nothing"
        problems.append(
            Problem(
                f"{name}: record from another version (format {data.get('format', 'none')}; missing {missing})",
                "line", "warning", line=number, story_id=sid,
            )
        )  # fmt: skip
    signature: dict[str, Any] = _dict(data.get("signature"))
    sig_id = str(signature.get("id"))
    if sig_id not in signatures:
        signatures[sig_id] = signature
    errors = {str(k): str(v) for k, v in _dict(data.get("errors")).items()}
    values: list[tuple[str, dict[str, float]]] = []
    phrases: list[tuple[float, float]] = []
    numbers, _, again, formerly = _views()
    for metric, value in _dict(data.get("metrics")).items():
        if metric in formerly and isinstance(value, dict):  # an earlier version's record, of the metric now named so
            metric = registry().renamed(str(metric), value)
        columns = numbers.get(str(metric))
        if columns is None:
            continue
        why = _unfit(str(metric), value)
        if why is not None:
            errors[str(metric)] = f"unreadable record: {why}"
            problems.append(Problem(f"{name}: unreadable {metric} record ({why})", "line", line=number, story_id=sid))
            continue
        values.append((str(metric), {column: finite_number(value.get(attr)) for column, attr in columns}))
        items = again.get(str(metric))
        if items is not None:  # the re-aggregated metric's (GROOVIST's phrases)
            phrases = items(value)
    if data.get("system") in (None, ""):  # merged with any story of a system named "unknown": said, never silent
        problems.append(
            Problem(f"{name}: names no system: read as system 'unknown'", "line", "warning", line=number, story_id=sid)
        )
    return _Line(
        sid, str(data.get("system") or "unknown"), str(data.get("sequence_id") or sid), len(sentences), " ".join(sentences),
        sig_id, is_imported(signature), errors, values, phrases, bool(_list(data.get("problems"))), offset, len(raw), number,
        problems,
    )  # fmt: skip


def _read_range(
    path: str, name: str, start: int, end: int, first_number: int, want: FileIdentity | None = None
) -> tuple[_Packed, dict[str, dict[str, Any]]]:
    """The lines of ``path`` (the file ``want``, see :func:`open_same`) between two byte offsets
    that begin lines (a worker's share), packed in columns (:func:`_pack`) so that sending them
    back costs little. The file must still be ``want`` once the share is read (else the share may
    mix two versions): :class:`IndexError_` otherwise."""
    signatures: dict[str, dict[str, Any]] = {}
    out: list[_Line | Problem] = []
    with open_same(path, want) as fh:
        fh.seek(start)
        offset, number = start, first_number
        while offset < end:
            raw = fh.readline(end - offset)
            if not raw:
                break
            if raw.strip():
                out.append(_read_line(raw, number, offset, name, signatures))
            offset += len(raw)
            number += 1
        if want is not None and (offset != end or FileIdentity.of(os.fstat(fh.fileno())) != want):
            raise _Changed(f"scores file {shown(name)} changed while it was being indexed")
    return _pack(out), signatures


_Packed = tuple[Any, ...]


def _pack(entries: list[_Line | Problem]) -> _Packed:
    """Lines as columns (strings in lists, numbers in arrays, the rare parts sparse): pickled and
    unpickled several times faster than one object per line."""
    lines = [e for e in entries if isinstance(e, _Line)]
    order = [e if isinstance(e, Problem) else None for e in entries]
    names: dict[tuple[str, ...], tuple[str, ...]] = {}
    metrics = [names.setdefault(k, k) for k in (tuple(m for m, _ in line.values) for line in lines)]
    filled: dict[str, list[float]] = {column: [math.nan] * len(lines) for cs in by_metric().values() for column, _ in cs}
    for k, line in enumerate(lines):
        for _, values in line.values:
            for column, value in values.items():
                filled[column][k] = value
    numbers = {column: np.asarray(values, dtype=float) for column, values in filled.items()}
    return (
        order, [line.story_id for line in lines], [line.system for line in lines], [line.sequence for line in lines],
        np.asarray([line.sentences for line in lines], dtype=np.int64), [line.text for line in lines],
        [line.sig_id for line in lines], np.asarray([line.imported for line in lines], dtype=bool),
        {k: line.errors for k, line in enumerate(lines) if line.errors}, metrics, numbers,
        np.asarray([len(line.phrases) for line in lines], dtype=np.int64),
        np.asarray([c for line in lines for c, _ in line.phrases], dtype=float),
        np.asarray([w for line in lines for _, w in line.phrases], dtype=float),
        np.asarray([line.input_problems for line in lines], dtype=bool),
        np.asarray([[line.offset, line.length, line.number] for line in lines], dtype=np.int64).reshape(-1, 3),
        {k: line.problems for k, line in enumerate(lines) if line.problems},
    )  # fmt: skip


def _cuts(path: str, size: int, parts: int, want: FileIdentity | None = None) -> list[int]:
    """The offsets that cut a file into ``parts`` shares after newlines (its start and size included)."""
    cuts = [0]
    with open_same(path, want) as fh:
        for k in range(1, parts):
            fh.seek(max(cuts[-1], size * k // parts))
            fh.readline()  # to the start of the next line
            cuts.append(min(fh.tell(), size))
    cuts.append(size)
    return sorted(set(cuts))


def _ranges(path: str, size: int, parts: int, want: FileIdentity | None = None) -> list[tuple[int, int, int]]:
    """(start, end, number of the first line) of ``parts`` shares of a file, cut after newlines."""
    cuts = _cuts(path, size, parts, want)
    out, number = [], 1
    with open_same(path, want) as fh:
        for a, b in zip(cuts, cuts[1:], strict=False):
            out.append((a, b, number))
            fh.seek(a)
            number += fh.read(b - a).count(b"\n")
    return out


def _hash_count(fh: io.BufferedReader, length: int, hasher: Any, name: str) -> int:
    """The newlines of the next ``length`` bytes of ``fh``, hashed into ``hasher`` as they are read;
    :class:`_Changed` when the file ends sooner."""
    count = 0
    while length > 0:
        block = fh.read(min(BLOCK_BYTES, length))
        if not block:
            raise _Changed(f"scores file {shown(name)} changed while it was being indexed")
        hasher.update(block)
        count += block.count(b"\n")
        length -= len(block)
    return count


#: Bytes the serial reader reads (and hashes) at a time.
BLOCK_BYTES = 8 << 20


def _serial(
    path: str, name: str, file_no: int, want: FileIdentity | None = None, proof: dict[int, str] | None = None
) -> Iterable[tuple[int, _Packed, dict[str, dict[str, Any]]]]:
    """The lines of a file (the file ``want``, see :func:`open_same`: no more than its size, so a
    line appended meanwhile is never read) read here, one by one, the bytes hashed as they are read
    into ``proof[file_no]``, packed a block at a time. :class:`IndexError_` when the
    file is not ``want`` at the end (rewritten, appended to, truncated while it was read)."""
    signatures: dict[str, dict[str, Any]] = {}
    with open_same(path, want) as fh:
        left = want.size if want is not None else os.fstat(fh.fileno()).st_size
        hasher = hashlib.sha256()
        offset, number, carry = 0, 1, b""
        while left > 0:
            block = fh.read(min(BLOCK_BYTES, left))
            if not block:
                break
            left -= len(block)
            hasher.update(block)
            pieces = (carry + block).split(b"\n")
            carry = pieces.pop()
            out: list[_Line | Problem] = []
            for piece in pieces:
                raw = piece + b"\n"
                if piece.strip():
                    out.append(_read_line(raw, number, offset, name, signatures))
                offset += len(raw)
                number += 1
            yield file_no, _pack(out), signatures
        if carry.strip():
            yield file_no, _pack([_read_line(carry, number, offset, name, signatures)]), signatures
        if left or (want is not None and FileIdentity.of(os.fstat(fh.fileno())) != want):
            raise _Changed(f"scores file {shown(name)} changed while it was being indexed")
        if proof is not None:
            proof[file_no] = hasher.hexdigest()


# The shallow check of a metric record: each field of its type present (unless it has a default)
# and of its type; nested records only need to be objects. What it refuses, decode() words.
_Check = Callable[[Any], bool]


def _check_of(hint: Any, nested: bool) -> _Check:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        inner = _check_of(next(o for o in typing.get_args(hint) if o is not type(None)), nested)
        return lambda v: v is None or inner(v)
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _check_of(args[0], True)
            return lambda v: isinstance(v, list) and all(item(x) for x in v)
        items = [_check_of(a, True) for a in args]
        return lambda v: isinstance(v, list) and len(v) == len(items) and all(c(x) for c, x in zip(items, v, strict=True))
    if origin is typing.Literal:
        allowed = [(type(a), a) for a in typing.get_args(hint)]
        return lambda v: (type(v), v) in allowed
    if hint is float:
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if hint is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if hint in (str, bool):
        return lambda v: isinstance(v, hint)
    if isinstance(hint, type) and is_dataclass(hint) and nested:
        return lambda v: isinstance(v, dict)
    if isinstance(hint, type) and is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        spec = [
            (
                f.metadata.get("json", f.name),
                f.default is MISSING and f.default_factory is MISSING,
                _check_of(hints[f.name], True),
            )
            for f in fields(hint)
        ]
        return lambda v: (
            isinstance(v, dict) and all((k in v and c(v[k])) if required else (k not in v or c(v[k])) for k, required, c in spec)
        )
    return lambda v: False  # pragma: no cover - a record type the check lacks: decode() decides


def _unfit(metric: str, value: Any) -> str | None:
    """Why ``value`` is not a ``metric`` record (decode's words), or None when it is one."""
    if _views()[1][metric](value):
        return None
    try:
        decode(registry().types[metric], value, f"metrics.{metric}")
    except RecordError as exc:
        return str(exc)
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _unicode(data: dict[str, Any], sentences: list[str]) -> bool:
    """Whether the texts a table row holds can be stored (a JSON escape can name half a surrogate
    pair, which Python reads and Arrow strings refuse)."""
    texts = [data["story_id"], data.get("sequence_id"), data.get("system"), *sentences]
    texts += [x for kv in _dict(data.get("errors")).items() for x in kv]
    try:
        "".join(map(str, texts)).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


#: Where orjson and the exact reader could disagree: integers past 64 bits (orjson makes them
#: floats; Python keeps them, up to its digit limit) and nesting past MAX_DEPTH (orjson allows 1024).
#: Such lines (and lines that only look like them: long digit runs in text) take the exact reader.
_NUMBER_CLASSES = bytes(48 if 48 <= b <= 57 else 46 if b in b".eE" else 32 for b in range(256))
_LONG_INTEGER = b" " + b"0" * 19  # 19 digits after a separator (not after '.', 'e': a float)
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_BRACKETS_OR_QUOTES = bytes(b for b in range(256) if b not in b'[]{}"')


def _orjson_agrees(raw: bytes) -> bool:
    """Whether orjson reads the valid JSON ``raw`` as the exact reader does (see above)."""
    if _LONG_INTEGER in raw.translate(_NUMBER_CLASSES):
        return False
    if raw.count(b"[") + raw.count(b"{") < MAX_DEPTH:
        return True
    if b"\\" in raw:
        brackets = _STRINGS.sub(b"", raw).translate(None, _NOT_BRACKETS)
    else:  # text without brackets leaves "", two quotes that can go (a string, or one's end and the next's start)
        kept = raw.translate(None, _NOT_BRACKETS_OR_QUOTES).replace(b'""', b"")
        brackets = b"".join(kept.split(b'"')[::2]) if b'"' in kept else kept
    for _ in range(MAX_DEPTH // 2 - 1):  # each pass takes one or two levels: empty after them is ≤ 62 deep
        brackets = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if not brackets:
            return True
    return False


def _fast_line(raw: bytes, number: int) -> dict[str, Any] | Problem:
    """A line as a JSON object: orjson where it reads it as the exact reader would, else the exact
    reader (:func:`vst_core.data.scores_io._score_line`) with its message."""
    if len(raw) <= MAX_LINE_BYTES:
        try:
            data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict) and _orjson_agrees(raw):
            if data.get("story_id") in (None, ""):
                return Problem("scores line without story_id; skipped", "line", line=number)
            return data
    record, problem = _score_line(raw, number)
    if record is not None and record.get("story_id") not in (None, ""):
        return record
    return problem or Problem("scores line without story_id; skipped", "line", line=number)
