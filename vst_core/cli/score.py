"""``vst score INPUT --out scores.jsonl``: score a story set, one JSON line per story, resumable.
Every default comes from :class:`~vst_core.config.Settings`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.cli.common import EXIT_INPUT, EXIT_PARTIAL, EXIT_USAGE, EXIT_WEIGHTS, DefaultsHelp, bar, error, note, wrong_file
from vst_core.cli.score_options import (
    DEFAULTS,
    add_options,
    identity_arguments,
    settings_from_args,
    wants_dataset_theta,
    with_identity,
)
from vst_core.config import Settings, SettingsError, available_metrics
from vst_core.data import StorySet, StorySetError, read_story_set
from vst_core.data.regions import read_regions_csv
from vst_core.data.scores_io import scored_keys
from vst_core.images.options import image_settings
from vst_core.models.hub import ModelLoadError, SettingFileError
from vst_core.scoring.policy import RunReport
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import (
    ResumeMismatchError,
    RunLockedError,
    RunSummary,
    parse_shard,
    score_story_set,
    shard_stories,
)
from vst_core.scoring.story import refused


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "score",
        help="score a story set and write one JSON line per story",
        description=(
            "Score every story of INPUT and append one JSON line per story to --out as it goes. "
            "A story is (system, story_id). Rerunning with the same --out and settings skips the stories already "
            "there, so an interrupted run resumes; another story file (another system's stories, with --system) "
            "scored with the same settings appends to the same --out. Each record keeps the signature of the run "
            "that wrote it (settings and its input file's digest); the check before appending compares settings."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument(
        "input",
        type=Path,
        metavar="INPUT",
        help="story set: JSON or JSONL with story_id, images, sentences|text, system, sequence_id; "
        "or a VIST sis/dii annotation JSON; or a VWP table (CSV, TSV, Parquet, JSON list or lines, told by its columns)",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="scores JSONL to write (appended, resumable): a story already there with the same system and story_id "
        "is skipped, another system's story file with the same settings appends, other settings are refused",
    )
    identity_arguments(p)
    metrics_help = "; ".join(f"{name}: {desc}" for name, desc in available_metrics().items())
    p.add_argument("--metrics", default=",".join(DEFAULTS.metrics), help=f"comma-separated metrics. Available: {metrics_help}")
    add_options(p)


def _read(args: argparse.Namespace, settings: Settings) -> StorySet:
    splitter = None  # the readers' default: Punkt
    if settings.option("splitter") == "spacy":
        from vst_core.text.phrases import load_spacy, split_sentences

        nlp = load_spacy(settings.option("spacy_model"))
        splitter = lambda text: split_sentences(text, nlp)
    story_set = read_story_set(
        args.input,
        splitter=splitter,
        check_images=not args.no_check_images,
        vist_images=args.vist_images,
        vist_text_field=args.vist_text_field,
    )
    return with_identity(story_set, args.system.strip() if args.system and args.system.strip() else None, args.sequence_id_from)


def _report(summary: RunSummary, story_set: StorySet) -> None:
    for problem in summary.problems[len(story_set.problems) :]:
        note(problem)
    skipped_lines = sum(1 for p in story_set.problems if p.kind == "line")
    note(
        f"scored {summary.scored} stories, skipped {summary.skipped} already in {summary.out}"
        f"{f', {len(summary.failed)} with errors (see the errors field)' if summary.failed else ''}"
        f"{f', {skipped_lines} unreadable input lines' if skipped_lines else ''}; "
        f"signature {summary.signature_id} (settings {summary.settings_id})"
    )


def run(args: argparse.Namespace) -> int:
    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
        settings = settings_from_args(args)
    except (ValueError, SettingsError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if wrong_file([args.input], "stories"):  # scores or judgements: nothing is scored
        return EXIT_INPUT
    try:
        story_set = _read(args, settings)
    except StorySetError as exc:
        error(str(exc))
        return EXIT_INPUT
    for problem in story_set.all_problems():
        note(str(problem))
    if not len(story_set):
        error(f"no story could be read from {args.input}")
        return EXIT_INPUT
    image = image_settings(settings)
    if image.regions == "csv" and image.regions_file:
        try:
            read_regions_csv(image.regions_file)  # a bad regions file is bad input, before any model loads
        except (OSError, ValueError) as exc:
            error(f"regions file: {exc}")
            return EXIT_INPUT
    models = Models(settings, cache_dir=args.cache_dir)
    # a large set's noun phrases parse in worker processes beside CLIP's loading (those still to score)
    mine = shard_stories(story_set, *shard) if shard else list(story_set)
    try:
        done = scored_keys(args.out)[0] if args.out.is_file() and not args.overwrite else set()
    except (OSError, ValueError):
        done = set()  # the run reads --out again and says what is wrong with it
    ahead = models.parse_ahead([s for s in mine if (s.system, s.story_id) not in done and not refused(s)])
    try:
        return _run(args, settings, story_set, shard, models)
    finally:
        if ahead is not None:
            ahead.cancel()  # workers nobody collected (a failed run, nothing left to score) stop now


def _run(args: argparse.Namespace, settings: Settings, story_set: StorySet, shard: tuple[int, int] | None, models: Models) -> int:
    def settled(report: RunReport) -> None:  # what the run's policy settled, said before the first story
        for line in report.warnings():
            error(line)
        if report.not_run:
            note(f"scoring {', '.join(report.metrics)} only; each record names the metrics not run (exit {EXIT_PARTIAL})")
        if report.theta is not None:
            theta, count = report.theta
            note(f"θ = {theta:.6f} (mean NP score over {count} phrases of {args.input})")

    try:
        summary = score_story_set(
            story_set,
            settings,
            args.out,
            overwrite=args.overwrite,
            models=models,
            shard=shard,
            progress=None if args.no_progress else (lambda total: bar(total, "story", "scoring")),
            strict=args.strict,
            theta_from_set=wants_dataset_theta(args),
            on_start=settled,
        )
    except (ResumeMismatchError, RunLockedError, SettingFileError) as exc:
        error(str(exc))
        return EXIT_USAGE
    except (ModelLoadError, FileNotFoundError, ValueError) as exc:
        error(str(exc))
        return EXIT_WEIGHTS
    except OSError as exc:  # --out unwritable, a folder, under a file, a full disk
        error(f"cannot write {args.out}: {exc.strerror or exc}; the records already written stay valid and resumable")
        return EXIT_INPUT
    _report(summary, story_set)
    for said in summary.report.said:  # what each metric's module says of the run (the judge's calls and cache)
        for line in said.notes:
            note(line)
        for line in said.failures:
            error(line)
    failed = bool(summary.report.failures)
    if failed and args.strict:
        return EXIT_WEIGHTS
    if summary.scored and len(summary.failed) == summary.scored:
        valued, why = _valued(args.out, summary.scored)
        if not valued:  # records were written, each with errors only: no story has a number
            error(
                f"no story of {args.input} got a value: all {summary.scored} written have errors only "
                f"(the first: {why}); the errors field of each record says why"
            )
            return EXIT_INPUT
    return EXIT_PARTIAL if summary.report.not_run or failed else 0


def _valued(out: Path, written: int) -> tuple[int, str]:
    """(how many of the last ``written`` records of ``out`` hold a metric's value, the first
    error of the first one that holds none)."""
    import json
    from collections import deque

    with out.open("rb") as fh:
        tail = deque(fh, maxlen=written)
    valued, why = 0, ""
    for line in tail:
        record = json.loads(line)
        if record.get("metrics"):
            valued += 1
        elif not why:
            errors = record.get("errors") or {}
            why = next((f"{name}: {text}" for name, text in errors.items()), "no metric computed")
    return valued, why
