"""Two systems head to head on the image sequences both wrote for: per metric, how often the first
scores better (win: higher, or lower for a lower-is-better number such as ``inter``), equal within
:data:`TIE` (tie) or worse (loss), and the differences."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from vst_core.records import direction_of

#: Differences this small are ties (scores are floats written at full precision).
TIE = 1e-9


def paired_sequences(table: pd.DataFrame, a: str, b: str, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per sequence both ``a`` and ``b`` wrote for, in ``a``'s order: their stories (the
    first of each when a system wrote several) and, per metric, ``a − b`` of their scores (mean over
    several stories; NaN when either is undefined). ``table`` is :func:`vst_core.viz.scores_table`'s:
    story, sequence, system and metric columns. Grouped once per system (no loop per sequence).

    >>> t = pd.DataFrame({"story": ["1", "1", "2"], "sequence": ["s", "s", "t"], "system": ["h", "m", "h"], "NR": [0.9, 0.8, 0.7]})
    >>> paired_sequences(t, "h", "m", ["NR"]).round(3).to_dict("records")
    [{'sequence': 's', 'story_a': '1', 'story_b': '1', 'NR': 0.1}]
    """
    columns = ["sequence", "story_a", "story_b", *metrics]
    left, right = table[table["system"] == a], table[table["system"] == b]
    if not len(left) or not len(right):
        return pd.DataFrame(columns=columns)
    x = left.groupby("sequence", sort=False).agg(story_a=("story", "first"), **{m: (m, "mean") for m in metrics})
    y = right.groupby("sequence", sort=False).agg(story_b=("story", "first"), **{m: (m, "mean") for m in metrics})
    both = x.add_suffix("_a").join(y.add_suffix("_b"), how="inner")
    out = pd.DataFrame({"sequence": both.index.astype(str), "story_a": both["story_a_a"], "story_b": both["story_b_b"]})
    for m in metrics:
        out[m] = both[f"{m}_a"] - both[f"{m}_b"]
    return out.reset_index(drop=True)[columns]


def win_tie_loss(paired: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per metric: N sequences with both scores, which way is better (the registry's direction,
    :func:`~vst_core.records.direction_of`), wins / ties / losses of the first system by that
    direction (a win on ``inter`` is a lower repetition; none for a descriptor, such as P), and
    the mean and median difference a − b as measured.

    >>> p = pd.DataFrame({"NR": [0.2, -0.1], "inter": [-0.3, -0.2]})
    >>> win_tie_loss(p, ["NR", "inter"])[["metric", "better", "wins", "losses"]].to_dict("records")
    [{'metric': 'NR', 'better': 'higher', 'wins': 1, 'losses': 1}, {'metric': 'inter', 'better': 'lower', 'wins': 2, 'losses': 0}]
    """
    rows = []
    for metric in metrics:
        diff = paired[metric].dropna().to_numpy(dtype=float) if metric in paired else np.zeros(0)
        direction = direction_of(metric)
        sign = {"higher": 1.0, "lower": -1.0}.get(direction)
        better = diff * sign if sign is not None else None
        rows.append(
            {
                "metric": metric,
                "better": direction if sign is not None else "— (descriptor)",
                "N": len(diff),
                "wins": int((better > TIE).sum()) if better is not None else None,
                "ties": int((np.abs(diff) <= TIE).sum()) if better is not None else None,
                "losses": int((better < -TIE).sum()) if better is not None else None,
                "mean difference": float(diff.mean()) if len(diff) else float("nan"),
                "median difference": float(np.median(diff)) if len(diff) else float("nan"),
            }
        )
    columns = ["metric", "better", "N", "wins", "ties", "losses", "mean difference", "median difference"]
    return pd.DataFrame(rows, columns=columns).astype({"wins": "Int64", "ties": "Int64", "losses": "Int64"})
