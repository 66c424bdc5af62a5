"""Which server folders a shared dashboard may read.

A path typed into the dashboard (a scores file, its images folder, a regions CSV, a checkpoint or
a config) is used only when it resolves, symlinks followed, inside one of the allowed folders: the
working directory the dashboard was started in, the bundled assets, the folders listed in
``VST_DATA_DIRS`` (separated by ``os.pathsep``) and those given at start-up
(``streamlit run app.py -- --data FOLDER``). The check never touches the file, so a refused path
reveals nothing about what exists outside.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path


class PathNotAllowed(ValueError):
    """A path outside every allowed folder."""


def data_dirs_from_args(argv: Sequence[str]) -> list[str]:
    """The folders given as ``--data FOLDER`` (or ``--data=FOLDER``) after the script's name."""
    found: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--data" and i + 1 < len(args):
            found.append(args[i + 1])
        elif arg.startswith("--data="):
            found.append(arg.split("=", 1)[1])
    return found


def allowed_roots(base: Iterable[str | Path], env: str | None = None, args: Sequence[str] = ()) -> tuple[Path, ...]:
    """The allowed folders, resolved: ``base``, then ``env`` (``VST_DATA_DIRS``), then ``--data``
    arguments; empty entries are ignored, duplicates kept once."""
    entries = [*map(str, base), *(env or "").split(os.pathsep), *data_dirs_from_args(args)]
    roots: list[Path] = []
    for entry in entries:
        if entry.strip():
            root = Path(entry.strip()).expanduser().resolve()
            if root not in roots:
                roots.append(root)
    return tuple(roots)


def confine(value: str, roots: Sequence[Path], *, what: str = "path") -> Path:
    """``value`` as a resolved path inside one of ``roots`` (relative values are taken from the
    first root, the working directory); PathNotAllowed otherwise, naming the roots and the fix."""
    if "\x00" in value:
        raise PathNotAllowed(f"{what} holds a NUL byte")
    path = Path(value).expanduser()
    try:
        resolved = (path if path.is_absolute() else roots[0] / path).resolve()
    except (OSError, RuntimeError) as exc:
        raise PathNotAllowed(f"{what} {value!r} cannot be resolved ({type(exc).__name__})") from None
    if any(resolved.is_relative_to(root) for root in roots):
        return resolved
    raise PathNotAllowed(
        f"{what} {value!r} is outside the folders this dashboard may read ({', '.join(map(str, roots))}); "
        "upload the file instead, or start the dashboard with `-- --data FOLDER` (or VST_DATA_DIRS) to allow a folder"
    )
