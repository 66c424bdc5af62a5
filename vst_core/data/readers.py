"""Readers of story sets: JSON, JSONL and the VIST ``sis``/``dii`` annotation files.

A line that cannot be read becomes a :class:`~vst_core.data.types.Problem` with its line number and
reading goes on; a story with a data problem (empty, missing image, more sentences than images) is
kept and carries the problem, so metrics that can still run do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from vst_core.data.access import file_kind
from vst_core.data.kinds import not_what, wrong_kind
from vst_core.data.paths import (
    IMAGE_SUFFIXES,
    ImagePathError,
    Resolved,
    check_image,
    resolve_image,
    resolve_images,
)
from vst_core.data.types import Problem, Splitter, Story, StorySet, StorySetError
from vst_core.data.vwp import (
    GROUP_MARK,
    MAX_NAME_CHARS,
    Locator,
    VwpRows,
    columns_note,
    duplicate_keys_problems,
    extra_columns,
    has_vwp_header,
    is_vwp,
    json_rows,
    pairs_with_duplicates,
    shared_names,
    sniff,
    split_groups,
    table_rows,
    vwp_records,
)
from vst_core.hashing import json_line, short_sha1
from vst_core.limits import text_limit_reason
from vst_core.records.reader import characters_of
from vst_core.story import StoryFields
from vst_core.text.public import split_story

#: Limits of what one record may hold; a record over one is a reported problem, the rest is read.
MAX_LINE_BYTES = 10_000_000
MAX_DEPTH = 64


class RecordLimitError(ValueError):
    """A JSON value over :data:`MAX_DEPTH` or Python's digit limit for integers."""


#: The longest integer Python converts from text by default (``sys.get_int_max_str_digits``).
MAX_INT_DIGITS = 4300


class LongNumber(str):
    """An integer of a JSON document too long to convert, kept as its digits so the rest of the
    document can be read; :func:`check_record` turns it into a reported problem."""


def _long_number(digits: str) -> int | LongNumber:
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else LongNumber(digits)


