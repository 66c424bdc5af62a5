"""What the researcher watches while a study runs (pure functions of the study and its answers):
answers and time per rater and item, each rater's accuracy on the gold items and who the exclusion
rule leaves out, agreement between raters, position bias, and how the metrics agree with the
answers so far (the Agreement page's own computation on the answers as judgements).

>>> str(ExclusionRule())
'raters with gold accuracy < 0.5 over ≥ 2 gold items excluded'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from vst_core.study.agreement import Level, agreeing_pairs, alpha_interval, fleiss_kappa, krippendorff_alpha
from vst_core.study.frames import judgements_frame, pairwise_frame
from vst_core.study.plan import deal
from vst_core.study.records import Answer, Item, Study

__all__ = [
    "AGREEMENT_COLUMNS",
    "GOLD_TOLERANCE",
    "ExclusionRule",
    "LiveView",
    "gold_correct",
    "correlation_grid",
    "live_view",
]

#: A Likert gold answer counts as right when it is within this many points of the expected rating.
GOLD_TOLERANCE = 1
AGREEMENT_COLUMNS = ["aspect", "alpha", "low", "high", "n_items", "agreeing_pairs", "n_pairs", "fleiss_kappa"]
CORRELATION_COLUMNS = ["metric", "aspect", "method", "coefficient", "N", "p"]


@dataclass(frozen=True)
class ExclusionRule:
    """Raters whose accuracy on the gold items is below ``min_accuracy`` over at least
    ``min_gold`` gold items answered are left out of agreement, correlations and exports."""

    min_accuracy: float = 0.5
    min_gold: int = 2

    def __str__(self) -> str:
        return f"raters with gold accuracy < {self.min_accuracy:g} over ≥ {self.min_gold} gold items excluded"

    def excludes(self, accuracy: float, answered: int) -> bool:
        return answered >= self.min_gold and bool(np.isfinite(accuracy)) and accuracy < self.min_accuracy


@dataclass(frozen=True)
class LiveView:
    """The tables of the live view (each a DataFrame; empty with its columns when nothing is known yet)."""

    per_rater: pd.DataFrame
    per_item: pd.DataFrame
    agreement: pd.DataFrame
    position_bias: pd.DataFrame
    correlations: pd.DataFrame
    exclusion_rule: str
    excluded: tuple[str, ...] = ()
    answers: int = 0
    scores_signature: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


def gold_correct(study: Study, item: Item, value: dict[str, Any]) -> tuple[int, int]:
    """(right, asked) of an answer to a gold item: each expected entry is one check (a Likert
    rating right within :data:`GOLD_TOLERANCE` points; a preference, best or worst exactly)."""
    assert item.gold is not None
    right = asked = 0
    for name, expected in item.gold.expected.items():
        asked += 1
        given = value.get(name)
        if study.protocol == "likert" and isinstance(given, int) and isinstance(expected, int):
            right += abs(given - expected) <= GOLD_TOLERANCE
        else:
            right += given == expected
    return right, asked


def _per_rater(study: Study, answers: Sequence[Answer], rule: ExclusionRule) -> pd.DataFrame:
    dealt = deal(study)
    gold = len(study.gold_items)
    rows = []
    for rater in study.raters:
        mine = [a for a in answers if a.rater == rater.name]
        checks = [gold_correct(study, study.item(a.item_id), a.value) for a in mine if study.item(a.item_id).gold is not None]
        right, asked = sum(c[0] for c in checks), sum(c[1] for c in checks)
        accuracy = right / asked if asked else float("nan")
        rows.append(
            {
                "rater": rater.name,
                "assigned": len(dealt.get(rater.name, ())) + gold,
                "answered": len(mine),
                "median_seconds": float(np.median([a.seconds for a in mine])) if mine else float("nan"),
                "gold_items": len(checks),
                "gold_accuracy": accuracy,
                "excluded": rule.excludes(accuracy, len(checks)),
                "revoked": rater.revoked,
            }
        )
    columns = ["rater", "assigned", "answered", "median_seconds", "gold_items", "gold_accuracy", "excluded", "revoked"]
    return pd.DataFrame(rows, columns=columns)


def _per_item(study: Study, answers: Sequence[Answer], excluded: set[str]) -> pd.DataFrame:
    by_item: dict[str, list[Answer]] = {}
    for answer in answers:
        by_item.setdefault(answer.item_id, []).append(answer)
    dealt = deal(study)
    wanted: dict[str, int] = {}
    for ids in dealt.values():
        for item_id in ids:
            wanted[item_id] = wanted.get(item_id, 0) + 1
    rows = []
    for item in study.items:
        given = by_item.get(item.item_id, [])
        counted = [a for a in given if a.rater not in excluded]
        row: dict[str, Any] = {
            "item_id": item.item_id,
            "sequence_id": item.sequence_id,
            "systems": " | ".join(s.system for s in item.stories),
            "stories": " | ".join(s.story_id for s in item.stories),
            "gold": item.gold is not None,
            "raters": len(study.raters) if item.gold is not None else wanted.get(item.item_id, 0),
            "answered": len(given),
            "median_seconds": float(np.median([a.seconds for a in given])) if given else float("nan"),
        }
        if study.protocol == "likert":
            for aspect in study.aspects:
                values = [a.value[aspect.key] for a in counted if aspect.key in a.value]
                row[f"mean_{aspect.key}"] = float(np.mean(values)) if values else float("nan")  # type: ignore[arg-type]
        elif study.protocol == "pairwise":
            votes = [a.value["preferred"] for a in counted]
            row["prefer_a"], row["prefer_b"], row["ties"] = votes.count(0), votes.count(1), votes.count("tie")
        else:
            for index in range(4):
                row[f"best_{index}"] = sum(a.value["best"] == index for a in counted)
                row[f"worst_{index}"] = sum(a.value["worst"] == index for a in counted)
        rows.append(row)
    return pd.DataFrame(rows)


def _agreement(study: Study, answers: Sequence[Answer], n_boot: int) -> pd.DataFrame:
    items = [i.item_id for i in study.items if i.gold is None]
    position = {item_id: n for n, item_id in enumerate(items)}
    raters = sorted({a.rater for a in answers if a.item_id in position})
    row_of = {r: n for n, r in enumerate(raters)}
    keys = {"likert": [a.key for a in study.aspects], "pairwise": ["preferred"], "best-worst": ["best", "worst"]}[study.protocol]
    rows = []
    for key in keys:
        table = np.full((len(raters), len(items)), np.nan)
        choices: dict[str, list[object]] = {}
        for answer in answers:
            if answer.item_id not in position or key not in answer.value:
                continue
            value = answer.value[key]
            code = 2.0 if value == "tie" else float(value)  # a tie: a category of its own (nominal)
            table[row_of[answer.rater], position[answer.item_id]] = code
            choices.setdefault(answer.item_id, []).append(value)
        level: Level = "ordinal" if study.protocol == "likert" else "nominal"
        rated = table[:, (~np.isnan(table)).sum(axis=0) >= 2] if len(raters) else table
        alpha = krippendorff_alpha(rated, level) if rated.size else float("nan")
        low, high = (
            alpha_interval(rated, level, n_boot=n_boot, seed=study.seed) if rated.size and np.isfinite(alpha) else (np.nan,) * 2
        )
        share, pairs = agreeing_pairs(list(choices.values()))
        categories = sorted({str(v) for vs in choices.values() for v in vs})
        counts = [[[str(v) for v in vs].count(c) for c in categories] for vs in choices.values()]
        kappa = fleiss_kappa(counts) if counts and categories else float("nan")
        rows.append((key, alpha, low, high, int(rated.shape[1]) if rated.size else 0, share, pairs, kappa))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _position_bias(study: Study, answers: Sequence[Answer]) -> pd.DataFrame:
    """How often the story shown first (left) won, against chance (a half for a pair, one in k for
    the best of k), with a two-sided binomial test; ties are left out."""
    from scipy.stats import binomtest

    columns = ["measure", "share", "chance", "n", "p"]
    if study.protocol == "likert":
        return pd.DataFrame(columns=columns)
    key = "preferred" if study.protocol == "pairwise" else "best"
    won = [a.presented[0] == a.value[key] for a in answers if a.value.get(key) != "tie" and a.presented]
    if not won:
        return pd.DataFrame(columns=columns)
    chance = 0.5 if study.protocol == "pairwise" else 1 / np.mean([len(a.presented) for a in answers])
    hits = int(sum(won))
    p = float(binomtest(hits, len(won), chance).pvalue)
    measure = "left story preferred" if study.protocol == "pairwise" else "first story chosen best"
    return pd.DataFrame([(measure, hits / len(won), float(chance), len(won), p)], columns=columns)


def _correlations(
    study: Study, answers: Sequence[Answer], excluded: set[str], scores: Any, signature_ids: Sequence[str] | None
) -> tuple[pd.DataFrame, list[str]]:
    """The metrics' agreement with the answers: the answers written as a judgements file and read
    back by :func:`~vst_core.analysis.meta_eval.read_judgements`, then the Agreement page's
    :func:`~vst_core.analysis.meta_eval.run_meta_eval` (story level, no intervals; pairwise
    studies: pairwise accuracy)."""
    from vst_core.analysis.meta_eval import JudgementsError, MetaSettings, read_judgements, run_meta_eval
    from vst_core.data.csv_out import frame_csv

    frame = (
        pairwise_frame(study, answers, excluded) if study.protocol == "pairwise" else judgements_frame(study, answers, excluded)
    )
    if frame.empty:
        return pd.DataFrame(columns=CORRELATION_COLUMNS), []
    try:
        judgements = read_judgements(frame_csv(frame).encode())
    except JudgementsError as exc:
        return pd.DataFrame(columns=CORRELATION_COLUMNS), [f"no correlations yet: {exc}"]
    report = run_meta_eval(scores, judgements, MetaSettings(resamples=0, baselines=False), signature_ids=signature_ids)
    if study.protocol == "pairwise":
        table = report.pairwise
        rows = table[table["group"] == "all"] if not table.empty else table
        out = pd.DataFrame(
            {
                "metric": rows.get("metric", []),
                "aspect": "preferred",
                "method": "pairwise accuracy",
                "coefficient": rows.get("accuracy", []),
                "N": rows.get("n", []),
                "p": np.nan,
            }
        )
    else:
        table = report.correlations
        rows = table[table["level"] == "story"] if not table.empty else table
        out = pd.DataFrame(
            {
                "metric": rows.get("metric", []),
                "aspect": rows.get("aspect", []),
                "method": rows.get("method", []),
                "coefficient": rows.get("value", []),
                "N": rows.get("n", []),
                "p": rows.get("p", []),
            }
        )
    return out.reset_index(drop=True)[CORRELATION_COLUMNS], [*report.notes, *report.problems]


def live_view(
    study: Study,
    answers: Sequence[Answer],
    scores: Any = None,
    *,
    rule: ExclusionRule = ExclusionRule(),
    n_boot: int = 200,
    signature_ids: Sequence[str] | None = None,
) -> LiveView:
    """Every table of the live view from the study's latest answers (answers under another
    signature are not this study's and are left out). ``scores``: scores records (what
    :func:`vst_core.data.load_records` reads) or the dashboard's scores table (columns ``story``,
    ``system``, a column per metric; its files' signature ids in ``signature_ids``): then
    ``correlations`` holds each metric's agreement with the answers so far, with its N.
    ``n_boot``: the bootstrap draws of α's interval (0: none)."""
    mine = [a for a in answers if a.study_signature == study.signature]
    notes = []
    if len(mine) < len(answers):
        notes.append(f"{len(answers) - len(mine)} answers given under another signature of the study are left out")
    per_rater = _per_rater(study, mine, rule)
    excluded = set(per_rater.loc[per_rater["excluded"], "rater"])
    counted = [a for a in mine if a.rater not in excluded]
    correlations = pd.DataFrame(columns=CORRELATION_COLUMNS)
    scores_signature = ""
    if scores is not None:
        correlations, found = _correlations(study, mine, excluded, scores, signature_ids)
        notes += found
        ids = list(signature_ids or [])
        if not ids and not isinstance(scores, pd.DataFrame):
            ids = sorted({str(r.signature_id) for r in scores if getattr(r, "signature_id", None)})
        scores_signature = ", ".join(ids)
    return LiveView(
        per_rater=per_rater,
        per_item=_per_item(study, mine, excluded),
        agreement=_agreement(study, counted, n_boot),
        position_bias=_position_bias(study, mine),
        correlations=correlations,
        exclusion_rule=str(rule),
        excluded=tuple(sorted(excluded)),
        answers=len(mine),
        scores_signature=scores_signature,
        notes=tuple(notes),
    )


