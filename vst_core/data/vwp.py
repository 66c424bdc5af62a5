"""Visual Writing Prompts (VWP; Hong et al., TACL 2023) as released: one row per story, as the
dataset's CSV (``vwp_v2.1_test.csv`` and the others), its JSON records or a Parquet export.

Columns read (``column_explain.csv`` of the release names them): ``scene_full_id`` (the image
sequence), ``link0`` … ``link9`` (the 5–10 film shots, as URLs on the authors' server), ``text0``
… ``text9`` (what the writer wrote for each shot: a group of one or more sentences),
``sep_story`` (the same groups joined with ``[SEP]``, used where the ``text*`` columns are absent),
``char0`` … ``char4`` (the named characters; their crops in ``char*_url``), and for the story's
id ``assignmentID``, else ``index``, else the row number. The images are not in the release: the
user downloads them with VWP's own script, and they are found here by the file name of each
link in ``images_dir`` (default: an ``images`` folder beside the file, else the file's folder).

Every story keeps its sentence groups (:attr:`vst_core.data.Story.frames`), so non-redundancy
and coherence read the real sentences while grounding, CLIPScore and T keep the shot alignment.

>>> shots = {"link0": "http://x/a/1.jpg", "link1": "http://x/a/2.jpg", "link2": ""}
>>> vwp_images(shots)
['1.jpg', '2.jpg']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from vst_core.data.types import Problem, StorySetError

#: The most shots (and text columns) of a VWP sequence, and of named characters.
MAX_SHOTS = 10
MAX_CHARACTERS = 5
#: The columns that say a table is VWP's.
VWP_MARKERS = ("scene_full_id", "link0")
#: What separates the texts of two images in one story text: ``[SEP]`` (VWP's ``sep_story``) or
#: ``[SENT]`` (VLM story releases), any case, with the spaces around it.
GROUP_MARK = re.compile(r"\s*\[(?:SEP|SENT)\]\s*", re.IGNORECASE)


def is_vwp(columns: Iterable[str]) -> bool:
    """Whether a table with these columns is a VWP release.

    >>> is_vwp(["scene_full_id", "link0", "text0"]), is_vwp(["story_id", "text"])
    (True, False)
    """
    names = set(columns)
    return all(m in names for m in VWP_MARKERS)


def _cell(row: Mapping[str, Any], name: str) -> str:
    """A cell as text; an empty cell, NaN or None as ''."""
    value = row.get(name)
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


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
        return GROUP_MARK.split(joined)
    story = _cell(row, "story")
    return [story] if story else []


def vwp_records(
    rows: Iterable[Mapping[str, Any]], images_prefix: str = "", system: str = "human"
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Story-set objects of VWP's rows (one per row; rows without ``scene_full_id`` are problems):
    the id (``story_id``, else ``assignmentID``, else ``index``, else ``<scene>-<row>``), the sequence, ``system``
    (the release's stories are people's), the shots' file names under ``images_prefix``, the
    groups (:func:`vwp_groups`) and the named characters (:func:`vwp_characters`)."""
    records: list[dict[str, Any]] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        sequence = _cell(row, "scene_full_id")
        if not sequence:
            problems.append(Problem(f"row {number} has no scene_full_id; skipped", "line", line=number))
            continue
        story_id = _cell(row, "story_id") or _cell(row, "assignmentID") or _cell(row, "index") or f"{sequence}-{number}"
        seen[story_id] = seen.get(story_id, 0) + 1
        if seen[story_id] > 1:
            story_id = f"{story_id}#{seen[story_id]}"
        shots = vwp_images(row)
        records.append(
            {
                "story_id": story_id,
                "sequence_id": sequence,
                "system": system,
                "images": [f"{images_prefix}/{name}" if images_prefix else name for name in shots],
                "groups": vwp_groups(row, len(shots)),
                "characters": [list(c) for c in vwp_characters(row)],
                "_line": number,
            }
        )
    return records, problems


def table_rows(path: Path) -> list[Mapping[str, Any]]:
    """The rows of a VWP release file: CSV/TSV, Parquet, or JSON (a list of row objects, or one
    object per line); a file that is not VWP's is refused with the columns it needs."""
    try:
        rows = _read_rows(path)
    except StorySetError:
        raise
    except Exception as exc:  # a damaged file of any of the formats: the whole file cannot be read
        raise StorySetError(f"{path}: cannot be read as a table ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not rows or not all(isinstance(r, Mapping) for r in rows) or not is_vwp(rows[0].keys()):
        raise StorySetError(f"{path}: not a VWP table (it needs the columns {', '.join(VWP_MARKERS)})")
    return rows


def _read_rows(path: Path) -> list[Mapping[str, Any]]:
    """The rows of a CSV/TSV, Parquet or JSON(L) file, as its format's reader gives them."""
    suffix = path.suffix.lower()
    rows: list[Mapping[str, Any]]
    if suffix == ".parquet":
        import pandas as pd

        rows = pd.read_parquet(path).to_dict(orient="records")
    elif suffix in (".csv", ".tsv"):
        import pandas as pd

        frame = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        rows = frame.to_dict(orient="records")
    else:
        text = path.read_text(encoding="utf-8-sig")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        rows = data if isinstance(data, list) else [data]
    return rows


__all__ = ["GROUP_MARK", "MAX_SHOTS", "is_vwp", "table_rows", "vwp_characters", "vwp_groups", "vwp_images", "vwp_records"]
