"""Human judgements: reading a CSV (long, wide or pairwise, or the public VIST-Edit and VHED files,
read by :mod:`.released_layouts`) into tidy frames, reporting every row that could not be used.
Combining raters and their agreement are in :mod:`.ratings`."""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.settings import GAP_DECIMALS
from vst_core.data.kinds import HEAD_BYTES, kind_of_text, not_what
from vst_core.data.scores_io import size_text
from vst_core.data.tables import TableBudget, TableBudgetError, read_csv_budgeted

#: The VHED error taxonomy (Vrank Table 5): canonical name -> accepted column/aspect names.
ERROR_TAGS: dict[str, tuple[str, ...]] = {
    "grammar": ("gram", "grammar", "grammatical error", "grammar error"),
    "repetition": ("rep", "repetition", "repetitive"),
    "description in isolation": ("desc", "description", "description in isolation", "isolation"),
    "absurdity": ("abs", "absurd", "absurdity"),
    "event mismatch": ("event", "event mismatch"),
    "object mismatch": ("obj", "object", "object mismatch"),
}
_ERROR_ALIASES = {alias: tag for tag, aliases in ERROR_TAGS.items() for alias in aliases}
_ID_COLUMNS = {"story_id", "rater", "system", "sequence_id"}


#: Judgements layouts: ``auto`` tells the others apart by the header
#: (:func:`~vst_core.analysis.meta_eval.released_layouts.detect_layout`).
LAYOUTS = ("auto", "long", "wide", "pairwise", "vist-edit", "vhed")


class JudgementsError(ValueError):
    """A judgements file that cannot be read at all (wrong layout, no usable rows)."""


# --------------------------------------------------------------------------------------------
# Reading judgements


@dataclass
class Judgements:
    """Human judgements in tidy form, with what was dropped and why."""

    ratings: pd.DataFrame  # story_id, rater, aspect, value (float), system
    errors: pd.DataFrame  # story_id, rater, error, value (0/1)
    pairs: pd.DataFrame  # sequence_id, better, worse, gap, agreement  (pairwise files only)
    layout: str
    problems: list[str] = field(default_factory=list)
    digest: str = ""  # sha256 of the file's bytes, for the meta-evaluation signature

    @property
    def aspects(self) -> list[str]:
        return list(dict.fromkeys(self.ratings["aspect"]))

    @property
    def error_tags(self) -> list[str]:
        return list(dict.fromkeys(self.errors["error"]))

    @property
    def story_ids(self) -> set[str]:
        ids = set(self.ratings["story_id"]) | set(self.errors["story_id"])
        if len(self.pairs):
            ids |= set(self.pairs["better"]) | set(self.pairs["worse"])
        return ids


def _error_tag(name: str) -> str | None:
    key = re.sub(r"[_\-]+", " ", name.strip().lower())
    key = re.sub(r"^(error|err)\s*[: ]\s*", "", key)
    return _ERROR_ALIASES.get(key)


def _read_bytes(source: str | Path | bytes | IO[Any]) -> bytes:
    if isinstance(source, (str, Path)):
        raw = Path(source).read_bytes()
    elif isinstance(source, bytes):
        raw = source
    else:
        raw = source.read()
        raw = raw if isinstance(raw, bytes) else str(raw).encode()
    return raw


_STRUCTURAL = frozenset(
    {"story_id", "rater", "aspect", "value", "system", "sequence_id", "story_a", "story_b", "rank_a", "rank_b", "agreement"}
)


def _ragged_rows(text: str, width: int, first_line: int, problems: list[str], rows: int) -> None:
    """Report rows with more fields than the header: an empty last field is a trailing comma;
    anything else is data the header does not name (both are ignored). A file of more than
    ``rows`` rows after its header is refused (:class:`JudgementsTooLarge`) once the next is read."""
    trailing: list[int] = []
    extra: list[int] = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=first_line):
        if number - first_line > rows:
            raise _too_large(rows)
        if len(row) > width:
            (trailing if not "".join(row[width:]).strip() else extra).append(number)
    if trailing:
        problems.append(f"{len(trailing)} row(s) end in a trailing comma (lines {trailing[:5]}); the empty field is ignored")
    if extra:
        problems.append(f"{len(extra)} row(s) have more fields than the header (lines {extra[:5]}); the extra fields are ignored")