def check_record(value: Any, limit: int = MAX_DEPTH) -> None:
    """RecordLimitError when ``value`` is nested deeper than ``limit`` or holds a :class:`LongNumber`."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            raise RecordLimitError(f"nested deeper than {limit} levels")
        if isinstance(item, LongNumber):
            raise RecordLimitError(
                f"holds a number of {len(item.lstrip('-')):,} digits (numbers of at most {MAX_INT_DIGITS:,} digits are read)"
            )
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)


def load_json(text: str, *, per_record: bool = False, pairs: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """``json.loads`` that never raises anything but ValueError (JSONDecodeError included): too deep
    nesting and too long integers become :class:`RecordLimitError`. With ``per_record`` (a whole
    story set in one document) neither is checked here: long integers stay :class:`LongNumber` and
    the caller checks each story with :func:`check_record`, so one bad value costs one story.
    ``pairs``: the ``object_pairs_hook`` that builds each object (a VWP row notes its repeated keys).

    >>> load_json('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    """
    try:
        value = json.loads(text, parse_int=_long_number, object_pairs_hook=pairs)
    except RecursionError:
        raise RecordLimitError(f"nested deeper than Python can parse (limit {MAX_DEPTH} levels)") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise RecordLimitError(str(exc)) from None
    if not per_record:
        check_record(value)
    return value


def _image_problems(
    root: Path, refs: tuple[str, ...], story_id: str, line: int | None, check: bool, folders: Resolved | None = None
) -> list[Problem]:
    problems: list[Problem] = []
    resolved = resolve_images(root, refs, folders=folders) if refs else {}  # each folder resolved once
    for k, ref in enumerate(refs):
        found = resolved[ref]
        if found is None:
            try:
                found = str(resolve_image(root, ref))  # raises the reason it is refused
            except ImagePathError as exc:
                problems.append(Problem(f"image {k + 1}: {exc}", "image", line=line, story_id=story_id))
                continue
        if check and (why := check_image(Path(found))):
            problems.append(Problem(f"image {k + 1}: {why}", "image", line=line, story_id=story_id))
    return problems


def _default_splitter() -> Splitter:
    return split_story


def _as_str_list(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{name}' must be a list of strings")
    return tuple(value)


def _sequence_id_for(images: tuple[str, ...], story_id: str) -> str:
    if not images:
        return story_id
    return "seq-" + short_sha1("\n".join(images))


#: The characters of a refused text a story keeps, so that its record shows what it was.
PREVIEW_CHARS = 200


def _unsplit_text(record: Mapping[str, Any]) -> str | None:
    """The text a story record gives to be split into sentences (``text``, or ``groups`` given as
    texts, together), or None when it gives its sentences as a list."""
    groups = record.get("groups")
    if groups is not None:
        texts = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
        return " ".join(texts) if texts else None
    if record.get("sentences") is not None:
        return None
    text = record.get("text")
    return text if isinstance(text, str) else None


def story_from_record(
    record: Any,
    *,
    root: Path,
    line: int | None = None,
    splitter: Splitter | None = None,
    check_images: bool = True,
    fallback_id: str = "story",
    folders: Resolved | None = None,
) -> Story:
    """Build a :class:`Story` from one story-set object; raises ValueError on a malformed one.
    ``folders`` keeps the image folders resolved from one story to the next (one file's)."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    problems: list[Problem] = []
    raw_id = record.get("story_id", record.get("id"))
    story_id = str(raw_id) if raw_id not in (None, "") else fallback_id
    if raw_id in (None, ""):
        problems.append(Problem(f"no story_id: named {story_id!r}", "id", "warning", line, story_id))
    images = _as_str_list(record.get("images", []), "images")
    frames: tuple[int, ...] = ()
    sentences: tuple[str, ...]
    unsplit = _unsplit_text(record)
    if unsplit is not None and (why := text_limit_reason(unsplit)):  # refused before a costly split
        sentences = (unsplit[:PREVIEW_CHARS].strip() + " …",)
        problems.append(Problem(f"story not scored: {why}", "length", line=line, story_id=story_id))
    elif record.get("groups") is not None:
        sentences, frames = grouped_sentences(_groups(record["groups"]), splitter)
    elif "sentences" in record and record["sentences"] is not None:
        sentences = tuple(s.strip() for s in _as_str_list(record["sentences"], "sentences"))
    elif isinstance(record.get("text"), str):
        text = record["text"]
        if GROUP_MARK.search(text):  # "[SEP]"/"[SENT]" between the images' texts, as VWP and VLM story papers write them
            sentences, frames = grouped_sentences(split_groups(text), splitter)
        else:
            sentences = tuple((splitter or _default_splitter())(text))
    elif "text" in record:
        raise ValueError("'text' must be a string")
    else:
        sentences = ()
    if not any(sentences):
        problems.append(Problem("empty story: no sentences", "empty", line=line, story_id=story_id))
    elif any(not s for s in sentences):
        problems.append(Problem("some sentences are empty", "empty", "warning", line, story_id))
    problems.extend(alignment_problems(len(sentences), frames, len(images), story_id, line))
    characters = _named(characters_of(record.get("characters")), problems, story_id, line)
    problems.extend(_image_problems(root, images, story_id, line, check_images, folders))
    if check_images:
        problems.extend(_crop_problems(root, images, characters, story_id, line))
    system = record.get("system")
    sequence_id = record.get("sequence_id")
    return Story(
        story_id=story_id,
        sequence_id=str(sequence_id) if sequence_id not in (None, "") else _sequence_id_for(images, story_id),
        system=str(system) if system not in (None, "") else "unknown",
        sentences=sentences,
        images=images,
        problems=tuple(problems),
        frames=frames,
        characters=characters,
    )


def _named(
    characters: tuple[tuple[str, str], ...], problems: list[Problem], story_id: str, line: int | None
) -> tuple[tuple[str, str], ...]:
    """The characters whose name is at most :data:`~vst_core.data.vwp.MAX_NAME_CHARS` long; each
    longer one is left out with a warning (a name is matched against every sentence)."""
    kept = tuple(c for c in characters if len(c[0]) <= MAX_NAME_CHARS)
    for k, (name, _) in enumerate(characters):
        if len(name) > MAX_NAME_CHARS:
            problems.append(
                Problem(
                    f"character {k + 1}'s name is {len(name):,} characters long (at most {MAX_NAME_CHARS} are read); left out",
                    "file",
                    "warning",
                    line,
                    story_id,
                )
            )
    return kept


def _crop_problems(
    root: Path, images: tuple[str, ...], characters: tuple[tuple[str, str], ...], story_id: str, line: int | None
) -> list[Problem]:
    """A warning per named character whose crop cannot be used. A crop is named relative to the
    folder of the story's first image, where character alignment looks for it
    (``metrics.character_alignment.crop_ref``)."""
    folder = PurePosixPath(images[0]).parent if images else PurePosixPath()
    problems: list[Problem] = []
    for name, crop in characters:
        if not crop:
            continue
        try:
            why = check_image(resolve_image(root, str(folder / crop)))
        except ImagePathError as exc:
            why = str(exc)
        if why:
            problems.append(
                Problem(f"{name[:40]!r}'s crop: {why}; character alignment leaves it out", "file", "warning", line, story_id)
            )
    return problems


def _groups(value: Any) -> list[str | list[str]]:
    """``groups``: one entry per image, a text or a list of its sentences."""
    if not isinstance(value, list):
        raise ValueError("'groups' must be a list (one entry per image: a text or a list of sentences)")
    out: list[str | list[str]] = []
    for k, group in enumerate(value):
        if isinstance(group, str):
            out.append(group)
        elif isinstance(group, list) and all(isinstance(s, str) for s in group):
            out.append(list(group))
        else:
            raise ValueError(f"'groups'[{k}] must be a text or a list of sentences")
    return out


def grouped_sentences(
    groups: Sequence[str | Sequence[str]], splitter: Splitter | None = None
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(sentences, frames) of a story written as one group per image: a group given as a text is
    split into sentences (``splitter``), a list is taken as its sentences. An empty group keeps its
    image's place (no sentence points at it); empty groups at the end leave those images without
    text (:func:`alignment_problems` says so).

    >>> grouped_sentences(["Ann waves. Bob smiles.", "", ["They leave."]], lambda t: t.replace(". ", ".|").split("|"))
    (('Ann waves.', 'Bob smiles.', 'They leave.'), (0, 0, 2))
    """
    split = splitter or _default_splitter()
    sentences: list[str] = []
    frames: list[int] = []
    for k, group in enumerate(groups):
        parts = (split(group) if group.strip() else []) if isinstance(group, str) else list(group)
        found = [p.strip() for p in parts if p.strip()]
        sentences.extend(found)
        frames.extend([k] * len(found))
    return tuple(sentences), tuple(frames)


def alignment_problems(sentences: int, frames: Sequence[int], images: int, story_id: str, line: int | None) -> list[Problem]:
    """How a story's text and its images fail to line up: more groups (or sentences, without
    groups) than images is an error (the alignment is undefined); fewer is a warning (the last
    images have no text: CLIPScore pairs what there is, T is over the groups there are)."""
    if not images:
        return []
    groups = (max(frames) + 1) if frames else sentences
    unit = "sentence groups" if frames else "sentences"
    if groups > images:
        return [
            Problem(
                f"{groups} {unit} but {images} images: {unit[:-1]}-image alignment is undefined",
                "alignment",
                line=line,
                story_id=story_id,
            )
        ]
    if frames and groups < images:
        return [
            Problem(
                f"{groups} {unit} for {images} images: the last {images - groups} have no text",
                "alignment",
                "warning",
                line,
                story_id,
            )
        ]
    return []


def _dedupe(stories: list[Story], problems: list[Problem]) -> list[Story]:
    """Keep every story under a unique ``(system, story_id)``: the same id under two systems is two
    stories (released sets share ids across systems); a repeated id within one system gets the first
    free ``#k`` suffix (never an id that system has or gets) and a warning."""
    taken = {story.key for story in stories}
    used: set[tuple[str, str]] = set()
    out: list[Story] = []
    for story in stories:
        if story.key in used:
            k = 2
            while (story.system, f"{story.story_id}#{k}") in taken or (story.system, f"{story.story_id}#{k}") in used:
                k += 1
            new_id = f"{story.story_id}#{k}"
            problems.append(Problem(f"duplicate story_id: renamed to {new_id!r}", "id", "warning", story_id=story.story_id))
            story = dataclasses.replace(story, story_id=new_id)
        used.add(story.key)
        out.append(story)
    return out


# --------------------------------------------------------------------------- readers


def _decode_error(path: Path, exc: UnicodeDecodeError) -> StorySetError:
    return StorySetError(
        f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); re-save it as UTF-8"
    )


def read_jsonl_stories(path: Path, *, splitter: Splitter | None = None, check_images: bool = True) -> StorySet:
    """Read a JSONL story set; each bad line is reported with its number and skipped."""
    root = path.parent
    stories: list[Story] = []
    problems: list[Problem] = []
    folders: Resolved = {}  # the image folders, resolved once for the whole file
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(
                    Problem(
                        f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); line skipped", "line", line=number
                    )
                )
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark
            if not text.strip():
                continue
            if len(raw) > MAX_LINE_BYTES:
                problems.append(Problem(f"line longer than {MAX_LINE_BYTES} bytes; skipped", "line", line=number))
                continue
            try:
                record = load_json(text)
                stories.append(
                    story_from_record(
                        record,
                        root=root,
                        line=number,
                        splitter=splitter,
                        check_images=check_images,
                        fallback_id=f"{path.stem}-line{number}",
                        folders=folders,
                    )
                )
            except json.JSONDecodeError as exc:
                problems.append(
                    Problem(
                        f"malformed JSON ({exc.msg.removesuffix(' at')} at column {exc.colno}); line skipped", "line", line=number
                    )
                )
            except ValueError as exc:
                problems.append(Problem(f"{exc}; line skipped", "line", line=number))
    return StorySet(tuple(_dedupe(stories, problems)), root, str(path), tuple(problems))


