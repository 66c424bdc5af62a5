"""``vst score``'s options, grouped by what they set (the story's identity; the text side's, the image
pipeline's and each metric's own options, generated from their declarations; the run), and the
:class:`~vst_core.config.Settings` they describe. Every default comes from its declaration."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from vst_core.cli.common import EXIT_PARTIAL
from vst_core.config import Settings, parse_metrics
from vst_core.data import StorySet
from vst_core.terminal import given_option, metric_arguments, metric_options_from_args

DEFAULTS = Settings()


def add_options(p: argparse.ArgumentParser) -> None:
    """Every option of ``vst score`` after INPUT, --out and --metrics."""
    metric_arguments(p)
    _run_arguments(p)


def identity_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--system",
        default=None,
        help="system of the stories whose record names none (a {story_id: text} file names none: without this "
        "option they are all system 'unknown'); a story is (system, story_id)",
    )
    p.add_argument(
        "--sequence-id-from",
        choices=("file", "story_id"),
        default="file",
        help="file: the sequence_id a story names, else a digest of its image paths, else its story_id; "
        "story_id: every story's sequence_id is its story_id, for files whose ids are image-sequence ids "
        "(the dHM release: the human and the model story of one sequence share the id), so that "
        "`vst dhm --pairing sequence` pairs them",
    )


def with_identity(story_set: StorySet, system: str | None, sequence_from: str) -> StorySet:
    """``story_set`` with ``system`` given to the stories whose record names none (read as
    ``"unknown"``) and, with ``sequence_from == "story_id"``, every sequence id set to the story id."""
    if system is None and sequence_from == "file":
        return story_set
    stories = tuple(
        replace(
            story,
            system=system if system is not None and story.system == "unknown" else story.system,
            sequence_id=story.story_id if sequence_from == "story_id" else story.sequence_id,
        )
        for story in story_set.stories
    )
    return StorySet(stories, story_set.root, story_set.source, story_set.problems)


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir", type=Path, default=None, help="embedding cache folder (default $VST_CACHE_DIR, else ~/.cache/vst-eval)"
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=DEFAULTS.device, help="where models run")
    p.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULTS.batch_size,
        help="model batch size (texts, region crops, sentence pairs); default: by the device, 256 on CUDA, 32 on a CPU",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=DEFAULTS.workers,
        help="threads decoding and cropping images beside the model (0: one per core, at most 8)",
    )
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="score only shard I of N (1 <= I <= N): stories split by a stable hash of sequence_id, so N jobs with "
        "--shard 1/N ... N/N cover every story exactly once; θ 'dataset' and idf still use the whole INPUT",
    )
    p.add_argument(
        "--vist-images",
        type=Path,
        default=None,
        help="images folder of a VIST annotation file or a VWP table (default: INPUT's folder/images)",
    )
    p.add_argument(
        "--vist-text-field", choices=("text", "original_text"), default="text", help="which VIST field gives the sentences"
    )
    p.add_argument("--no-check-images", action="store_true", help="do not open every image when reading (faster on huge sets)")
    p.add_argument("--overwrite", action="store_true", help="start --out afresh instead of resuming")
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop (exit 4) when any metric's model cannot load; by default the others are scored, each record names "
        f"the metrics not run, and the exit code is {EXIT_PARTIAL}. Stories a judge server could not answer are "
        f"errors in their records either way; the exit code is then {EXIT_PARTIAL}, or 4 with --strict",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`Settings` the options describe (SettingsError when they cannot be used); θ
    ``dataset`` is left at its default here, for the run to compute (:func:`wants_dataset_theta`)."""
    options = metric_options_from_args(args)
    if wants_dataset_theta(args):
        options.pop("theta")
    return Settings(
        metrics=parse_metrics(args.metrics),
        device=args.device,
        batch_size=args.batch_size,
        workers=args.workers,
        options=options,
    )


def wants_dataset_theta(args: argparse.Namespace) -> bool:
    """Whether ``--theta dataset`` was given: θ is the mean NP score over the input."""
    return given_option(args, "theta") == "dataset"