class JudgementsTooLarge(JudgementsError, TableBudgetError):
    """A judgements file over the table budget (:class:`~vst_core.data.tables.TableBudget`): its
    ``budget`` (``"rows"`` or ``"bytes"``), ``limit`` and ``found`` say which and by how much."""


def _too_large(rows: int) -> JudgementsTooLarge:
    """The refusal of a judgements file of more than ``rows`` rows, its budget."""
    return JudgementsTooLarge(
        f"the judgements file holds more than {rows:,} rows, over the budget of {rows:,} rows for a table "
        "(VST_MAX_TABLE_ROWS raises it); split it",
        budget="rows",
        limit=rows,
        found=rows,
    )


#: The only line ends of a CSV file (RFC 4180's CRLF, and LF or CR alone).
_CSV_LINE_END = re.compile(r"\r\n|\n|\r")


def _read_table(raw: bytes, budget: TableBudget | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The CSV as text cells indexed by line number, plus what was odd about its shape. Structural
    column names are matched case-insensitively (two columns meaning one name are refused); empty
    unnamed columns (a trailing comma on the header) are dropped. Within ``budget``
    (:meth:`TableBudget.from_env` when None): a file over its bytes or rows is a
    :class:`JudgementsTooLarge`, refused before the rows past the budget are parsed."""
    budget = budget or TableBudget.from_env()
    if len(raw) > budget.bytes:
        raise JudgementsTooLarge(
            f"the judgements file is {size_text(len(raw))}, over the budget of {size_text(budget.bytes)} for a table "
            "(VST_MAX_DATA_FILE_BYTES raises it); split it",
            budget="bytes",
            limit=budget.bytes,
            found=len(raw),
        )
    found = kind_of_text(raw[:HEAD_BYTES].decode("utf-8", "replace"))
    if found is not None and found != "judgements":  # stories or scores: named, not parsed as a CSV
        raise JudgementsError(not_what("the judgements file", found, "judgements"))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JudgementsError(f"judgements file is not UTF-8 text ({exc})") from exc
    # not splitlines(): U+2028, U+0085, \v or \f inside a cell is text
    text = _CSV_LINE_END.sub("\n", text)
    if text.endswith("\n"):
        text = text[:-1]
    start = skipped = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip() and not text.startswith("#", start):
            break
        start, skipped = end + 1, skipped + 1  # a comment header (e.g. a signature line of an export) or a blank line
    body = text[start:]
    if not body:
        raise JudgementsError("judgements file is empty")
    end = body.find("\n")
    problems: list[str] = []
    try:
        header = next(csv.reader(io.StringIO(body if end < 0 else body[:end])))
        _ragged_rows(body, len(header), skipped + 1, problems, budget.rows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = read_csv_budgeted(
                io.StringIO(body),
                budget,
                name="the judgements file",
                dtype=str,
                keep_default_na=False,
                skipinitialspace=True,
                index_col=False,
                header=None,
                names=list(range(len(header))),
                skiprows=1,
            )
    except TableBudgetError as exc:
        raise JudgementsTooLarge(str(exc), budget=exc.budget, limit=exc.limit, found=exc.found) from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as exc:
        raise JudgementsError(f"judgements file is not a readable CSV ({exc})") from exc
    frame = frame.fillna("").astype(str)
    names = [name.strip() for name in header]
    names = [name.lower() if name.lower() in _STRUCTURAL else name for name in names]  # aspect names keep their case
    frame.columns = pd.Index(names)
    frame = frame.apply(lambda col: col.str.strip())
    unnamed = [i for i, name in enumerate(names) if not name]
    if unnamed:
        blank = [i for i in unnamed if frame.iloc[:, i].eq("").all()]
        if len(blank) < len(unnamed):
            raise JudgementsError(f"column {unnamed[len(blank)] + 1} has values but no name in the header")
        problems.append(f"{len(blank)} empty column(s) without a name (a trailing comma?); ignored")
        frame = frame.iloc[:, [i for i in range(len(names)) if i not in blank]]
    seen: dict[str, int] = {}
    for position, name in enumerate(frame.columns):
        if name in seen:
            raise JudgementsError(
                f"columns {seen[name] + 1} and {position + 1} both mean {name!r} "
                f"(header: {', '.join(header)}); rename or remove one"
            )
        seen[name] = position
    frame.index = frame.index + skipped + 2  # index = line number in the file
    return frame, problems


def _numeric(frame: pd.DataFrame, column: str, label: str, problems: list[str]) -> pd.Series:
    """The column as floats; empty cells and text are reported (with rows and examples) and become NaN."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce")
    empty = raw.eq("")
    text = values.isna() & ~empty
    if empty.any():
        problems.append(f"{label}: {int(empty.sum())} missing value(s); ignored")
    if text.any():
        lines = [int(i) for i in raw.index[text][:5]]
        examples = ", ".join(repr(str(v)) for v in raw[text].unique()[:3])
        problems.append(f"{label}: {int(text.sum())} non-numeric value(s) ({examples}; lines {lines}); ignored")
    huge = values.notna() & ~np.isfinite(values.where(values.abs() < 1e15, np.inf))
    if huge.any():
        lines = [int(i) for i in raw.index[huge][:5]]
        problems.append(f"{label}: {int(huge.sum())} infinite or out-of-range value(s) (lines {lines}); ignored")
        values = values.mask(huge)
    return values


