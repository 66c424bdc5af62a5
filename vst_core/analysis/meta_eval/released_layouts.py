"""The field's public judgement layouts as released: VIST-Edit's ``Human_eval`` files (six aspects
rated per story by several workers) and VHED's ``VHED.csv`` (story pairs ranked by people), read
into :class:`~vst_core.analysis.meta_eval.judgements.Judgements` with the ids each release uses;
:func:`detect_layout` tells every layout apart by its header."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.judgements import (
    Judgements,
    JudgementsError,
    _empty_pairs,
    _numeric,
    _rating_notes,
    _require,
    _without_duplicates,
)
from vst_core.analysis.meta_eval.settings import GAP_DECIMALS

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
