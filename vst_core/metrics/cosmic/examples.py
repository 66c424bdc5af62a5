"""The training data of COSMic's recipe (:mod:`.train`): the rated captions of the
authors' TSV files, the images of their rows, one example per (row, rated label), and the split by image.

Layout of the TSV files (``data/RaCCoon.tsv`` and ``data/COIN.tsv`` of the authors' repository,
header :data:`TSV_COLUMNS`): one row per (caption, annotator). ``cb0``/``cb1``/``cb3``/``cb4`` are
the Meta/Visible/Subjective/Story boxes (the other ``cb`` boxes are relations COSMic does not use);
``cbVisible1..5`` and ``cbStory1..5`` rate the caption under that label on 1..5, mapped to
(k - 1) / 4; ``cbMetaGood/Bad`` and ``cbSubjectiveGood/Bad`` rate it good (1) or bad (0);
``cbBrokenImg`` marks an image the annotator could not see. A row whose caption is the prompt
``Please write the caption.`` (COIN) holds a caption written by the annotator in ``other``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from vst_core.data.paths import IMAGE_SUFFIXES, check_image
from vst_core.metrics.cosmic.rater import (
    LABELS,
)
from vst_core.problems import Problem

if TYPE_CHECKING:
    pass

#: The header of RaCCoon.tsv and COIN.tsv.
TSV_COLUMNS: tuple[str, ...] = tuple(
    "id_annotation id_annotator caption url cb0 cb1 cb2 cb3 cb4 cb5 cb6 other cbWhen cbHow cbWhere Identification "
    "source cbBrokenImg cbMetaGood cbMetaBad cbVisible1 cbVisible2 cbVisible3 cbVisible4 cbVisible5 cbSubjectiveBad "
    "cbSubjectiveGood cbStory1 cbStory2 cbStory3 cbStory4 cbStory5".split()
)
#: The label boxes of the annotation form.
LABEL_COLUMNS: dict[str, str] = {"Meta": "cb0", "Visible": "cb1", "Subjective": "cb3", "Story": "cb4"}
#: Rating boxes per label and the rating each stands for, in [0, 1].
RATING_COLUMNS: dict[str, tuple[tuple[str, float], ...]] = {
    "Visible": tuple((f"cbVisible{k}", (k - 1) / 4) for k in range(1, 6)),
    "Story": tuple((f"cbStory{k}", (k - 1) / 4) for k in range(1, 6)),
    "Meta": (("cbMetaBad", 0.0), ("cbMetaGood", 1.0)),
    "Subjective": (("cbSubjectiveBad", 0.0), ("cbSubjectiveGood", 1.0)),
}
WRITE_PROMPT = "Please write the caption."
_FLAG_COLUMNS = ("cbBrokenImg", *LABEL_COLUMNS.values(), *(c for cols in RATING_COLUMNS.values() for c, _ in cols))
REQUIRED_COLUMNS: tuple[str, ...] = ("id_annotation", "caption", "url", "other", *_FLAG_COLUMNS)
MAX_TSV_BYTES = 256 * 1024 * 1024


class CosmicDataError(ValueError):
    """A TSV file that cannot be read as the RaCCoon/COIN layout at all (row problems are values)."""


# ---------------------------------------------------------------- the TSV layout


@dataclass(frozen=True, slots=True)
class CosmicRow:
    """One annotated caption. ``ratings``: (label, rating in [0, 1]) per rated label;
    ``written``: the caption was written by the annotator (COIN), not rated."""

    line: int
    row_id: str
    url: str
    caption: str
    labels: tuple[str, ...] = ()
    ratings: tuple[tuple[str, float], ...] = ()
    broken: bool = False
    written: bool = False

    @property
    def best(self) -> tuple[str, float] | None:
        """The best-rated label and its rating (ties: :data:`LABELS` order), or None."""
        if not self.ratings:
            return None
        return max(self.ratings, key=lambda lr: (lr[1], -LABELS.index(lr[0])))


def _flag(value: str) -> bool | None:
    value = value.strip()
    return {"": False, "0": False, "1": True}.get(value)


def read_cosmic_tsv(path: str | Path) -> tuple[list[CosmicRow], list[Problem]]:
    """Rows of a RaCCoon/COIN-layout TSV and the problems of the rows left out.

    Raises :class:`CosmicDataError` (and nothing else) when the file cannot be read, is not UTF-8,
    or lacks a column of :data:`REQUIRED_COLUMNS`. A row with the wrong number of fields, a box
    that is not 0/1, no URL or no caption is a :class:`Problem` and left out; two ratings for one
    label drop that label's rating (a problem too). Fields are tab-separated, no quoting.
    """
    path = Path(path)
    try:
        if not path.is_file():
            raise CosmicDataError(f"{path}: not a file")
        if path.stat().st_size > MAX_TSV_BYTES:
            raise CosmicDataError(f"{path}: over {MAX_TSV_BYTES >> 20} MiB")
        text = path.read_bytes().decode("utf-8-sig")
    except CosmicDataError:
        raise
    except UnicodeDecodeError as exc:
        raise CosmicDataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:
        raise CosmicDataError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    lines = text.split("\n")
    header = [name.strip() for name in lines[0].rstrip("\r").split("\t")]
    if not any(header):
        raise CosmicDataError(f"{path}: empty file (expected the RaCCoon/COIN header)")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise CosmicDataError(f"{path}: not the RaCCoon/COIN layout, missing columns {', '.join(missing)}")
    duplicated = sorted({c for c in header if c and header.count(c) > 1})
    if duplicated:
        raise CosmicDataError(f"{path}: columns named twice: {', '.join(duplicated)}")
    col = {name: i for i, name in enumerate(header)}
    rows: list[CosmicRow] = []
    problems: list[Problem] = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            problems.append(Problem(f"{len(fields)} fields, the header has {len(header)}", "line", line=number))
            continue
        flags: dict[str, bool] = {}
        bad = ""
        for name in _FLAG_COLUMNS:
            value = _flag(fields[col[name]])
            if value is None:
                bad = f"column {name} holds {fields[col[name]][:20]!r}, not 0 or 1"
                break
            flags[name] = value
        url = fields[col["url"]].strip()
        caption = fields[col["caption"]].strip()
        written = caption == WRITE_PROMPT
        if written:
            caption = fields[col["other"]].strip()
        if bad or not url or not caption:
            problems.append(Problem(bad or ("no image URL" if not url else "no caption"), "line", line=number))
            continue
        ratings: list[tuple[str, float]] = []
        for label in LABELS:
            given = [value for name, value in RATING_COLUMNS[label] if flags[name]]
            if len(given) > 1:
                problems.append(Problem(f"{len(given)} ratings for {label}; that rating left out", "line", "warning", number))
            elif given:
                ratings.append((label, given[0]))
        rated = {label for label, _ in ratings}
        labels = tuple(label for label in LABELS if flags[LABEL_COLUMNS[label]] or label in rated)
        rows.append(
            CosmicRow(
                number,
                fields[col["id_annotation"]].strip(),
                url,
                caption,
                labels,
                tuple(ratings),
                flags["cbBrokenImg"],
                written,
            )
        )
    return rows, problems


# ---------------------------------------------------------------- images of the rows


def url_file_name(url: str) -> str:
    """The file name a download of ``url`` gets: the last segment of its path, percent-decoded.

    >>> url_file_name("http://host/a/photo%201.jpg?itok=x")
    'photo 1.jpg'
    """
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    name = unquote(path.rsplit("/", 1)[-1])
    return "" if name in {".", ".."} or "/" in name or "\0" in name else name


@dataclass(frozen=True)
class ImageLookup:
    """Where each row's image is (by row index), and per distinct image URL what was found."""

    paths: dict[int, Path]
    found: int
    missing: int
    unreadable: int
    ambiguous: int  # URLs whose file name another URL of the file shares (looked up by row id only)


