"""A story set made in the browser: uploaded images of one sequence and pasted stories, or a story
(or scores) file uploaded with its images, loose or packed in ``.zip`` files, written to disk
within the limits of :mod:`vst_core.data.upload_files` (which every upload goes through)."""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any, Literal

from vst_core.data.readers import story_from_record
from vst_core.data.types import Splitter, StorySet
from vst_core.data.upload_files import (  # noqa: F401 - the upload API, here as before
    CHUNK,
    SESSION_PREFIX,
    STORY_SUFFIXES,
    UploadBudget,
    place_upload,
    session_meter,
)

MAX_UPLOAD_IMAGES = 20

#: ``progress(step, done, total)`` while an upload is read: ``"images"`` counts the images the story
#: file names as they are unpacked, ``"stories"`` goes from (0, 1) to (1, 1) around reading the
#: story file with its images checked.
UploadProgress = Callable[[Literal["images", "stories"], int, int], object]


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
    """Write the files Pillow can read into ``folder`` as ``NN_name`` (in order), within the upload,
    session and server budgets (:class:`UploadBudget`); report the others."""
    from PIL import Image, UnidentifiedImageError

    from vst_core.data.images import ImageBudgetError, check_bytes, reduction

    folder.mkdir(parents=True, exist_ok=True)
    meter = session_meter(folder, UploadBudget.from_env())
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
        if len(data) > meter.left:
            messages.append(f"{safe} and the images after it left out: {meter.words} is used up; {meter.advice}")
            break
        meter.left -= len(data)
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


def story_set_from_files(
    files: list[tuple[str, bytes]],
    folder: Path,
    *,
    splitter: Splitter | None = None,
    budget: UploadBudget | None = None,
    progress: UploadProgress | None = None,
) -> tuple[StorySet | None, str | None, list[str]]:
    """A story file (JSON, JSONL, VIST, or a VWP table) uploaded with its images, unpacked within ``budget`` (see
    :func:`place_upload`): (set, whole-upload error, messages); the set is read with its images
    checked, so a missing or broken image is a problem of its story. A table (Parquet, CSV, TSV,
    told by its first bytes as the readers tell it, whatever its name) is read within the budget's
    table rules (:meth:`TableBudget.of_upload`) before it is read as stories: one over its rows or
    its decoded bytes, or a Parquet file this reading cannot read, is the whole-upload error, and no
    image is unpacked. ``progress`` is told how far the reading is (:data:`UploadProgress`).

    >>> import tempfile
    >>> seen = []
    >>> story = b'{"story_id": "s", "images": ["a.png"], "sentences": ["A cat."]}'
    >>> found, error, _ = story_set_from_files(
    ...     [("s.jsonl", story)], Path(tempfile.mkdtemp()), progress=lambda *step: seen.append(step)
    ... )
    >>> len(found), error, seen
    (1, None, [('images', 0, 1), ('images', 1, 1), ('stories', 0, 1), ('stories', 1, 1)])
    """
    from vst_core.data.readers import read_story_set
    from vst_core.data.tables import TableBudget, TableBudgetError, check_table, table_kind
    from vst_core.data.types import StorySetError

    tables = TableBudget.of_upload(budget or UploadBudget.from_env())
    refused: list[str] = []

    def refs_of(path: Path) -> list[str]:
        try:
            check_table(path, tables)
        except TableBudgetError as exc:
            refused.append(str(exc))
            return []
        except Exception as exc:  # a damaged Parquet file is never handed to a reader that reads it whole
            if table_kind(path) == "parquet":
                refused.append(_table_refusal(path, exc))
                return []  # text the parser refuses is the story reader's to explain, as before
        try:
            return [ref for story in read_story_set(path, splitter=splitter, check_images=False) for ref in story.images]
        except StorySetError:
            return []

    images = None if progress is None else lambda done, total: progress("images", done, total)
    path, error, messages = place_upload(files, folder, refs_of, budget=budget, progress=images)
    if path is None:
        return None, error, messages
    if refused:
        return None, refused[0], messages
    try:
        if progress is not None:
            progress("stories", 0, 1)
        found = read_story_set(path, splitter=splitter, check_images=True)
        if progress is not None:
            progress("stories", 1, 1)
        return found, None, messages
    except StorySetError as exc:
        return None, str(exc).replace(str(folder) + "/", ""), messages


def _table_refusal(path: Path, exc: Exception) -> str:
    """Why an uploaded Parquet file is not read: what made it unreadable, without server paths."""
    said = str(exc).replace(str(path.parent) + "/", "")
    return f"{path.name}: cannot be read as a table ({type(exc).__name__}: {said[:200]})"
