"""``vst study new|raters|status|export``: a human-judgement study run with the product. Every choice
is made by :mod:`vst_core.study` (the pages build the same file from the same choices); this module
reads the options, calls it and prints the result on stdout (notes and errors on stderr)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from vst_core.cli.common import EXIT_INPUT, EXIT_USAGE, DefaultsHelp, csv_list, error, note, outputs_unwritable
from vst_core.data.exports import cannot_write
from vst_core.study import (
    DEFAULT_RATERS_PER_ITEM,
    PROTOCOLS,
    STUDY_SUFFIX,
    Answer,
    AnswerStore,
    ExclusionRule,
    Sample,
    Study,
    StudyError,
    add_rater,
    answers_path,
    aspects_from_json,
    export_study,
    gold_from_json,
    live_view,
    load_study,
    new_study,
    rater_link,
    read_source,
    read_sources,
    revoke_rater,
    save_study,
)
from vst_core.study.build import stories_from_list

#: Where a rater's link points when no --base-url is given: the dashboard on this machine.
BASE_URL = "http://localhost:8501/"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "study",
        help="a human-judgement study of stories with their photos: make it, hand out rater links, watch, export",
        description=(
            "A rating study run with the dashboard's rater page: `new` makes the study file from a story set or a scores "
            "file, `raters` lists each rater's link (and adds or revokes one), `status` shows the answers so far and "
            "the agreement, `export` writes the answers as judgements vst meta-eval and vst compare read."
        ),
        formatter_class=DefaultsHelp,
    )
    commands = p.add_subparsers(dest="study_command", required=True, metavar="STEP")

    new = commands.add_parser(
        "new",
        help="make a study file from stories or scores",
        description=(
            "Make a study: the stories drawn (image sequences with --seed, each chosen system's story in each, so every "
            "system has as many items) or listed (--stories), the protocol (likert: VIST-Edit's six aspects rated 1-5 "
            "by default; pairwise: two systems' stories of one sequence, VHED-style; best-worst: 3-4 stories), the "
            "raters with their secret tokens, gold items and instructions."
        ),
        formatter_class=DefaultsHelp,
    )
    new.add_argument(
        "source",
        type=Path,
        nargs="+",
        metavar="SOURCE",
        help="stories (what vst score reads) or scores (what it writes); several files of one folder are read as one",
    )
    new.add_argument("--out", type=Path, required=True, help=f"study file to write (name it *{STUDY_SUFFIX} for the rater page)")
    new.add_argument("--protocol", choices=PROTOCOLS, default="likert", help="what a rater answers")
    new.add_argument(
        "--aspects", default="vist-edit", metavar="vist-edit|FILE", help="Likert aspects: VIST-Edit's six, or a JSON file of them"
    )
    new.add_argument("--sequences", type=int, default=None, metavar="N", help="image sequences to draw (default: all)")
    new.add_argument("--systems", default=None, help="comma-separated systems to show (default: all)")
    new.add_argument(
        "--stories",
        type=Path,
        default=None,
        metavar="CSV",
        help="the stories to show instead of a draw: a CSV with system and story_id columns, or a disagreements "
        "table's better and worse columns",
    )
    new.add_argument("--raters", type=int, default=DEFAULT_RATERS_PER_ITEM, metavar="N", help="raters, named r1, r2, ...")
    new.add_argument("--rater-names", default=None, metavar="NAMES", help="comma-separated rater names instead of --raters")
    new.add_argument(
        "--raters-per-item",
        type=int,
        default=None,
        metavar="K",
        help=f"raters per item (default: the raters, at most {DEFAULT_RATERS_PER_ITEM})",
    )
    new.add_argument(
        "--gold", type=Path, default=None, metavar="JSON", help="gold items: [{stories: [[system, id], ...], expected: {...}}]"
    )
    new.add_argument("--instructions", default="", help="what raters are told (plain text or Markdown)")
    new.add_argument("--instructions-file", type=Path, default=None, metavar="FILE", help="the instructions from a file")
    new.add_argument("--title", default="", help="the study's title (default: the protocol)")
    new.add_argument("--seed", type=int, default=0, help="seed of the draw and of each rater's order")
    new.add_argument("--no-ties", action="store_true", help="pairwise: a rater must prefer one story")
    new.add_argument("--copy-photos", action="store_true", help="copy the photos the study shows beside it (<name>.photos/)")

    raters = commands.add_parser(
        "raters",
        help="each rater's link; add or revoke a rater",
        description="List each rater's link (?rater=<token> on --base-url); --add and --revoke change the study file's raters.",
        formatter_class=DefaultsHelp,
    )
    raters.add_argument("study", type=Path, metavar="STUDY", help="study file")
    raters.add_argument("--base-url", default=BASE_URL, help="the dashboard's address as raters reach it")
    raters.add_argument("--add", action="append", default=[], metavar="NAME", help="add a rater (repeatable)")
    raters.add_argument("--revoke", action="append", default=[], metavar="NAME", help="revoke a rater's link (repeatable)")

    status = commands.add_parser(
        "status",
        help="answers so far, gold accuracy, agreement, position bias",
        description="The live view's tables: answers and time per rater, gold accuracy and exclusions, "
        "Krippendorff's alpha with a bootstrap interval, Fleiss' kappa, position bias, and with --scores each "
        "metric's agreement with the answers so far.",
        formatter_class=DefaultsHelp,
    )
    status.add_argument("study", type=Path, metavar="STUDY", help="study file")
    _common(status)
    status.add_argument(
        "--scores", type=Path, default=None, metavar="SCORES", help="scores JSONL: each metric against the answers"
    )
    status.add_argument("--resamples", type=int, default=200, help="bootstrap draws of alpha's interval (0: none)")
    status.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write every table as JSON")

    export = commands.add_parser(
        "export",
        help="the answers as judgements vst meta-eval reads, with raters, items and provenance",
        description="Write <id>-judgements.csv (long) or <id>-pairwise.csv, <id>-raters.csv, <id>-items.csv, "
        "<id>-answers.csv and <id>-provenance.json into --out, whole or not at all.",
        formatter_class=DefaultsHelp,
    )
    export.add_argument("study", type=Path, metavar="STUDY", help="study file")
    export.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write into")
    _common(export)
    export.add_argument(
        "--exclude", default=None, metavar="NAMES", help="comma-separated raters to leave out instead of the rule"
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answers", type=Path, default=None, metavar="FILE", help="answers file (default: beside the study)")
    p.add_argument(
        "--min-gold-accuracy", type=float, default=ExclusionRule.min_accuracy, help="exclude raters below this gold accuracy"
    )
    p.add_argument("--min-gold-items", type=int, default=ExclusionRule.min_gold, help="... over at least this many gold items")


def run(args: argparse.Namespace) -> int:
    try:
        return {"new": _new, "raters": _raters, "status": _status, "export": _export}[args.study_command](args)
    except StudyError as exc:
        error(str(exc))
        return EXIT_INPUT


def _json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StudyError(f"{what} {path}: not JSON ({exc})") from None


def study_id_of(path: Path) -> str:
    """A study's id from its file name: ``pilot.study.json`` -> ``pilot``.

    >>> study_id_of(Path("runs/My pilot!.study.json"))
    'My-pilot'
    """
    stem = path.name.removesuffix(STUDY_SUFFIX) if path.name.endswith(STUDY_SUFFIX) else path.stem
    return re.sub(r"[^A-Za-z0-9_.:-]+", "-", stem).strip("-.")[:100] or "study"


def _listed(path: Path, stories: Any) -> tuple[tuple[str, str], ...]:
    """(system, story_id) from a CSV of stories or of disagreements (better, worse)."""
    from vst_core.analysis.meta_eval.identity import story_key
    from vst_core.data.tables import TableBudgetError, read_table_budgeted

    try:
        table = read_table_budgeted(path, dtype=str, keep_default_na=False, comment="#")
    except (OSError, ValueError, TableBudgetError) as exc:
        raise StudyError(f"{path}: {exc}") from None
    if {"system", "story_id"} <= set(table.columns):
        return stories_from_list(table.to_dict("records"))
    if {"better", "worse"} <= set(table.columns):
        keys = {story_key(s.story_id, s.system): (s.system, s.story_id) for s in stories}
        by_id: dict[str, list[tuple[str, str]]] = {}
        for s in stories:
            by_id.setdefault(s.story_id, []).append((s.system, s.story_id))
        out = []
        for name in [v for pair in zip(table["better"], table["worse"], strict=True) for v in pair]:
            found = keys.get(name) or (by_id[name][0] if len(by_id.get(name, [])) == 1 else None)
            if found is None:
                raise StudyError(f"{path}: story {name!r} is not in the source, or names several systems' stories")
            out.append(found)
        return tuple(dict.fromkeys(out))
    raise StudyError(f"{path}: needs system and story_id columns (or better and worse); it has {', '.join(table.columns)}")


def _new(args: argparse.Namespace) -> int:
    if args.sequences is not None and args.sequences < 1:
        error("--sequences must be at least 1")
        return EXIT_USAGE
    if args.rater_names and args.raters != DEFAULT_RATERS_PER_ITEM:
        error("give --raters or --rater-names, not both")
        return EXIT_USAGE
    if outputs_unwritable([args.out]):
        return EXIT_INPUT
    read = read_sources(args.source)
    for problem in read.problems[:5]:
        note(f"warning: {problem}")
    aspects = aspects_from_json("vist-edit" if args.aspects == "vist-edit" else _json_file(Path(args.aspects), "aspects"))
    listed = _listed(args.stories, read.stories) if args.stories is not None else None
    systems = csv_list(args.systems)
    sample = Sample(sequences=args.sequences, systems=tuple(systems) if systems else None, stories=listed)
    instructions = args.instructions
    if args.instructions_file is not None:
        try:
            instructions = args.instructions_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StudyError(f"instructions {args.instructions_file}: cannot be read ({exc})") from None
    gold = gold_from_json(_json_file(args.gold, "gold items")) if args.gold is not None else ()
    study = new_study(
        read.stories,
        protocol=args.protocol,
        aspects=aspects,
        sample=sample,
        raters=csv_list(args.rater_names) or args.raters,
        raters_per_item=args.raters_per_item,
        gold=gold,
        instructions=instructions,
        seed=args.seed,
        title=args.title,
        source=read.source,
        ties=not args.no_ties,
        study_id=study_id_of(args.out),
    )
    try:
        save_study(study, args.out, photos_from=Path(read.source["folder"]) if args.copy_photos else None)
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    if not args.out.name.endswith(STUDY_SUFFIX):
        note(f"note: the rater page finds studies named *{STUDY_SUFFIX} in its studies folder (VST_STUDIES)")
    note(f"wrote {args.out}; answers will be kept in {answers_path(args.out)}")
    _print_summary(study)
    return 0


def _print_summary(study: Study) -> None:
    systems = sorted({s.system for i in study.items for s in i.stories})
    print(f"study {study.study_id} {study.signature}: {study.title}")
    print(
        f"{study.protocol}, {len(study.items)} items ({len(study.gold_items)} gold) from {study.source.get('file', 'memory')}, "
        f"systems {', '.join(systems)}; {len(study.raters)} raters, {study.raters_per_item} per item"
    )
    if study.protocol == "likert":
        print("aspects: " + ", ".join(f"{a.key} (1-{a.points})" for a in study.aspects))


def _raters(args: argparse.Namespace) -> int:
    study = load_study(args.study)
    changed = study
    for name in args.add:
        changed = add_rater(changed, name)
    for name in args.revoke:
        changed = revoke_rater(changed, name)
    if changed is not study:
        if args.add and answers_path(args.study).is_file() and AnswerStore.beside(args.study).answers(study):
            note("warning: the study has answers; a new rater deals the items again, so some raters' remaining items change")
        try:
            save_study(changed, args.study)
        except OSError as exc:
            error(cannot_write(exc))
            return EXIT_INPUT
        note(f"updated {args.study}: " + "; ".join([*(f"added {n}" for n in args.add), *(f"revoked {n}" for n in args.revoke)]))
    rows = [
        {"rater": r.name, "status": "revoked" if r.revoked else "live", "link": "" if r.revoked else rater_link(args.base_url, r)}
        for r in changed.raters
    ]
    print(pd.DataFrame(rows, columns=["rater", "status", "link"]).to_string(index=False))
    return 0


def _answers(args: argparse.Namespace, study: Study, latest_only: bool = True) -> list[Answer]:
    """The study's answers in --answers, else beside the study (none yet: no file is made)."""
    path = args.answers if args.answers is not None else answers_path(args.study)
    if not path.is_file():
        if args.answers is not None:
            raise StudyError(f"no answers file at {path}")
        return []
    return AnswerStore(path).answers(study, latest_only=latest_only)


