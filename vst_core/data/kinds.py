"""What a data file holds, told from its first bytes whatever its name (:func:`content_kind`):
stories, scores records, scores computed elsewhere (a table to import) or human judgements; and
the sentence that names a file given where another kind is read (:func:`not_what`). The story
reader, the judgements reader and every command ask here, so a file of the wrong kind is named for
what it is instead of failing inside a parser.

>>> kind_of_text('{"story_id": "a", "sentences": ["A dog ran."], "metrics": {}}')
'scores'
>>> kind_of_text("# made up\\nstory_id,rater,aspect,value\\na,r1,overall,3\\n")
'judgements'
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Literal

#: What a file can hold: stories (to score), scores records (``vst score``'s lines), a table of
#: scores computed elsewhere (to import) and human judgements.
FileKind = Literal["stories", "scores", "score table", "judgements"]

#: How much of a file is read to tell its kind.
HEAD_BYTES = 1 << 20
#: How many of its first JSON records are looked at.
HEAD_RECORDS = 50

_STORY_KEYS = ("sentences", "story", "text", "groups")
#: Headers that name judgements: long, pairwise, VHED's and VIST-Edit's (lower case).
_JUDGEMENT_HEADERS = (
    {"story_id", "aspect", "value"},
    {"story_a", "story_b", "rank_a", "rank_b"},
    {"story_id", "model_base", "model_comp", "avg_rank_base", "avg_rank_comp"},
    {"team", "story_id", "workerid"},
)

_WHAT = {
    "stories": "stories",
    "scores": "scores (each line a scored story with its metrics)",
    "score table": "scores computed elsewhere (a table of per-story scores)",
    "judgements": "human judgements (ratings of stories)",
}

#: A kind as what a reader expected.
_WANTED = {"stories": "stories", "scores": "scores", "score table": "scores to import", "judgements": "judgements"}


def content_kind(path: str | Path) -> FileKind | None:
    """The kind of data ``path`` holds, from its first :data:`HEAD_BYTES` (None when it cannot be
    read or is none of them: a VIST or VWP release reads as stories)."""
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None
    if head.startswith(b"PAR1"):
        return None  # Parquet: a VWP table, read by the story reader
    return kind_of_text(head.decode("utf-8", "replace"))


def kind_of_text(text: str) -> FileKind | None:
    """The kind of data a file's first characters hold (see :func:`content_kind`).

    >>> kind_of_text('{"story_id": "a", "sentences": ["A dog ran."]}'), kind_of_text("story_id,C_score\\n")
    ('stories', 'score table')
    """
    text = text.lstrip("\ufeff").lstrip()
    if text[:1] in ("[", "{"):
        return _json_kind(text)
    return _table_kind(text)


def _json_kind(text: str) -> FileKind | None:
    rows: list[object] = []
    whole: object = None
    if text.startswith("[") or "\n{" not in text[:4096]:
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):  # not one document, or nested past what Python decodes
            whole = None
    if isinstance(whole, dict) and not any(k in whole for k in (*_STORY_KEYS, "metrics")):
        # a VIST annotation file or a {story_id: text} map
        stories = "annotations" in whole or (bool(whole) and all(isinstance(v, str) for v in whole.values()))
        return "stories" if stories else None
    if isinstance(whole, list):
        rows = whole[:HEAD_RECORDS]
    elif whole is not None:
        rows = [whole]
    else:  # JSON lines (the last may be cut where the head ends)
        for line in text.splitlines()[:HEAD_RECORDS]:
            try:
                rows.append(json.loads(line))
            except (ValueError, RecursionError):
                continue
    records = [r for r in rows if isinstance(r, dict)]
    if not records:
        return None
    if any("metrics" in r or "format" in r for r in records):
        return "scores"
    if all(any(k in r for k in _STORY_KEYS) for r in records) or _vwp(records[0]):
        return "stories"
    return None


def _table_kind(text: str) -> FileKind | None:
    """A delimited table's kind from its header (blank and ``#`` lines before it skipped)."""
    lines = [line for line in text.splitlines()[:1000] if line.strip() and not line.startswith("#")]
    if not lines:
        return None
    header = lines[0]
    delimiter = "\t" if header.count("\t") > header.count(",") else ","
    names = [c.strip().lower() for c in next(csv.reader([header], delimiter=delimiter), [])]
    columns = set(names)
    if _vwp(dict.fromkeys(columns)):
        return "stories"
    if any(names <= columns for names in _JUDGEMENT_HEADERS) or ({"team", "story_id", "worker_id"} <= columns):
        return "judgements"
    if "story_id" in columns and ({"metric", "value"} <= columns or any(c.endswith("_score") for c in columns)):
        return "score table"  # vst import-scores' long CSV or a released *_C.csv / *_R.csv
    if "story_id" in columns and _numbers_beside_ids(lines[1:3], names, delimiter):
        return "judgements"  # the wide layout: story_id and a column of numbers per aspect
    return None


def _numbers_beside_ids(rows: list[str], names: list[str], delimiter: str) -> bool:
    """Whether the first rows hold a number in a column that is not an id (an aspect's rating)."""
    ids = {"story_id", "rater", "system", "sequence_id"}
    for row in csv.reader(rows, delimiter=delimiter):
        for name, cell in zip(names, row, strict=False):
            try:
                float(cell)
            except ValueError:
                continue
            if name not in ids:
                return True
    return False


def _vwp(record: dict[str, object]) -> bool:
    from vst_core.data.vwp import is_vwp

    return is_vwp(record.keys())


def not_what(path: str | Path, found: FileKind, want: FileKind) -> str:
    """The sentence that names ``path`` for what it holds when ``want`` is read.

    >>> not_what("s.jsonl", "scores", "stories")
    's.jsonl holds scores (each line a scored story with its metrics), not stories'
    """
    return f"{path} holds {_WHAT[found]}, not {_WANTED[want]}"


def wrong_kind(path: str | Path, want: FileKind) -> FileKind | None:
    """The kind ``path`` holds when it is told and is not ``want`` (None otherwise)."""
    found = content_kind(path)
    return found if found is not None and found != want else None