def correlation_grid(correlations: pd.DataFrame, method: str = "spearman") -> pd.DataFrame:
    """One coefficient of :attr:`LiveView.correlations` as a grid: a row a metric, a column an
    aspect, each cell ``"+0.800 (N 4)"`` (empty where the pair has no coefficient).

    >>> rows = pd.DataFrame({"metric": ["NR", "NR"], "aspect": ["focused", "share"], "method": ["spearman"] * 2,
    ...                      "coefficient": [0.8, float("nan")], "N": [4, 2], "p": [0.2, float("nan")]})
    >>> correlation_grid(rows).to_dict("records")
    [{'metric': 'NR', 'focused': '+0.800 (N 4)', 'share': '— (N 2)'}]
    """
    mine = correlations[correlations["method"] == method]
    if mine.empty:
        return pd.DataFrame(columns=["metric"])
    cells = mine.assign(
        cell=[
            f"{'—' if pd.isna(c) else format(float(c), '+.3f')} (N {int(n)})"
            for c, n in zip(mine["coefficient"], mine["N"], strict=True)
        ]
    )
    grid = cells.pivot(index="metric", columns="aspect", values="cell").fillna("")
    metrics = list(dict.fromkeys(mine["metric"]))
    aspects = list(dict.fromkeys(mine["aspect"]))
    grid = grid.reindex(index=metrics, columns=aspects)
    grid.columns.name = None
    return grid.reset_index()
