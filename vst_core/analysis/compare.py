"""Our score against another source's, story by story: how a user checks a parity profile on their
own data (e.g. our reference NR against the scores the authors released)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from vst_core.records import StoryScores, field_by_column


@dataclass(frozen=True)
class Comparison:
    """Matched stories' two values, with agreement figures and the stories that differ most."""

    column: str
    story_ids: tuple[str, ...]
    ours: tuple[float, ...]
    theirs: tuple[float, ...]
    only_ours: int
    only_theirs: int
    systems: tuple[str, ...] = ()
    matched_by: str = "story"  # "story": (system, story id); "story id": one system each side, named differently

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

    def largest(self, k: int = 10) -> list[tuple[str, str, float, float]]:
        """(system, story, ours, theirs) of the ``k`` largest differences."""
        order = np.argsort(-np.abs(np.array(self.ours) - np.array(self.theirs)), kind="stable")[:k]
        systems = self.systems or ("",) * self.n
        return [(systems[i], self.story_ids[i], self.ours[i], self.theirs[i]) for i in order]


def compare(ours: Sequence[StoryScores] | pd.DataFrame, theirs: Sequence[StoryScores] | pd.DataFrame, column: str) -> Comparison:
    """Join two sets of scores on the story ``(system, story_id)`` for one registry column (``NR``,
    ``coherence``, ``GROOVIST raw``, ...); stories with the value on one side only are counted.
    Either side may be records or a scores table (:func:`vst_core.viz.scores_table`, an index's).
    When nothing matches so and each side has every id once (so an id names one story on each
    side; the systems are named differently: ``human`` here, ``reference`` in a release),
    stories are matched by id and ``matched_by`` says so.

    >>> a = pd.DataFrame({"story": ["1", "1"], "system": ["human", "llava"], "NR": [0.93, 0.83]})
    >>> b = pd.DataFrame({"story": ["1", "1"], "system": ["llava", "human"], "NR": [0.83, 0.93]})
    >>> compare(a, b, "NR").figures()["equal"]
    1.0
    """
    mine, other = _values(ours, column), _values(theirs, column)
    both = mine.index.intersection(other.index, sort=False)
    matched_by = "story"
    if not len(both) and _unique_ids(mine) and _unique_ids(other):  # one system each, named differently
        mine, other = _by_id(mine), _by_id(other)
        both = mine.index.intersection(other.index, sort=False)
        matched_by = "story id"
    return Comparison(
        column,
        tuple(str(k[1]) for k in both),
        tuple(float(v) for v in mine.loc[both]),
        tuple(float(v) for v in other.loc[both]),
        len(mine.index.difference(other.index)),
        len(other.index.difference(mine.index)),
        tuple(str(k[0]) for k in both),
        matched_by,
    )


def _unique_ids(values: pd.Series) -> bool:
    """Every story id once (each names one story), so matching by id alone cannot pair one
    system's story with another's."""
    return bool(len(values)) and not values.index.get_level_values(1).duplicated().any()


def _by_id(values: pd.Series) -> pd.Series:
    """Values keyed ("", story id): the systems' names set aside."""
    ids = values.index.get_level_values(1)
    return pd.Series(values.to_numpy(), index=pd.MultiIndex.from_arrays([[""] * len(ids), ids]))


def _values(scores: Sequence[StoryScores] | pd.DataFrame, column: str) -> pd.Series:
    """(system, story id) -> the column's defined values (the first of a story listed twice)."""
    if isinstance(scores, pd.DataFrame):
        if column not in scores:
            return pd.Series(dtype=float, index=pd.MultiIndex.from_arrays([[], []]))
        values = pd.Series(
            scores[column].to_numpy(dtype=float),
            index=pd.MultiIndex.from_arrays([scores["system"].astype(str), scores["story"].astype(str)]),
        )
    else:
        field = field_by_column()[column]
        found = [((r.system, r.story_id), v) for r in scores if (v := field.value(r)) is not None]
        values = pd.Series(
            [v for _, v in found],
            index=pd.MultiIndex.from_tuples([k for k, _ in found]) if found else pd.MultiIndex.from_arrays([[], []]),
            dtype=float,
        )
    values = values.dropna()
    return values[~values.index.duplicated(keep="first")]
