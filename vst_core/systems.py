"""Two systems head to head on the image sequences both wrote for: per metric, how often the first
scores higher (win), equal within :data:`TIE` (tie) or lower (loss), and the differences."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Differences this small are ties (scores are floats written at full precision).
TIE = 1e-9


def paired_sequences(table: pd.DataFrame, a: str, b: str, metrics: Sequence[str]) -> pd.DataFrame:
    """One row per sequence both ``a`` and ``b`` wrote for: their stories (the first of each when a
    system wrote several) and, per metric, ``a − b`` of their scores (mean over several stories).
    ``table`` is :func:`vst_core.viz.scores_table`'s: story, sequence, system and metric columns."""
    left, right = table[table["system"] == a], table[table["system"] == b]
    shared = [s for s in dict.fromkeys(left["sequence"]) if s in set(right["sequence"])]
    rows = []
    for sequence in shared:
        x, y = left[left["sequence"] == sequence], right[right["sequence"] == sequence]
        row: dict[str, object] = {"sequence": sequence, "story_a": x["story"].iloc[0], "story_b": y["story"].iloc[0]}
        for metric in metrics:
            row[metric] = float(x[metric].mean() - y[metric].mean())  # NaN when either is undefined
        rows.append(row)
    return pd.DataFrame(rows, columns=["sequence", "story_a", "story_b", *metrics])


def win_tie_loss(paired: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per metric: N sequences with both scores, wins / ties / losses of the first system, the mean
    and median difference."""
    rows = []
    for metric in metrics:
        diff = paired[metric].dropna().to_numpy(dtype=float) if metric in paired else np.zeros(0)
        rows.append(
            {
                "metric": metric,
                "N": len(diff),
                "wins": int((diff > TIE).sum()),
                "ties": int((np.abs(diff) <= TIE).sum()),
                "losses": int((diff < -TIE).sum()),
                "mean difference": float(diff.mean()) if len(diff) else float("nan"),
                "median difference": float(np.median(diff)) if len(diff) else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["metric", "N", "wins", "ties", "losses", "mean difference", "median difference"])
