"""An idf table from a file: the authors' ``idf_dict.pkl`` (RoViST-VG's release, a pickled dict of
noun -> idf), or the same table as JSON (``{"dog": 2.31, ...}``) or CSV/TSV (``noun,idf`` rows, an
optional header).

The pickle is read without running code: :class:`_IdfUnpickler` admits no global but the ones a
numpy float scalar needs (``numpy.dtype`` and the scalar constructor, under numpy 1.x and 2.x names),
so a file that would import or call anything else is refused unread; what it builds must then be a
dict of str -> finite number, else it is refused too.

>>> import json, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "idf.json"
>>> _ = path.write_text(json.dumps({"dog": 2.5, "park": 1.0}))
>>> table = read_idf_table(path)
>>> table.weight("dog"), table.weight("Dog"), table.weight("galaxy")
((2.5, True), (2.5, True), (2.5, False))
"""

from __future__ import annotations

import csv
import io
import json
import math
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vst_core.hashing import weights_digest
from vst_core.models.folders import regular_file
from vst_core.models.hub import ModelLoadError

#: The largest idf file read (the authors' table over VIST's nouns is well under 1 MB).
MAX_BYTES = 256 << 20
#: A RoViST-VG signature's idf entry when no table is given: idf fitted over the scored set.
FITTED_IDF = "fitted"
#: What to pass, for the messages.
WHERE = "the authors' idf_dict.pkl is linked from RoViST_VG_Demo.ipynb (github.com/usydnlp/rovist); pass it with --rovist-vg-idf"


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

    @property
    def fallback(self) -> float:
        return max(self.weights.values())

    def weight(self, noun: str) -> tuple[float, bool]:
        """The noun's idf and True, or :attr:`fallback` and False."""
        found = self.weights.get(noun)
        if found is None:
            found = self.weights.get(noun.lower())
        return (found, True) if found is not None else (self.fallback, False)


def _latin1(text: str, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode`` for the one codec old pickle protocols use for bytes."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"it encodes with {str(encoding)[:20]!r}")
    return text.encode("latin-1")


class _IdfUnpickler(pickle.Unpickler):
    """An unpickler that resolves no global but numpy's float-scalar constructor and ``dtype`` (and
    latin-1 ``_codecs.encode``, which old protocols use for the scalar's bytes)."""

    def find_class(self, module: str, name: str) -> Any:
        import numpy as np

        if (module, name) == ("numpy", "dtype"):
            return np.dtype
        if (module, name) == ("_codecs", "encode"):  # protocols 0-2 write a scalar's bytes as latin-1 text
            return _latin1
        if name == "scalar" and module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            try:
                from numpy._core.multiarray import scalar  # numpy 2
            except ImportError:  # numpy 1.x
                from numpy.core.multiarray import scalar  # type: ignore[no-redef]
            return scalar
        raise pickle.UnpicklingError(f"it refers to {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("it holds a persistent reference")


def _number(value: Any) -> float | None:
    """``value`` as a finite float when it is an int or float (numpy's included, bool excluded)."""
    import numpy as np

    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    try:
        out = float(value)
    except (OverflowError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _checked(data: Any, path: Path) -> dict[str, float]:
    """``data`` as a non-empty dict of str -> finite float, else a :class:`ModelLoadError` naming why."""
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path.name} is not an idf table: it holds a {type(data).__name__}, not a dict of noun -> idf")
    table: dict[str, float] = {}
    for key, value in data.items():
        number = _number(value)
        if not isinstance(key, str) or number is None:
            raise ModelLoadError(
                f"{path.name} is not an idf table: the entry {str(key)[:40]!r}: {str(value)[:40]!r} is not noun -> finite number"
            )
        table[key] = number
    if not table:
        raise ModelLoadError(f"{path.name} is an empty idf table")
    return table


def _from_pickle(raw: bytes, path: Path) -> dict[str, float]:
    try:
        data = _IdfUnpickler(io.BytesIO(raw)).load()
    except pickle.UnpicklingError as exc:
        raise ModelLoadError(
            f"{path.name} was not loaded: {str(exc)[:200]}, and an idf table needs nothing but a dict of noun -> number "
            "(unpickling other objects can run code)"
        ) from None
    except Exception as exc:  # a damaged pickle fails in many ways
        raise ModelLoadError(
            f"{path.name} cannot be read as a pickled idf table: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None
    return _checked(data, path)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _from_text(raw: bytes, path: Path) -> dict[str, float]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ModelLoadError(f"{path.name} is neither a pickle nor UTF-8 text (JSON or CSV)") from None
    if text.lstrip().startswith("{"):
        try:
            return _checked(json.loads(text, parse_constant=_reject_constant), path)
        except (ValueError, RecursionError) as exc:
            raise ModelLoadError(f"{path.name} is not valid JSON: {str(exc)[:200]}") from None
    delimiter = "\t" if "\t" in text.split("\n", 1)[0] else ","
    table: dict[str, Any] = {}
    for k, row in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter)):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 2:
            raise ModelLoadError(f"{path.name}, row {k + 1}: expected two columns (noun, idf), found {len(row)}")
        try:
            table[row[0].strip()] = float(row[1])
        except ValueError:
            if k == 0:  # a header
                continue
            raise ModelLoadError(f"{path.name}, row {k + 1}: {row[1][:40]!r} is not a number") from None
    return _checked(table, path)


def read_idf_table(path: str | Path) -> IdfTable:
    """The idf table in ``path`` (pickle, JSON or CSV/TSV, told apart by their first bytes)."""
    path = Path(path)
    regular_file(path, "idf table", WHERE)
    if path.stat().st_size > MAX_BYTES:
        raise ModelLoadError(f"{path.name} is larger than {MAX_BYTES >> 20} MB: not an idf table")
    raw = path.read_bytes()
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
