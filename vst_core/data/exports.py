"""Export files written whole or not at all: each is written beside its place and renamed into it, so
a full or read-only disk leaves the previous file (or none), never half of one.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_text_whole(folder / "t" / "table.md", "| a |\\n")
>>> (folder / "t" / "table.md").read_text(), sorted(p.name for p in (folder / "t").iterdir())
('| a |\\n', ['table.md'])
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` as UTF-8, its folder made, with the mode the umask gives (as a file
    opened for writing gets: 0644 under umask 022); an OSError (a full disk, a read-only folder)
    leaves no temporary file behind and ``path`` as it was, and names ``path``."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()  # the file a link names is replaced, as writing through the link would
    if path.exists() and not path.is_file():  # a folder, or a device such as /dev/full: never replaced
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # the mode an open() would give, not mkstemp's private 0600
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where Linux states it (``/proc/self/status``);
    elsewhere set and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def json_text(value: Any, **options: Any) -> str:
    """``value`` as strict JSON: a number that is not finite (NaN, ±Infinity, which ``JSON.parse``
    and most readers refuse) becomes ``null``, meaning undefined.

    >>> json_text({"d": float("nan"), "p": [0.5, float("inf")]})
    '{"d": null, "p": [0.5, null]}'
    """
    return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():  # a numpy scalar
        return _finite(value.item())
    return value


def cannot_write(exc: OSError) -> str:
    """One line saying which file could not be written and why (the error's own words, no traceback)."""
    return f"cannot write {exc.filename or 'the export'}: {exc.strerror or exc}; nothing was left half written"
