"""What dHM compares (:mod:`vst_core.analysis.dhm`): the aspects, the number each one is (the field a
metric module marks with it, ``MetricField.dhm``), each story's values of them (:class:`Triple`, the
story table) and which aspects a set of scores has, by the one rule every surface follows
(:func:`dhm_aspects`, said by :func:`partial_note`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vst_core.contract import MetricField, registry
from vst_core.data.merge import Conflict, merge_records
from vst_core.records import StoryScores

ASPECTS: tuple[str, ...] = ("G", "C", "R")
#: Distances beyond the paper's, used when asked for: J, the rubric judge's overall score.
EXTRA_ASPECTS: tuple[str, ...] = ("J",)


def aspect_fields() -> dict[str, MetricField]:
    """The number each aspect compares: the field a metric module marks with it (``MetricField.dhm``).

    >>> {a: f.column for a, f in aspect_fields().items()}
    {'R': 'NR', 'C': 'coherence', 'G': 'GROOVIST raw', 'J': 'judge overall'}
    """
    return {f.dhm: f for f in registry().fields if f.dhm}


def columns() -> dict[str, str]:
    """The story-table column of each aspect (its field's column)."""
    return {a: f.column for a, f in aspect_fields().items()}


ID_COLUMNS: tuple[str, ...] = ("story", "sequence", "system")


@dataclass(frozen=True, slots=True)
class Triple:
    """The three scores of one story (None where missing): G unbounded, C, R."""

    story_id: str
    sequence_id: str
    system: str
    G: float | None
    C: float | None
    R: float | None
    J: float | None = None

    def has(self, aspects: Sequence[str]) -> bool:
        return all(getattr(self, a) is not None for a in aspects)

    def value(self, aspect: str) -> float:
        """The value a distance compares: tanh(G), C, R, or (J − 1) / 4."""
        v = getattr(self, aspect)
        return math.tanh(v) if aspect == "G" else (float(v) - 1.0) / 4.0 if aspect == "J" else float(v)


def merged(records: Iterable[StoryScores], source: str = "records") -> tuple[list[StoryScores], list[Conflict]]:
    """One record per (system, story): :func:`~vst_core.data.merge.merge_records` of ``records``,
    all from one ``source`` (the CLI merges files itself, naming each)."""
    return merge_records((r, source) for r in records)


def triples(records: Iterable[StoryScores]) -> list[Triple]:
    """One triple per (system, story), the records of one story merged (computed beats imported,
    else the first record; see :mod:`vst_core.data.merge`)."""
    fields = aspect_fields()
    out = []
    for r in merged(records)[0]:
        v = {a: fields[a].value(r) if a in fields else None for a in (*ASPECTS, *EXTRA_ASPECTS)}
        out.append(Triple(r.story_id, r.sequence_id, r.system, **v))
    return out


def dhm_table(records: Iterable[StoryScores]) -> pd.DataFrame:
    """The story table :func:`dhm_report` reads: one row per (system, story) of the merged records,
    ``story``, ``sequence``, ``system`` and the three metric columns (NaN: no score); the records'
    signature ids in ``attrs["scores_signatures"]``."""
    records = list(records)
    rows = triples(records)
    named = columns()
    table = pd.DataFrame(
        {
            "story": [t.story_id for t in rows],
            "sequence": [t.sequence_id for t in rows],
            "system": [t.system for t in rows],
            **{
                named[a]: np.array([np.nan if getattr(t, a) is None else getattr(t, a) for t in rows], float)
                for a in (*ASPECTS, *EXTRA_ASPECTS)
            },
        }
    )
    table.attrs["scores_signatures"] = signature_ids(records)
    return table


def signature_ids(records: Iterable[StoryScores]) -> list[str]:
    return sorted({str(r.signature.get("id")) for r in records if r.signature.get("id")})


def available_aspects(records: Iterable[StoryScores] | pd.DataFrame, extra: bool = False) -> tuple[str, ...]:
    """The dHM aspects some record (or some row of a story table) has a score for, in order; with
    ``extra`` also those of :data:`EXTRA_ASPECTS` (the judge)."""
    wanted = (*ASPECTS, *EXTRA_ASPECTS) if extra else ASPECTS
    if isinstance(records, pd.DataFrame):
        named = columns()
        return tuple(a for a in wanted if named[a] in records and records[named[a]].notna().any())
    found = {a for t in triples(records) for a in wanted if getattr(t, a) is not None}
    return tuple(a for a in wanted if a in found)


#: What each aspect judges, in dHM's own words (Surikuchi et al., 2024); the metric that gives its
#: number is the registry's (:func:`aspect_fields`).
ASPECT_WORDS: dict[str, str] = {"G": "grounding", "C": "coherence", "R": "non-redundancy", "J": "the rubric judge"}


def aspect_title(aspect: str) -> str:
    """The title of the metric whose field an aspect compares (its words where none is known).

    >>> aspect_title("G"), aspect_title("X")
    ('GROOVIST', 'X')
    """
    field = aspect_fields().get(aspect)
    return registry().spec(field.metric).title if field is not None else ASPECT_WORDS.get(aspect, aspect)


def aspect_name(aspect: str) -> str:
    """How an aspect is named in notes: its words and the title of the metric whose field it is
    (the judge's is its words alone).

    >>> aspect_name("G"), aspect_name("J")
    ('grounding (GROOVIST)', 'the rubric judge')
    """
    field = aspect_fields().get(aspect)
    words = ASPECT_WORDS.get(aspect, aspect)
    if field is None or aspect in EXTRA_ASPECTS:
        return words
    return f"{words} ({registry().spec(field.metric).title})"


def dhm_aspects(records: Iterable[StoryScores] | pd.DataFrame, judge: bool = False) -> tuple[str, ...]:
    """The one rule for which distances dHM averages: the paper's three when the scores have them,
    else the ones they have (a partial dHM, said by :func:`partial_note`), else all three (the
    report then says each story lacks them); with ``judge`` also J when present.

    >>> t = pd.DataFrame({"story": ["1"], "sequence": ["s"], "system": ["m"], "NR": [0.9]})
    >>> dhm_aspects(t), partial_note(dhm_aspects(t))
    (('R',), 'dHM over non-redundancy (RoViST-NR) only: grounding (GROOVIST), coherence (RoViST-C) not in these scores (the paper averages all three)')
    """
    found = available_aspects(records, extra=judge)
    return found if any(a in ASPECTS for a in found) else ASPECTS


def partial_note(aspects: Sequence[str]) -> str:
    """The sentence every output of a dHM that is not the paper's carries ('' for the paper's)."""
    parts = []
    missing = [a for a in ASPECTS if a not in aspects]
    if missing:
        shown = ", ".join(aspect_name(a) for a in aspects if a in ASPECTS)
        parts.append(
            f"dHM over {shown} only: {', '.join(aspect_name(a) for a in missing)} not in these scores (the paper averages all three)"
        )
    if "J" in aspects:
        parts.append("the rubric judge is added as a fourth distance (not the paper's dHM)")
    return "; ".join(parts)
