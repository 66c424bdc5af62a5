"""The ``vst`` command line, one module per command: :mod:`.score`, :mod:`.meta_eval`,
:mod:`.train_sop`, :mod:`.models` (fetch-models, cache), :mod:`.bench`, :mod:`.dhm` (import-scores, dhm)
and :mod:`.compare` (the leaderboard and paired tests), :mod:`.report` and :mod:`.metrics` (the metrics
this installation knows)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence

from vst_core.cli import (
    bench,
    compare,
    dhm,
    judge,
    meta_eval,
    metrics,
    models,
    report,
    score,
    train_cosmic,
    train_sop,
    train_vrank,
)
from vst_core.cli.common import EXIT_INPUT, EXIT_USAGE, EXIT_WEIGHTS

__all__ = ["EXIT_INPUT", "EXIT_USAGE", "EXIT_WEIGHTS", "build_parser", "main"]

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "score": score.run,
    "train-sop": train_sop.run,
    "train-cosmic": train_cosmic.run,
    "train-vrank": train_vrank.run,
    "fetch-models": models.run_fetch,
    "bench": bench.run,
    "cache": models.run_cache,
    "meta-eval": meta_eval.run,
    "import-scores": dhm.run_import,
    "dhm": dhm.run_dhm,
    "judge-bias": judge.run,
    "compare": compare.run,
    "report": report.run,
    "metrics": metrics.run,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vst", description="Evaluate visual stories with reference-free metrics and write per-story evidence."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score.add_parser(sub)
    train_sop.add_parser(sub)
    train_cosmic.add_parser(sub)
    train_vrank.add_parser(sub)
    models.add_parsers(sub)
    bench.add_parser(sub)
    meta_eval.add_parser(sub)
    dhm.add_parsers(sub)
    judge.add_parser(sub)
    compare.add_parser(sub)
    report.add_parser(sub)
    metrics.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    return COMMANDS[args.command](args)
