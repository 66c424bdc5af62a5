"""``vst train-sop STORIES --out DIR``: fine-tune a sentence-order classifier for coherence.
Defaults come from :class:`~vst_core.metric_modules.rovist_c.sop_train.SOPConfig`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.data import StorySetError, read_story_set
from vst_core.metric_modules.rovist_c.sop_train import SOPConfig, train_sop
from vst_core.models.hub import WeightsUnavailableError
from vst_core.terminal import EXIT_INPUT, EXIT_WEIGHTS, DefaultsHelp, bar, error, note

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
    p.add_argument("--base", default=DEFAULTS.base, help="base model (hub id or local directory)")
    p.add_argument("--epochs", type=int, default=DEFAULTS.epochs, help="maximum number of epochs")
    p.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size, help="training batch size (pairs)")
    p.add_argument("--lr", type=float, default=DEFAULTS.learning_rate, help="AdamW learning rate")
    p.add_argument("--held-out", type=float, default=DEFAULTS.held_out, help="fraction of image sequences held out")
    p.add_argument("--patience", type=int, default=DEFAULTS.patience, help="epochs without held-out improvement before stopping")
    p.add_argument("--max-length", type=int, default=DEFAULTS.max_length, help="maximum tokens per pair")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="random seed (split, shuffling, initialisation)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=DEFAULTS.device, help="where to train")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")


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
