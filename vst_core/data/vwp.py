"""Visual Writing Prompts (VWP; Hong et al., TACL 2023) as released: one row per story, as the
dataset's CSV (``vwp_v2.1_test.csv`` and the others), its JSON records, JSON lines or a Parquet
export, and as the releases built on it publish it (NCS 2026's ``sampled_60_stories.json``: JSON
lines under a ``.json`` name, each row listing its own downloaded photos and crops).

Columns read (``column_explain.csv`` of the release names them): ``scene_full_id`` (the image
sequence), ``link0`` … ``link9`` (the 5–10 film shots, as URLs on the authors' server), ``text0``
… ``text9`` (what the writer wrote for each shot: a group of one or more sentences),
``sep_story`` (the same groups joined with ``[SEP]``, used where the ``text*`` columns are absent),
``char0`` … ``char4`` (the named characters; their crops in ``char*_url``), for the story's id
``story_id``, else ``assignmentID``, else ``index``, else the scene and row; and a release's own
``images`` (the paths of its downloaded shots) and ``characters`` (``{"image", "name"}`` objects),
which win over the links where given (:class:`Locator`).

Every story keeps its sentence groups (:attr:`vst_core.data.Story.frames`), so non-redundancy
and coherence read the real sentences while grounding, CLIPScore and T keep the shot alignment.

>>> shots = {"link0": "http://x/a/1.jpg", "link1": "http://x/a/2.jpg", "link2": ""}
>>> vwp_images(shots)
['1.jpg', '2.jpg']
"""

from __future__ import annotations

import ast
import dataclasses
import json
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import urlparse

from vst_core.data.paths import listed_ref
from vst_core.data.tables import TableBudgetError, read_csv_budgeted, read_parquet_budgeted
from vst_core.data.types import Problem, StorySetError

#: The most shots (and text columns) of a VWP sequence, and of named characters.
MAX_SHOTS = 10
MAX_CHARACTERS = 5
#: The columns that say a table is VWP's.
VWP_MARKERS = ("scene_full_id", "link0")
#: What separates the texts of two images in one story text: ``[SEP]`` (VWP's ``sep_story``) or
#: ``[SENT]`` (VLM story releases), any case. The spaces around it are trimmed by
#: :func:`split_groups`, not by the pattern: a pattern that took them (``\s*`` on each side) tried
#: every start in a run of spaces, quadratic time on a long one.
GROUP_MARK = re.compile(r"\[(?:SEP|SENT)\]", re.IGNORECASE)

#: Limits of one cell; a cell over one is a reported problem (the row, or that character, left out).
MAX_NAME_CHARS = 200  # a character's name
MAX_ID_CHARS = 1_000  # a story id, a scene id
MAX_PATH_CHARS = 4_096  # a link, a listed path (the longest path Linux opens)
MAX_LISTED = 50  # entries of a row's own ``images`` or ``characters``
MAX_LIST_TEXT = 100_000  # a list written as text in a table's cell

#: The columns the reader uses, and those of VWP's and NCS's releases it leaves alone on purpose:
#: any other column is named in one note, never dropped silently.
READ_COLUMNS = frozenset(
    {"story_id", "assignmentID", "index", "scene_full_id", "sep_story", "story", "images", "characters"}
    | {f"link{k}" for k in range(MAX_SHOTS)}
    | {f"text{k}" for k in range(MAX_SHOTS)}
    | {f"char{k}" for k in range(MAX_CHARACTERS)}
    | {f"char{k}_url" for k in range(MAX_CHARACTERS)}
)
RELEASE_COLUMNS = frozenset(
    {"reviewerID", "reviewTimeInSeconds", "writerId", "writingTimeInSeconds", "Q1", "Q2", "Q3", "R1", "R2", "R3", "R4"}
    | {"nums_used_imgs", "nums_given_chars", "select_imgs_list", "select_imgs_h5id_list"}  # VWP's column_explain.csv
    | {"img_id_list", "anonymised_story", "split", "imdb_id", "image_count"}  # NCS's sampled stories
)


