"""A story set made in the browser: uploaded images of one sequence and pasted stories."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import Any

from vst_core.data.readers import story_from_record
from vst_core.data.types import Splitter, StorySet

MAX_UPLOAD_IMAGES = 20


def story_set_from_upload(
    images: list[tuple[str, bytes]],
    stories_text: str,
    folder: Path,
    *,
    max_images: int = MAX_UPLOAD_IMAGES,
    splitter: Splitter | None = None,
) -> tuple[StorySet | None, list[str]]:
    """One image sequence from uploaded images (in upload order) and pasted stories.

    Each non-empty line of ``stories_text`` is a candidate, optionally ``system: text``; its
    sentences are split on ``|`` when present, else by the sentence splitter. Files that are not
    images are reported and left out; at most ``max_images`` images are used. Returns the set
    (None when nothing usable) and messages for the user.
    """
    messages: list[str] = []
    kept = save_images(images, folder, max_images, messages)
    if not kept:
        messages.append("upload at least one image (JPEG, PNG, ...) to make an image sequence")
        return None, messages
    records = pasted_stories(stories_text, kept)
    if not records:
        messages.append("paste at least one story, one per line (optionally 'system: ...'; '|' between sentences)")
        return None, messages
    stories = [story_from_record(r, root=folder, splitter=splitter, fallback_id=r["story_id"]) for r in records]
    return StorySet(tuple(stories), folder, "upload", ()), messages


def save_images(images: list[tuple[str, bytes]], folder: Path, max_images: int, messages: list[str]) -> list[str]:
    """Write the files Pillow can read into ``folder`` as ``NN_name`` (in order); report the others."""
    from PIL import Image, UnidentifiedImageError

    from vst_core.images import ImageBudgetError, check_bytes, reduction

    folder.mkdir(parents=True, exist_ok=True)
    kept: list[str] = []
    for name, data in images:
        safe = Path(name).name or "image"
        try:
            check_bytes(len(data), "the file")
            with Image.open(BytesIO(data)) as im:
                reduction(im.size, im.format)
                im.verify()
        except ImageBudgetError as exc:
            messages.append(f"{safe} is over the memory budget ({exc}); left out")
            continue
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            messages.append(f"{safe} is not an image Pillow can read ({type(exc).__name__}); left out")
            continue
        if len(kept) == max_images:
            messages.append(
                f"{len(images)} files uploaded: a sequence takes at most {max_images} images, the first {max_images} are used"
            )
            break
        target = f"{len(kept) + 1:02d}_{safe}"
        (folder / target).write_bytes(data)
        kept.append(target)
    return kept


def pasted_stories(text: str, images: list[str]) -> list[dict[str, Any]]:
    """Story-set objects from pasted lines: ``[system:] sentence | sentence | ...`` or plain text."""
    records = []
    for number, line in enumerate(raw.strip() for raw in text.splitlines()):
        if not line:
            continue
        system, sep, body = line.partition(":")
        if not sep or " " in system.strip() or not system.strip():
            system, body = f"candidate-{number + 1}", line
        record: dict[str, Any] = {
            "story_id": f"upload-{number + 1}",
            "system": system.strip(),
            "sequence_id": "upload",
            "images": images,
        }
        if "|" in body:
            record["sentences"] = [t.strip() for t in body.split("|") if t.strip()]
        else:
            record["text"] = body.strip()
        records.append(record)
    return records


# ---------------------------------------------------------------- a story file with its images

STORY_SUFFIXES = (".json", ".jsonl")
#: Limits of one upload: members of a zip considered, bytes written in all.
MAX_ZIP_MEMBERS = 50_000
MAX_UPLOAD_BYTES = 4 * 1024**3


@dataclass
class _Entry:
    """One uploaded file (or zip member): its path as uploaded and a reader of its bytes."""

    name: str
    size: int
    read: Callable[[], bytes]
    loose: bool  # a file chosen on its own (the browser keeps only its base name)


def _clean(name: str) -> str | None:
    """A zip member's name as a safe relative POSIX path, or None (absolute, '..', empty)."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts or any("\x00" in p for p in parts):
        return None
    return "/".join(parts)


def _entries(files: list[tuple[str, bytes]], messages: list[str]) -> list[_Entry]:
    """Loose files and the members of uploaded zips (unsafe names and macOS metadata left out)."""
    entries: list[_Entry] = []
    unsafe = 0
    for name, data in files:
        if not name.lower().endswith(".zip"):
            entries.append(_Entry(Path(name).name, len(data), lambda d=data: d, True))  # type: ignore[misc]
            continue
        try:
            archive = zipfile.ZipFile(BytesIO(data))
            infos = archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            messages.append(f"{Path(name).name} is not a readable zip ({exc}); left out")
            continue
        if len(infos) > MAX_ZIP_MEMBERS:
            messages.append(f"{Path(name).name} holds {len(infos)} files; only the first {MAX_ZIP_MEMBERS} are considered")
        for info in infos[:MAX_ZIP_MEMBERS]:
            clean = _clean(info.filename)
            if info.is_dir() or (clean or "").startswith("__MACOSX/"):
                continue
            if clean is None:
                unsafe += 1
                continue
            entries.append(_Entry(clean, info.file_size, lambda a=archive, i=info: a.read(i), False))  # type: ignore[misc]
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


