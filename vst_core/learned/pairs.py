"""Training pairs for a story ranker, from the judgement files the product reads, and splits that
keep every image sequence on one side.

A :class:`RankedPair` is two stories of one image sequence with the human verdict: ``better``,
``worse`` and the ranking ``gap`` (> 0). Sources: VHED's CSV (its texts are in the file), any
pairwise or ratings file read by :func:`vst_core.analysis.meta_eval.read_judgements` with a story
set for the texts (ratings become pairs by :func:`pairs_from_ratings`), or VIST-Edit.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vst_core.analysis.meta_eval.identity import story_key
from vst_core.analysis.meta_eval.judgements import Judgements
from vst_core.analysis.meta_eval.ratings import aggregate
from vst_core.analysis.meta_eval.released_layouts import vhed_story_id
from vst_core.analysis.meta_eval.stats import pairs_from_ratings
from vst_core.data import StorySet


@dataclass(frozen=True)
class RankedPair:
    """Two stories of one image sequence, ``better`` preferred by people by ``gap`` (> 0);
    ``agreement``: how many raters agree (NaN when unknown)."""

    sequence_id: str
    better: str
    worse: str
    better_text: str
    worse_text: str
    gap: float
    agreement: float = float("nan")


class PairsError(ValueError):
    """No usable training pair (and why)."""


def vhed_texts(source: str | Path) -> dict[str, str]:
    """Story id (:func:`vhed_story_id`) -> text, from VHED's ``sent1``/``sent2`` columns; the first
    text of an id wins (:func:`vst_core.analysis.meta_eval.read_vhed` reports ids with several)."""
    raw = Path(source).read_bytes().decode("utf-8-sig", errors="replace")
    texts: dict[str, str] = {}
    for row in csv.DictReader(io.StringIO(raw)):
        row = {str(k).strip().lower(): (v or "") for k, v in row.items() if k is not None}
        story, base, comp = row.get("story_id", ""), row.get("model_base", ""), row.get("model_comp", "")
        if not (story.strip() and base.strip() and comp.strip()):
            continue
        texts.setdefault(vhed_story_id(story, base), str(row.get("sent1", "")).strip())
        texts.setdefault(vhed_story_id(story, comp), str(row.get("sent2", "")).strip())
    return texts


def story_texts(story_set: StorySet) -> dict[str, str]:
    """Story id -> text of a story set; an id several systems share is also keyed ``id (system)``
    (the meta-evaluation key, :func:`~vst_core.analysis.meta_eval.identity.story_key`), and its bare
    id is dropped as ambiguous."""
    counts: dict[str, int] = {}
    for story in story_set:
        counts[story.story_id] = counts.get(story.story_id, 0) + 1
    out: dict[str, str] = {}
    for story in story_set:
        out[story_key(story.story_id, story.system)] = story.text
    for story in story_set:  # a story's own id wins over a key that happens to read like it
        if counts[story.story_id] == 1:
            out[story.story_id] = story.text
    return out


def pairs_of(
    judgements: Judgements, texts: Mapping[str, str], sequences: Mapping[str, str] | None = None
) -> tuple[list[RankedPair], list[str]]:
    """Ranked pairs of ``judgements`` with their texts, and what was left out.

    Pairwise files (VHED, pairwise CSV) give their pairs; ratings give every two stories of a
    sequence rated differently (:func:`pairs_from_ratings`, sequences from ``sequences`` or the
    ratings' own ``sequence_id``). A pair whose story has no text, or an empty one, is left out."""
    problems: list[str] = []
    frame = judgements.pairs
    if frame.empty and not judgements.ratings.empty:
        human = aggregate(judgements).drop(columns=[c for c in ("system",) if c in aggregate(judgements)], errors="ignore")
        aspects = [c for c in human.columns if c in judgements.aspects]
        if not aspects:
            raise PairsError("the judgements have no rating aspect to turn into pairs")
        score = human[aspects].mean(axis=1)
        # a story's sequence: the story set's, else the one the ratings name
        own = pd.Series("", index=score.index, dtype=object)
        if "sequence_id" in judgements.ratings:
            named = judgements.ratings.drop_duplicates("story_id").set_index("story_id")["sequence_id"]
            own = named.reindex(score.index).fillna("").astype(str)
        seq = pd.Series({k: (sequences or {}).get(k) or own.get(k, "") for k in score.index}, dtype=object)
        lost = int(seq.eq("").sum())
        if lost:
            problems.append(f"{lost} rated stor(ies) with no image sequence (not in the story set); left out of the pairs")
        frame = pairs_from_ratings(score, seq.replace("", pd.NA), judgements.ratings)
    pairs: list[RankedPair] = []
    missing = 0
    for row in frame.itertuples(index=False):
        a, b = texts.get(str(row.better), ""), texts.get(str(row.worse), "")
        if not a.strip() or not b.strip():
            missing += 1
            continue
        agreement = float(getattr(row, "agreement", float("nan")))
        pairs.append(RankedPair(str(row.sequence_id), str(row.better), str(row.worse), a, b, float(row.gap), agreement))
    if missing:
        problems.append(f"{missing} pair(s) with a story whose text is missing or empty; left out")
    if not pairs:
        raise PairsError("no usable story pair" + (f" ({'; '.join(problems)})" if problems else ""))
    return pairs, problems


def grouped_split(pairs: Sequence[RankedPair], held_out: float, seed: int) -> tuple[list[RankedPair], list[RankedPair]]:
    """(train, held out): whole image sequences go to one side, about ``held_out`` of them held
    out (at least one when there are two or more), chosen by ``seed``; no story is on both sides.

    >>> p = [RankedPair(s, s + "a", s + "b", "x", "y", 1.0) for s in "abcdefghij"]
    >>> train, test = grouped_split(p, 0.2, 7)
    >>> len(test), {x.sequence_id for x in train} & {x.sequence_id for x in test}
    (2, set())
    """
    sequences = sorted({p.sequence_id for p in pairs})
    random.Random(seed).shuffle(sequences)
    n_held = max(1, round(len(sequences) * held_out)) if len(sequences) > 1 and held_out > 0 else 0
    held = set(sequences[:n_held])
    return [p for p in pairs if p.sequence_id not in held], [p for p in pairs if p.sequence_id in held]


def random_split(pairs: Sequence[RankedPair], held_out: float, seed: int) -> tuple[list[RankedPair], list[RankedPair]]:
    """(train, held out) by pair, as the papers split: the same story can be on both sides. For
    comparison with :func:`grouped_split` only."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_held = round(len(pairs) * held_out) if held_out > 0 else 0
    held = set(order[:n_held])
    return [p for i, p in enumerate(pairs) if i not in held], [p for i, p in enumerate(pairs) if i in held]


def stories_of(pairs: Iterable[RankedPair]) -> set[str]:
    """Every story id a set of pairs names."""
    return {s for p in pairs for s in (p.better, p.worse)}


def examples(pairs: Iterable[RankedPair], swap: bool = True) -> list[tuple[str, str, float]]:
    """Regression examples ``(story 1, story 2, target)``: (better, worse, +gap), and with ``swap``
    also (worse, better, −gap), so both orders and both signs are seen equally often."""
    out: list[tuple[str, str, float]] = []
    for p in pairs:
        out.append((p.better_text, p.worse_text, p.gap))
        if swap:
            out.append((p.worse_text, p.better_text, -p.gap))
    return out