#: Column names that identify something rather than rate it; never aspects unless named explicitly.
_ID_LIKE = re.compile(
    r"(^|_)(id|ids|no|number|index|idx|album|photo|worker|team|group|condition|model|annotator)$", re.IGNORECASE
)


def _group_columns(frame: pd.DataFrame, candidates: Sequence[str]) -> None:
    """Refuse a file that holds several groups' ratings of one story: a text column (a team,
    condition or model) with more than one value under one story_id."""
    for column in candidates:
        values = frame[column]
        if values.eq("").all() or pd.to_numeric(values, errors="coerce").notna().all():
            continue
        per_story = frame.assign(_v=values).groupby("story_id")["_v"].nunique()
        several = per_story[per_story > 1]
        if len(several):
            example = str(several.index[0])
            found = ", ".join(repr(v) for v in frame.loc[frame["story_id"] == example, column].unique()[:4])
            raise JudgementsError(
                f"column {column!r} has {int(several.max())} values under one story_id (e.g. {example!r}: {found}): "
                "the file holds several groups' ratings of each story. Keep one group's rows, or name the column "
                "'system' if it is the system that wrote the story"
            )


def _aspect_columns(frame: pd.DataFrame, aspects: Sequence[str] | None, problems: list[str]) -> list[str]:
    """Wide layout: the columns that are aspects. Named ``aspects`` when given; otherwise every
    column but the id columns, the id-like ones (``album_id``, ``team``: reported) and text columns
    that group ratings (refused)."""
    others = [c for c in frame.columns if c not in _ID_COLUMNS]
    if aspects:
        missing = [a for a in aspects if a not in frame.columns]
        if missing:
            raise JudgementsError(
                f"aspect column(s) {', '.join(map(repr, missing))} not in the file (columns: {', '.join(frame.columns)})"
            )
        return list(aspects)
    idlike = [c for c in others if _ID_LIKE.search(c)]
    _group_columns(frame, idlike)
    if idlike:
        problems.append(f"column(s) {', '.join(map(repr, idlike))} look like identifiers, not ratings; not used as aspects")
    return [c for c in others if c not in idlike]