def split_groups(text: str) -> list[str]:
    """The texts of a story's images, split at each ``[SEP]``/``[SENT]`` (any case), the spaces
    around each mark trimmed: what ``re.split(r"\\s*\\[(?:SEP|SENT)\\]\\s*", text, flags=re.I)``
    gives, in time linear in the text (each character is looked at a bounded number of times).

    >>> split_groups("Ann waves.  [SEP] Bob smiles. [sent][SENT]  ")
    ['Ann waves.', 'Bob smiles.', '', '']
    >>> split_groups("  no mark  ")
    ['  no mark  ']
    """
    pieces: list[str] = []
    start = 0
    for mark in GROUP_MARK.finditer(text):
        pieces.append(text[start : mark.start()])
        start = mark.end()
    if not pieces:
        return [text]
    pieces.append(text[start:])
    last = len(pieces) - 1
    return [p.rstrip() if k == 0 else p.lstrip() if k == last else p.strip() for k, p in enumerate(pieces)]


def is_vwp(columns: Iterable[Any]) -> bool:
    """Whether a table with these columns is a VWP release.

    >>> is_vwp(["scene_full_id", "link0", "text0"]), is_vwp(["story_id", "text"])
    (True, False)
    """
    names = set(columns)
    return all(m in names for m in VWP_MARKERS)


@dataclass(frozen=True)
class VwpRows:
    """A VWP table as read: ``(number, row)`` pairs (the row's number in the table, or its line in
    a JSON-lines file: ``unit``), what reading it found (a line that is not JSON, a column given
    twice), and ``duplicates``: the keys a JSON row gave twice, by row number (the last is read).

    >>> rows = VwpRows.of([{"scene_full_id": "tt1", "link0": "a.jpg"}])
    >>> rows.rows[0][0], rows.unit
    (1, 'row')
    """

    rows: tuple[tuple[int, Any], ...]
    problems: tuple[Problem, ...] = ()
    unit: Literal["row", "line"] = "row"
    duplicates: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[Any]) -> VwpRows:
        """Rows numbered from 1 (a JSON list, a table's records)."""
        return cls(tuple(enumerate(rows, start=1)))


def _cell(row: Mapping[str, Any], name: str) -> str:
    """A cell as text; an empty cell, NaN or None as ''."""
    value = row.get(name)
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def _id_cell(row: Mapping[str, Any], name: str) -> str:
    """An id cell as text: a whole number that a table stored as a float (``723.0``) as ``723``."""
    value = row.get(name)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _cell(row, name)


def _file_name(link: str) -> str:
    """The file name a link ends in (its path's last part, without query or fragment); the link
    itself when it has none. A malformed address (a cut ``[`` host) is read as text, never raised.

    >>> _file_name("https://example.org/vwp/tt01_0.jpg?x=1"), _file_name("https://[bad/a/b.jpg"), _file_name("c.jpg")
    ('tt01_0.jpg', 'b.jpg', 'c.jpg')
    """
    try:
        path = urlparse(link).path
    except ValueError:  # e.g. "Invalid IPv6 URL": the part after the last slash, query and fragment cut
        path = link.split("?", 1)[0].split("#", 1)[0]
    return PurePosixPath(path).name or link


def vwp_images(row: Mapping[str, Any]) -> list[str]:
    """The file names of a row's shots, in order, from ``link0`` … ``link9`` (empty links end it)."""
    names = []
    for k in range(MAX_SHOTS):
        link = _cell(row, f"link{k}")
        if not link:
            break
        names.append(_file_name(link))
    return names


