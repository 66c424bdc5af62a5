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
import os
import tempfile
from pathlib import Path


def write_text_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` as UTF-8, its folder made; an OSError (a full disk, a read-only
    folder) leaves no temporary file behind and ``path`` as it was, and names ``path``."""
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


def cannot_write(exc: OSError) -> str:
    """One line saying which file could not be written and why (the error's own words, no traceback)."""
    return f"cannot write {exc.filename or 'the export'}: {exc.strerror or exc}; nothing was left half written"
