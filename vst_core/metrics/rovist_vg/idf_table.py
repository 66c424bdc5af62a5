"""An idf table from a file: the authors' ``idf_dict.pkl`` (RoViST-VG's release, a pickled dict of
noun -> idf), or the same table as JSON (``{"dog": 2.31, ...}``) or CSV/TSV (``noun,idf`` rows, an
optional header).

The pickle is never unpickled: :func:`_unpickle_table` walks its opcodes (``pickletools.genops``)
with a small stack machine that knows strings, numbers, dicts and the few calls a numpy float scalar
is pickled as (``numpy.dtype`` of a plain numeric kind, the scalar constructor on bytes of that
size, latin-1 ``_codecs.encode``), each done by this module on checked arguments, never by numpy or
pickle. Any other opcode or global is refused; a key that is not a string is refused before it is
hashed. What it builds must be a dict of str -> finite number, else it is refused too.

>>> import json, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "idf.json"
>>> _ = path.write_text(json.dumps({"dog": 2.5, "park": 1.0}))
>>> table = read_idf_table(path)
>>> table.weight("dog"), table.weight("Dog"), table.weight("galaxy")
((2.5, True), (2.5, True), (2.5, False))
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vst_core.data.access import PathNotAllowed, open_regular
from vst_core.hashing import weights_digest
from vst_core.models.folders import regular_file
from vst_core.models.hub import ModelLoadError, option

#: The largest idf file read (the authors' table over VIST's nouns is well under 1 MB).
MAX_BYTES = 16 << 20  # the digest (weights_digest) covers a file of this size whole
#: A RoViST-VG signature's idf entry when no table is given: idf fitted over the scored set.
FITTED_IDF = "fitted"
#: What to pass, for the messages.
WHERE = (
    "the authors' idf_dict.pkl is linked from RoViST_VG_Demo.ipynb (github.com/usydnlp/rovist); "
    f"pass it with {option('rovist_vg_idf', 'PATH')}"
)


@dataclass(frozen=True)
class IdfTable:
    """noun -> idf, read from ``path`` (``digest`` its content digest). A noun is looked up as
    written, then lower-cased; one the table lacks takes :attr:`fallback`, the table's largest idf
    (a noun unseen where the table was counted is at least as rare as its rarest; the authors'
    scorer stops with a ``KeyError`` there)."""

    path: Path
    digest: str
    weights: Mapping[str, float]

    @property
    def signature(self) -> str:
        return f"{self.path.name}@{self.digest}"

    @functools.cached_property
    def fallback(self) -> float:
        return max(self.weights.values())

    def weight(self, noun: str) -> tuple[float, bool]:
        """The noun's idf and True, or :attr:`fallback` and False."""
        found = self.weights.get(noun)
        if found is None:
            found = self.weights.get(noun.lower())
        return (found, True) if found is not None else (self.fallback, False)


class _DType:
    """A numpy dtype as a pickle names it, reduced to the plain numeric kinds (``f8``, ``i4``, ...)
    and a byte order; nothing of numpy's own object is built from the file."""

    KINDS = frozenset({"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"})

    def __init__(self, kind: object) -> None:
        if not isinstance(kind, str) or kind not in self.KINDS:
            raise _Refused(f"a numpy scalar of type {str(kind)[:20]!r}")
        self.kind, self.order = kind, "<"

    def build(self, state: object) -> None:
        order = state[1] if isinstance(state, tuple) and len(state) > 1 else None
        if order not in ("<", ">", "|", "="):
            raise _Refused("a numpy dtype state that is not a plain number's")
        self.order = order if order != "=" else "<" if sys.byteorder == "little" else ">"

    def scalar(self, payload: object) -> float:
        import numpy as np

        if not isinstance(payload, bytes) or len(payload) != int(self.kind[1]):
            raise _Refused("a numpy scalar whose bytes do not fit its type")
        order = "|" if self.kind[1] == "1" else self.order
        return float(np.frombuffer(payload, dtype=f"{order}{self.kind}")[0])


class _Refused(Exception):
    """What an idf pickle holds that an idf table never needs."""


