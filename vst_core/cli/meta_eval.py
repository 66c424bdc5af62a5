"""``vst meta-eval SCORES HUMAN --out report.json``: agreement of each metric with human judgements.
Defaults come from :class:`~vst_core.analysis.meta_eval.MetaSettings`; the numbers are the Agreement page's."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from vst_core.analysis.meta_eval import (
    LAYOUTS,
    JudgementsError,
    MetaReport,
    MetaSettings,
    read_judgements,
    run_meta_eval,
)
from vst_core.analysis.meta_eval.report import _plain
from vst_core.analysis.meta_eval.scored import pair_margins, score_frame
from vst_core.analysis.meta_eval.versus import VERSUS_METHODS, VersusSettings, versus_accuracy, versus_correlations
from vst_core.analysis.paired_tests import PERMUTATION_BUDGET, PermutationBudget
from vst_core.cli.common import (
    EXIT_INPUT,
    EXIT_USAGE,
    DefaultsHelp,
    bar,
    csv_list,
    error,
    note,
    outputs_unwritable,
    story_set_given,
    wrong_file,
)
from vst_core.cli.compare import one_line
from vst_core.data import load_records
from vst_core.data.csv_out import frame_csv
from vst_core.data.exports import cannot_write, write_text_whole
from vst_core.data.merge import merge_records
from vst_core.records import StoryScores

DEFAULTS = MetaSettings()


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "meta-eval",
        help="how each metric agrees with human judgements (correlations, pairwise accuracy, bins)",
        description=(
            "Join a scores JSONL with human judgements (long: story_id,rater,aspect,value; wide: story_id,"
            "<aspects>; pairwise: story_a,story_b,rank_a,rank_b; a VIST-Edit Human_eval file, story ids "
            "<photo sequence>:<system>; or VHED.csv, story ids <story_id>:<model>) and report story- and system-level "
            "correlations with bootstrap intervals, pairwise ranking accuracy (ties wrong) by agreement and "
            "ranking gap, T/P bins, error-label correlations and reference-based baselines. The numbers "
            "are the ones the dashboard's Agreement page shows."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("scores", type=Path, metavar="SCORES", help="scores JSONL written by `score`")
    p.add_argument("human", type=Path, metavar="HUMAN", help="human judgements CSV")
    p.add_argument("--out", type=Path, required=True, help="report JSON to write")
    p.add_argument(
        "--judgements-format",
        choices=LAYOUTS,
        default="auto",
        help="layout of HUMAN; auto tells them apart by the header. vist-edit: a Human_eval file of "
        "github.com/tingyaohsu/VIST-Edit, named AREL.csv or GLAC.csv (the name says which system "
        "generated its stories); vhed: VHED.csv of github.com/AcademiaSinicaNLPLab/VHED",
    )
    p.add_argument("--csv", type=Path, default=None, metavar="DIR", help="also write every table as CSV into DIR")
    p.add_argument("--metrics", default=None, help="comma-separated metric columns (default: all present)")
    p.add_argument(
        "--aspects",
        default=None,
        help="comma-separated human aspects (default: all; in a wide file, every column but ids and id-like ones)",
    )
    p.add_argument("--aggregate", choices=("mean", "median"), default=DEFAULTS.aggregate, help="how raters are combined")
    p.add_argument("--resamples", type=int, default=DEFAULTS.resamples, help="bootstrap resamples (0: no intervals)")
    p.add_argument(
        "--resample-unit",
        choices=("sequence", "item"),
        default=DEFAULTS.resample_unit,
        help="what a correlation interval resamples: image sequences (every story of a drawn sequence with it; "
        "the stories of one sequence are not independent) or the stories / systems themselves",
    )
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="bootstrap seed")
    p.add_argument("--confidence", type=float, default=DEFAULTS.confidence, help="bootstrap interval level")
    p.add_argument("--gap-bins", default=None, help="ranking-gap bin edges, e.g. 0,0.1,0.2,0.3,1 (default: quartiles)")
    p.add_argument("--t-split", type=float, default=DEFAULTS.t_split, help="high temporal misalignment: T >= this")
    p.add_argument(
        "--p-split", type=float, default=DEFAULTS.p_split, help="high noun-phrase proportion: P > this (default: the mode)"
    )
    p.add_argument(
        "--pair-aspect",
        default=DEFAULTS.pair_aspect,
        help="aspect that orders story pairs built from ratings, or 'mean' for the mean of the aspects "
        "(default: overall, else the last)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--no-baselines", action="store_true", help="skip the BLEU/ROUGE-L/CIDEr baselines")
    p.add_argument("--meteor", action="store_true", help="add METEOR to the baselines (its Java scorer takes about 13 s to load)")
    p.add_argument(
        "--versus-method",
        choices=VERSUS_METHODS,
        default=VersusSettings.method,
        help="coefficient of the metric-vs-metric tests (Williams' test, PERM-BOTH permutation, paired bootstrap)",
    )
    p.add_argument(
        "--permutations",
        type=int,
        default=VersusSettings.permutations,
        help="permutations (and bootstrap resamples) of the metric-vs-metric tests; 0 skips them",
    )
    p.add_argument(
        "--permutation-budget",
        type=int,
        default=PERMUTATION_BUDGET,
        metavar="DRAWS",
        help="permutations every metric-vs-metric test of the run may draw together, the first ones and those added "
        "near alpha; a test the budget stops says so (stopped_early) and keeps the p and standard error of what it drew",
    )


def settings_from_args(args: argparse.Namespace) -> MetaSettings:
    edges = tuple(float(v) for v in csv_list(args.gap_bins) or []) or None
    return MetaSettings(
        aggregate=args.aggregate,
        resamples=args.resamples,
        seed=args.seed,
        confidence=args.confidence,
        gap_edges=edges,
        t_split=args.t_split,
        p_split=args.p_split,
        baselines=not args.no_baselines,
        meteor=args.meteor,
        pair_aspect=args.pair_aspect,
        resample_unit=args.resample_unit,
    )


def _write(report: MetaReport, out: Path, csv_dir: Path | None, extra: dict[str, Any] | None = None) -> None:
    write_text_whole(out, json.dumps({**report.to_json(), **(extra or {})}, ensure_ascii=False, indent=1))
    written = 0
    if csv_dir:
        for name in report.tables():
            write_text_whole(csv_dir / f"{name}.csv", report.csv(name))
            written += 1
        versus = (extra or {}).get("metric_vs_metric")
        if versus:  # the metric-vs-metric tables, headed like the others, with their own settings
            head = [report.description, f"signature {json.dumps(report.signature, sort_keys=True)}", versus["settings"]]
            for name in ("correlations", "pairwise_accuracy"):
                table = pd.DataFrame(versus[name])
                write_text_whole(csv_dir / f"metric_vs_metric_{name}.csv", frame_csv(table, head))
                written += 1
    note(f"wrote {out}" + (f" and {written} CSV tables in {csv_dir}" if csv_dir else ""))


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    if not args.scores.is_file():
        error(f"no scores file at {args.scores}")
        return EXIT_INPUT
    if story_set_given([args.scores]) or wrong_file([args.human], "judgements"):
        return EXIT_INPUT
    if outputs_unwritable([args.out], [args.csv]):
        return EXIT_INPUT
    found, problems = load_records(args.scores)
    for problem in problems:
        note(f"warning: {problem}")
    records, conflicts = merge_records((record, args.scores.name) for record in found)  # a story's lines -> one record
    for conflict in conflicts[:3]:
        note(f"warning: {conflict}")
    if len(conflicts) > 3:
        note(f"warning: {len(conflicts) - 3} more conflicts between lines of one story")
    if not records:
        error(f"{args.scores} holds no score records")
        return EXIT_INPUT
    try:
        judgements = read_judgements(args.human, aspects=csv_list(args.aspects), layout=args.judgements_format)
    except (OSError, JudgementsError) as exc:
        error(f"{args.human}: {exc}")
        return EXIT_INPUT
    report = run_meta_eval(
        records,
        judgements,
        settings,
        metrics=csv_list(args.metrics),
        aspects=csv_list(args.aspects),
        progress=lambda total: bar(total, "cell", "correlations", disable=args.no_progress),
    )
    for message in report.notes:
        note(message)
    for message in report.problems:
        note(f"warning: {message}")
    for name, reason in report.unavailable.items():
        note(f"warning: {name} unavailable: {reason}")
    match = report.match
    note(
        f"matched {match['matched']} of {match['judged']} judged stories to {match['scored']} scored ones; "
        f"{len(report.metrics)} metrics x {len(report.aspects)} aspects; {report.description}"
    )
    if match["matched"] == 0:
        error("no judged story has scores; nothing to correlate")
        return EXIT_INPUT
    print_agreement(report)
    extra = None
    if args.permutations > 0:
        try:
            versus = VersusSettings(args.versus_method, args.permutations, args.seed, args.confidence, args.permutation_budget)
        except ValueError as exc:
            error(str(exc))
            return EXIT_USAGE
        progress = None if args.no_progress else lambda total: bar(total, "draw", "metric vs metric permutations")
        extra = {"metric_vs_metric": metric_versus(report, records, versus, progress)}
    try:
        _write(report, args.out, args.csv, extra)
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    return 0


#: The coefficients' names, as the table's title says them.
COEFFICIENT = {"spearman": "Spearman ρ", "pearson": "Pearson r", "kendall_b": "Kendall τ-b", "kendall_c": "Kendall τ-c"}


def print_agreement(report: MetaReport) -> None:
    """The story-level agreement of each metric with each aspect, in the first method of the
    settings, with its interval and N (every cell as the JSON has it), on stdout."""
    table = report.correlations
    if table.empty:
        return
    method = str(table["method"].iat[0])  # the settings' first method
    rows = table[(table["level"] == "story") & (table["method"] == method)]
    if rows.empty:
        return
    aspects = list(dict.fromkeys(rows["aspect"]))
    metrics = list(dict.fromkeys(rows["metric"]))
    cells = {(r.metric, r.aspect): r for r in rows.itertuples(index=False)}
    width = max(6, *(len(one_line(m)) for m in metrics))
    column = max(22, *(len(one_line(a)) for a in aspects))
    intervals = rows["ci_low"].notna().any()
    unit = str(rows["resampled"].iat[0]) if "resampled" in rows else "stories"
    print(
        f"{COEFFICIENT.get(method, method)} of each metric with the human ratings, story level"
        + (f"; [interval: {unit} resampled] and N:" if intervals else "; N (no intervals: --resamples 0, or too few stories):")
    )
    print(f"  {'metric':<{width}}  " + "  ".join(f"{one_line(a):<{column}}" for a in aspects))
    for metric in metrics:
        shown = []
        for aspect in aspects:
            r = cells.get((metric, aspect))
            if r is None or r.value is None or r.value != r.value:
                shown.append(f"{'—':<{column}}")
                continue
            interval = f" [{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None and r.ci_low == r.ci_low else ""
            shown.append(f"{f'{r.value:+.3f}{interval} N {int(r.n)}':<{column}}")
        print(f"  {one_line(metric):<{width}}  " + "  ".join(shown))


def metric_versus(
    report: MetaReport, records: list[StoryScores], settings: VersusSettings, progress: Callable[[int], Any] | None = None
) -> dict[str, Any]:
    """The metric-vs-metric section of the JSON: every two metrics per aspect (correlations) and on
    the judged pairs (accuracy), every test within one permutation budget (stated, with whether it
    was reached), with a one-line summary on stderr."""
    budget = PermutationBudget(settings.permutation_budget, progress)
    try:
        correlations = versus_correlations(report.data, report.metrics, report.aspects, settings, budget=budget)
        scores = score_frame(records) if report.data.empty else report.data
        accuracy = versus_accuracy(report.pairs, scores, report.metrics, settings, pair_margins(records), budget=budget)
    finally:
        budget.close()
    significant = int((correlations["p_permutation"] < 0.05).sum()) if len(correlations) else 0
    note(
        f"metric vs metric ({settings.describe()}): {len(correlations)} metric pairs x aspects, {significant} with "
        f"permutation p < 0.05; {len(accuracy)} metric pairs on {len(report.pairs)} judged story pairs"
    )
    reached = budget.note()
    if reached is not None:
        note(f"note: {reached}")
    return {
        "settings": settings.describe(),
        "permutation_budget": budget.summary(),
        "correlations": [{k: _plain(v) for k, v in row.items()} for row in correlations.to_dict(orient="records")],
        "pairwise_accuracy": [{k: _plain(v) for k, v in row.items()} for row in accuracy.to_dict(orient="records")],
    }