def vwp_characters(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, crop file name) of a row's named characters, ``char0`` … ``char4`` (the release
    writes ``{}`` for an empty slot)."""
    out = []
    for k in range(MAX_CHARACTERS):
        name = _cell(row, f"char{k}")
        if name and name != "{}":
            url = _cell(row, f"char{k}_url")
            out.append((name, _file_name(url) if url and url != "{}" else ""))
    return out


def vwp_groups(row: Mapping[str, Any], shots: int) -> list[str]:
    """The text written for each shot: ``text0`` … up to the last non-empty one (more than
    ``shots`` of them is kept, so the mismatch is seen), else ``sep_story`` split at ``[SEP]``,
    else ``story`` as one group."""
    texts = [_cell(row, f"text{k}") for k in range(MAX_SHOTS)]
    while texts and not texts[-1]:
        texts.pop()
    if texts:
        return texts
    joined = _cell(row, "sep_story")
    if joined:
        return split_groups(joined)
    story = _cell(row, "story")
    return [story] if story else []


def listed(value: Any, name: str) -> list[Any] | None:
    """A row's own list (``images``, ``characters``): a list as it is, a list a table wrote as text
    (JSON, or Python's ``repr`` as pandas writes a list to CSV), None when the cell is empty;
    ValueError, saying why, for anything else.

    >>> listed("['a.jpg', 'b.jpg']", "images"), listed(None, "images"), listed("", "images")
    (['a.jpg', 'b.jpg'], None, None)
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if len(text) > MAX_LIST_TEXT:
            raise ValueError(f"'{name}' is {len(text):,} characters of text (at most {MAX_LIST_TEXT:,} are read as a list)")
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except Exception:  # a SyntaxError, too deep a nesting: not a list
                raise ValueError(f"'{name}' is text that is not a list") from None
    if not isinstance(value, list):
        raise ValueError(f"'{name}' must be a list, not {type(value).__name__}")
    if len(value) > MAX_LISTED:
        raise ValueError(f"'{name}' lists {len(value):,} entries (at most {MAX_LISTED})")
    return value


def _listed_characters(value: list[Any]) -> list[tuple[str, str]]:
    """(name, listed crop path) of a row's own ``characters``: ``{"name", "image"}`` objects (NCS),
    ``[name, crop]`` pairs or names."""
    out: list[tuple[str, str]] = []
    for k, item in enumerate(value):
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and isinstance(item.get("image", ""), str | None):
            out.append((item["name"].strip(), (item.get("image") or "").strip()))
        elif isinstance(item, str):
            out.append((item.strip(), ""))
        elif isinstance(item, list) and 1 <= len(item) <= 2 and all(isinstance(v, str) for v in item):
            out.append((item[0].strip(), item[1].strip() if len(item) == 2 else ""))
        else:
            raise ValueError(f'\'characters\'[{k}] must be a {{"name", "image"}} object, a [name, crop] pair or a name')
    return [(name, crop) for name, crop in out if name]


def _safe_part(name: str) -> bool:
    """Whether ``name`` is one plain folder name (a scene id used as a folder)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00") and len(name.encode()) <= 255


@dataclass
class Locator:
    """Where a VWP table's shots and crops are, as paths relative to the table's folder ``root``.

    A path the row lists itself (``images``, a character's ``image``) is read beside the file or
    beside its folder (:func:`vst_core.data.paths.listed_ref`). A link's file is looked for in its
    scene's folder, ``<images>/<scene_full_id>/<file>``, then in ``<images>`` itself; VWP reuses
    file names across scenes (``char_0000.jpg`` is the first crop of every scene), so a file found
    in the flat folder whose name another scene of the table links to too is paired with a warning
    naming the scenes (``shared``: file name -> the scenes linking to it).
    """

    root: Path
    images: str = ""
    shared: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._base = self.root.resolve()

    def _is_file(self, ref: str) -> bool:
        try:
            return (self._base / ref).is_file()
        except (OSError, ValueError):
            return False

    def _under(self, *parts: str) -> str:
        return posixpath.join(self.images, *parts) if self.images else posixpath.join(*parts)

    def listed(self, ref: str) -> str:
        """A path the row lists, relative to ``root``."""
        return listed_ref(self.root, ref, base=self._base)

    def linked(self, scene: str, name: str) -> tuple[str, str | None]:
        """(the path of a linked file, relative to ``root``; a warning when it may be another
        scene's): its scene's folder first, then the flat folder."""
        by_scene = self._under(scene, name) if _safe_part(scene) else ""
        if by_scene and self._is_file(by_scene):
            return by_scene, None
        flat = self._under(name)
        if self._is_file(flat):
            others = sorted(self.shared.get(name, frozenset()) - {scene})
            if not others:
                return flat, None
            named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            folder = self.images or "the file's folder"
            return flat, (
                f"{name} in {folder} is linked by scene {scene} and by scene{'s' if len(others) > 1 else ''} {named}: "
                f"it may be another scene's; put each scene's files in {self._under('<scene_full_id>')}/ to tell them apart"
            )
        try:
            scene_folder = bool(by_scene) and (self._base / posixpath.dirname(by_scene)).is_dir()
        except (OSError, ValueError):
            scene_folder = False
        return (by_scene if scene_folder else flat), None  # not found: said where its scene's shots are, if anywhere


def shared_names(rows: Iterable[tuple[int, Any]]) -> dict[str, frozenset[str]]:
    """File name -> the scenes whose links (shots and crops) name it, for the names of two or more."""
    scenes: dict[str, set[str]] = {}
    for _, row in rows:
        if not isinstance(row, Mapping):
            continue
        scene = _cell(row, "scene_full_id")
        if not scene or len(scene) > MAX_ID_CHARS:
            continue
        for name in vwp_images(row) + [crop for _, crop in vwp_characters(row) if crop]:
            scenes.setdefault(name, set()).add(scene)
    return {name: frozenset(s) for name, s in scenes.items() if len(s) > 1}


def _relative_to_first(images: Sequence[str], crop: str) -> str:
    """A crop's path as a story names it: relative to the folder of the story's first image, where
    character alignment looks for it (``crop_ref``), or to the file's folder without images.

    >>> _relative_to_first(["images/1.jpg"], "characters/c.jpg"), _relative_to_first(["images/s/1.jpg"], "images/s/c.jpg")
    ('../characters/c.jpg', 'c.jpg')
    """
    folder = posixpath.dirname(images[0]) if images else ""
    return posixpath.relpath(crop, folder) if folder and crop else crop


def _too_long(row: Mapping[str, Any], names: Iterable[str], limit: int) -> str | None:
    """The first of ``names`` whose cell is longer than ``limit`` characters, said."""
    for name in names:
        value = row.get(name)
        if isinstance(value, str) and len(value) > limit:
            return f"{name} is {len(value):,} characters long (at most {limit:,} are read)"
    return None


def vwp_records(
    rows: VwpRows | Iterable[Any], locator: Locator | None = None, system: str = "human"
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Story-set objects of VWP's rows (one per row; a row that is not an object or has no
    ``scene_full_id``, or whose id, scene or a link is over its length limit, is a problem and
    skipped): the id as released (``story_id``, else ``assignmentID``, else ``index``, else
    ``<scene>-<row>``; a repeated one keeps it for its first row and gives the later ones the first
    ``#k`` no row has, with a warning), the sequence, ``system`` (the release's stories are people's),
    the shots and crops where ``locator`` finds them, the groups (:func:`vwp_groups`) and the named
    characters (a crop named relative to the story's first image, :func:`_relative_to_first`);
    ``_line`` and ``_problems`` (the story's own: a file another scene may own, a list not read).

    >>> records, problems = vwp_records([{"scene_full_id": "tt1", "link0": "http://x/tt1/a.jpg", "text0": "Hi."}, 42])
    >>> records[0]["images"], records[0]["groups"], [str(p) for p in problems]
    (['a.jpg'], ['Hi.'], ['error (line 2): row 2 is a int, not an object; skipped'])
    """
    table = rows if isinstance(rows, VwpRows) else VwpRows.of(rows)
    locator = locator or Locator(Path("."))
    unit = table.unit
    problems: list[Problem] = []
    ids: dict[int, str] = {}
    for number, row in table.rows:
        if isinstance(row, Mapping):
            ids[number] = _story_id(row, number)
    taken = set(ids.values())
    first: dict[str, int] = {}
    records: list[dict[str, Any]] = []
    for number, row in table.rows:
        if not isinstance(row, Mapping):
            problems.append(Problem(f"{unit} {number} is a {type(row).__name__}, not an object; skipped", "line", line=number))
            continue
        sequence = _cell(row, "scene_full_id")
        if not sequence:
            problems.append(Problem(f"{unit} {number} has no scene_full_id; skipped", "line", line=number))
            continue
        long = _too_long(row, ("story_id", "assignmentID", "index", "scene_full_id"), MAX_ID_CHARS) or _too_long(
            row, [f"link{k}" for k in range(MAX_SHOTS)] + [f"char{k}_url" for k in range(MAX_CHARACTERS)], MAX_PATH_CHARS
        )
        if long:
            problems.append(Problem(f"{unit} {number}: {long}; skipped", "line", line=number))
            continue
        story_id = ids[number]
        if story_id in first:
            k = 2
            while f"{story_id}#{k}" in taken:
                k += 1
            renamed = f"{story_id}#{k}"
            taken.add(renamed)
            problems.append(
                Problem(
                    f"story_id {story_id!r} is {unit} {first[story_id]}'s too: this {unit}'s story is read as {renamed!r}",
                    "id",
                    "warning",
                    number,
                    renamed,
                )
            )
            story_id = renamed
        else:
            first[story_id] = number
        images, characters, found = _files(row, sequence, locator, f"{unit} {number}")
        records.append(
            {
                "story_id": story_id,
                "sequence_id": sequence,
                "system": system,
                "images": images,
                "groups": vwp_groups(row, len(images)),
                "characters": [list(c) for c in characters],
                "_line": number,
                "_problems": [dataclasses.replace(p, line=number, story_id=story_id) for p in found],
            }
        )
    return records, problems


def _story_id(row: Mapping[str, Any], number: int) -> str:
    """A row's id as released: ``story_id``, else ``assignmentID``, else ``index``, else ``<scene>-<row>``."""
    for name in ("story_id", "assignmentID", "index"):
        found = _id_cell(row, name)
        if found:
            return found
    return f"{_cell(row, 'scene_full_id')}-{number}"


def _files(
    row: Mapping[str, Any], scene: str, locator: Locator, where: str
) -> tuple[list[str], list[tuple[str, str]], list[Problem]]:
    """(image paths, (name, crop path) pairs, warnings) of one row, every path relative to the
    table's folder; a row's own ``images`` and ``characters`` win over its links."""
    problems: list[Problem] = []
    images: list[str] | None = None
    try:
        own = listed(row.get("images"), "images")
        if own is not None:
            if not all(isinstance(p, str) and len(p) <= MAX_PATH_CHARS for p in own):
                raise ValueError(f"'images' must be a list of paths (of at most {MAX_PATH_CHARS:,} characters)")
            images = [locator.listed(p.strip()) for p in own]
    except ValueError as exc:
        problems.append(Problem(f"{where}: {exc}; its links are read instead", "image", "warning"))
    if images is None:
        images = []
        for name in vwp_images(row):
            ref, warning = locator.linked(scene, name)
            images.append(ref)
            if warning:
                problems.append(Problem(f"shot {len(images)}: {warning}", "image", "warning"))
    characters: list[tuple[str, str]] | None = None
    try:
        own = listed(row.get("characters"), "characters")
        if own is not None:
            pairs = _listed_characters(own)
            if any(len(c) > MAX_PATH_CHARS for _, c in pairs):
                raise ValueError(f"'characters' holds a crop path over {MAX_PATH_CHARS:,} characters")
            characters = [(n, locator.listed(c) if c else "") for n, c in pairs]
    except ValueError as exc:
        problems.append(Problem(f"{where}: {exc}; char0 … char4 are read instead", "file", "warning"))
    if characters is None:
        characters = []
        for name, crop in vwp_characters(row):
            ref = ""
            if crop:
                ref, warning = locator.linked(scene, crop)
                if warning:
                    problems.append(Problem(f"{name[:40]!r}'s crop: {warning}", "file", "warning"))
            characters.append((name, ref))
    return images, [(n, _relative_to_first(images, c)) for n, c in characters], problems


def extra_columns(rows: Iterable[tuple[int, Any]]) -> list[str]:
    """The columns of the rows that are neither read nor one of the releases' own (in order of
    first appearance)."""
    seen: dict[str, None] = {}
    for _, row in rows:
        if isinstance(row, Mapping):
            seen.update(dict.fromkeys(str(k) for k in row))
    return [c for c in seen if c not in READ_COLUMNS and c not in RELEASE_COLUMNS]


def columns_note(extra: Sequence[str]) -> Problem | None:
    """One warning naming the columns the reader leaves out (the first 20, each cut at 60 characters)."""
    if not extra:
        return None
    shown = ", ".join(repr(c[:60]) for c in extra[:20]) + (f" and {len(extra) - 20} more" if len(extra) > 20 else "")
    return Problem(f"{len(extra)} column{'s' if len(extra) > 1 else ''} not read: {shown}", "file", "warning")


# --------------------------------------------------------------------------- files


def sniff(path: Path) -> Literal["parquet", "json", "csv", "tsv"]:
    """The format of a table file from its first bytes, whatever its suffix: Parquet's magic
    number, JSON (``[`` or ``{`` first), else delimited text (tab-separated when the header holds
    more tabs than commas, or the name ends in ``.tsv``)."""
    with path.open("rb") as fh:
        head = fh.read(65_536)
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if text[:1] in (b"[", b"{"):
        return "json"
    header = head.split(b"\n", 1)[0]
    if path.suffix.lower() == ".tsv" or header.count(b"\t") > header.count(b","):
        return "tsv"
    return "csv"


def has_vwp_header(path: Path) -> bool:
    """Whether a text file's first line, as CSV or TSV, names VWP's columns."""
    import csv

    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            line = fh.readline(65_536)
    except (OSError, UnicodeDecodeError):
        return False
    return any(is_vwp(c.strip() for c in next(csv.reader([line], delimiter=d), [])) for d in (",", "\t"))


def table_rows(path: Path) -> VwpRows:
    """The rows of a VWP release in a table file (CSV/TSV or Parquet, told by :func:`sniff`), with
    a column given twice a problem and list cells (Parquet's) read as lists; a file that is not
    VWP's is refused with the columns it needs."""
    try:
        rows, problems = _read_rows(path)
    except StorySetError:
        raise
    except TableBudgetError as exc:  # over the row or decoded-size budget: say which, with its figures
        raise StorySetError(f"{path}: {exc}") from None
    except Exception as exc:  # a damaged file of any of the formats: the whole file cannot be read
        raise StorySetError(f"{path}: cannot be read as a table ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not rows or not all(isinstance(r, Mapping) for r in rows) or not is_vwp(rows[0].keys()):
        raise StorySetError(f"{path}: not a VWP table (it needs the columns {', '.join(VWP_MARKERS)})")
    return VwpRows(tuple(enumerate(rows, start=1)), tuple(problems))


def _read_rows(path: Path) -> tuple[list[Mapping[str, Any]], list[Problem]]:
    """The rows of a CSV/TSV or Parquet file, as its format's reader gives them within the table
    budget (:mod:`vst_core.data.tables`: rows and decoded bytes, a Parquet file checked from its
    footer before a page is decompressed), and a problem per column the header names twice."""
    kind = sniff(path)
    problems: list[Problem] = []
    rows: list[Mapping[str, Any]]
    if kind == "parquet":
        rows = [{k: _plain(v) for k, v in r.items()} for r in read_parquet_budgeted(path).to_dict(orient="records")]
    elif kind in ("csv", "tsv"):
        sep = "\t" if kind == "tsv" else ","
        twice = _twice_in_header(path, sep)
        frame = read_csv_budgeted(path, sep=sep, dtype=str, keep_default_na=False)
        rows = frame.to_dict(orient="records")
        for name, count in twice.items():
            copies = {f"{name}.{k}" for k in range(1, count)}
            rows = [{k: v for k, v in r.items() if k not in copies} for r in rows]
            problems.append(
                Problem(f"column {name[:60]!r} is in the header {count} times: the first is read, the others left out", "file")
            )
    else:
        raise StorySetError(f"{path}: JSON, not a table")
    return rows, problems


def _twice_in_header(path: Path, sep: str) -> dict[str, int]:
    """The column names a CSV/TSV header gives more than once, with their counts."""
    import csv

    with path.open(encoding="utf-8-sig", newline="") as fh:
        header = next(csv.reader(fh, delimiter=sep), [])
    counts: dict[str, int] = {}
    for name in header:
        counts[name] = counts.get(name, 0) + 1
    return {name: n for name, n in counts.items() if n > 1}


def _plain(value: Any) -> Any:
    """A Parquet cell as plain Python: a list column's arrays as lists (nested ones too)."""
    tolist = getattr(value, "tolist", None)
    if tolist is not None and not isinstance(value, str | bytes | int | float) and getattr(value, "ndim", 0) >= 1:
        return [_plain(v) for v in tolist()]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def json_rows(items: Iterator[tuple[int, Any]], unit: Literal["row", "line"], problems: list[Problem]) -> VwpRows:
    """The rows of a JSON list or JSON-lines file (numbered ``(number, row)`` pairs), with the
    keys each row gave twice (a row read by :func:`pairs_with_duplicates` keeps them)."""
    rows = tuple(items)
    duplicates = {n: tuple(r.duplicates) for n, r in rows if isinstance(r, KeyedRow) and r.duplicates}
    return VwpRows(rows, tuple(problems), unit, duplicates)


class KeyedRow(dict[str, Any]):
    """A JSON object that remembers the keys it was given more than once (JSON keeps the last)."""

    duplicates: tuple[str, ...] = ()


def pairs_with_duplicates(pairs: list[tuple[str, Any]]) -> KeyedRow:
    """``object_pairs_hook`` for :func:`json.loads`: the object, with its repeated keys noted.

    >>> row = json.loads('{"a": 1, "a": 2}', object_pairs_hook=pairs_with_duplicates)
    >>> row, row.duplicates
    ({'a': 2}, ('a',))
    """
    row = KeyedRow(pairs)
    if len(row) < len(pairs):
        counts: dict[str, int] = {}
        for key, _ in pairs:
            counts[key] = counts.get(key, 0) + 1
        row.duplicates = tuple(key for key, n in counts.items() if n > 1)
    return row


def duplicate_keys_problems(table: VwpRows) -> list[Problem]:
    """One problem per key some JSON rows give twice: how many rows, the first of them."""
    rows_of: dict[str, list[int]] = {}
    for number, keys in table.duplicates.items():
        for key in keys:
            rows_of.setdefault(key, []).append(number)
    return [
        Problem(
            f"{key[:60]!r} is given twice in {len(numbers)} {table.unit}{'s' if len(numbers) > 1 else ''} "
            f"(first: {table.unit} {numbers[0]}): the last value is read",
            "file",
            line=numbers[0],
        )
        for key, numbers in rows_of.items()
    ]


__all__ = [
    "GROUP_MARK",
    "MAX_SHOTS",
    "KeyedRow",
    "Locator",
    "VwpRows",
    "columns_note",
    "extra_columns",
    "has_vwp_header",
    "is_vwp",
    "json_rows",
    "listed",
    "pairs_with_duplicates",
    "shared_names",
    "sniff",
    "split_groups",
    "table_rows",
    "vwp_characters",
    "vwp_groups",
    "vwp_images",
    "vwp_records",
]
