"""Our score against another source's, story by story: how a user checks a parity profile on their
own data (e.g. our reference NR against the scores the authors released)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from vst_core.records import FIELD_BY_COLUMN, StoryScores


@dataclass(frozen=True)
class Comparison:
    """Matched stories' two values, with agreement figures and the stories that differ most."""

    column: str
    story_ids: tuple[str, ...]
    ours: tuple[float, ...]
    theirs: tuple[float, ...]
    only_ours: int
    only_theirs: int

    @property
    def n(self) -> int:
        return len(self.story_ids)

    def figures(self, tolerance: float = 1e-9) -> dict[str, float | int | None]:
        """N, share equal within ``tolerance``, mean and max |difference|, Pearson r, Spearman ρ."""
        if not self.n:
            return {"N": 0, "equal": None, "mean_abs_diff": None, "max_abs_diff": None, "pearson": None, "spearman": None}
        a, b = np.array(self.ours), np.array(self.theirs)
        diff = np.abs(a - b)
        varied = self.n > 1 and a.std() > 0 and b.std() > 0
        return {
            "N": self.n,
            "equal": float((diff <= tolerance).mean()),
            "mean_abs_diff": float(diff.mean()),
            "max_abs_diff": float(diff.max()),
            "pearson": float(stats.pearsonr(a, b).statistic) if varied else None,
            "spearman": float(stats.spearmanr(a, b).statistic) if varied else None,
        }

    def largest(self, k: int = 10) -> list[tuple[str, float, float]]:
        """(story, ours, theirs) of the ``k`` largest differences."""
        order = np.argsort(-np.abs(np.array(self.ours) - np.array(self.theirs)))[:k]
        return [(self.story_ids[i], self.ours[i], self.theirs[i]) for i in order]


def compare(ours: Sequence[StoryScores], theirs: Sequence[StoryScores], column: str) -> Comparison:
    """Join two sets of records on story id for one registry column (``NR``, ``coherence``,
    ``GROOVIST raw``, ...); stories with the value on one side only are counted."""
    field = FIELD_BY_COLUMN[column]
    mine = {r.story_id: v for r in ours if (v := field.value(r)) is not None}
    other = {r.story_id: v for r in theirs if (v := field.value(r)) is not None}
    both = [sid for sid in mine if sid in other]
    return Comparison(
        column,
        tuple(both),
        tuple(mine[s] for s in both),
        tuple(other[s] for s in both),
        len(set(mine) - set(other)),
        len(set(other) - set(mine)),
    )