def _write_limited(target: Path, entry: _Entry, written: list[int]) -> str | None:
    """Write one entry under the byte budgets; why not, if not."""
    from vst_core.images import ImageBudgetError, check_bytes

    try:
        check_bytes(entry.size, entry.name)
    except ImageBudgetError as exc:
        return str(exc)
    if written[0] + entry.size > MAX_UPLOAD_BYTES:
        return f"the upload is over {MAX_UPLOAD_BYTES / 2**30:.0f} GiB unpacked"
    try:
        data = entry.read()  # a zip member is read up to its declared size, then its CRC is checked
    except _ZIP_READ_ERRORS as exc:
        return f"{entry.name} cannot be read from its zip ({type(exc).__name__}: {exc})"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    written[0] += len(data)
    return None


def place_upload(
    files: list[tuple[str, bytes]],
    folder: Path,
    refs_of: Callable[[Path], list[str]],
    *,
    suffixes: tuple[str, ...] = STORY_SUFFIXES,
    what: str = "story file",
) -> tuple[Path | None, str | None, list[str]]:
    """Write one uploaded data file and its images under ``folder``: (its path, whole-upload error,
    messages).

    ``files`` are (name, bytes): one file ending in ``suffixes`` and its images, chosen one by one or
    packed in ``.zip`` files. Inside a zip, paths are taken relative to the data file's folder, as
    the file names them; a file chosen on its own matches the image of the same base name when
    only one does. ``refs_of(path)`` lists the image paths the written file names; each image is
    written at that path under ``folder`` (never outside it). Images named but not uploaded are
    listed once in ``messages``.
    """
    from vst_core.data.paths import IMAGE_SUFFIXES, ImagePathError, resolve_image

    messages: list[str] = []
    entries = _entries(files, messages)
    main, error = _main_entry(entries, suffixes, what)
    if main is None:
        return None, error, messages
    base = PurePosixPath(main.name).parent
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PurePosixPath(main.name).name
    try:
        path.write_bytes(main.read())
    except _ZIP_READ_ERRORS as exc:
        return None, f"{main.name} cannot be read from its zip ({type(exc).__name__}: {exc})", messages
    images = [e for e in entries if e.name.lower().endswith(IMAGE_SUFFIXES)]
    written, refused = [0], []
    for entry in images:  # zip members at their path relative to the data file, loose files beside it
        relative = PurePosixPath(entry.name)
        if not entry.loose and base != PurePosixPath("."):
            if not relative.is_relative_to(base):
                continue
            relative = relative.relative_to(base)
        why = _write_limited(folder / relative, entry, written)
        if why:
            refused.append(why)
    loose: dict[str, list[_Entry]] = {}
    for entry in images:
        if entry.loose:
            loose.setdefault(entry.name, []).append(entry)
    named = sorted(set(refs_of(path)))
    missing = []
    for ref in named:
        try:
            target = resolve_image(folder, ref)
        except ImagePathError:
            continue  # reported as a problem of its story
        if target.is_file():
            continue
        candidates = loose.get(PurePosixPath(ref).name, [])
        why = _write_limited(target, candidates[0], written) if len(candidates) == 1 else "absent"
        if why != "absent" and why:
            refused.append(why)
        if why:
            missing.append(ref)
    if refused:
        messages.append(f"{len(refused)} image(s) not used: " + "; ".join(refused[:3]) + ("; …" if len(refused) > 3 else ""))
    if missing and images:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        messages.append(f"{len(missing)} of {len(named)} images the {what} names were not in the upload ({shown})")
    elif named and not images:
        messages.append(
            f"the {what} names {len(named)} images: upload them with it (several files, or a .zip) to see them and score grounding"
        )
    return path, None, messages


def story_set_from_files(
    files: list[tuple[str, bytes]], folder: Path, *, splitter: Splitter | None = None
) -> tuple[StorySet | None, str | None, list[str]]:
    """A story file (JSON, JSONL or VIST) uploaded with its images (see :func:`place_upload`): (set,
    whole-upload error, messages); the set is read with its images checked, so a missing or broken
    image is a problem of its story."""
    from vst_core.data.readers import read_story_set
    from vst_core.data.types import StorySetError

    def refs_of(path: Path) -> list[str]:
        try:
            return [ref for story in read_story_set(path, splitter=splitter, check_images=False) for ref in story.images]
        except StorySetError:
            return []

    path, error, messages = place_upload(files, folder, refs_of)
    if path is None:
        return None, error, messages
    try:
        return read_story_set(path, splitter=splitter, check_images=True), None, messages
    except StorySetError as exc:
        return None, str(exc).replace(str(folder) + "/", ""), messages
