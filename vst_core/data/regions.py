"""Candidate image regions: a regions CSV, an object detector, or weight-free proposals.

Order of preference (the caller picks): (a) a CSV in the GROOVIST/RoViST layout
``image_name,image_id,bbox,object,score`` with ``bbox`` = ``[x1, y1, x2, y2]`` in pixels and rows
of an image ordered by detector score; (b) torchvision's Faster R-CNN when its weights are in
the local torch cache; (c) ten fixed proposals (quadrants, halves, centre), so grounding
always works. The first ``top_b`` regions of an image are used, plus the whole image if asked.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from vst_core.data import Problem
from vst_core.data.readers import load_json


@dataclass(frozen=True, slots=True)
class Box:
    """A region ``[x1, y1, x2, y2]`` in pixels, with the detector's label and score if any."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str | None = None
    score: float | None = None

    def as_list(self) -> list[float]:
        return [round(self.x1, 1), round(self.y1, 1), round(self.x2, 1), round(self.y2, 1)]

    def key(self) -> str:
        return ",".join(f"{v:.1f}" for v in (self.x1, self.y1, self.x2, self.y2))

    def scaled(self, sx: float, sy: float) -> Box:
        """The box in an image resized by (sx, sy); itself when both are 1."""
        if sx == 1.0 and sy == 1.0:
            return self
        return Box(self.x1 * sx, self.y1 * sy, self.x2 * sx, self.y2 * sy, self.label, self.score)


def whole_image(width: int, height: int) -> Box:
    return Box(0, 0, width, height, "whole image")


def grid_proposals(width: int, height: int) -> list[Box]:
    """Ten weight-free regions: four quadrants, the centre, four halves, the central 3/4."""
    w, h = float(width), float(height)
    return [
        Box(0, 0, w / 2, h / 2, "top-left"),
        Box(w / 2, 0, w, h / 2, "top-right"),
        Box(0, h / 2, w / 2, h, "bottom-left"),
        Box(w / 2, h / 2, w, h, "bottom-right"),
        Box(w / 4, h / 4, 3 * w / 4, 3 * h / 4, "centre"),
        Box(0, 0, w, h / 2, "top half"),
        Box(0, h / 2, w, h, "bottom half"),
        Box(0, 0, w / 2, h, "left half"),
        Box(w / 2, 0, w, h, "right half"),
        Box(w / 8, h / 8, 7 * w / 8, 7 * h / 8, "central 3/4"),
    ]


def clip_box(box: Box, width: int, height: int) -> Box | None:
    """The box clipped to the image; None when nothing of at least 2x2 pixels is left."""
    x1, y1 = max(0.0, min(box.x1, box.x2)), max(0.0, min(box.y1, box.y2))
    x2, y2 = min(float(width), max(box.x1, box.x2)), min(float(height), max(box.y1, box.y2))
    if x2 - x1 < 2 or y2 - y1 < 2:
        return None
    return Box(x1, y1, x2, y2, box.label, box.score)


def _key(name: str) -> str:
    """A path as a lookup key: forward slashes, no leading ``./`` or ``/``."""
    key = name.strip().replace("\\", "/")
    while key.startswith("./"):
        key = key[2:]
    return key.lstrip("/")


@dataclass
class RegionsTable:
    """Boxes of a regions CSV, keyed by ``image_name`` as written (a path) and by ``image_id``.

    An image is found by its path relative to the dataset folder: the same path, else the entry
    whose path ends the image's path (or the other way round), else its file stem as an
    ``image_id``. Base names alone never decide: when several entries end the path alike, none
    is used and the ambiguity is reported."""

    by_path: dict[str, list[Box]]
    by_id: dict[str, list[Box]]

    def __post_init__(self) -> None:
        self._by_name: dict[str, list[str]] = {}
        for key in self.by_path:
            self._by_name.setdefault(PurePosixPath(key).name, []).append(key)

    def __len__(self) -> int:
        return len(self.by_path)

    def __bool__(self) -> bool:
        return bool(self.by_path or self.by_id)

    def lookup(self, ref: str) -> tuple[str | None, list[Box] | None, str | None]:
        """(key used, boxes, why none) for an image path relative to the dataset folder."""
        ref = _key(ref)
        if ref in self.by_path:
            return ref, self.by_path[ref], None
        candidates = self._by_name.get(PurePosixPath(ref).name, [])
        matches = [k for k in candidates if ref.endswith("/" + k) or k.endswith("/" + ref)]
        if len(matches) == 1:
            return matches[0], self.by_path[matches[0]], None
        if len(matches) > 1:
            shown = ", ".join(matches[:3]) + (", ..." if len(matches) > 3 else "")
            return None, None, f"{len(matches)} entries of the regions file match {ref} ({shown}): ambiguous, none used"
        stem = PurePosixPath(ref).stem
        if stem in self.by_id:
            return f"id:{stem}", self.by_id[stem], None
        return None, None, None


def _box(row: dict[str, str]) -> Box:
    """One row's box; ValueError naming what is wrong (a bbox that is not four finite numbers, an
    integer too large for a float, a score that is not a finite number)."""
    coords = load_json(row.get("bbox") or "")
    if not (isinstance(coords, list) and len(coords) == 4 and all(isinstance(c, (int, float)) for c in coords)):
        raise ValueError("bbox must be [x1, y1, x2, y2]")
    try:
        x1, y1, x2, y2 = (float(c) for c in coords)
        score = float(row["score"]) if row.get("score") not in (None, "") else None
    except OverflowError:
        raise ValueError("bbox holds a number too large for a float") from None
    if not all(math.isfinite(c) for c in (x1, y1, x2, y2)):
        raise ValueError("bbox holds a number that is not finite")
    if score is not None and not math.isfinite(score):
        raise ValueError("score is not a finite number")
    return Box(x1, y1, x2, y2, label=row.get("object") or None, score=score)


def read_regions_csv(path: str | Path) -> tuple[RegionsTable, list[Problem]]:
    """The boxes of a regions CSV in file order (see :class:`RegionsTable`); malformed rows are
    reported with their line number. ValueError when the file cannot be read as one."""
    path = Path(path)
    by_path: dict[str, list[Box]] = {}
    by_id: dict[str, list[Box]] = {}
    problems: list[Problem] = []
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {"image_name", "bbox"} - set(reader.fieldnames or [])
            if missing:
                raise ValueError(f"{path}: regions CSV needs columns image_name and bbox (missing {', '.join(sorted(missing))})")
            for row in reader:
                try:
                    box = _box(row)
                except (ValueError, TypeError, OverflowError) as exc:
                    problems.append(Problem(f"regions CSV: bad row ({exc}); skipped", "line", line=reader.line_num))
                    continue
                by_path.setdefault(_key(row["image_name"] or ""), []).append(box)
                if (row.get("image_id") or "").strip():
                    by_id.setdefault(row["image_id"].strip(), []).append(box)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: regions CSV is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: not a readable CSV ({exc})") from None
    return RegionsTable(by_path, by_id), problems


def select_regions(boxes: Sequence[Box], width: int, height: int, *, top_b: int, include_whole: bool) -> list[Box]:
    """The first ``top_b`` valid boxes clipped to the image, the whole image first if asked."""
    chosen = [whole_image(width, height)] if include_whole else []
    for box in boxes:
        if len(chosen) - int(include_whole) >= top_b:
            break
        clipped = clip_box(box, width, height)
        if clipped is not None:
            chosen.append(clipped)
    return chosen
