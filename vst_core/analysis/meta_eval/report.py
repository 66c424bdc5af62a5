"""The whole meta-evaluation report: scores joined with judgements, every table, the signature.
The CLI and the Agreement page show the same numbers from :func:`run_meta_eval`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.identity import keyed_judgements
from vst_core.analysis.meta_eval.judgements import Judgements, _empty_pairs
from vst_core.analysis.meta_eval.ratings import aggregate, inter_rater
from vst_core.analysis.meta_eval.scored import Scored, match_report, pair_margins, score_frame, texts_of
from vst_core.analysis.meta_eval.settings import MetaSettings
from vst_core.analysis.meta_eval.stats import (
    binned_correlations,
    correlation_table,
    error_table,
    mode_split,
    pairs_from_ratings,
    pairwise_table,
    tie_calibration_table,
    tied_pairs,
)
from vst_core.contract import registry
from vst_core.data.csv_out import frame_csv
from vst_core.formulas.baselines import BASELINES, baseline_scores, baselines_said


def metric_fields() -> dict[str, tuple[str, str]]:
    """Report name -> (metric, attribute) of every quality number in the registry."""
    return {f.report: (f.metric, f.attr) for f in registry().fields if f.report}


def covariate_fields() -> dict[str, tuple[str, str]]:
    """Column -> (metric, attribute) of every story descriptor in the registry (T, P)."""
    return {f.column: (f.metric, f.attr) for f in registry().fields if f.covariate}


@dataclass
class MetaReport:
    """Every table of a meta-evaluation, the match between scores and judgements, and the signature."""

    signature: dict[str, Any]
    description: str
    match: dict[str, Any]
    data: pd.DataFrame  # one row per matched story: ids, metric columns, covariates, human columns
    metrics: list[str]
    aspects: list[str]
    errors: list[str]
    agreement: pd.DataFrame
    correlations: pd.DataFrame
    system_correlations: pd.DataFrame
    pairs: pd.DataFrame
    pairs_source: str
    pairwise: pd.DataFrame
    bins: pd.DataFrame
    error_correlations: pd.DataFrame
    unavailable: dict[str, str]
    splits: dict[str, float | None]
    problems: list[str]
    # pairwise accuracy of every metric on the pairs none of whose stories a learned metric was trained on
    held_out: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)  # what was done, as information (not problems)
    # pairwise accuracy with the people's ties and WMT's tie calibration (acc_eq, its ε), beside Vrank's rule
    tie_calibrated: pd.DataFrame = field(default_factory=pd.DataFrame)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The downloadable tables by file stem."""
        return {
            "agreement_with_humans": self.correlations,
            "system_level": self.system_correlations,
            "pairwise_accuracy": self.pairwise,
            "pairwise_tie_calibrated": self.tie_calibrated,
            "bins": self.bins,
            "error_correlations": self.error_correlations,
            "inter_rater": self.agreement,
            "matched_data": self.data.reset_index(),
            "pairs": self.pairs,
        }

    def csv(self, name: str) -> str:
        """One table as CSV headed by comment lines with the signature that produced it."""
        return frame_csv(self.tables()[name], [self.description, f"signature {json.dumps(self.signature, sort_keys=True)}"])

    def to_json(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            """Rows at full float precision (pandas' to_json keeps 10 digits); NaN as null."""
            rows: list[dict[str, Any]] = [{str(k): _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
            return rows

        return {
            "signature": self.signature,
            "description": self.description,
            "notes": self.notes,
            "match": self.match,
            "metrics": self.metrics,
            "aspects": self.aspects,
            "errors": self.errors,
            "inter_rater": records(self.agreement),
            "correlations": records(self.correlations),
            "system_correlations": records(self.system_correlations),
            "pairs_source": self.pairs_source,
            "pairwise_accuracy": records(self.pairwise),
            "bins": records(self.bins),
            "splits": self.splits,
            "error_correlations": records(self.error_correlations),
            "unavailable_baselines": self.unavailable,
            "problems": self.problems,
        }


def _plain(value: Any) -> Any:
    """A cell as JSON: numpy scalars as Python numbers, NaN and infinities as null."""
    if isinstance(value, (np.floating, float)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _with_baselines(
    scores: pd.DataFrame,
    records: Scored,
    precomputed: tuple[dict[str, dict[str, float]], dict[str, str]] | None,
    judged: set[str],
    meteor: bool = False,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The score frame joined with the reference-based baselines that could run, and why others could not."""
    base, unavailable = precomputed if precomputed is not None else baseline_scores(texts_of(records), only=judged, meteor=meteor)
    if base:
        frame = pd.DataFrame.from_dict(base, orient="index")
        scores = scores.join(frame[[b for b in BASELINES if b not in unavailable and b in frame]])
    return scores, unavailable


def _human_frame(judgements: Judgements, scores: pd.DataFrame, how: str, problems: list[str]) -> tuple[pd.DataFrame, Judgements]:
    """Aggregated ratings per story; an aspect named like a score column is renamed ``<name> (human)``."""
    human = aggregate(judgements, how)
    clash = [c for c in human.columns if c in scores.columns or c in ("sequence_id", "system")]
    if clash:
        names = {c: f"{c} (human)" for c in clash}
        human = human.rename(columns=names)
        judgements = _renamed(judgements, names)
        problems.append(
            f"judged aspect(s) named like a score column, renamed: {', '.join(f'{c} -> {n}' for c, n in names.items())}"
        )
    return human, judgements


def _match_problems(match: dict[str, Any]) -> list[str]:
    if match["matched"] == 0:
        return [
            f"none of the {match['judged']} judged story ids is in the scores "
            f"(e.g. {', '.join(match['judged_not_scored'][:3]) or '-'}); check that both use the same story_id"
        ]
    if match["judged_not_scored_count"]:
        return [f"{match['judged_not_scored_count']} judged story id(s) have no scores and are left out"]
    return []


def _joined(scores: pd.DataFrame, human: pd.DataFrame, judgements: Judgements) -> pd.DataFrame:
    """Scored and judged stories side by side; a system missing from the scores comes from the judgements."""
    data = scores.join(human, how="inner")
    if "system" in data and judgements.ratings["system"].notna().any():
        known = judgements.ratings.dropna(subset=["system"]).drop_duplicates("story_id").set_index("story_id")["system"]
        data["system"] = data["system"].where(data["system"].notna(), known.reindex(data.index))
    return data


def _correlations(
    data: pd.DataFrame,
    metrics: list[str],
    aspects: list[str],
    settings: MetaSettings,
    progress: Callable[[int], Any] | None,
    problems: list[str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Story- and system-level correlation tables, one progress tick per cell."""
    bar = progress(2 * len(metrics) * len(aspects)) if progress is not None else None
    tick = (lambda: bar.update(1)) if bar is not None else None
    try:
        story = correlation_table(data, metrics, aspects, settings, "story", tick)
        system = correlation_table(data, metrics, aspects, settings, "system", tick)
    finally:
        if bar is not None:
            bar.close()
    n_systems = data["system"].nunique() if "system" in data else 0
    if n_systems < 3 and aspects and len(data):
        problems.append(f"system-level correlations need at least 3 systems; the judged stories come from {n_systems}")
    return story, system


def run_meta_eval(
    records: Scored,
    judgements: Judgements,
    settings: MetaSettings = MetaSettings(),
    *,
    metrics: Sequence[str] | None = None,
    aspects: Sequence[str] | None = None,
    baselines: tuple[dict[str, dict[str, float]], dict[str, str]] | None = None,
    progress: Callable[[int], Any] | None = None,
    signature_ids: Sequence[str] | None = None,
    margins: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
    trained_on: Mapping[str, Iterable[str]] | None = None,
) -> MetaReport:
    """Join scores with judgements and compute every table of the report.

    ``baselines`` takes a precomputed :func:`~vst_core.formulas.baselines.baseline_scores` result
    (they depend on the story texts only); by default they are computed when the settings ask.
    ``progress(total)`` may return a bar with ``update(n)`` and ``close()``, advanced per
    metric × aspect cell of the two correlation tables. ``records`` may be a scores table (then
    ``signature_ids`` names the signatures of the files it came from). ``margins``: a pairwise
    metric's verdicts on story pairs, keyed by the stories' keys (by default Vrank's, read from
    the records, :func:`pair_margins`), which judge its pairs instead of its story scores.
    ``trained_on``: per learned metric, the story ids its training pairs named (from its card); a
    judged pair with such a story is left out of ``held_out``, the pairwise table of every metric on
    the pairs no learned metric has seen, and the overlap is reported."""
    problems = list(judgements.problems)
    scores = score_frame(records)
    judgements, keyed = keyed_judgements(judgements, scores)
    problems.extend(keyed)
    unavailable: dict[str, str] = {}
    if settings.baselines:
        scores, unavailable = _with_baselines(scores, records, baselines, judgements.story_ids, settings.meteor)
    available = [m for m in (*metric_fields(), *BASELINES) if m in scores]
    chosen = [m for m in (metrics or available) if m in available]
    missing_metrics = [m for m in (metrics or []) if m not in available]
    if missing_metrics:
        problems.append(f"metric(s) not in the scores: {', '.join(missing_metrics)}")
    human, judgements = _human_frame(judgements, scores, settings.aggregate, problems)
    all_aspects = [a for a in judgements.aspects if a in human]
    chosen_aspects = [a for a in (aspects or all_aspects) if a in all_aspects]
    match = match_report(scores.index, judgements.story_ids)
    problems.extend(_match_problems(match))
    data = _joined(scores, human, judgements)
    sig_ids = signature_ids if signature_ids is not None else sorted({r.signature_id for r in records if r.signature_id})
    correlations, system_correlations = _correlations(data, chosen, chosen_aspects, settings, progress, problems)
    pairs, pairs_source = _story_pairs(judgements, data, chosen_aspects, settings, problems)
    if margins is None and not isinstance(records, pd.DataFrame):
        margins = pair_margins(records)
    pairwise = pairwise_table(pairs, scores if len(judgements.pairs) else data, chosen, settings.gap_edges, margins)
    ties = _story_ties(judgements, data, chosen_aspects, settings)
    tie_calibrated = tie_calibration_table(pairs, ties, scores if len(judgements.pairs) else data, chosen, margins)
    if len(judgements.pairs):
        unknown = (~pairs["better"].isin(scores.index) | ~pairs["worse"].isin(scores.index)).sum()
        if unknown:
            problems.append(f"{int(unknown)} judged pair(s) name a story without scores; left out")
    held_out = pd.DataFrame()
    if trained_on:
        seen: set[str] = set()
        for metric, ids in trained_on.items():
            ids = set(ids)
            overlap = int((_plain_ids(pairs["better"]).isin(ids) | _plain_ids(pairs["worse"]).isin(ids)).sum())
            if overlap:
                problems.append(
                    f"{metric} was trained on stories of {overlap} of the {len(pairs)} judged pairs: its accuracy on "
                    "them is not a held-out figure (see the held-out table)"
                )
            seen |= ids
        unseen = pairs[~(_plain_ids(pairs["better"]).isin(seen) | _plain_ids(pairs["worse"]).isin(seen))]
        held_out = pairwise_table(
            unseen.reset_index(drop=True), scores if len(judgements.pairs) else data, chosen, settings.gap_edges, margins
        )
    bins, splits = _bins(data, chosen, chosen_aspects, settings)
    errors = [e for e in judgements.error_tags if e in human]
    inputs: dict[str, Any] = {"judgements": judgements.digest, "metrics": chosen, "aspects": chosen_aspects}
    return MetaReport(
        signature=settings.signature(sig_ids, **inputs),
        description=settings.describe(sig_ids, **inputs),
        match=match,
        data=data,
        metrics=chosen,
        aspects=chosen_aspects,
        errors=errors,
        agreement=inter_rater(judgements),
        correlations=correlations,
        system_correlations=system_correlations,
        pairs=pairs,
        pairs_source=pairs_source,
        pairwise=pairwise,
        tie_calibrated=tie_calibrated,
        bins=bins,
        error_correlations=error_table(data, [*chosen, *chosen_aspects], errors),
        unavailable=unavailable,
        splits=splits,
        problems=problems,
        held_out=held_out,
        notes=[baselines_said(settings.meteor)] if settings.baselines else [],
    )


def _plain_ids(keys: pd.Series) -> pd.Series:
    """Story keys without the `` (system)`` a shared id adds, as training files name stories."""
    return keys.astype(str).str.replace(r" \([^()]*\)$", "", regex=True)


def narrowed(report: MetaReport, metrics: Sequence[str], settings: MetaSettings) -> MetaReport:
    """The report over fewer of its metrics, by filtering its tables: every cell is the one the
    full report computed (each cell's bootstrap is seeded on its own), so narrowing is instant and
    never changes a number. The signature names the metrics kept. (Fewer aspects can change which
    story pairs are ranked, so that is recomputed, not filtered.)"""
    keep = [m for m in report.metrics if m in set(metrics)]
    inputs: dict[str, Any] = {
        "judgements": report.signature.get("judgements_sha256", ""),
        "metrics": keep,
        "aspects": report.aspects,
    }
    ids = report.signature.get("scores_signatures", [])

    def only(frame: pd.DataFrame, column: str, allowed: Sequence[str]) -> pd.DataFrame:
        return frame[frame[column].isin(list(allowed))].reset_index(drop=True) if column in frame else frame

    return replace(
        report,
        signature=settings.signature(ids, **inputs),
        description=settings.describe(ids, **inputs),
        metrics=keep,
        correlations=only(report.correlations, "metric", keep),
        system_correlations=only(report.system_correlations, "metric", keep),
        pairwise=only(report.pairwise, "metric", keep),
        held_out=only(report.held_out, "metric", keep),
        tie_calibrated=only(report.tie_calibrated, "metric", keep),
        bins=only(report.bins, "metric", keep),
        error_correlations=only(report.error_correlations, "column", [*keep, *report.aspects]),
    )


def _story_pairs(
    judgements: Judgements, data: pd.DataFrame, aspects: list[str], settings: MetaSettings, problems: list[str]
) -> tuple[pd.DataFrame, str]:
    """The pairs to rank and where they come from: the pairwise file, else every two stories of a
    sequence ordered by ``settings.pair_aspect`` (default ``overall``, else the last aspect)."""
    if len(judgements.pairs):
        return judgements.pairs, "pairwise judgements file (lower rank = better)"
    if not aspects or "sequence_id" not in data:
        return _empty_pairs(), "none"
    if settings.pair_aspect == "mean":
        rated = judgements.ratings[judgements.ratings["aspect"].isin(aspects)]
        pairs = pairs_from_ratings(data[aspects].mean(axis=1), data["sequence_id"], rated, None)
        return (
            pairs,
            f"every two stories of a sequence, ordered by the mean of the {settings.aggregate} ratings of {', '.join(aspects)}",
        )
    aspect = settings.pair_aspect or ("overall" if "overall" in aspects else aspects[-1])
    if aspect not in data:
        problems.append(f"no aspect {aspect!r} to order pairs by; judged aspects: {', '.join(judgements.aspects)}")
        aspect = aspects[-1]
    pairs = pairs_from_ratings(data[aspect], data["sequence_id"], judgements.ratings, aspect)
    return pairs, f"every two stories of a sequence, ordered by the {settings.aggregate} '{aspect}' rating"


def _story_ties(judgements: Judgements, data: pd.DataFrame, aspects: list[str], settings: MetaSettings) -> pd.DataFrame:
    """The stories people rated equally, by the rating :func:`_story_pairs` orders pairs with
    (none for a pairwise file: its pairs are ranked)."""
    if len(judgements.pairs) or not aspects or "sequence_id" not in data:
        return tied_pairs(pd.Series(dtype=float), pd.Series(dtype=str))
    if settings.pair_aspect == "mean":
        return tied_pairs(data[aspects].mean(axis=1), data["sequence_id"])
    aspect = settings.pair_aspect or ("overall" if "overall" in aspects else aspects[-1])
    return tied_pairs(data[aspect if aspect in data else aspects[-1]], data["sequence_id"])


def _bins(
    data: pd.DataFrame, metrics: list[str], aspects: list[str], settings: MetaSettings
) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """GROOVIST Fig. 3 bins against the human ``grounding`` aspect (else the first), and the splits used."""
    splits: dict[str, float | None] = {"T": settings.t_split, "P": settings.p_split}
    frames = []
    aspect = "grounding" if "grounding" in aspects else (aspects[0] if aspects else None)
    if aspect is not None and "T" in data:
        frames.append(binned_correlations(data, metrics, aspect, "T", settings.t_split, settings.bin_method))
    if aspect is not None and "P" in data:
        splits["P"] = settings.p_split if settings.p_split is not None else mode_split(data["P"])
        if splits["P"] is not None:
            frames.append(binned_correlations(data, metrics, aspect, "P", splits["P"], settings.bin_method, high_inclusive=False))
    bins = pd.concat(frames, ignore_index=True) if frames else binned_correlations(data, [], "", "T", 1.0)
    return bins, splits


def _renamed(judgements: Judgements, names: dict[str, str]) -> Judgements:
    return Judgements(
        ratings=judgements.ratings.assign(aspect=judgements.ratings["aspect"].replace(names)),
        errors=judgements.errors.assign(error=judgements.errors["error"].replace(names)),
        pairs=judgements.pairs,
        layout=judgements.layout,
        problems=judgements.problems,
        digest=judgements.digest,
    )