def _stories_from_json(data: Any, path: Path, *, splitter: Splitter | None, check_images: bool) -> StorySet:
    root = path.parent
    problems: list[Problem] = []
    if isinstance(data, dict) and "stories" in data:
        data = data["stories"]
    if isinstance(data, dict) and data and all(isinstance(v, str) for v in data.values()):
        # {story_id: text}, the layout of the GROOVIST/RoViST sample files
        data = [{"story_id": k, "text": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise StorySetError(
            f"{path}: expected a list of stories, {{'stories': [...]}}, {{story_id: text}} or a VIST annotation file"
        )
    stories: list[Story] = []
    folders: Resolved = {}  # the image folders, resolved once for the whole file
    for index, record in enumerate(data):
        try:
            check_record(record, MAX_DEPTH - 2)
            stories.append(
                story_from_record(
                    record,
                    root=root,
                    splitter=splitter,
                    check_images=check_images,
                    fallback_id=f"{path.stem}-{index + 1}",
                    folders=folders,
                )
            )
        except ValueError as exc:
            problems.append(Problem(f"story #{index + 1}: {exc}; skipped", "line"))
    return StorySet(tuple(_dedupe(stories, problems)), root, str(path), tuple(problems))


def _image_index(folder: Path) -> dict[str, str]:
    """photo id (file stem) -> file name, for a VIST images folder."""
    if not folder.is_dir():
        return {}
    index: dict[str, str] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            stem, suffix = os.path.splitext(entry.name)
            if suffix.lower() in IMAGE_SUFFIXES:
                index.setdefault(stem, entry.name)
    return index


def _images_folder(root: Path, images_dir: Path | None, layout: str) -> tuple[Path, Path]:
    """(the images folder of a VIST or VWP file in ``root``, its path relative to ``root``):
    ``images_dir``, by default an ``images`` folder beside the file, else the file's folder; one
    outside ``root`` is refused."""
    if images_dir is None:
        images_dir = root / "images" if (root / "images").is_dir() else root
    try:
        return images_dir, images_dir.resolve().relative_to(root.resolve())
    except ValueError:
        raise StorySetError(f"{layout} images folder {images_dir} must be inside {root}") from None


def _order(value: Any) -> float:
    """A photo's position; a missing or non-numeric one sorts last."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.inf
    return number if math.isfinite(number) else math.inf


def read_vist(
    data: dict[str, Any],
    path: Path,
    *,
    images_dir: Path | None = None,
    text_field: str = "text",
    check_images: bool = True,
) -> StorySet:
    """Read VIST ``sis`` (stories) or ``dii`` (descriptions) annotations.

    SIS: one story per ``story_id``, sentences in ``worker_arranged_photo_order``.
    DII: descriptions grouped by ``story_id`` when present, else by (album, worker), in photo
    order; system is ``"reference-dii"``. ``text_field`` picks ``text`` (lower-cased, with
    ``[male]``-style placeholders) or ``original_text``. Images are looked up by photo id in
    ``images_dir`` (default: an ``images`` folder next to the file, else the file's folder).
    """
    root = path.parent
    images_dir, rel_dir = _images_folder(root, images_dir, "VIST")
    index = _image_index(images_dir)
    groups: dict[str, list[dict[str, Any]]] = {}
    problems: list[Problem] = []
    tier = "sis"
    annotations = data.get("annotations", [])
    if not isinstance(annotations, list):
        raise StorySetError(f"{path}: VIST 'annotations' must be a list, got {type(annotations).__name__}")
    for k, entry in enumerate(annotations):
        item = entry[0] if isinstance(entry, list) and entry else entry
        if not isinstance(item, dict) or "photo_flickr_id" not in item:
            problems.append(Problem(f"annotation #{k + 1} has no photo_flickr_id; skipped", "line"))
            continue
        if "worker_arranged_photo_order" not in item:
            tier = "dii"
        key = item.get("story_id") or f"{item.get('album_id', '?')}-{item.get('worker_id', k)}"
        groups.setdefault(str(key), []).append(item)
    order_key = "worker_arranged_photo_order" if tier == "sis" else "photo_order_in_story"
    stories: list[Story] = []
    for story_id, items in groups.items():
        items.sort(key=lambda it: _order(it.get(order_key)))
        photo_ids = [str(it["photo_flickr_id"]) for it in items]
        refs = tuple((rel_dir / index[p]).as_posix() if p in index else (rel_dir / f"{p}.jpg").as_posix() for p in photo_ids)
        record = {
            "story_id": story_id,
            "sequence_id": "-".join(photo_ids),
            "system": "reference" if tier == "sis" else "reference-dii",
            "sentences": [str(it.get(text_field, it.get("text", ""))) for it in items],
            "images": list(refs),
        }
        stories.append(story_from_record(record, root=root, check_images=check_images))
    return StorySet(tuple(stories), root, str(path), tuple(problems))


def _not_a_file(path: Path) -> str:
    """Why ``path`` cannot be read as a story file: not there, or what it is instead (found by
    ``stat`` alone, so a FIFO is never opened).

    >>> _not_a_file(Path("/dev/null"))
    'story file /dev/null is not a regular file (a device); it was not read'
    """
    import stat

    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return f"story file not found: {path}"
    if stat.S_ISDIR(mode):
        return f"story file {path} is a folder, not a file (give the story file inside it)"
    return f"story file {path} is not a regular file ({file_kind(mode)}); it was not read"


def read_story_set(
    path: str | Path,
    *,
    splitter: Splitter | None = None,
    check_images: bool = True,
    vist_images: Path | None = None,
    vist_text_field: str = "text",
) -> StorySet:
    """Read any supported story-set file; the layout is detected from the content, whatever the
    suffix: a VWP table by its columns (CSV/TSV, Parquet, a JSON list or JSON lines), a VIST
    annotation file by its ``annotations``, else a story set (JSON or JSONL)."""
    path = Path(path)
    if not path.is_file():
        raise StorySetError(_not_a_file(path))
    found = wrong_kind(path, "stories")
    if found is not None:  # scores or judgements: named for what they are, never read as stories
        raise StorySetError(not_what(path, found, "stories"))
    vwp: dict[str, Any] = {"images_dir": vist_images, "splitter": splitter, "check_images": check_images}
    try:
        kind = sniff(path)
    except OSError as exc:
        raise StorySetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix.lower() in (".csv", ".tsv", ".parquet") and kind != "json" or kind == "parquet":
        return read_vwp(table_rows(path), path, **vwp)  # a table: VWP's release is the one read
    if kind in ("csv", "tsv") and has_vwp_header(path):
        return read_vwp(table_rows(path), path, **vwp)
    if path.suffix.lower() == ".jsonl":
        return _json_lines(path, **vwp)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if _looks_like_jsonl(raw.decode("utf-8", "replace")) or _vwp_lines(path):  # one bad line costs that line
            return _json_lines(path, **vwp)
        raise _decode_error(path, exc) from None
    try:
        data = load_json(text, per_record=True)
    except json.JSONDecodeError as exc:
        if _looks_like_jsonl(text) or _vwp_lines(path):  # several values one per line: JSONL with a .json name
            return _json_lines(path, **vwp)
        raise StorySetError(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecordLimitError as exc:
        if _looks_like_jsonl(text) or _vwp_lines(path):
            return _json_lines(path, **vwp)
        raise StorySetError(f"{path}: {exc}") from None
    if isinstance(data, dict) and "annotations" in data:
        try:
            check_record(data)
        except RecordLimitError as exc:
            raise StorySetError(f"{path.name}: the VIST annotations {exc}") from None
        return read_vist(data, path, images_dir=vist_images, text_field=vist_text_field, check_images=check_images)
    if isinstance(data, dict) and is_vwp(data):  # one row: a JSON-lines file of one line
        return read_vwp(vwp_json_list(text, [data]), path, **vwp)
    if isinstance(data, list) and is_vwp(next((r for r in data if isinstance(r, dict)), {})):
        return read_vwp(vwp_json_list(text, data), path, **vwp)
    return _stories_from_json(data, path, splitter=splitter, check_images=check_images)


def _json_lines(path: Path, *, images_dir: Path | None, splitter: Splitter | None, check_images: bool) -> StorySet:
    """A JSON-lines file whatever its name: VWP's rows when its first object has VWP's columns,
    else a story set."""
    if _vwp_lines(path):
        return read_vwp(vwp_json_lines(path), path, images_dir=images_dir, splitter=splitter, check_images=check_images)
    return read_jsonl_stories(path, splitter=splitter, check_images=check_images)


def _vwp_lines(path: Path) -> bool:
    """Whether a file's first JSON object on a line of its own has VWP's columns."""
    first = _first_record(path)
    return isinstance(first, dict) and is_vwp(first)


def _first_record(path: Path, lines: int = 100) -> Any:
    """The first JSON object among the first ``lines`` non-blank lines of a JSON-lines file, read
    as every line is (None when none is one): a bad first line does not hide the layout."""
    try:
        with path.open("rb") as fh:
            seen = 0
            for raw in fh:
                if not raw.strip():
                    continue
                seen += 1
                if seen > lines:
                    break
                if len(raw) > MAX_LINE_BYTES:
                    continue
                try:
                    value = load_json(raw.decode("utf-8-sig"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    continue
                if isinstance(value, dict):
                    return value
    except OSError:
        return None
    return None


def vwp_json_lines(path: Path) -> VwpRows:
    """VWP's rows in a JSON-lines file (any suffix), read line by line as :func:`read_jsonl_stories`
    reads a story set: a line that is not UTF-8 JSON, or is over a limit, is a problem naming it
    and the others are read; lines end at ``\n`` only (a U+2028 inside a JSON string is text)."""
    problems: list[Problem] = []

    def rows() -> Any:
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if len(raw) > MAX_LINE_BYTES:
                    problems.append(Problem(f"line longer than {MAX_LINE_BYTES} bytes; skipped", "line", line=number))
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(
                        Problem(
                            f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); line skipped",
                            "line",
                            line=number,
                        )
                    )
                    continue
                if number == 1:
                    text = text.removeprefix("\ufeff")
                try:
                    yield number, load_json(text, pairs=pairs_with_duplicates)
                except json.JSONDecodeError as exc:
                    problems.append(
                        Problem(
                            f"malformed JSON ({exc.msg.removesuffix(' at')} at column {exc.colno}); line skipped",
                            "line",
                            line=number,
                        )
                    )
                except ValueError as exc:
                    problems.append(Problem(f"{exc}; line skipped", "line", line=number))

    found = json_rows(rows(), "line", problems)
    return VwpRows(found.rows, tuple(sorted(found.problems, key=lambda p: p.line or 0)), "line", found.duplicates)


def vwp_json_list(text: str, data: list[Any]) -> VwpRows:
    """VWP's rows in a JSON list, numbered from 1, each checked against the record limits (a row
    over one is a problem, the others are read), with the keys a row gives twice."""
    try:
        keyed = load_json(text, per_record=True, pairs=pairs_with_duplicates)
    except ValueError:
        keyed = data
    if isinstance(keyed, dict):
        keyed = [keyed]
    problems: list[Problem] = []
    rows: list[tuple[int, Any]] = []
    for number, row in enumerate(keyed if isinstance(keyed, list) else data, start=1):
        try:
            check_record(row, MAX_DEPTH - 2)
        except RecordLimitError as exc:
            problems.append(Problem(f"row {number} {exc}; skipped", "line", line=number))
            continue
        rows.append((number, row))
    return json_rows(iter(rows), "row", problems)


def read_vwp(
    rows: VwpRows | Iterable[Any],
    path: Path,
    *,
    images_dir: Path | None = None,
    system: str = "human",
    splitter: Splitter | None = None,
    check_images: bool = True,
) -> StorySet:
    """VWP's rows (:mod:`vst_core.data.vwp`) as a story set: one story per row, in groups per
    shot, with its named characters; a row's own ``images`` and ``characters`` where it lists them
    (beside the file or its folder), else each link's file in ``images_dir/<scene_full_id>/``, then
    in ``images_dir`` (default: an ``images`` folder beside the file, else the file's folder; see
    :class:`~vst_core.data.vwp.Locator`). Columns left out and keys given twice are said."""
    root = path.parent
    table = rows if isinstance(rows, VwpRows) else VwpRows.of(rows)
    _, rel = _images_folder(root, images_dir, "VWP")
    locator = Locator(root, rel.as_posix() if rel.parts else "", shared_names(table.rows))
    records, problems = vwp_records(table, locator, system)
    problems[:0] = [*table.problems, *duplicate_keys_problems(table)]
    note = columns_note(extra_columns(table.rows))
    if note is not None:
        problems.insert(0, note)
    stories: list[Story] = []
    for record in records:
        line, own = record.pop("_line"), tuple(record.pop("_problems"))
        try:
            story = story_from_record(record, root=root, line=line, splitter=splitter, check_images=check_images)
            stories.append(dataclasses.replace(story, problems=own + story.problems) if own else story)
        except ValueError as exc:
            problems.append(Problem(f"{table.unit} {line}: {exc}; skipped", "line", line=line))
    if not stories and not any(p.severity == "error" for p in problems):
        problems.append(Problem(f"{path.name} holds no VWP row", "line"))
    return StorySet(tuple(_dedupe(stories, problems)), root, str(path), tuple(problems))


def _looks_like_jsonl(text: str) -> bool:
    """More than one non-blank line, each starting like a JSON object."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]  # "\n" only: U+2028 may be inside a string
    return len(lines) > 1 and sum(line.startswith("{") for line in lines) > len(lines) / 2


def story_object(story: StoryFields) -> dict[str, Any]:
    """The story-set object of a story: its ids, system, image paths and sentences (as ``groups``,
    one list of sentences per image, for a story written in groups)."""
    out: dict[str, Any] = {
        "story_id": story.story_id,
        "sequence_id": story.sequence_id,
        "system": story.system,
        "images": list(story.images),
    }
    frames = tuple(getattr(story, "frames", ()) or ())
    if frames:
        groups: list[list[str]] = [[] for _ in range(max(frames) + 1)]
        for sentence, frame in zip(story.sentences, frames, strict=True):
            if sentence:
                groups[frame].append(sentence)
        out["groups"] = groups
    else:
        out["sentences"] = list(story.sentences)
    characters = tuple(getattr(story, "characters", ()) or ())
    if characters:
        out["characters"] = [list(c) for c in characters]
    return out


def write_story_set(stories: Iterable[Story], path: str | Path) -> None:
    """Write stories as a JSONL story set (image paths kept as given)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for s in stories:
            fh.write(json_line(story_object(s)) + "\n")
