"""``vst import-scores`` (scores computed elsewhere as records) and ``vst dhm`` (human-likeness)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from vst_core.analysis.dhm import HUMAN_SYSTEMS, DHMReport, dhm_report, reasons
from vst_core.analysis.intervals import SMALL_N_MARK, SMALL_N_NOTE, has_interval
from vst_core.cli.common import (
    EXIT_INPUT,
    EXIT_USAGE,
    DefaultsHelp,
    bar,
    error,
    note,
    note_conflicts,
    outputs_unwritable,
    story_set_given,
    wrong_file,
)
from vst_core.cli.compare import one_line
from vst_core.data import ScoresWriter
from vst_core.data.csv_out import frame_csv
from vst_core.data.exports import cannot_write, write_text_whole
from vst_core.data.importing import ImportError_, imported_records, metric_of, read_long_file, read_released
from vst_core.data.index import IndexError_
from vst_core.data.index_store import load_index
from vst_core.data.tables import LONG_READ_BYTES, Progress
from vst_core.records import StoryScores


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser(
        "import-scores",
        help="turn scores computed elsewhere (the dHM release, a long CSV) into scores records",
        description=(
            "Read released per-story scores (*_G.json: {story_id: GROOVIST before tanh}; *_C.csv / *_R.csv: "
            "story_id,<X>_score) or a long CSV (story_id,metric,value[,system][,sequence_id]) and append them to --out "
            "as scores records marked as imported, signed with the file's digest and the variant you declare. "
            "A story's sequence_id is the long CSV's sequence_id cell; else its story_id, declared with "
            "--sequence-id-from story_id (the dHM release: the ids are sequence ids) or standing in for an unknown one."
        ),
        formatter_class=DefaultsHelp,
    )
    imp.add_argument("files", type=Path, nargs="+", metavar="FILE", help="score files to import")
    imp.add_argument("--out", type=Path, required=True, help="scores JSONL to append to")
    imp.add_argument("--system", default=None, help="system of the stories (released files; a long CSV may name its own)")
    imp.add_argument("--metric", default=None, help="metric of a released file (default: from its _G/_C/_R suffix)")
    imp.add_argument("--variant", default="as released", help="how the scores were computed, recorded in the signature")
    imp.add_argument("--long", action="store_true", help="the files are long CSVs story_id,metric,value[,system][,sequence_id]")
    imp.add_argument("--no-progress", action="store_true", help="hide the progress bar of a long file")
    imp.add_argument(
        "--sequence-id-from",
        choices=("file", "story_id"),
        default="file",
        help="file: a long CSV's sequence_id column where it has one, else the story_id stands in; story_id: "
        "every story's sequence_id is its story_id, declared in the signature (the dHM release, where the human "
        "and the model story of one sequence share the id)",
    )

    dhm = sub.add_parser(
        "dhm",
        help="how far each system's stories are from people's (dHM: grounding, coherence, repetition)",
        description=(
            "dHM (Surikuchi et al., 2024): per system, the mean over its stories of |tanh G_h - tanh G_s|, "
            "|C_h - C_s|, |R_h - R_s| and their mean, against the human stories, with bootstrap intervals and "
            "signed differences. Reads scores records (computed by `score`, imported by `import-scores`, or both). "
            "A story is (system, story_id); its records from several files are merged metric by metric: a computed "
            "score beats an imported one, else the file named first wins; values that differ are counted and shown "
            "as conflicts. Stories left out are counted by reason."
        ),
        formatter_class=DefaultsHelp,
    )
    dhm.add_argument("scores", type=Path, nargs="+", metavar="SCORES", help="scores JSONL files")
    dhm.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the report as JSON (the table is printed on stdout either way; without --out nothing is written)",
    )
    dhm.add_argument("--csv", type=Path, default=None, metavar="DIR", help="also write systems.csv and distances.csv")
    dhm.add_argument("--human", default=",".join(HUMAN_SYSTEMS), help="comma-separated systems whose stories are human")
    dhm.add_argument("--pairing", choices=("sequence", "story"), default="sequence", help="pair by image sequence or by story id")
    dhm.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    dhm.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    dhm.add_argument(
        "--profile",
        action="store_true",
        help="also every measure against the human stories: the signed difference with its paired test and the "
        "distance mean |system - human| per measure (the Human-likeness page's profile; profile.csv with --csv)",
    )
    dhm.add_argument(
        "--with-judge",
        action="store_true",
        help="add the rubric judge's overall score as a fourth distance, |J_h - J_s| on (J - 1) / 4 (not the paper's dHM)",
    )


def _reading(path: Path, hidden: bool) -> Progress | None:
    """A progress bar for a file long to read (:data:`~vst_core.data.tables.LONG_READ_BYTES` or more)."""
    if hidden or path.stat().st_size < LONG_READ_BYTES:
        return None
    return lambda total, unit: bar(total, unit, f"reading {path.name}")


def run_import(args: argparse.Namespace) -> int:
    records: list[StoryScores] = []
    for path in args.files:
        if not path.is_file():
            error(f"no file at {path}")
            return EXIT_INPUT
        if wrong_file([path], "score table"):  # stories, scores records or judgements: nothing imported
            return EXIT_INPUT
        try:
            sequences: dict[tuple[str, str], str] | None = None
            if args.long:
                long = read_long_file(path, progress=_reading(path, args.no_progress))
                problems = long.problems

                def name(system: str) -> str:
                    return system or args.system or "unknown"

                values = {(name(system), sid): v for (system, sid), v in long.values.items()}
                if long.sequences is not None:
                    sequences = {(name(system), sid): q for (system, sid), q in long.sequences.items()}
                variants = {m: args.variant for v in values.values() for m in v}
            else:
                if not args.system:
                    error("released files name no system: pass --system")
                    return EXIT_USAGE
                metric = metric_of(path, args.metric)
                found, problems = read_released(path, metric, progress=_reading(path, args.no_progress))
                values = {(args.system, sid): {metric: v} for sid, v in found.items()}
                variants = {metric: args.variant}
        except (ImportError_, ValueError, UnicodeDecodeError) as exc:
            error(f"{path}: {exc}")
            return EXIT_INPUT
        for problem in problems:
            note(f"warning: {problem}")
        records.extend(imported_records(values, path, variants, sequences=sequences, sequence_from=args.sequence_id_from))
        note(f"{path.name}: {len(values)} stories")
    with ScoresWriter(args.out) as writer:
        for record in records:
            writer.write(record)
    note(f"wrote {len(records)} imported records to {args.out}")
    return 0


def _print(report: DHMReport) -> None:
    """The table on stdout, one line per system, with its footnotes and signature (``vst dhm ... > t.txt``)."""

    def fmt(value: float | None) -> str:
        return "   -  " if value is None else f"{value:.4f}"

    print(f"{'system':<24} {'N':>6}  {'d_G':>7} {'d_C':>7} {'d_R':>7} {'dHM':>7}   signed G/C/R (system - human)")
    for s in report.systems:
        signed = " ".join(fmt(s.signed[a]) for a in ("G", "C", "R"))
        means = " ".join(f"{fmt(s.mean[k]):>7}" for k in ("G", "C", "R", "dHM"))
        mark = "" if has_interval(s.n) else f" {SMALL_N_MARK}"  # as the pages and the reports mark it
        print(f"{one_line(s.system):<24} {s.n:>6}  {means}   {signed}{mark}")
        for reason, count in s.missing.items():
            if count:
                print(f"{'':<24} left out: {count} ({reason})")
    if not all(has_interval(s.n) for s in report.systems):
        print(SMALL_N_NOTE)
    print(f"dHM sig {report.signature['id']} · human {', '.join(report.human_systems)} · pairing {report.pairing}")


def _hint(report: DHMReport, table: pd.DataFrame, human: tuple[str, ...]) -> None:
    """Why nothing (or little) paired by sequence, when the human stories name no sequence."""
    alone = sum(s.missing.get(reasons("sequence", report.aspects)[1], 0) for s in report.systems)
    if report.pairing != "sequence" or not alone:
        return
    humans = table[table["system"].isin(human)]
    if len(humans) and (humans["sequence"] == humans["story"]).all():
        note(
            "note: every human story's sequence_id is its story_id (no sequence_id was given): stories pair by "
            "sequence only where the ids are sequence ids; give sequence ids (a sequence_id column, or "
            "--sequence-id-from story_id when they are) or use --pairing story"
        )


def run_dhm(args: argparse.Namespace) -> int:
    for path in args.scores:
        if not path.is_file():
            error(f"no scores file at {path}")
            return EXIT_INPUT
    if story_set_given(args.scores) or outputs_unwritable([args.out], [args.csv]):
        return EXIT_INPUT
    try:  # the files' index: read once per content, stories merged per (system, story_id) and metric
        index = load_index(args.scores)
    except IndexError_ as exc:
        error(str(exc))
        return EXIT_INPUT
    for problem in index.problems:
        note(f"warning: {problem}")
    note_conflicts(index.conflicts)
    human = tuple(h.strip() for h in args.human.split(",") if h.strip())
    table = index.table.copy(deep=False)
    if not table["system"].isin(human).any():
        error(f"no story of the human system(s) {', '.join(human)}; name them with --human")
        return EXIT_INPUT
    table.attrs["scores_signatures"] = [index.provenance()["id"]]  # as the dashboard signs the same files
    report = dhm_report(
        table, human_systems=human, pairing=args.pairing, resamples=args.resamples, seed=args.seed, judge=args.with_judge
    )
    if report.note:
        note(f"note: {report.note}")
    _print(report)
    _hint(report, table, human)
    profile = None
    if args.profile:
        from vst_core.analysis.profile import human_likeness_profile

        profile = human_likeness_profile(table, human, resamples=args.resamples, seed=args.seed)
        _print_profile(profile)
    conflicts = index.conflicts
    document = {
        "signature": report.signature,
        "note": report.note,
        "systems": report.table(),
        "distances": len(report.frame),
        "conflicts": {m: sum(c.metric == m for c in conflicts) for m in dict.fromkeys(c.metric for c in conflicts)},
    }
    if profile is not None:
        document["profile"] = json.loads(profile.to_json(orient="records"))
        document["profile_permutation_budget"] = profile.attrs.get("permutation_budget", {})
    try:
        if args.out is not None:
            write_text_whole(args.out, json.dumps(document, indent=1))
            note(f"wrote {args.out}")
        if args.csv:
            _write_csv(report, args.csv)
            if profile is not None:
                write_text_whole(args.csv / "profile.csv", frame_csv(profile, report.csv_head()))
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    return 0


def _print_profile(profile: pd.DataFrame) -> None:
    """The profile, one line per system and measure: N, difference [interval], p ± SE, distance."""
    if profile.empty:
        print("\nprofile: no system shares an image sequence with the human stories on any measure")
        return
    width = max(14, *(len(one_line(str(m))) for m in profile["measure"]))
    print("\nprofile: every measure against the human stories (system − human per image sequence)")
    print(f"  {'system':<12} {'measure':<{width}} {'N':>5}  {'difference':>10}  {'95% interval':<22} {'p ± MC SE':>18}  distance")
    for r in profile.itertuples(index=False):
        interval = f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]" if r.ci_low is not None and r.ci_low == r.ci_low else SMALL_N_MARK
        p = f"{r.p:.4f} ± {r.p_se:.4f}" if r.p is not None and r.p == r.p else "—"
        print(
            f"  {one_line(str(r.system)):<12} {one_line(str(r.measure)):<{width}} {r.n:>5}  {r.difference:>+10.4f}  "
            f"{interval:<22} {p:>18}  {r.distance:.4f}" + ("  stopped early" if r.stopped_early else "")
        )
    budget = profile.attrs.get("permutation_budget", {})
    if budget.get("reached"):
        print(
            f"note: the permutation budget of {budget['budget']:,} draws was reached; the tests marked 'stopped early' "
            "keep the p and Monte-Carlo standard error of the permutations they drew"
        )


def _write_csv(report: DHMReport, folder: Path) -> None:
    """``systems.csv`` and ``distances.csv`` in ``folder`` (:meth:`DHMReport.systems_csv`,
    :meth:`DHMReport.csv`: the notebook's and the dashboard's tables), each written whole or not at all."""
    write_text_whole(folder / "systems.csv", report.systems_csv())
    write_text_whole(folder / "distances.csv", report.csv())
