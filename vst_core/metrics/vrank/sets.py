"""Vrank over a story set, before the chunks: every ordered pair of distinct non-empty stories of a
sequence through the ranker once, each story's margins and their mean (:mod:`.ranking`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from vst_core.contract import Key, StorySetLike
from vst_core.data import Story
from vst_core.metrics.vrank.ranking import story_margins
from vst_core.metrics.vrank.record import Preference, VrankScores
from vst_core.scoring.sets import sequences_of

if TYPE_CHECKING:
    from vst_core.metrics.vrank.ranker import VrankModel


def vrank_results(
    story_set: StorySetLike,
    todo: Sequence[Story],
    model: VrankModel,
    progress: Callable[[int], object] | None = None,
) -> dict[Key, VrankScores | str]:
    """Vrank on every story of ``todo``: each ordered pair of distinct non-empty stories of its
    sequence (from the whole set) through the ranker once, margins by :func:`story_margins`."""
    wanted = {s.key for s in todo}
    groups = [g for g in sequences_of(story_set).values() if any(s.key in wanted for s in g)]
    ordered: list[tuple[Story, Story]] = []
    for group in groups:
        texts = [s for s in group if not s.is_empty]
        ordered.extend((a, b) for a in texts for b in texts if a.key != b.key)
    out: dict[Key, VrankScores | str] = {}
    gaps = model.predict([(a.text, b.text) for a, b in ordered], progress=progress) if ordered else np.zeros(0)
    predicted = {(a.key, b.key): float(g) for (a, b), g in zip(ordered, gaps, strict=True)}
    for group in groups:
        keys = [s.key for s in group if not s.is_empty]
        scores, margins = story_margins(keys, predicted)
        for story in group:
            if story.key not in wanted or story.is_empty:
                continue
            prefs = tuple(Preference(other[0], other[1], m) for other, m in margins[story.key].items())
            notes = () if prefs else ("no other story of this image sequence to compare with",)
            out[story.key] = VrankScores(scores[story.key], prefs, notes, model.name)
    return out
