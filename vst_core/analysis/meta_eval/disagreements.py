"""Where a metric disagrees with people: the stories it ranks furthest from their human rank, and
the story pairs it orders against them (error analysis; the report's tables say only *how much*)."""

from __future__ import annotations

import pandas as pd

from vst_core.records import direction_of

STORY_COLUMNS = ["story_id", "system", "sequence_id", "metric", "human", "metric_rank", "human_rank", "rank_diff"]
PAIR_COLUMNS = ["sequence_id", "better", "worse", "gap", "metric_better", "metric_worse", "order"]


def story_disagreements(data: pd.DataFrame, metric: str, aspect: str) -> pd.DataFrame:
    """Stories with both a ``metric`` score and a human ``aspect`` rating, ranked by each (1 = best by
    the metric's direction, :func:`~vst_core.records.direction_of`; ties share their mean rank); ``rank_diff`` = metric rank − human rank (positive: the metric
    places the story lower than people do). Largest ``|rank_diff|`` first, then by story id."""
    if metric not in data or aspect not in data:
        return pd.DataFrame(columns=STORY_COLUMNS)
    part = data.dropna(subset=[metric, aspect])
    out = pd.DataFrame(
        {
            "story_id": part["story"].astype(str) if "story" in part else part.index.astype(str),
            "system": part["system"] if "system" in part else "",
            "sequence_id": part["sequence_id"] if "sequence_id" in part else "",
            "metric": part[metric].astype(float),
            "human": part[aspect].astype(float),
            "metric_rank": part[metric].rank(ascending=direction_of(metric) == "lower", method="average"),
            "human_rank": part[aspect].rank(ascending=False, method="average"),
        }
    ).reset_index(drop=True)
    out["rank_diff"] = out["metric_rank"] - out["human_rank"]
    order = out.assign(_abs=out["rank_diff"].abs()).sort_values(["_abs", "story_id"], ascending=[False, True], kind="stable")
    return order.drop(columns="_abs").reset_index(drop=True)[STORY_COLUMNS]


def pair_disagreements(pairs: pd.DataFrame, data: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The pairs (better, worse by people) the metric does not order as people do: ``reversed``
    (it scores the worse story better, by its direction) or ``tied``; largest human gap first, reversed before tied."""
    if metric not in data or not len(pairs):
        return pd.DataFrame(columns=PAIR_COLUMNS)
    scores = data[metric] * (-1.0 if direction_of(metric) == "lower" else 1.0)  # oriented: higher is better
    rows = []
    for pair in pairs.itertuples():
        better, worse = scores.get(pair.better), scores.get(pair.worse)
        if better is None or worse is None or pd.isna(better) or pd.isna(worse) or better > worse:
            continue
        rows.append(
            {
                "sequence_id": getattr(pair, "sequence_id", ""),
                "better": str(pair.better),
                "worse": str(pair.worse),
                "gap": float(pair.gap),
                "metric_better": float(data[metric].get(pair.better)),
                "metric_worse": float(data[metric].get(pair.worse)),
                "order": "reversed" if better < worse else "tied",
            }
        )
    out = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    out = out.sort_values(["gap", "order", "better", "worse"], ascending=[False, True, True, True], kind="stable")
    return out.reset_index(drop=True)