def _require(frame: pd.DataFrame, needed: Iterable[str], layout: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise JudgementsError(
            f"not a {layout} judgements file: no {', '.join(map(repr, sorted(missing)))} column "
            f"(columns: {', '.join(map(str, frame.columns)) or 'none'})"
        )


def _finite_only(judgements: Judgements) -> Judgements:
    """The last guard of every reader: no rating, error label or pair gap that is not a finite
    number is ever kept (each reader reports its own reasons first; anything left is counted here)."""
    for name, column in (("ratings", "value"), ("errors", "value"), ("pairs", "gap")):
        table = getattr(judgements, name)
        if table.empty:
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            judgements.problems.append(f"{int(bad.sum())} {name} with a {column} that is not a finite number; left out")
            setattr(judgements, name, table[~bad].reset_index(drop=True))
    if judgements.ratings.empty and judgements.errors.empty and judgements.pairs.empty:
        raise JudgementsError("no usable judgements" + (f" ({'; '.join(judgements.problems)})" if judgements.problems else ""))
    return judgements


def _without_duplicates(frame: pd.DataFrame, problems: list[str]) -> pd.DataFrame:
    dupes = frame.duplicated()
    if dupes.any():
        problems.append(f"{int(dupes.sum())} duplicated row(s) (lines {[int(i) for i in frame.index[dupes][:5]]}); kept once")
        frame = frame[~dupes]
    return frame


def _judgements(frame: pd.DataFrame, aspects: Sequence[str] | None, problems: list[str], layout: str = "auto") -> Judgements:
    """The long, wide and pairwise layouts; ``layout`` "auto" picks one by the columns."""
    frame = _without_duplicates(frame, problems)
    columns = set(frame.columns)
    pairwise = {"story_a", "story_b", "rank_a", "rank_b"}
    if layout == "pairwise" or (layout == "auto" and pairwise <= columns):
        _require(frame, pairwise, "pairwise")
        return _read_pairwise(frame, problems)
    if "story_id" not in columns:
        raise JudgementsError(
            f"no story_id column (columns: {', '.join(frame.columns)}); expected long "
            "(story_id, rater, aspect, value), wide (story_id, <aspect columns>) or pairwise "
            "(story_a, story_b, rank_a, rank_b) judgements"
        )
    if layout == "long":
        _require(frame, {"story_id", "aspect", "value"}, "long")
    if frame["story_id"].eq("").any():
        n = int(frame["story_id"].eq("").sum())
        problems.append(f"{n} row(s) without a story_id; ignored")
        frame = frame[frame["story_id"].ne("")]
    if layout == "auto":
        layout = "long" if {"aspect", "value"} <= columns else "wide"
    if layout == "long":
        extra = [c for c in frame.columns if c not in {*_ID_COLUMNS, "aspect", "value"}]
        _group_columns(frame, extra)
        if extra:
            problems.append(f"column(s) {', '.join(map(repr, extra))} are not part of the long layout; ignored")
        long = _long_values(frame, problems)
    else:
        long = _wide_values(frame, _aspect_columns(frame, aspects, problems), problems)
    ratings, errors = _split_error_labels(_tidy(long), problems)
    if ratings.empty and errors.empty:
        raise JudgementsError("no usable numeric judgements in the file" + (f" ({'; '.join(problems)})" if problems else ""))
    problems.extend(_rating_notes(ratings))
    return Judgements(ratings=ratings, errors=errors, pairs=_empty_pairs(), layout=layout, problems=problems)


def _long_values(frame: pd.DataFrame, problems: list[str]) -> pd.DataFrame:
    """``story_id, rater, aspect, value``: values made numeric aspect by aspect (text reported)."""
    long = frame.copy()
    values = pd.Series(np.nan, index=frame.index)
    for aspect, rows in frame.groupby("aspect", sort=False):
        values[rows.index] = _numeric(frame.loc[rows.index], "value", f"aspect {aspect!r}", problems)
    long["value"] = values
    return long


def _wide_values(frame: pd.DataFrame, aspects: list[str], problems: list[str]) -> pd.DataFrame:
    """One column per aspect, melted to the long layout."""
    if not aspects:
        raise JudgementsError("wide judgements need at least one aspect column besides story_id")
    numeric = {a: _numeric(frame, a, f"column {a!r}", problems) for a in aspects}
    keep = [c for c in ("story_id", "rater", "system") if c in frame.columns]
    return pd.concat([frame[keep].assign(aspect=a, value=numeric[a].to_numpy()) for a in aspects], ignore_index=True)


def _tidy(long: pd.DataFrame) -> pd.DataFrame:
    """The five columns, empty rater/system as None, rows without a value dropped."""
    for column in ("rater", "system"):
        if column not in long:
            long[column] = None
    long = long[["story_id", "rater", "aspect", "value", "system"]].copy()
    long["rater"] = long["rater"].replace("", None)
    long["system"] = long["system"].replace("", None)
    return long[long["value"].notna()]


def _split_error_labels(long: pd.DataFrame, problems: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ratings, binary error labels): aspects named after the VHED error taxonomy are labels."""
    tags = long["aspect"].map(_error_tag)
    errors = long[tags.notna()].assign(error=tags[tags.notna()])
    bad = ~errors["value"].isin([0, 1])
    if bad.any():
        problems.append(
            f"{int(bad.sum())} error label(s) not 0/1 ({', '.join(map(str, errors['value'][bad].unique()[:3]))}); ignored"
        )
        errors = errors[~bad]
    return long[tags.isna()].reset_index(drop=True), errors[["story_id", "rater", "error", "value"]].reset_index(drop=True)


def _rating_notes(ratings: pd.DataFrame) -> list[str]:
    """Conflicting cells of one rater, and constant aspects (whose correlations are undefined)."""
    notes = []
    if ratings["rater"].notna().any():
        keyed = ratings.assign(system=ratings["system"].fillna("")) if "system" in ratings else ratings.assign(system="")
        clash = keyed.groupby(["system", "story_id", "rater", "aspect"])["value"].nunique() > 1  # a story is (system, id)
        if clash.any():
            notes.append(f"{int(clash.sum())} (story, rater, aspect) cell(s) with conflicting values; averaged")
    for aspect, rows in ratings.groupby("aspect", sort=False):
        if rows["value"].nunique() == 1:
            notes.append(f"aspect {aspect!r} is constant ({rows['value'].iloc[0]:g}); its correlations are undefined")
    return notes


def _empty_pairs() -> pd.DataFrame:
    return pd.DataFrame({"sequence_id": [], "better": [], "worse": [], "gap": [], "agreement": []})


def _read_pairwise(frame: pd.DataFrame, problems: list[str]) -> Judgements:
    rank_a = _numeric(frame, "rank_a", "column 'rank_a'", problems)
    rank_b = _numeric(frame, "rank_b", "column 'rank_b'", problems)
    agreement = (
        _numeric(frame, "agreement", "column 'agreement'", problems) if "agreement" in frame else pd.Series(np.nan, frame.index)
    )
    ok = rank_a.notna() & rank_b.notna()
    tie = ok & (rank_a == rank_b)
    if tie.any():
        problems.append(f"{int(tie.sum())} pair(s) with equal human ranks; removed (zero ranking gap, as in VHED)")
    ok &= ~tie
    a_better = rank_a < rank_b
    pairs = pd.DataFrame(
        {
            "sequence_id": frame.get("sequence_id"),
            "better": np.where(a_better, frame["story_a"], frame["story_b"]),
            "worse": np.where(a_better, frame["story_b"], frame["story_a"]),
            "gap": (rank_a - rank_b).abs().round(GAP_DECIMALS),
            "agreement": agreement,
        }
    )[ok].reset_index(drop=True)
    if pairs.empty:
        raise JudgementsError("no usable story pairs in the pairwise file" + (f" ({'; '.join(problems)})" if problems else ""))
    empty = pd.DataFrame({"story_id": [], "rater": [], "aspect": [], "value": [], "system": []})
    return Judgements(
        ratings=empty,
        errors=pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []}),
        pairs=pairs,
        layout="pairwise",
        problems=problems,
    )
