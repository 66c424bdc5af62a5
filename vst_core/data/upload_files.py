"""Uploaded files written to disk within limits: one data file (a story or scores file) and the
images it names, loose or packed in ``.zip`` files, each streamed and counted in ``CHUNK`` pieces
(a zip member's declared size is never trusted, and no member is held whole in memory); a file
that crosses a limit is stopped there and its partial copy removed:

* the story or scores file, zipped or not: at most 200 MiB (``VST_MAX_DATA_FILE_BYTES``), the size
  of Streamlit's default upload limit, so a zipped file weighs what a loose one may;
* one image: ``VST_MAX_IMAGE_BYTES`` (100 MiB, :mod:`vst_core.data.images`), and its first bytes must be
  those of a JPEG, PNG, GIF, WebP, BMP or TIFF; only the images the data file names are unpacked;
* one upload, and one session's folder: 1 GiB in all (``VST_MAX_UPLOAD_BYTES``); the server's
  upload folders together (every ``vst-upload-*`` folder beside the session's): 8 GiB
  (``VST_MAX_SERVER_UPLOAD_BYTES``); measured when an upload starts;
* a zip member may unpack to at most 200 times the packed bytes it has read (checked from its
  first MiB on), must be stored or deflated (other methods inflate a whole read at once), and a zip
  holds at most 10,000 files, counted from its end record before its list of files is parsed.

Each refusal is one message: the file, the limit, what to do. :mod:`vst_core.data.uploads` makes
story sets of what is written here.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import IO

from vst_core.data.paths import IMAGE_SUFFIXES
from vst_core.data.sizes import size_text

#: ``progress(done, total)``: images of the upload written so far, of those its data file names.
Progress = Callable[[int, int], object]

STORY_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".parquet")  # a story set, or VWP's release as a table
#: The name every session's upload folder starts with (the dashboard's temporary folders).
SESSION_PREFIX = "vst-upload-"
#: Members one zip may hold (its central directory is measured before it is parsed).
MAX_ZIP_MEMBERS = 10_000
#: Bytes of central directory allowed per member: a fixed 46-byte record, the name, extra fields.
_DIRECTORY_BYTES_PER_MEMBER = 512
DEFAULT_MAX_DATA_FILE_BYTES = 200 * 2**20
DEFAULT_MAX_UPLOAD_BYTES = 2**30
DEFAULT_MAX_SERVER_BYTES = 8 * 2**30
#: Unpacked over packed bytes of a zip member, once it has unpacked ``RATIO_FLOOR`` bytes.
MAX_RATIO = 200
RATIO_FLOOR = 2**20
#: Bytes read from a member at a time; a deflated member never holds more than this in memory.
CHUNK = 64 * 2**10
#: Refusals listed one by one; the rest are counted in one line.
_SHOWN = 10
_IMAGE_MAGIC = (
    b"\xff\xd8\xff",
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",
    b"MM\x00*",
    b"II+\x00",
    b"MM\x00+",
)
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}  # others (bzip2, LZMA) unpack a whole read at once


@dataclass(frozen=True)
class UploadBudget:
    """What one upload may unpack, in real (decompressed) bytes counted while streaming.

    ``data_file``: the story or scores file, zipped or not; ``image``: one image file; ``upload``:
    everything one upload writes; ``session``: everything in the session's folder; ``server``: all
    session folders together; ``ratio``: unpacked over packed bytes of a zip member (checked once it
    has unpacked ``ratio_floor`` bytes); ``members``: files in one zip.
    """

    data_file: int = DEFAULT_MAX_DATA_FILE_BYTES
    image: int = 100 * 2**20
    upload: int = DEFAULT_MAX_UPLOAD_BYTES
    session: int = DEFAULT_MAX_UPLOAD_BYTES
    server: int = DEFAULT_MAX_SERVER_BYTES
    ratio: float = MAX_RATIO
    ratio_floor: int = RATIO_FLOOR
    members: int = MAX_ZIP_MEMBERS

    @classmethod
    def from_env(cls) -> UploadBudget:
        """The defaults, with the environment variables of the module's docstring applied."""
        from vst_core.data.images import env_int, max_bytes

        upload = env_int("VST_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES)
        return cls(
            data_file=env_int("VST_MAX_DATA_FILE_BYTES", DEFAULT_MAX_DATA_FILE_BYTES),
            image=max_bytes(),
            upload=upload,
            session=upload,
            server=env_int("VST_MAX_SERVER_UPLOAD_BYTES", DEFAULT_MAX_SERVER_BYTES),
        )


class _Refused(Exception):
    """A file left out; the message says which, the limit and what to do. ``final``: the upload's
    allowance is spent, so nothing after it is unpacked."""

    def __init__(self, message: str, *, final: bool = False) -> None:
        super().__init__(message)
        self.final = final


class _CountingBytes(BytesIO):
    """An uploaded zip's bytes, counting what is read from them (the packed bytes unpacked so far)."""

    consumed = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.consumed += len(data)
        return data


@dataclass
class _Entry:
    """One uploaded file (or zip member): its path as uploaded and how to stream its bytes."""

    name: str
    open: Callable[[], IO[bytes]]
    loose: bool  # a file chosen on its own (the browser keeps only its base name)
    packed: int = 0  # a member's compressed size as its zip declares it (0: a loose file)
    consumed: Callable[[], int] = lambda: 0  # bytes read from its zip so far
    method: int = zipfile.ZIP_STORED


def _clean(name: str) -> str | None:
    """A zip member's name as a safe relative POSIX path, or None (absolute, '..', empty)."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts or any("\x00" in p for p in parts):
        return None
    return "/".join(parts)


def _directory(data: bytes) -> tuple[int, int] | None:
    """(members, central directory bytes) of a zip's end record, found as zipfile finds it, read
    before zipfile parses the directory; None when there is none (not a zip)."""
    at = len(data) - 22
    if at < 0 or data[at : at + 4] != b"PK\x05\x06" or data[-2:] != b"\x00\x00":
        at = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 2**16))
    if at < 0 or len(data) < at + 22:
        return None
    members, size = int.from_bytes(data[at + 10 : at + 12], "little"), int.from_bytes(data[at + 12 : at + 16], "little")
    if at >= 20 and data[at - 20 : at - 16] == b"PK\x06\x07":  # ZIP64: its end record comes before the locator
        record = at - 20 - 56
        if record < 0 or data[record : record + 4] != b"PK\x06\x06":
            return None
        members = int.from_bytes(data[record + 32 : record + 40], "little")
        size = int.from_bytes(data[record + 40 : record + 48], "little")
    return members, size


def _zip_entries(name: str, data: bytes, members: int, messages: list[str]) -> tuple[list[_Entry], int]:
    """The members of one uploaded zip (folders and macOS metadata left out), and how many had an
    unsafe name; a zip over ``members`` files is refused whole, before its directory is parsed."""
    shown = Path(name).name
    declared = _directory(data)
    if declared is None:
        messages.append(f"{shown} is not a readable zip (no end of its list of files); left out")
        return [], 0
    if declared[0] > members or declared[1] > members * _DIRECTORY_BYTES_PER_MEMBER:
        count = f"{declared[0]:,} files" if declared[0] > members else f"a {size_text(declared[1])} list of files"
        messages.append(
            f"{shown} left out: it holds {count}, over the limit of {members:,} files per zip; split it into several zips"
        )
        return [], 0
    reader = _CountingBytes(data)
    try:
        archive = zipfile.ZipFile(reader)
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        messages.append(f"{shown} is not a readable zip ({exc}); left out")
        return [], 0
    if len(infos) > members:
        messages.append(f"{shown} holds {len(infos):,} files; only the first {members:,} are considered")
    entries, unsafe = [], 0
    for info in infos[:members]:
        clean = _clean(info.filename)
        if info.is_dir() or (clean or "").startswith("__MACOSX/"):
            continue
        if clean is None:
            unsafe += 1
            continue
        opener = lambda a=archive, i=info: a.open(i)
        entries.append(_Entry(clean, opener, False, info.compress_size, lambda: reader.consumed, info.compress_type))
    return entries, unsafe


def _entries(files: list[tuple[str, bytes]], messages: list[str], members: int = MAX_ZIP_MEMBERS) -> list[_Entry]:
    """Loose files and the members of uploaded zips (unsafe names and macOS metadata left out)."""
    entries: list[_Entry] = []
    unsafe = 0
    for name, data in files:
        if not name.lower().endswith(".zip"):
            entries.append(_Entry(Path(name).name, lambda d=data: BytesIO(d), True))  # type: ignore[misc]
            continue
        found, bad = _zip_entries(name, data, members, messages)
        entries.extend(found)
        unsafe += bad
    if unsafe:
        messages.append(f"{unsafe} zip member(s) with an absolute or '..' path; left out")
    return entries


def _main_entry(entries: list[_Entry], suffixes: tuple[str, ...], what: str) -> tuple[_Entry | None, str | None]:
    found = [e for e in entries if e.name.lower().endswith(suffixes)]
    if not found:
        return None, f"no {what} ({' or '.join(suffixes)}) among the uploaded files"
    if len(found) > 1:
        shown = ", ".join(e.name for e in found[:5])
        return None, f"{len(found)} {what}s uploaded ({shown}); upload one {what} (with its images) at a time"
    return found[0], None


#: What reading a zip member can raise: a bad CRC or header, an unsupported compression method, an
#: encrypted member, truncated or corrupt compressed data.
_ZIP_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError)


def _tree_bytes(root: Path) -> int:
    """Bytes of the regular files under ``root`` (links not followed; what vanishes meanwhile is skipped)."""
    total, stack = 0, [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as items:
                for item in items:
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.is_file(follow_symlinks=False):
                        total += item.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


@dataclass
class UploadMeter:
    """Bytes one upload may still write: the least of what is left of its own, its session's and
    the server's budgets, measured when it starts; ``words`` names the one that binds."""

    left: int
    words: str
    advice: str


def session_meter(folder: Path, budget: UploadBudget) -> UploadMeter:
    """The allowance of an upload into ``folder``. The session and server budgets apply when
    ``folder`` lies in a session folder (the first one up named ``SESSION_PREFIX*``): the session
    counts what that folder holds, the server what all its siblings of that prefix hold."""
    options = [
        (budget.upload, f"the {size_text(budget.upload)} one upload may unpack", "upload fewer or smaller images at a time")
    ]
    session = next((p for p in (folder, *folder.parents) if p.name.startswith(SESSION_PREFIX)), None)
    if session is not None:
        held = _tree_bytes(session)
        options.append(
            (
                budget.session - held,
                f"the {size_text(budget.session)} one session may hold",
                "remove the upload or open the dashboard in a new tab",
            )
        )
        used = sum(_tree_bytes(p) for p in session.parent.glob(f"{SESSION_PREFIX}*") if p.is_dir())
        options.append(
            (budget.server - used, f"the {size_text(budget.server)} this server keeps for all uploads", "try again later")
        )
    left, words, advice = min(options, key=lambda o: o[0])
    return UploadMeter(max(left, 0), words, advice)


def _is_image(head: bytes) -> bool:
    """Whether the first bytes of a file are those of a JPEG, PNG, GIF, WebP, BMP or TIFF."""
    return head.startswith(_IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def _check(name: str, done: int, packed: int, cap: tuple[int, str, str], meter: UploadMeter, budget: UploadBudget) -> None:
    """_Refused when ``done`` unpacked bytes cross the file's ``cap`` (bytes, limit, advice), the
    upload's allowance, or ``budget.ratio`` times ``packed``, the packed bytes read so far (0: a
    loose file, no ratio)."""
    if done > meter.left and meter.left < cap[0]:
        raise _Refused(
            f"{name} left out: it unpacks to more than {meter.words} ({size_text(meter.left)} left); {meter.advice}", final=True
        )
    if done > cap[0]:
        raise _Refused(f"{name} left out: it unpacks to more than {size_text(cap[0])}, {cap[1]}; {cap[2]}")
    if packed and done >= budget.ratio_floor and done > budget.ratio * packed:
        raise _Refused(
            f"{name} left out: it unpacks to more than {budget.ratio:g} times its packed size, the limit for a zip "
            "member (the mark of a zip bomb); upload it on its own, not zipped"
        )


def _copy(entry: _Entry, target: Path, meter: UploadMeter, budget: UploadBudget, cap: tuple[int, str, str], image: bool) -> None:
    """Stream ``entry`` to ``target`` in ``CHUNK`` pieces, counting the bytes it really unpacks to
    (never its declared size) against ``cap`` and the upload's allowance, which it then uses up;
    an image must start like one. _Refused, the partial file removed, when it cannot be kept.

    The packed bytes a member has read bound its ratio from below: the bytes read from its zip
    since it was opened (read ahead by at most ``CHUNK``), and its declared packed size (zipfile
    never reads past it)."""
    if entry.method not in _METHODS:
        raise _Refused(
            f"{entry.name} left out: it is packed with a method other than deflate; zip it again with the usual compression"
        )
    start, done = entry.consumed(), 0
    try:
        source = entry.open()
    except _ZIP_READ_ERRORS as exc:
        raise _Refused(f"{entry.name} cannot be read from its zip ({type(exc).__name__}: {exc}); left out") from None
    with source:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                while chunk := _read(entry, source):
                    if not done and image and not _is_image(chunk[:16]):
                        break
                    done += len(chunk)
                    _check(entry.name, done, min(entry.packed, entry.consumed() - start), cap, meter, budget)
                    out.write(chunk)
            if image and not done:
                raise _Refused(
                    f"{entry.name} left out: it is not an image (JPEG, PNG, GIF, WebP, BMP or TIFF, by its first bytes)"
                )
        except _Refused:
            _remove(target)
            raise
        except OSError as exc:
            _remove(target)
            raise _Refused(
                f"{entry.name} could not be written on the server ({exc.strerror or type(exc).__name__})", final=True
            ) from None
    meter.left -= done


def _read(entry: _Entry, source: IO[bytes]) -> bytes:
    """The next chunk of a member; _Refused when its zip cannot give it."""
    try:
        return source.read(CHUNK)
    except _ZIP_READ_ERRORS as exc:
        raise _Refused(f"{entry.name} cannot be read from its zip ({type(exc).__name__}: {exc}); left out") from None


def _remove(path: Path) -> None:
    """Delete a partly written file (nothing when it is not one)."""
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        pass


def _sources(images: list[_Entry], base: PurePosixPath) -> tuple[dict[str, _Entry], dict[str, list[_Entry]]]:
    """Image-named zip members by their path relative to the data file's folder (members outside it
    left out), and loose images by name."""
    members: dict[str, _Entry] = {}
    loose: dict[str, list[_Entry]] = {}
    for entry in images:
        if entry.loose:
            loose.setdefault(entry.name, []).append(entry)
            continue
        relative = PurePosixPath(entry.name)
        if base != PurePosixPath("."):
            if not relative.is_relative_to(base):
                continue
            relative = relative.relative_to(base)
        members[relative.as_posix()] = entry
    return members, loose


def _place_images(
    refs: list[str],
    images: list[_Entry],
    base: PurePosixPath,
    folder: Path,
    meter: UploadMeter,
    budget: UploadBudget,
    progress: Progress | None = None,
) -> tuple[list[str], list[str]]:
    """Write the images ``refs`` name, each at its path under ``folder``, from the zip member at
    that path relative to the data file's folder, else the one loose file of that name; nothing
    else is unpacked. Returns the refs found in no file, and the refusals' messages (the first
    ``_SHOWN`` one by one, the rest counted; one that spends the allowance ends the list and the
    unpacking). ``progress(done, len(refs))`` is called after each ref, from ``(0, len(refs))`` on."""
    from vst_core.data.paths import ImagePathError, resolve_image

    members, loose = _sources(images, base)
    root = folder.resolve()
    cap = (budget.image, "the limit for one image (VST_MAX_IMAGE_BYTES raises it)", "upload a smaller image")
    missing: list[str] = []
    refused: list[str] = []
    if progress is not None:
        progress(0, len(refs))
    for number, ref in enumerate(refs):
        if progress is not None and number:
            progress(number, len(refs))
        try:
            target = resolve_image(folder, ref)
        except ImagePathError:
            continue  # reported as a problem of its story
        if target.is_file():
            continue
        key = target.relative_to(root).as_posix()
        candidates = [members[key]] if key in members else loose.get(target.name, [])
        if len(candidates) != 1:
            missing.append(ref)
            continue
        try:
            _copy(candidates[0], target, meter, budget, cap, image=True)
        except _Refused as exc:
            if exc.final:
                after = len(refs) - number - 1
                return missing, [
                    *_capped(refused),
                    str(exc) + (f"; the {after} images named after it were not unpacked" if after else ""),
                ]
            refused.append(str(exc))
    if progress is not None and refs:
        progress(len(refs), len(refs))
    return missing, _capped(refused)


def _capped(refused: list[str]) -> list[str]:
    """The first ``_SHOWN`` refusals one by one, the rest counted in one message."""
    if len(refused) <= _SHOWN:
        return refused
    return [*refused[:_SHOWN], f"{len(refused) - _SHOWN} more images left out for the reasons above"]


def place_upload(
    files: list[tuple[str, bytes]],
    folder: Path,
    refs_of: Callable[[Path], list[str]],
    *,
    suffixes: tuple[str, ...] = STORY_SUFFIXES,
    what: str = "story file",
    budget: UploadBudget | None = None,
    progress: Progress | None = None,
) -> tuple[Path | None, str | None, list[str]]:
    """Write one uploaded data file and the images it names under ``folder``: (its path,
    whole-upload error, messages).

    ``files`` are (name, bytes): one file ending in ``suffixes`` and its images, chosen one by one or
    packed in ``.zip`` files. The data file is written first, then ``refs_of(path)`` lists the image
    paths it names, and only those are unpacked, each at that path under ``folder`` (never outside
    it): inside a zip, paths are taken relative to the data file's folder; a file chosen on its own
    matches the image of the same base name when only one does. Every file is streamed and counted
    in the bytes it really unpacks to, within ``budget`` (:meth:`UploadBudget.from_env` when None):
    a data file over its limit is the whole-upload error; an image over a limit, packed beyond the
    ratio or not an image by its first bytes is left out with one message. Images named but not
    uploaded are listed once in ``messages``. Messages never hold server paths. ``progress(done,
    total)`` counts the named images as they are unpacked (``total``: how many the file names).
    """
    budget = budget or UploadBudget.from_env()
    messages: list[str] = []
    entries = _entries(files, messages, budget.members)
    main, error = _main_entry(entries, suffixes, what)
    if main is None:
        return None, error, messages
    folder.mkdir(parents=True, exist_ok=True)
    meter = session_meter(folder, budget)
    path = folder / PurePosixPath(main.name).name
    cap = (
        budget.data_file,
        f"the limit for a {what} (VST_MAX_DATA_FILE_BYTES raises it)",
        f"upload a smaller {what} or split it",
    )
    try:
        _copy(main, path, meter, budget, cap, image=False)
    except _Refused as exc:
        return None, str(exc), messages
    images = [e for e in entries if e.name.lower().endswith(IMAGE_SUFFIXES)]
    named = sorted(set(refs_of(path)))
    missing, refused = _place_images(named, images, PurePosixPath(main.name).parent, folder, meter, budget, progress)
    messages.extend(refused)
    if missing and images:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        messages.append(f"{len(missing)} of {len(named)} images the {what} names were not in the upload ({shown})")
    elif named and not images:
        messages.append(
            f"the {what} names {len(named)} images: upload them with it (several files, or a .zip) to see them and score grounding"
        )
    return path, None, messages