def find_images(rows: Sequence[CosmicRow], images_dir: str | Path) -> ImageLookup:
    """Each row's image in ``images_dir`` (not its subfolders): ``<row id><suffix>`` (the row's
    ``id_annotation``, any suffix of :data:`~vst_core.data.paths.IMAGE_SUFFIXES`) first, else the
    file named as the URL's last path segment (:func:`url_file_name`) unless another URL of the
    TSV ends in the same name. An image that PIL cannot open is unreadable; its rows are skipped.
    Counts are per distinct URL (found when any row of the URL has a readable image)."""
    folder = Path(images_dir)
    if not folder.is_dir():
        raise CosmicDataError(f"images folder {folder} does not exist")
    files = {p.name: p for p in folder.iterdir() if p.is_file()}
    owners: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        owners[url_file_name(row.url)].add(row.url)
    checked: dict[Path, bool] = {}
    paths: dict[int, Path] = {}
    bad_urls: set[str] = set()
    for i, row in enumerate(rows):
        names = [f"{row.row_id}{suffix}" for suffix in IMAGE_SUFFIXES] if row.row_id else []
        by_url = url_file_name(row.url)
        if by_url and len(owners[by_url]) == 1:
            names.append(by_url)
        path = next((files[n] for n in names if n in files), None)
        if path is None:
            continue
        if path not in checked:
            checked[path] = check_image(path) is None
        if checked[path]:
            paths[i] = path
        else:
            bad_urls.add(row.url)
    urls = {row.url for row in rows}
    found = {rows[i].url for i in paths}
    unreadable = len(bad_urls - found)
    ambiguous = sum(len(names) for name, names in owners.items() if name and len(names) > 1)
    return ImageLookup(paths, len(found), len(urls) - len(found) - unreadable, unreadable, ambiguous)


