"""Command line: ``python -m vst_core score INPUT --out scores.jsonl --metrics redundancy``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from vst_core.config import AVAILABLE_METRICS, Settings, SettingsError, parse_metrics
from vst_core.data import Story, StorySetError, read_story_set
from vst_core.pipeline import ResumeMismatchError, score_story_set

EXIT_USAGE = 2
EXIT_INPUT = 3


def _metrics_help() -> str:
    return "; ".join(f"{name}: {desc}" for name, desc in AVAILABLE_METRICS.items())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vst",
        description="Evaluate visual stories with reference-free metrics and write per-story evidence.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score = sub.add_parser(
        "score",
        help="score a story set and write one JSON line per story",
        description=(
            "Score every story of INPUT and append one JSON line per story to --out as it goes. "
            "Rerunning with the same --out and settings skips the stories already there, so an "
            "interrupted run resumes."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    score.add_argument(
        "input",
        type=Path,
        metavar="INPUT",
        help="story set: JSON or JSONL with story_id, images, sentences|text, system, sequence_id; "
        "or a VIST sis/dii annotation JSON",
    )
    score.add_argument("--out", type=Path, required=True, help="scores JSONL to write (appended, resumable)")
    score.add_argument(
        "--metrics", default="redundancy", help=f"comma-separated metrics. Available: {_metrics_help()}"
    )
    score.add_argument("--nr-n", type=int, default=4, help="n-gram window size of the intra-sentence part of RoViST-NR")
    score.add_argument(
        "--nr-variant",
        choices=("paper", "reference"),
        default="paper",
        help="paper: Eq. 7 of RoViST (unique lower-cased words, no punctuation); "
        "reference: the public RoViST code (token-pair counting, last token dropped, case-sensitive)",
    )
    score.add_argument(
        "--spacy-model",
        default=None,
        help="spaCy pipeline used to split a story given as one text (default: first installed English one)",
    )
    score.add_argument(
        "--vist-images", type=Path, default=None, help="images folder of a VIST annotation file (default: INPUT's folder/images)"
    )
    score.add_argument(
        "--vist-text-field",
        choices=("text", "original_text"),
        default="text",
        help="which VIST field gives the sentences",
    )
    score.add_argument(
        "--no-check-images", action="store_true", help="do not open every image when reading (faster on huge sets)"
    )
    score.add_argument("--overwrite", action="store_true", help="start --out afresh instead of resuming")
    score.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _tqdm_progress(items: Iterable[Story], total: int) -> Iterable[Story]:
    from tqdm.auto import tqdm

    return tqdm(items, total=total, unit="story", desc="scoring", file=sys.stderr)


def cmd_score(args: argparse.Namespace) -> int:
    try:
        settings = Settings(
            metrics=parse_metrics(args.metrics),
            nr_ngram=args.nr_n,
            nr_variant=args.nr_variant,
            spacy_model=args.spacy_model,
        )
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    splitter = None
    if args.spacy_model:
        from vst_core.text import load_spacy, split_sentences

        nlp = load_spacy(args.spacy_model)
        splitter = lambda text: split_sentences(text, nlp)  # noqa: E731
    try:
        story_set = read_story_set(
            args.input,
            splitter=splitter,
            check_images=not args.no_check_images,
            vist_images=args.vist_images,
            vist_text_field=args.vist_text_field,
        )
    except StorySetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for problem in story_set.all_problems():
        print(problem, file=sys.stderr)
    if not len(story_set):
        print(f"error: no story could be read from {args.input}", file=sys.stderr)
        return EXIT_INPUT
    try:
        summary = score_story_set(
            story_set,
            settings,
            args.out,
            overwrite=args.overwrite,
            progress=None if args.no_progress else _tqdm_progress,
        )
    except ResumeMismatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    skipped_lines = sum(1 for p in story_set.problems if p.kind == "line")
    print(
        f"scored {summary.scored} stories, skipped {summary.skipped} already in {summary.out}"
        f"{f', {len(summary.failed)} with errors (see the errors field)' if summary.failed else ''}"
        f"{f', {skipped_lines} unreadable input lines' if skipped_lines else ''}; "
        f"signature {summary.signature_id}",
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "score":
        return cmd_score(args)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the command


if __name__ == "__main__":
    sys.exit(main())
