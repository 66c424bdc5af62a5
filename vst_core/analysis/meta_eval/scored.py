"""The metrics' side of meta-evaluation: one row of numbers per scored story (:func:`score_frame`,
keyed as the judgements are), the stories' texts for the reference-based baselines, the margins of
the metrics that judge pairs themselves (Vrank's), and how the scored and the judged stories match."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.identity import keys_of, shared_ids, story_key
from vst_core.contract import registry
from vst_core.records import StoryScores
from vst_core.story import StoryText


def match_report(scored: Iterable[str], judged: Iterable[str], shown: int = 20) -> dict[str, Any]:
    """How many judged stories have scores, and which ids on either side have no partner."""
    scored_set, judged_set = set(scored), set(judged)
    both = scored_set & judged_set
    judged_only = sorted(judged_set - scored_set)
    scored_only = sorted(scored_set - judged_set)
    return {
        "matched": len(both),
        "judged": len(judged_set),
        "scored": len(scored_set),
        "judged_not_scored": judged_only[:shown],
        "judged_not_scored_count": len(judged_only),
        "scored_not_judged": scored_only[:shown],
        "scored_not_judged_count": len(scored_only),
    }


@dataclass(frozen=True)
class TextRow:
    """A story's ids and text, for the reference-based baselines (a table row as a story)."""

    story_id: str
    sequence_id: str
    system: str
    sentences: tuple[str, ...]


Scored: TypeAlias = Sequence[StoryScores] | pd.DataFrame


def score_frame(records: Scored) -> pd.DataFrame:
    """One row per scored story: sequence_id, system, metric columns and T, P, indexed by the
    story's key (:func:`~vst_core.analysis.meta_eval.identity.keys_of`: the id, or ``id (system)`` when
    systems share ids), with the plain story id kept as column ``story``. ``records`` may be records
    or a scores table (:func:`vst_core.viz.scores_table`, the dashboard's index)."""
    used = [f for f in registry().fields if f.report or f.covariate]
    if isinstance(records, pd.DataFrame):
        frame = pd.DataFrame(
            {"story": records["story"].astype(str), "sequence_id": records["sequence"].astype(str), "system": records["system"]}
        )
        for f in used:
            if f.column in records:
                frame[f.report or f.column] = records[f.column].astype(float)
    else:
        rows = []
        for r in records:
            row: dict[str, Any] = {"story": r.story_id, "sequence_id": r.sequence_id, "system": r.system}
            for f in used:
                if f.metric in r.metrics:
                    value = f.value(r)
                    row[f.report or f.column] = np.nan if value is None else value
            rows.append(row)
        frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["story", "sequence_id", "system"]).rename_axis("story_id")
    frame = frame.drop_duplicates(["system", "story"], keep="last")
    frame.index = pd.Index(keys_of(frame), name="story_id")
    return frame.dropna(axis=1, how="all")


def texts_of(records: Scored) -> Sequence[StoryText]:
    """The stories' ids and texts for the baselines, keyed like :func:`score_frame`."""
    if isinstance(records, pd.DataFrame):
        keys = keys_of(records)
        return [
            TextRow(k, str(q), str(s), (str(t),) if t else ())
            for k, q, s, t in zip(keys, records["sequence"], records["system"], records["text"], strict=True)
        ]
    frame = pd.DataFrame({"story": [r.story_id for r in records], "system": [r.system for r in records]})
    keys = keys_of(frame) if len(frame) else pd.Series([], dtype=str)
    return [TextRow(k, r.sequence_id, r.system, tuple(r.sentences)) for k, r in zip(keys, records, strict=True)]


def pair_margins(records: Sequence[StoryScores], shared: bool | None = None) -> dict[str, dict[tuple[str, str], float]]:
    """The margins between stories of each metric that judges pairs itself (its module's ``margins``:
    Vrank's), keyed as :func:`score_frame` keys the stories (the id, or ``id (system)`` when systems
    share ids; ``shared`` says so for records that are part of a larger set): ``{"Vrank": {(a, b):
    m(a, b)}}``, or {} when no such metric was run."""
    if shared is None:
        shared = shared_ids(pd.DataFrame({"story": [r.story_id for r in records], "system": [r.system for r in records]}))
    out: dict[str, dict[tuple[str, str], float]] = {}
    for report, spec in registry().ranked.items():
        out.update(
            record_margins(
                report, ((r.system, r.story_id, r.metrics[spec.name]) for r in records if spec.name in r.metrics), shared
            )
        )
    return out


def record_margins(report: str, found: Iterable[tuple[str, str, Any]], shared: bool) -> dict[str, dict[tuple[str, str], float]]:
    """:func:`pair_margins` of the metric reported as ``report`` from ``(system, story_id, its record)``
    triples (e.g. read for many rows at once from a scores index); a story whose ``margins`` hook
    fails or gives something that is not (system, story id, number) triples has none."""
    spec = registry().ranked[report]
    assert spec.reading.margins is not None

    def key(system: str, story_id: str) -> str:
        return story_key(story_id, system) if shared else story_id

    out: dict[tuple[str, str], float] = {}
    for system, story_id, record in found:
        if not isinstance(record, spec.record):
            continue
        try:  # an installed metric's hook: a story whose margins cannot be read has none
            found_here = [(str(o), str(i), float(m)) for o, i, m in spec.reading.margins(record)]
        except Exception:
            continue
        for other_system, other_id, margin in found_here:
            out[(key(system, story_id), key(other_system, other_id))] = margin
    return {report: out} if out else {}