# ---------------------------------------------------------------- training examples


@dataclass(frozen=True, slots=True)
class CosmicExample:
    """(candidate, its label, reference, its label, image) -> rating, from one rated label of a row."""

    url: str
    image: Path
    candidate: str
    label: str
    labels: tuple[str, ...]  # every label of the candidate's row (the label head's target)
    reference: str
    reference_label: str
    rating: float


def _reference_of(row: CosmicRow, others: Sequence[CosmicRow]) -> tuple[str, str] | None:
    """(reference caption, its label): a written caption of the image first, else the other caption
    with the best rating (ties: first in the file); never the same text as ``row``'s."""
    own = row.caption.casefold()
    usable = [o for o in others if o is not row and o.caption.casefold() != own and (o.written or o.best or o.labels)]
    if not usable:
        return None
    best = max(usable, key=lambda o: (o.written, o.best[1] if o.best else -1.0, -o.line))
    if best.written:
        return best.caption, "Visible"  # COIN's captions were written as Visible descriptions
    label = best.best[0] if best.best else best.labels[0]
    return best.caption, label


@dataclass
class ExampleCounts:
    rows: int = 0
    rated_rows: int = 0
    broken_image: int = 0
    no_image: int = 0
    no_reference: int = 0
    examples: int = 0


def cosmic_examples(rows: Sequence[CosmicRow], images: Mapping[int, Path]) -> tuple[list[CosmicExample], ExampleCounts]:
    """One example per rated label of each rated row with an image (``images``: row index -> file)
    and a reference (see :func:`_reference_of`); the counts say what was left out and why."""
    by_url: dict[str, list[CosmicRow]] = defaultdict(list)
    for row in rows:
        by_url[row.url].append(row)
    counts = ExampleCounts(rows=len(rows))
    out: list[CosmicExample] = []
    for i, row in enumerate(rows):
        if not row.ratings:
            continue
        counts.rated_rows += 1
        if row.broken:
            counts.broken_image += 1
            continue
        image = images.get(i)
        if image is None:
            counts.no_image += 1
            continue
        reference = _reference_of(row, by_url[row.url])
        if reference is None:
            counts.no_reference += 1
            continue
        for label, rating in row.ratings:
            out.append(CosmicExample(row.url, image, row.caption, label, row.labels, reference[0], reference[1], rating))
    counts.examples = len(out)
    return out, counts


def split_by_image(
    examples: Sequence[CosmicExample], held_out: float, seed: int
) -> tuple[list[CosmicExample], list[CosmicExample]]:
    """(train, held out): a ``held_out`` fraction of the image URLs (at least one when there are two
    or more), shuffled by ``seed``; all examples of an image fall on the same side."""
    urls = sorted({e.url for e in examples})
    random.Random(seed).shuffle(urls)
    n = max(1, round(len(urls) * held_out)) if len(urls) > 1 and held_out > 0 else 0
    held = set(urls[:n])
    return [e for e in examples if e.url not in held], [e for e in examples if e.url in held]
