"""Which server folders a shared dashboard may read, and how a typed path is read safely.

A path typed into the dashboard (a scores file, its images folder, a regions CSV, a checkpoint or
a config) is used only when it resolves, symlinks followed, inside one of the allowed folders: the
working directory the dashboard was started in, the bundled assets, the folders listed in
``VST_DATA_DIRS`` (separated by ``os.pathsep``) and those given at start-up
(``streamlit run app.py -- --data FOLDER``). :func:`confine` never touches the file, so a refused
path reveals nothing about what exists outside.

What resolving cannot see, opening does: :func:`open_confined` refuses a final symbolic link and
anything but a regular file (a FIFO never blocks it), then checks that the file it opened still
lies inside an allowed folder, so a file or a folder swapped for a link after :func:`confine` is
refused, and what is read is what was checked. :func:`probe` says why a path cannot be used
instead of raising. Messages are for visitors: they name the setting and the fix, never a server
folder; the details are logged (this module's logger) for whoever runs the dashboard.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

logger = logging.getLogger(__name__)

#: Longest name between two separators and longest path, in bytes (Linux's NAME_MAX and
#: PATH_MAX): longer values are refused before the file system sees them.
NAME_MAX = 255
PATH_MAX = 4096
#: Longest typed value a message echoes back (a longer one is described by its length).
SHOWN_CHARS = 80
#: What a visitor can do about a path outside the allowed folders.
#: The start-up command is one code span (`quoted`: the page shows it exactly, never as markup) and
#: the option one word, ``--data=FOLDER``, so it is copied whole.
START_COMMAND = "python -m streamlit run app.py -- --data=FOLDER"
FIX = (
    "upload the file instead, or ask whoever runs the dashboard to allow its folder: start it with "
    f"`{START_COMMAND}`, or list the folder in VST_DATA_DIRS"
)
#: What a visitor can ask for: a regular file, a folder, or either (a model folder or file).
Want = Literal["file", "folder", "any"]

_SEPARATORS = re.compile(rb"[/\\]" if os.altsep else rb"/")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
_REASONS = {
    errno.ENOENT: "not found",
    errno.ENOTDIR: "not found (a part of the path is not a folder)",
    errno.EACCES: "cannot be read (permission denied)",
    errno.EPERM: "cannot be read (permission denied)",
    errno.ENAMETOOLONG: "has a name too long for the file system",
    errno.ELOOP: "leads through a loop of symbolic links",
    errno.EISDIR: "is a folder, not a file",
    errno.ENXIO: "is a device or socket, not a file",
}


class PathNotAllowed(ValueError):
    """A typed path the dashboard will not read: outside every allowed folder, or unusable there
    (missing, not a regular file, unreadable, too large). The message is for the page; ``why``
    says the reason alone (``not found``), for a caller that words its own message."""

    def __init__(self, message: str, why: str = "") -> None:
        super().__init__(message)
        self.why = why or message


class FileIdentity(NamedTuple):
    """What tells a file from another without reading it: device, inode, size, modification and
    status-change time of an opened descriptor (a file swapped or rewritten since has another; the
    ctime too, which no one can set back: a same-size rewrite with its mtime restored by ``cp -p``
    or ``rsync -t`` still changes it)."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int = 0

    @classmethod
    def of(cls, info: os.stat_result) -> FileIdentity:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


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


def shown(value: str) -> str:
    """A typed value as a message may echo it: quoted when short and printable, else its length only."""
    if len(value) <= SHOWN_CHARS and value.isprintable():
        return repr(value)
    return f"({len(value):,} characters)"


