"""``vst train-sop STORIES --out DIR``: fine-tune a sentence-order classifier for coherence.
Defaults come from :class:`~vst_core.metrics.rovist_c.sop_train.SOPConfig`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.data import StorySetError, read_story_set
from vst_core.metrics.rovist_c.sop_train import SOPConfig, train_sop
from vst_core.models.hub import WeightsUnavailableError
from vst_core.terminal import EXIT_INPUT, EXIT_WEIGHTS, DefaultsHelp, bar, error, note, training_arguments

DEFAULTS = SOPConfig()


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train-sop",
        help="fine-tune a sentence-order classifier for the coherence metric",
        description=(
            "Fine-tune a sentence-order classifier from any story set this tool reads (VIST SIS JSON "
            "included): adjacent pairs in order are positives, the same pairs swapped negatives. Reports "
            "held-out accuracy per epoch, stops early, and writes the best epoch to --out, a directory "
            "that `score --coherence-model DIR` accepts."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("stories", type=Path, metavar="STORIES", help="story set (JSON, JSONL or VIST annotation JSON)")
    p.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    p.add_argument("--patience", type=int, default=DEFAULTS.patience, help="epochs without held-out improvement before stopping")
    training_arguments(
        p,
        DEFAULTS,
        base="base model (hub id or local directory)",
        epochs="maximum number of epochs",
        batch_size="training batch size (pairs)",
        lr="AdamW learning rate",
        held_out=(DEFAULTS.held_out, "fraction of image sequences held out"),
        max_length="maximum tokens per pair",
        seed="random seed (split, shuffling, initialisation)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        story_set = read_story_set(args.stories, check_images=False)
    except StorySetError as exc:
        error(str(exc))
        return EXIT_INPUT
    for problem in story_set.all_problems():
        note(str(problem))
    config = SOPConfig(
        base=args.base,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        held_out=args.held_out,
        patience=args.patience,
        max_length=args.max_length,
        seed=args.seed,
        device=args.device,
    )
    try:
        report = train_sop(
            story_set,
            args.out,
            config,
            progress=None if args.no_progress else (lambda total, desc: bar(total, "batch", desc)),
            log=note,
        )
    except WeightsUnavailableError as exc:
        error(str(exc))
        return EXIT_WEIGHTS
    except ValueError as exc:
        error(str(exc))
        return EXIT_INPUT
    note(
        f"trained on {report.train_pairs} pairs ({report.held_out_pairs} held out); best epoch {report.best_epoch} "
        f"saved to {report.out}"
    )
    return 0
