"""``vst judge-bias STORIES``: the rubric judge's biases on a story set (position in pairwise mode,
paraphrase self-consistency, and what the images change with ``--judge-images``), one table."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.config import Settings, SettingsError
from vst_core.terminal import (
    EXIT_INPUT,
    EXIT_USAGE,
    EXIT_WEIGHTS,
    DefaultsHelp,
    error,
    metric_arguments,
    metric_options_from_args,
    note,
)

DEFAULTS = Settings()


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "judge-bias",
        help="measure the rubric judge's position bias, paraphrase consistency and image effect on a story set",
        description=(
            "Ask the rubric judge which of every two stories of a sequence is better, in both orders, and rate every "
            "story with each rubric paraphrase; print how often the verdict follows the position rather than the story, "
            "the mean shift towards the first position, the spread and rank agreement of the paraphrases and, with "
            "--judge-images, what the images change. Answers are cached: a rerun makes no model call."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("input", type=Path, metavar="STORIES", help="story set (as for vst score)")
    p.add_argument("--no-ratings", action="store_true", help="pairwise position bias only (no per-story ratings)")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache folder (default $VST_CACHE_DIR, else ~/.cache/vst-eval)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=DEFAULTS.device, help="where the model runs")
    p.add_argument("--batch-size", type=int, default=8, help="prompts per model call")
    p.add_argument("--out", type=Path, default=None, help="also write the table as CSV")
    metric_arguments(p, only="judge")


def run(args: argparse.Namespace) -> int:
    from vst_core.data import StorySetError, read_story_set
    from vst_core.data.csv_out import write_csv
    from vst_core.data.exports import cannot_write
    from vst_core.metrics import judge as judge_metric
    from vst_core.metrics.judge.batch import judge_records, pair_verdicts
    from vst_core.metrics.judge.bias import judge_bias_table
    from vst_core.metrics.judge.record import JudgeScores
    from vst_core.metrics.judge.template import TemplateError
    from vst_core.models.hub import ModelLoadError
    from vst_core.records import StoryScores
    from vst_core.scoring.registry import Models

    try:
        settings = Settings(
            metrics=(judge_metric.NAME,),
            options=tuple(metric_options_from_args(args).items()),
            device=args.device,
            batch_size=args.batch_size,
        )
    except SettingsError as exc:
        error(str(exc))
        return EXIT_USAGE
    try:
        story_set = read_story_set(args.input)
    except StorySetError as exc:
        error(str(exc))
        return EXIT_INPUT
    models = Models(settings, cache_dir=args.cache_dir)
    try:
        rubric = judge_metric.rubric(models)
        model = judge_metric.model(models)
    except TemplateError as exc:
        error(str(exc))
        return EXIT_USAGE
    except ModelLoadError as exc:
        error(str(exc))
        return EXIT_WEIGHTS
    cache = judge_metric.answers(models)
    pairs = pair_verdicts(story_set, settings, model, rubric, cache)
    records: list[StoryScores] = []
    if not args.no_ratings:
        found = judge_records(list(story_set), settings, model, rubric, cache, story_set.root)
        for story in story_set:
            judged = found.get(story.key)
            if isinstance(judged, JudgeScores):
                records.append(
                    StoryScores(
                        story.story_id, story.sequence_id, story.system, story.sentences, metrics={judge_metric.NAME: judged}
                    )
                )
    table = judge_bias_table(records, pairs, rubric.pair_questions)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if args.out:
        try:
            write_csv(args.out, table)  # a rubric's aspect names safe in a spreadsheet
        except OSError as exc:
            error(cannot_write(exc))
            return EXIT_INPUT
    note(
        f"judge-bias: {len(pairs)} pairwise answers in both orders over {len({p.sequence for p in pairs})} sequences, "
        f"{len(records)} stories rated; {model.calls} model calls, {cache.hits} answers from the cache "
        f"({model.signature}, {rubric.id})"
    )
    if damaged := cache.damage_note():
        note(damaged)
    return 0