#: The globals an idf pickle may name: numpy's float-scalar constructor and ``dtype`` (numpy 1.x
#: and 2.x names) and the latin-1 encoder old protocols write a scalar's bytes with.
_GLOBALS = {
    ("numpy", "dtype"): "dtype",
    ("numpy.core.multiarray", "scalar"): "scalar",
    ("numpy._core.multiarray", "scalar"): "scalar",
    ("_codecs", "encode"): "encode",
}
_TEXT_OPS = frozenset({"UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "STRING", "BINSTRING", "SHORT_BINSTRING"})
_BYTES_OPS = frozenset({"SHORT_BINBYTES", "BINBYTES", "BINBYTES8"})
_NUMBER_OPS = frozenset({"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"})


def _reduce(function: object, args: object) -> object:
    """``function(*args)`` for the few functions an idf pickle may call, on checked arguments."""
    if not isinstance(args, tuple):
        raise _Refused("a call without an argument tuple")
    if function == "dtype" and args:
        return _DType(args[0])
    if function == "scalar" and len(args) == 2 and isinstance(args[0], _DType):
        return args[0].scalar(args[1])
    if function == "encode" and len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin1", "latin-1"):
        return args[0].encode("latin-1")
    raise _Refused(f"a call of {function!s:.20} it does not need")


def _put(table: object, key: object, value: object) -> None:
    """``table[key] = value`` when the key is a string and the value a finite number, else refused
    before anything is hashed."""
    if not isinstance(table, dict):
        raise _Refused("entries outside a dict")
    number = _number(value)
    if not isinstance(key, str) or number is None:
        raise _Refused(f"the entry {_brief(key)}: {_brief(value)}, which is not noun -> finite number")
    table[key] = number


def _unpickle_table(raw: bytes) -> object:
    """What a pickle of a dict of str -> number holds, by a small stack machine over its opcodes
    (:func:`pickletools.genops` parses; nothing is unpickled by pickle itself): strings, numbers,
    dicts, the tuples a numpy scalar is made of, and calls of :data:`_GLOBALS` only."""
    import pickletools

    stack: list[object] = []
    marks: list[int] = []
    memo: dict[int, object] = {}

    def popmark() -> list[object]:
        if not marks:
            raise _Refused("a damaged mark")
        start = marks.pop()
        items = stack[start:]
        del stack[start:]
        return items

    def top() -> object:
        if not stack:
            raise _Refused("an empty stack")
        return stack[-1]

    for op, arg, _pos in pickletools.genops(raw):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            if len(stack) != 1:
                raise _Refused("a damaged end")
            return stack[0]
        if name == "MARK":
            marks.append(len(stack))
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name == "DICT":
            items, table = popmark(), dict[object, object]()
            if len(items) % 2:
                raise _Refused("a damaged entry")
            for k in range(0, len(items), 2):
                _put(table, items[k], items[k + 1])
            stack.append(table)
        elif name == "SETITEM":
            if len(stack) < 3:
                raise _Refused("a damaged entry")
            value, key = stack.pop(), stack.pop()
            _put(top(), key, value)
        elif name == "SETITEMS":
            items = popmark()
            if len(items) % 2:
                raise _Refused("a damaged entry")
            for k in range(0, len(items), 2):
                _put(top(), items[k], items[k + 1])
        elif name in _TEXT_OPS or name in _BYTES_OPS or name in _NUMBER_OPS:
            stack.append(arg)
        elif name in ("NEWTRUE", "NEWFALSE"):
            stack.append(name == "NEWTRUE")
        elif name == "NONE":
            stack.append(None)
        elif name in ("EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "TUPLE"):
            size = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}.get(name)
            if size is None:
                items = popmark()
            else:
                if len(stack) < size:
                    raise _Refused("a damaged tuple")
                items = stack[len(stack) - size :]
                del stack[len(stack) - size :]
            if any(isinstance(i, dict | tuple) for i in items):
                raise _Refused("nested containers")
            stack.append(tuple(items))
        elif name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
            memo[len(memo) if name == "MEMOIZE" else int(arg or 0)] = top()
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            if int(arg or 0) not in memo:
                raise _Refused("a damaged memo reference")
            stack.append(memo[int(arg or 0)])
        elif name in ("GLOBAL", "STACK_GLOBAL"):
            if name == "GLOBAL":
                module, _, attr = str(arg).partition(" ")
            else:
                if len(stack) < 2:
                    raise _Refused("a damaged global")
                attr, module = stack.pop(), stack.pop()  # type: ignore[assignment]
            found = _GLOBALS.get((str(module), str(attr)))
            if found is None:
                raise _Refused(f"it refers to {str(module)[:40]}.{str(attr)[:40]}")
            stack.append(found)
        elif name == "REDUCE":
            if len(stack) < 2:
                raise _Refused("a damaged call")
            args, function = stack.pop(), stack.pop()
            stack.append(_reduce(function, args))
        elif name == "BUILD":
            state = stack.pop() if stack else None
            target = top()
            if not isinstance(target, _DType):
                raise _Refused("an object built from a state")
            target.build(state)
        else:
            raise _Refused(f"the opcode {name}, which a dict of noun -> number never needs")
    raise _Refused("no end")


def _brief(value: object) -> str:
    """A short rendering of what a file held, never calling its ``str`` (it may be anything)."""
    if isinstance(value, str):
        return repr(value[:40])
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if abs(value) < 1e300 or isinstance(value, float) else "a huge integer"
    return f"a {type(value).__name__}"


def _number(value: object) -> float | None:
    """``value`` as a finite float when it is a Python int or float (bool excluded)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        out = float(value)
    except (OverflowError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _checked(data: object, path: Path) -> dict[str, float]:
    """``data`` as a non-empty dict of non-empty str (no NUL) -> finite float, else a
    :class:`ModelLoadError` naming why."""
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path.name} is not an idf table: it holds {_brief(data)}, not a dict of noun -> idf")
    table: dict[str, float] = {}
    for key, value in data.items():
        number = _number(value)
        if not isinstance(key, str) or not key.strip() or "\x00" in key or number is None:
            raise ModelLoadError(
                f"{path.name} is not an idf table: the entry {_brief(key)}: {_brief(value)} is not noun -> finite number"
            )
        table[key] = number
    if not table:
        raise ModelLoadError(f"{path.name} is an empty idf table")
    return table


def _from_pickle(raw: bytes, path: Path) -> dict[str, float]:
    try:
        data = _unpickle_table(raw)
    except _Refused as exc:
        raise ModelLoadError(
            f"{path.name} was not loaded: it holds {str(exc)[:200]}, and an idf table needs nothing but a dict of noun -> "
            "number (unpickling other objects can run code)"
        ) from None
    except Exception as exc:  # a damaged pickle fails in many ways
        raise ModelLoadError(f"{path.name} cannot be read as a pickled idf table: {type(exc).__name__}") from None
    return _checked(data, path)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's entries, refusing a noun given twice."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the noun {key[:40]!r} is given twice")
        found[key] = value
    return found


def _from_text(raw: bytes, path: Path) -> dict[str, float]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ModelLoadError(f"{path.name} is neither a pickle nor UTF-8 text (JSON or CSV)") from None
    if text.lstrip().startswith("{"):
        try:
            return _checked(json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique), path)
        except (ValueError, RecursionError) as exc:
            raise ModelLoadError(f"{path.name} is not valid JSON: {str(exc)[:200]}") from None
    first = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = "\t" if "\t" in first else ","
    table: dict[str, float] = {}
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error as exc:
        raise ModelLoadError(f"{path.name} cannot be read as CSV: {str(exc)[:200]}") from None
    header = True
    for k, row in enumerate(rows):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 2:
            raise ModelLoadError(f"{path.name}, row {k + 1}: expected two columns (noun, idf), found {len(row)}")
        noun, value = row[0].strip(), row[1].strip()
        try:
            number = float(value) if "_" not in value else float("nan")
        except ValueError:
            number = float("nan")
        if not math.isfinite(number):
            if header:  # the first row may be a header
                header = False
                continue
            raise ModelLoadError(f"{path.name}, row {k + 1}: {value[:40]!r} is not a finite number")
        header = False
        if noun in table:
            raise ModelLoadError(f"{path.name}, row {k + 1}: the noun {noun[:40]!r} is given twice")
        table[noun] = number
    return _checked(table, path)


def read_idf_table(path: str | Path) -> IdfTable:
    """The idf table in ``path`` (pickle, JSON or CSV/TSV, told apart by their first bytes)."""
    path = Path(path)
    regular_file(path, "idf table", WHERE)
    try:
        with open_regular(path, what="idf table") as fh:  # what is read is the file checked
            raw = fh.read(MAX_BYTES + 1)
    except (PathNotAllowed, OSError) as exc:
        raise ModelLoadError(f"idf table {path.name} cannot be read: {exc}") from None
    if len(raw) > MAX_BYTES:
        raise ModelLoadError(f"{path.name} is larger than {MAX_BYTES >> 20} MB: not an idf table")
    pickled = raw[:1] in (b"\x80", b"}", b"(")  # protocol 2+, or 0/1's EMPTY_DICT / MARK
    table = _from_pickle(raw, path) if pickled else _from_text(raw, path)
    return IdfTable(path=path, digest=weights_digest(path), weights=table)


def idf_source(signature: str) -> str:
    """Which idf a RoViST-VG record's ``model`` signature says was used, in words.

    >>> idf_source("rovist-vg:a@1|vit:v@2|glove:g@3|idf:idf_dict.pkl@0123")
    'idf from idf_dict.pkl@0123'
    >>> idf_source("rovist-vg:a@1|vit:v@2|glove:g@3|idf:fitted")
    'idf fitted over the scored set'
    """
    found = signature.rpartition("|idf:")[2] if "|idf:" in signature else FITTED_IDF
    return "idf fitted over the scored set" if found == FITTED_IDF else f"idf from {found}"