def unnameable(value: str) -> str | None:
    """Why no file system could name ``value`` (a NUL byte, text it cannot encode, a name over
    :data:`NAME_MAX` or a path over :data:`PATH_MAX` bytes), or None. Touches nothing."""
    if "\x00" in value:
        return "holds a NUL byte"
    try:
        raw = os.fsencode(value)
    except UnicodeError:
        return "holds characters a file name cannot have"
    if len(raw) > PATH_MAX:
        return f"is too long for a path (at most {PATH_MAX:,} bytes)"
    if any(len(part) > NAME_MAX for part in _SEPARATORS.split(raw)):
        return f"has a name longer than {NAME_MAX} bytes between two '/'"
    return None


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` (resolved) lies in one of ``roots`` (resolved)."""
    return any(path.is_relative_to(root) for root in roots)


def confine(value: str, roots: Sequence[Path], *, what: str = "path") -> Path:
    """``value`` as a resolved path inside one of ``roots`` (relative values are taken from the
    first root, the working directory). PathNotAllowed otherwise (see :func:`unnameable`, a path
    that cannot be resolved, one outside every root): the message names ``what`` and the fix,
    never a root; the refusal is logged with the roots."""
    why = unnameable(value)
    if why is not None:
        raise PathNotAllowed(f"{what} {why}")
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~name of no user
        raise PathNotAllowed(f"{what} {shown(value)} starts with an unknown home folder") from None
    try:
        resolved = (path if path.is_absolute() else roots[0] / path).resolve()
    except RuntimeError:  # Python 3.11's resolve() on a loop of links
        raise PathNotAllowed(f"{what} {shown(value)} leads through a loop of symbolic links") from None
    except OSError as exc:
        raise PathNotAllowed(f"{what} {shown(value)} {reason(exc)}") from None
    except ValueError:
        raise PathNotAllowed(f"{what} {shown(value)} is not a valid file name") from None
    if unnameable(str(resolved)) is not None:
        raise PathNotAllowed(f"{what} {shown(value)} is too long for a path once its links are followed")
    if inside(resolved, roots):
        return resolved
    logger.warning("refused %s %r: %s is outside the allowed folders %s", what, value[:300], resolved, list(map(str, roots)))
    raise PathNotAllowed(f"{what} {shown(value)} is outside the folders this dashboard may read; {FIX}")


def reason(exc: OSError) -> str:
    """An OS error on a typed path in words for a message (never the path the error carries)."""
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    return f"cannot be read ({os.strerror(exc.errno) if exc.errno else type(exc).__name__})"


def _kind_reason(mode: int, want: Want) -> str | None:
    """Why a file of ``mode`` is not what is wanted, or None."""
    if stat.S_ISDIR(mode):
        return "is a folder, not a file" if want == "file" else None
    if stat.S_ISREG(mode):
        return "is a file, not a folder" if want == "folder" else None
    return "is not a regular file (a FIFO, a device or a socket)"


def probe(path: str | Path, want: Want = "file", *, missing_ok: bool = False) -> str | None:
    """Why ``path`` cannot be used as ``want`` (a regular file, a folder, or either), in words for a
    message (``not found``, ``is a folder, not a file``, ...), or None when it can. Never raises:
    every OS error (a name too long, a permission, a loop of links) is a reason. Links are followed.
    ``missing_ok``: a path that does not exist is no reason (a name a loader may find elsewhere)."""
    why = unnameable(str(path))
    if why is not None:
        return why
    try:
        info = os.stat(path)
    except OSError as exc:
        return None if missing_ok and exc.errno in (errno.ENOENT, errno.ENOTDIR) else reason(exc)
    except ValueError:
        return "is not a valid file name"
    why = _kind_reason(info.st_mode, want)
    if why is not None:
        return why
    readable = os.R_OK | (os.X_OK if stat.S_ISDIR(info.st_mode) else 0)
    return None if os.access(path, readable) else "cannot be read (permission denied)"


def open_regular(path: str | Path, *, follow: bool = True, what: str = "file") -> io.BufferedReader:
    """``path`` opened for reading when it is a regular file, checked on the opened descriptor (what
    is read is what was checked). A FIFO or a device is refused without blocking; ``follow=False``
    refuses a final symbolic link too. PathNotAllowed naming ``what`` and the reason otherwise."""
    name = shown(Path(path).name)
    flags = _OPEN_FLAGS if not follow else _OPEN_FLAGS & ~getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        link = "is a symbolic link now (it changed after it was checked)"
        why = link if not follow and exc.errno == errno.ELOOP else reason(exc)
        raise PathNotAllowed(f"{what} {why}: {name}", why) from None
    except ValueError:
        raise PathNotAllowed(f"{what} is not a valid file name", "is not a valid file name") from None
    try:
        kind = _kind_reason(os.fstat(fd).st_mode, "file")
        if kind is not None:
            raise PathNotAllowed(f"{what} {kind}: {name}", kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def opened_path(fd: int, path: str | Path) -> Path | None:
    """Where the file open as ``fd`` lies, links resolved: from ``/proc`` on Linux, else the
    resolved ``path`` when it still names that very file (device and inode); None when unknown."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        real = os.path.realpath(path)
        found, held = os.stat(real), os.fstat(fd)
    except (OSError, ValueError):
        return None
    return Path(real) if (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino) else None


def open_confined(path: str | Path, roots: Sequence[Path], *, what: str = "file") -> io.BufferedReader:
    """``path`` (as :func:`confine` returned it) opened for reading, refused unless it is still a
    regular file inside ``roots`` once open: no final link, and the opened file's real path checked
    (a file or a parent folder swapped for a link after the check is refused). Read from the
    returned file, never by the path again. PathNotAllowed, with a message for the page, otherwise."""
    fh = open_regular(path, follow=False, what=what)
    try:
        real = opened_path(fh.fileno(), path)
        if real is None or not inside(real, roots):
            logger.warning("refused %s %s: opened %s, outside the allowed folders %s", what, path, real, list(map(str, roots)))
            raise PathNotAllowed(
                f"{what} {shown(Path(path).name)} is no longer inside the folders this dashboard may read "
                "(it changed after it was checked); load it again"
            )
        return fh
    except BaseException:
        fh.close()
        raise


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, from its ``st_mode``.

    >>> import os; file_kind(os.stat("/dev/null").st_mode)
    'a device'
    """
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
