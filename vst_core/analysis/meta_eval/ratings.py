"""Combining human judgements: one rating per story and aspect from several raters, inter-rater
agreement (Krippendorff's α), and a story's ratings as the pages show them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.judgements import Judgements


def aggregate(judgements: Judgements, how: str = "mean") -> pd.DataFrame:
    """One row per story: the ``how`` (mean or median) of its raters for every aspect, plus each
    error label by majority (flagged by at least half of the raters)."""
    ratings = judgements.ratings
    if ratings.empty:
        human = pd.DataFrame(index=pd.Index([], name="story_id"))
    else:
        human = ratings.pivot_table(index="story_id", columns="aspect", values="value", aggfunc=how, sort=False)
        human = human[judgements.aspects]
    if not judgements.errors.empty:
        votes = judgements.errors.pivot_table(index="story_id", columns="error", values="value", aggfunc="mean", sort=False)
        human = human.join((votes >= 0.5).astype(float).where(votes.notna()), how="outer")
    human.columns.name = None
    return human


def inter_rater(judgements: Judgements) -> pd.DataFrame:
    """Krippendorff's α (interval level) per aspect, with raters, stories and why it is undefined."""
    import krippendorff

    rows = []
    for aspect in judgements.aspects:
        part = judgements.ratings[judgements.ratings["aspect"] == aspect]
        row: dict[str, Any] = {"aspect": aspect, "alpha": None, "raters": 0, "stories": part["story_id"].nunique(), "note": ""}
        if part["rater"].isna().all():
            row["note"] = "undefined: no rater column, so raters cannot be told apart"
            rows.append(row)
            continue
        table = part.pivot_table(index="rater", columns="story_id", values="value", aggfunc="mean")
        row["raters"] = len(table)
        pairable = table.loc[:, table.notna().sum(axis=0) >= 2].to_numpy()  # only these enter α
        shared = pairable.shape[1]
        if len(table) < 2:
            row["note"] = "undefined: only one rater"
        elif shared == 0:
            row["note"] = "undefined: no story was rated by two raters"
        elif np.unique(pairable[~np.isnan(pairable)]).size < 2:
            row["note"] = "undefined: every rating of the stories rated by two or more raters is the same value"
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                alpha = float(krippendorff.alpha(reliability_data=table.to_numpy(), level_of_measurement="interval"))
            finite = bool(np.isfinite(alpha))
            row["alpha"] = alpha if finite else None
            row["note"] = f"{shared} stories rated by two or more raters" if finite else "undefined: no expected disagreement"
        rows.append(row)
    return pd.DataFrame(rows, columns=["aspect", "alpha", "raters", "stories", "note"])


@dataclass(frozen=True)
class StoryRating:
    """One aspect's human ratings of one story: mean, spread (population SD) over raters, count."""

    aspect: str
    mean: float
    spread: float
    n: int


def story_ratings(judgements: Judgements, story_id: str) -> list[StoryRating]:
    """The human ratings of ``story_id`` per aspect, in the file's aspect order (none: empty)."""
    return aspect_ratings(judgements, judgements.ratings[judgements.ratings["story_id"] == story_id])


def aspect_ratings(judgements: Judgements, rows: pd.DataFrame) -> list[StoryRating]:
    """Per aspect of ``judgements``, in the file's order, the mean, spread (population SD) and
    count of the ratings in ``rows`` (rows of ``judgements.ratings``); aspects without one left out."""
    out = []
    for aspect in judgements.aspects:
        values = rows.loc[rows["aspect"] == aspect, "value"].astype(float).dropna()
        if len(values):
            out.append(StoryRating(aspect, float(values.mean()), float(values.std(ddof=0)), len(values)))
    return out
