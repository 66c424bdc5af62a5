"""The rubric judge's biases, measured on the stories it judged: one small table.

Three measures (formulas in :mod:`vst_core.metrics.judge.rule`):

* **position** (pairwise mode): every two stories of a sequence asked "which is better?" in both
  orders; ``follows position`` is the share of pairs whose answer picked the same position in both
  orders (the story changed, the answer did not), ``first both`` the share picking the first twice,
  ``mean P(first) shift`` = mean of (P₁(a, b) + P₁(b, a))/2 − 1/2 (0 for an order-blind judge);
* **paraphrase** (self-consistency): per aspect, the mean over stories of the standard deviation of
  the paraphrases' scores, and the mean Spearman ρ between every two paraphrases' score columns;
* **images** (a vision-language judge run with and without the images): per aspect, the mean score
  change the images make and the Spearman ρ between the two rankings.

Rows: ``bias``, ``scope`` (aspect or pairwise question), ``measure``, ``value``, ``n``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from vst_core.contract import StoryRecordLike
from vst_core.metrics.judge.batch import PairResult
from vst_core.metrics.judge.record import JudgeScores
from vst_core.metrics.judge.rule import paraphrase_agreement, position_bias, spearman

COLUMNS = ["bias", "scope", "measure", "value", "n"]


def position_rows(results: Sequence[PairResult], questions: Sequence[str] = ()) -> list[dict[str, object]]:
    """Position-bias rows: every pairwise question, then all of them together."""
    rows: list[dict[str, object]] = []
    by_question: dict[int, list[PairResult]] = {}
    for r in results:
        by_question.setdefault(r.question, []).append(r)
    scopes = [
        (f"question {q + 1}" + (f": {questions[q][:60]}" if q < len(questions) else ""), v)
        for q, v in sorted(by_question.items())
    ]
    if len(by_question) > 1:
        scopes.append(("all questions", list(results)))
    for scope, found in scopes:
        bias = position_bias([r.verdict for r in found])
        for measure, value in (
            ("follows position", bias.follows_position),
            ("first position both orders", bias.first_both),
            ("mean P(first) shift", bias.mean_shift),
            ("mean |P(first) shift|", bias.mean_abs_shift),
        ):
            rows.append({"bias": "position", "scope": scope, "measure": measure, "value": value, "n": bias.pairs})
    return rows


def _judges(records: Iterable[StoryRecordLike]) -> list[JudgeScores]:
    return [j for r in records if isinstance(j := r.metrics.get("judge"), JudgeScores)]


def paraphrase_rows(records: Iterable[StoryRecordLike]) -> list[dict[str, object]]:
    """Self-consistency rows per aspect: mean per-story spread, mean pairwise Spearman of paraphrases."""
    judges = _judges(records)
    rows: list[dict[str, object]] = []
    aspects = list(dict.fromkeys(a.aspect for j in judges for a in j.aspects))
    for aspect in aspects:
        found = [a for j in judges if (a := j.aspect(aspect)) is not None and a.paraphrases]
        width = min((len(a.paraphrases) for a in found), default=0)
        spreads = [a.spread for a in found if a.spread is not None]
        columns = [[a.paraphrases[k] for a in found] for k in range(width)]
        rows.append(
            {
                "bias": "paraphrase",
                "scope": aspect,
                "measure": "mean std of paraphrase scores",
                "value": sum(spreads) / len(spreads) if spreads else math.nan,
                "n": len(spreads),
            }
        )
        rows.append(
            {
                "bias": "paraphrase",
                "scope": aspect,
                "measure": f"mean Spearman between {width} paraphrases",
                "value": paraphrase_agreement(columns) if width > 1 else math.nan,
                "n": len(found),
            }
        )
    return rows


def image_rows(records: Iterable[StoryRecordLike]) -> list[dict[str, object]]:
    """With-and-without-images rows per aspect (only stories judged both ways)."""
    judges = [j for j in _judges(records) if j.without_images]
    rows: list[dict[str, object]] = []
    aspects = list(dict.fromkeys(a.aspect for j in judges for a in j.aspects))
    for aspect in aspects:
        pairs = [
            (w.score, wo.score)
            for j in judges
            if (w := j.aspect(aspect)) is not None
            and (wo := j.aspect(aspect, images=False)) is not None
            and w.score is not None
            and wo.score is not None
        ]
        with_images = [p[0] for p in pairs]
        without = [p[1] for p in pairs]
        diff = sum(a - b for a, b in pairs) / len(pairs) if pairs else math.nan
        rows.append(
            {"bias": "images", "scope": aspect, "measure": "mean score change with images", "value": diff, "n": len(pairs)}
        )
        rows.append(
            {
                "bias": "images",
                "scope": aspect,
                "measure": "Spearman with vs without images",
                "value": spearman(with_images, without) if len(pairs) > 1 else math.nan,
                "n": len(pairs),
            }
        )
    return rows


def judge_bias_table(
    records: Iterable[StoryRecordLike] = (), pairs: Sequence[PairResult] = (), questions: Sequence[str] = ()
) -> pd.DataFrame:
    """The judge's biases as one table (module doc): position from ``pairs``, paraphrase and images
    from the ``records``' judge evidence."""
    kept = list(records)
    rows = position_rows(pairs, questions) + paraphrase_rows(kept) + image_rows(kept)
    return pd.DataFrame(rows, columns=COLUMNS)
