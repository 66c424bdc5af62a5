"""Human judgements: reading a CSV (long, wide or pairwise, or the public VIST-Edit and VHED files) into
tidy frames, reporting every row that could not be used; combining raters; inter-rater agreement (Krippendorff's α)."""

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
from vst_core.hashing import text_digest

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


def _ragged_rows(text: str, width: int, first_line: int, problems: list[str]) -> None:
    """Report rows with more fields than the header: an empty last field is a trailing comma;
    anything else is data the header does not name (both are ignored)."""
    trailing: list[int] = []
    extra: list[int] = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=first_line):
        if len(row) > width:
            (trailing if not "".join(row[width:]).strip() else extra).append(number)
    if trailing:
        problems.append(f"{len(trailing)} row(s) end in a trailing comma (lines {trailing[:5]}); the empty field is ignored")
    if extra:
        problems.append(f"{len(extra)} row(s) have more fields than the header (lines {extra[:5]}); the extra fields are ignored")


def _read_table(raw: bytes) -> tuple[pd.DataFrame, list[str]]:
    """The CSV as text cells indexed by line number, plus what was odd about its shape. Structural
    column names are matched case-insensitively (two columns meaning one name are refused); empty
    unnamed columns (a trailing comma on the header) are dropped."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JudgementsError(f"judgements file is not UTF-8 text ({exc})") from exc
    lines = text.splitlines()
    skipped = 0
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)  # comment header (e.g. a signature line of an export)
        skipped += 1
    if not lines:
        raise JudgementsError("judgements file is empty")
    body = "\n".join(lines)
    problems: list[str] = []
    try:
        header = next(csv.reader(io.StringIO(lines[0])))
        _ragged_rows(body, len(header), skipped + 1, problems)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.StringIO(body),
                dtype=str,
                keep_default_na=False,
                skipinitialspace=True,
                index_col=False,
                header=None,
                names=list(range(len(header))),
                skiprows=1,
            )
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


def read_judgements(
    source: str | Path | bytes | IO[Any],
    *,
    aspects: Sequence[str] | None = None,
    layout: str = "auto",
    model: str | None = None,
) -> Judgements:
    """Read a judgements CSV in any of the five layouts (:data:`LAYOUTS`).

    * long: ``story_id, rater, aspect, value`` (``rater`` and ``system`` optional);
    * wide: ``story_id`` plus one column per aspect (``rater``, ``system``, ``sequence_id`` optional);
    * pairwise: ``story_a, story_b, rank_a, rank_b`` (``sequence_id``, ``agreement`` optional),
      lower rank = better;
    * vist-edit: a VIST-Edit ``Human_eval`` file (:func:`read_vist_edit` states the ids);
    * vhed: the VHED ``VHED.csv`` of story pairs (:func:`read_vhed` states the ids).

    ``layout="auto"`` tells them apart by the header (:func:`detect_layout`); a named layout the
    file does not fit is a :class:`JudgementsError`. ``model`` names the system that generated the
    stories of a VIST-Edit file (``AREL`` or ``GLAC``; by default read from the file name).

    Aspects named after the VHED error taxonomy hold binary error labels. Exact duplicate rows,
    empty cells and text in numeric columns are dropped and reported in ``problems``. In the wide
    layout ``aspects`` names the aspect columns; without it, identifier-like columns (``album_id``,
    ``worker``) are left out and reported, and a file with several groups' ratings under one id
    (a ``team`` or ``condition`` column) is refused naming the column.
    """
    if layout not in LAYOUTS:
        raise JudgementsError(f"unknown judgements layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    raw = _read_bytes(source)
    frame, problems = _read_table(raw)
    chosen = detect_layout(frame.columns) if layout == "auto" else layout
    if chosen == "vist-edit":
        judgements = _vist_edit(frame, aspects, model, _source_name(source), problems)
    elif chosen == "vhed":
        judgements = _vhed(frame, problems)
    else:
        judgements = _judgements(frame, aspects, problems, chosen)
    judgements = _finite_only(judgements)
    judgements.digest = text_digest(raw)
    return judgements


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


# --------------------------------------------------------------------------------------------
# The field's public layouts: VIST-Edit Human_eval files and VHED


#: Judgements layouts: ``auto`` tells the others apart by the header (:func:`detect_layout`).
LAYOUTS = ("auto", "long", "wide", "pairwise", "vist-edit", "vhed")

#: VIST-Edit's six aspects (Huang et al. 2016's questions), as the Human_eval header names them.
VIST_EDIT_ASPECTS = ("focused", "coherent", "share", "human", "grounded", "detailed")
#: The two systems whose stories VIST-Edit edited; a Human_eval file is named after one of them.
VIST_EDIT_MODELS = ("AREL", "GLAC")
#: The ``team`` values of the released Human_eval files (the story each team's raters judged).
VIST_EDIT_TEAMS = (
    "auto-gen",
    "human-edit",
    "lstm-text",
    "lstm-text-img",
    "lstm-sort-text",
    "lstm-sort-text-img",
    "trans-text",
    "trans-text-img",
)
_VIST_EDIT_WORKER = ("workerid", "worker_id")
#: The columns of VHED.csv (its README); the reader needs the ids, models and average ranks.
VHED_COLUMNS = (
    "sent1",
    "sent2",
    "label",
    "story_id",
    "model_base",
    "model_comp",
    "agreement",
    "img_seq",
    "avg_rank_base",
    "avg_rank_comp",
    "order",
    "rank_norm",
)
_VHED_REQUIRED = ("story_id", "model_base", "model_comp", "avg_rank_base", "avg_rank_comp")


def detect_layout(columns: Iterable[str]) -> str:
    """The layout a header names (case-insensitive): ``vhed`` (its ids, models and average ranks),
    ``vist-edit`` (``team, story_id, workerId`` and a VIST-Edit aspect), ``pairwise``
    (``story_a, story_b, rank_a, rank_b``), ``long`` (``aspect, value``), else ``wide``."""
    names = {str(c).strip().lower() for c in columns}
    if set(_VHED_REQUIRED) <= names:
        return "vhed"
    if {"team", "story_id"} <= names and names & set(_VIST_EDIT_WORKER) and names & set(VIST_EDIT_ASPECTS):
        return "vist-edit"
    if {"story_a", "story_b", "rank_a", "rank_b"} <= names:
        return "pairwise"
    return "long" if {"aspect", "value"} <= names else "wide"


def _require(frame: pd.DataFrame, needed: Iterable[str], layout: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise JudgementsError(
            f"not a {layout} judgements file: no {', '.join(map(repr, sorted(missing)))} column "
            f"(columns: {', '.join(map(str, frame.columns)) or 'none'})"
        )


def _by_lower_name(frame: pd.DataFrame, layout: str) -> pd.DataFrame:
    """The frame with lower-cased column names; two columns meaning one name are refused."""
    lower = [str(c).lower() for c in frame.columns]
    for name in set(lower):
        if lower.count(name) > 1:
            same = [str(c) for c in frame.columns if str(c).lower() == name]
            raise JudgementsError(f"not a {layout} judgements file: columns {', '.join(map(repr, same))} both mean {name!r}")
    return frame.set_axis(lower, axis=1)


def _source_name(source: str | Path | bytes | IO[Any]) -> str | None:
    if isinstance(source, (str, Path)):
        return Path(source).name
    name = getattr(source, "name", None)  # an open file, or an upload that keeps its name
    return Path(name).name if isinstance(name, str) else None


def _vist_edit_model(model: str | None, name: str | None) -> str:
    """The generating system: ``model`` when given, else AREL or GLAC from the file name."""
    if model is not None and model.strip():
        return model.strip()
    found = [m for m in VIST_EDIT_MODELS if name and m.lower() in name.lower()]
    if len(found) == 1:
        return found[0]
    raise JudgementsError(
        "a VIST-Edit Human_eval file does not say which system generated its stories; only its file name does "
        f"(AREL.csv or GLAC.csv){f', and {name!r} names ' + ('both' if found else 'neither') if name else ''}. "
        "Keep the released file name, or pass model='AREL' or model='GLAC'"
    )


def vist_edit_story_id(sequence_id: str, model: str, team: str) -> tuple[str, str]:
    """(story_id, system) of the story a VIST-Edit team's raters judged: the system is ``model`` for
    ``auto-gen`` and ``<model>-<team>`` otherwise; the id is ``<sequence_id>:<system>``."""
    team = team.strip().lower()
    system = model if team == "auto-gen" else f"{model}-{team}"
    return joined_id(sequence_id, system), system


def joined_id(story_id: str, system: str) -> str:
    """``<story_id>:<system>`` with ``\\`` and ``:`` escaped inside each part (``\\\\``, ``\\:``), so
    two different (story, system) never give one id; the released files' ids have neither.

    >>> joined_id("45530", "AREL"), joined_id("1:a", "b") != joined_id("1", "a:b")
    ('45530:AREL', True)
    """

    def escape(part: str) -> str:
        return part.replace("\\", "\\\\").replace(":", "\\:")

    return f"{escape(story_id)}:{escape(system)}"


def read_vist_edit(
    source: str | Path | bytes | IO[Any], *, aspects: Sequence[str] | None = None, model: str | None = None
) -> Judgements:
    """Read a VIST-Edit ``Human_eval`` file (Hsu et al. 2019, github.com/tingyaohsu/VIST-Edit).

    Layout: a comma-separated header ``team,story_id,album_id,workerId,focused,coherent,share,
    human,grounded,detailed`` (``AREL.csv`` ends it and every row in six empty fields; CRLF line
    ends; no newline after the last row), one row per (team, story, rater) with the six aspects
    rated 1-5. ``story_id`` is the photo sequence (five Flickr photo ids joined by ``-``, the name
    of the story's JSON file in the repository's ``AREL/test`` or ``GLAC/test`` folder);
    ``album_id`` is left unread (a spreadsheet rounded it to ``7.22E+16``); ``workerId`` is the
    rater (a de-identified UUID). ``team`` says which story of the sequence was rated: ``auto-gen``
    the model's story (``auto_story_text_normalized``), ``human-edit`` a crowd worker's edit of it
    (one of the five ``edited_stories``; the release does not say which), the others the edits of
    automatic post-editing models (LSTM or Transformer, text or text and image), whose texts are not
    released.

    Ids: the file holds no system name, so the system is ``model`` (``AREL`` or ``GLAC``, by default
    read from the file name) for ``auto-gen`` and ``<model>-<team>`` for the others
    (``AREL-human-edit``, ``GLAC-trans-text-img``); the story id is ``<sequence>:<system>``
    (:func:`vist_edit_story_id`). A scores file matches when each story carries that ``story_id``,
    the sequence as ``sequence_id`` and the system as ``system``. The two files rate the same 97
    sequences, so the system is part of the id.
    """
    return read_judgements(source, aspects=aspects, layout="vist-edit", model=model)


def _vist_edit(
    frame: pd.DataFrame, aspects: Sequence[str] | None, model: str | None, name: str | None, problems: list[str]
) -> Judgements:
    frame = _by_lower_name(frame, "vist-edit")
    _require(frame, ("team", "story_id"), "vist-edit")
    present = [a for a in VIST_EDIT_ASPECTS if a in frame.columns]
    if aspects:
        wanted = [a.strip().lower() for a in aspects]
        missing = [a for a in wanted if a not in present]
        if missing:
            raise JudgementsError(
                f"aspect(s) {', '.join(map(repr, missing))} not in the VIST-Edit file (aspects: {', '.join(present) or 'none'})"
            )
        present = list(dict.fromkeys(wanted))
    if not present:
        raise JudgementsError(f"not a vist-edit judgements file: none of the aspect columns {', '.join(VIST_EDIT_ASPECTS)}")
    system_model = _vist_edit_model(model, name)
    worker = next((c for c in _VIST_EDIT_WORKER if c in frame.columns), None)
    if worker is None:
        problems.append("no workerId column: raters cannot be told apart")
    unused = [c for c in frame.columns if c not in {"team", "story_id", "album_id", worker, *VIST_EDIT_ASPECTS}]
    if unused:
        problems.append(f"column(s) {', '.join(map(repr, unused))} are not part of the VIST-Edit layout; ignored")
    frame = _without_duplicates(frame, problems)
    keep = frame["team"].ne("") & frame["story_id"].ne("")
    if not keep.all():
        problems.append(f"{int((~keep).sum())} row(s) without a team or story_id; ignored")
        frame = frame[keep]
    unknown = sorted(set(frame["team"].str.lower()) - set(VIST_EDIT_TEAMS))
    if unknown:
        problems.append(f"team(s) {', '.join(map(repr, unknown[:5]))} are not in VIST-Edit's release; named <model>-<team>")
    ids = [vist_edit_story_id(seq, system_model, team) for seq, team in zip(frame["story_id"], frame["team"], strict=True)]
    story_ids = [i for i, _ in ids]
    systems = [s for _, s in ids]
    raters = frame[worker].replace("", None).to_numpy() if worker else [None] * len(frame)
    parts = []
    for aspect in present:
        values = _numeric(frame, aspect, f"column {aspect!r}", problems)
        off = values.notna() & ~values.isin([1, 2, 3, 4, 5])
        if off.any():
            problems.append(
                f"column {aspect!r}: {int(off.sum())} rating(s) outside 1-5 (lines {[int(i) for i in frame.index[off][:5]]}); ignored"
            )
            values = values.mask(off)
        parts.append(
            pd.DataFrame(
                {"story_id": story_ids, "rater": raters, "aspect": aspect, "value": values.to_numpy(), "system": systems}
            )
        )
    ratings = pd.concat(parts, ignore_index=True)
    ratings = ratings[ratings["value"].notna()].reset_index(drop=True)
    if ratings.empty:
        raise JudgementsError("no usable ratings in the VIST-Edit file" + (f" ({'; '.join(problems)})" if problems else ""))
    problems.extend(_rating_notes(ratings))
    return Judgements(
        ratings=ratings,
        errors=pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []}),
        pairs=_empty_pairs(),
        layout="vist-edit",
        problems=problems,
    )


def vhed_story_id(story_id: str, model: str) -> str:
    """The id of one story of a VHED pair: ``<story_id>:<model>`` (VHED's ``story_id`` column and
    the ``model_base`` or ``model_comp`` that wrote it)."""
    return joined_id(story_id.strip(), model.strip())


def read_vhed(source: str | Path | bytes | IO[Any]) -> Judgements:
    """Read VHED's ``VHED.csv`` (Hsu et al. 2022, Vrank; github.com/AcademiaSinicaNLPLab/VHED) as pairs.

    Layout: ``sent1, sent2, label, story_id, model_base, model_comp, agreement, img_seq,
    avg_rank_base, avg_rank_comp, order, rank_norm``; one row per story pair of one ranking task:
    the texts of story 1 and 2, the systems that wrote them (``model_base``, ``model_comp``), their
    average human ranks (lower = better), how many of the rankers agree on the order (3-5), the
    image sequence and the ranking gap (``rank_norm``, the paper's normalised gap; ``label`` is the
    gap before normalisation and ``order`` the number of rankers, neither read).

    Pairs: the better story is the one with the lower average rank; equal ranks give no pair (VHED
    removed them). Story ids are ``<story_id>:<model>`` (:func:`vhed_story_id`), so a scores file
    matches when it holds each story text (``sent1`` under the ``model_base`` id, ``sent2`` under
    the ``model_comp`` id) with that ``story_id``; give it ``system`` = the model to compare
    systems. ``gap`` is ``|rank_norm|`` (without that column, the difference of the average ranks);
    ``sequence_id`` the photo ids of ``img_seq`` joined by ``-``. Ids whose texts differ between rows
    are reported (scores can match one text only).
    """
    return read_judgements(source, layout="vhed")


def _photo_sequence(value: str) -> str:
    return "-".join(re.findall(r"\w+", value))


def _vhed(frame: pd.DataFrame, problems: list[str]) -> Judgements:
    frame = _by_lower_name(frame, "vhed")
    _require(frame, _VHED_REQUIRED, "vhed")
    frame = _without_duplicates(frame, problems)
    named = frame["story_id"].ne("") & frame["model_base"].ne("") & frame["model_comp"].ne("")
    if not named.all():
        problems.append(f"{int((~named).sum())} row(s) without a story_id, model_base or model_comp; ignored")
        frame = frame[named]
    base = [vhed_story_id(s, m) for s, m in zip(frame["story_id"], frame["model_base"], strict=True)]
    comp = [vhed_story_id(s, m) for s, m in zip(frame["story_id"], frame["model_comp"], strict=True)]
    rank_base = _numeric(frame, "avg_rank_base", "column 'avg_rank_base'", problems)
    rank_comp = _numeric(frame, "avg_rank_comp", "column 'avg_rank_comp'", problems)
    nan = pd.Series(np.nan, index=frame.index)
    agreement = _numeric(frame, "agreement", "column 'agreement'", problems) if "agreement" in frame else nan
    if "rank_norm" in frame:
        gap = _numeric(frame, "rank_norm", "column 'rank_norm'", problems).abs()
    else:
        problems.append("no rank_norm column: gaps are the differences of the average ranks")
        gap = (rank_base - rank_comp).abs()
    ok = rank_base.notna() & rank_comp.notna()
    gap = gap.round(GAP_DECIMALS)
    no_gap = ok & gap.isna()
    if no_gap.any():
        problems.append(f"{int(no_gap.sum())} pair(s) whose rank_norm is not a finite number; left out (no ranking gap)")
    zero = ok & gap.eq(0) & (rank_base != rank_comp)
    if zero.any():
        problems.append(f"{int(zero.sum())} pair(s) with rank_norm 0 but different average ranks; left out (zero ranking gap)")
    ok &= ~no_gap & ~zero
    same = ok & pd.Series([b == c for b, c in zip(base, comp, strict=True)], index=frame.index)
    if same.any():
        problems.append(f"{int(same.sum())} pair(s) of a model with itself under one story_id; removed (one id)")
    tie = ok & ~same & (rank_base == rank_comp)
    if tie.any():
        problems.append(f"{int(tie.sum())} pair(s) with equal average ranks; removed (zero ranking gap, as in VHED)")
    ok &= ~same & ~tie
    base_better = (rank_base < rank_comp).to_numpy()
    sequence = frame["img_seq"].map(_photo_sequence) if "img_seq" in frame else frame["story_id"]
    pairs = pd.DataFrame(
        {
            "sequence_id": sequence.where(sequence.ne(""), frame["story_id"]).to_numpy(),
            "better": np.where(base_better, base, comp),
            "worse": np.where(base_better, comp, base),
            "gap": gap.to_numpy(),
            "agreement": agreement.to_numpy(),
        }
    )[ok.to_numpy()].reset_index(drop=True)
    if pairs.empty:
        raise JudgementsError("no usable story pairs in the VHED file" + (f" ({'; '.join(problems)})" if problems else ""))
    if {"sent1", "sent2"} <= set(frame.columns):
        texts = pd.DataFrame({"id": base + comp, "text": [*frame["sent1"], *frame["sent2"]]})
        several = texts.groupby("id")["text"].nunique()
        several = several[several > 1]
        if len(several):
            problems.append(
                f"{len(several)} story id(s) carry different texts in different rows (e.g. {several.index[0]!r}); "
                "a scores file can hold one text per id"
            )
    return Judgements(
        ratings=pd.DataFrame({"story_id": [], "rater": [], "aspect": [], "value": [], "system": []}),
        errors=pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []}),
        pairs=pairs,
        layout="vhed",
        problems=problems,
    )


# --------------------------------------------------------------------------------------------
# Aggregation and inter-rater agreement


def aggregate(judgements: Judgements, how: str = "mean") -> pd.DataFrame:
    """One row per story: the ``how`` (mean or median) of its raters for every aspect, plus each
    error label by majority (flagged by at least half of the raters)."""
    ratings = judgements.ratings
    if ratings.empty:
        human = pd.DataFrame(index=pd.Index([], name="story_id"))
    else:
        human = ratings.pivot_table(index="story_id", columns="aspect", values="value", aggfunc=how, sort=False)
        human = human[judgements.aspects]
    if not judgements.errors.empty:
        votes = judgements.errors.pivot_table(index="story_id", columns="error", values="value", aggfunc="mean", sort=False)
        human = human.join((votes >= 0.5).astype(float).where(votes.notna()), how="outer")
    human.columns.name = None
    return human


def inter_rater(judgements: Judgements) -> pd.DataFrame:
    """Krippendorff's α (interval level) per aspect, with raters, stories and why it is undefined."""
    import krippendorff

    rows = []
    for aspect in judgements.aspects:
        part = judgements.ratings[judgements.ratings["aspect"] == aspect]
        row: dict[str, Any] = {"aspect": aspect, "alpha": None, "raters": 0, "stories": part["story_id"].nunique(), "note": ""}
        if part["rater"].isna().all():
            row["note"] = "undefined: no rater column, so raters cannot be told apart"
            rows.append(row)
            continue
        table = part.pivot_table(index="rater", columns="story_id", values="value", aggfunc="mean")
        row["raters"] = len(table)
        pairable = table.loc[:, table.notna().sum(axis=0) >= 2].to_numpy()  # only these enter α
        shared = pairable.shape[1]
        if len(table) < 2:
            row["note"] = "undefined: only one rater"
        elif shared == 0:
            row["note"] = "undefined: no story was rated by two raters"
        elif np.unique(pairable[~np.isnan(pairable)]).size < 2:
            row["note"] = "undefined: every rating of the stories rated by two or more raters is the same value"
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                alpha = float(krippendorff.alpha(reliability_data=table.to_numpy(), level_of_measurement="interval"))
            finite = bool(np.isfinite(alpha))
            row["alpha"] = alpha if finite else None
            row["note"] = f"{shared} stories rated by two or more raters" if finite else "undefined: no expected disagreement"
        rows.append(row)
    return pd.DataFrame(rows, columns=["aspect", "alpha", "raters", "stories", "note"])


@dataclass(frozen=True)
class StoryRating:
    """One aspect's human ratings of one story: mean, spread (population SD) over raters, count."""

    aspect: str
    mean: float
    spread: float
    n: int


def story_ratings(judgements: Judgements, story_id: str) -> list[StoryRating]:
    """The human ratings of ``story_id`` per aspect, in the file's aspect order (none: empty)."""
    return aspect_ratings(judgements, judgements.ratings[judgements.ratings["story_id"] == story_id])


def aspect_ratings(judgements: Judgements, rows: pd.DataFrame) -> list[StoryRating]:
    """Per aspect of ``judgements``, in the file's order, the mean, spread (population SD) and
    count of the ratings in ``rows`` (rows of ``judgements.ratings``); aspects without one left out."""
    out = []
    for aspect in judgements.aspects:
        values = rows.loc[rows["aspect"] == aspect, "value"].astype(float).dropna()
        if len(values):
            out.append(StoryRating(aspect, float(values.mean()), float(values.std(ddof=0)), len(values)))
    return out