def _rule(args: argparse.Namespace) -> ExclusionRule:
    if not 0 <= args.min_gold_accuracy <= 1 or args.min_gold_items < 1:
        raise StudyError("--min-gold-accuracy is 0-1 and --min-gold-items at least 1")
    return ExclusionRule(args.min_gold_accuracy, args.min_gold_items)


def _status(args: argparse.Namespace) -> int:
    study = load_study(args.study)
    rule = _rule(args)
    answers = _answers(args, study)
    scores = None
    if args.scores is not None:
        scores = read_source(args.scores).records
        if not scores:
            raise StudyError(f"{args.scores} is not a scores file (what vst score writes)")
    if args.json is not None and outputs_unwritable([args.json]):
        return EXIT_INPUT
    view = live_view(study, answers, scores, rule=rule, n_boot=max(0, args.resamples))
    _print_summary(study)
    print(f"{view.answers} answers; {view.exclusion_rule}: {', '.join(view.excluded) or 'none'}")
    tables = {
        "raters": view.per_rater,
        "agreement": view.agreement,
        "position bias": view.position_bias,
        "correlations": view.correlations,
    }
    for name, table in tables.items():
        if not table.empty and (view.answers or name == "raters"):
            print(f"\n{name}:\n{table.to_string(index=False, float_format=lambda v: f'{v:.3f}')}")
    for message in view.notes:
        note(f"note: {message}")
    if args.json is not None:
        from vst_core.data.exports import json_text, write_text_whole

        whole = {name.replace(" ", "_"): table.to_dict("records") for name, table in {**tables, "items": view.per_item}.items()}
        whole.update(study_signature=study.signature, exclusion_rule=view.exclusion_rule, excluded=list(view.excluded))
        try:
            write_text_whole(args.json, json_text(whole, ensure_ascii=False, indent=1))
        except OSError as exc:
            error(cannot_write(exc))
            return EXIT_INPUT
    return 0


def _export(args: argparse.Namespace) -> int:
    study = load_study(args.study)
    if outputs_unwritable([], [args.out]):
        return EXIT_INPUT
    exclude: ExclusionRule | list[str] = _rule(args) if args.exclude is None else (csv_list(args.exclude) or [])
    try:
        paths = export_study(study, _answers(args, study), args.out, exclude=exclude, history=_answers(args, study, False))
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    for path in paths:
        print(path)
    return 0
