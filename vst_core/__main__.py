"""Command line: ``python -m vst_core score INPUT --out scores.jsonl --metrics redundancy``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vst_core.config import AVAILABLE_METRICS, Settings, SettingsError, parse_metrics
from vst_core.data import StorySetError, read_story_set
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError
from vst_core.models.pairs import DEFAULT_NSP_MODEL
from vst_core.pipeline import Models, ResumeMismatchError, score_story_set

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_WEIGHTS = 4


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
        "--coherence-model",
        default="bert-nsp",
        help="sentence-pair scorer: bert-nsp (bert-base-uncased's next-sentence head), bert-nsp:NAME_OR_PATH, "
        "rovist-c:PATH (the RoViST-C checkpoint file), or a checkpoint directory written by train-sop",
    )
    score.add_argument(
        "--coherence-tokenizer", default=None, help="tokenizer for rovist-c (hub id or folder; default albert-large-v1)"
    )
    score.add_argument(
        "--keep-repeated-pairs",
        action="store_true",
        help="ask the model about identical adjacent sentences too (the public RoViST code sets them to 0)",
    )
    score.add_argument("--clip-model", default="ViT-B-32", help="open_clip architecture")
    score.add_argument("--clip-pretrained", default="openai", help="open_clip pretrained tag")
    score.add_argument("--clip-checkpoint", default=None, help="local CLIP checkpoint file instead of the pretrained tag")
    score.add_argument("--clip-config", default=None, help="open_clip model-config JSON that defines --clip-model")
    score.add_argument(
        "--theta", default="VIST",
        help="GROOVIST threshold: VIST (0.6159), AESOP (0.5950), VWP (0.6194), custom (0.5), a number, or "
        "'dataset' (the mean NP score over INPUT, computed first and recorded in the signature)",
    )
    score.add_argument(
        "--regions", default=None, metavar="FILE|detector|grid",
        help="image regions: a regions CSV (image_name,image_id,bbox,object,score), 'detector' (torchvision "
        "Faster R-CNN, needs its weights) or 'grid' (ten weight-free proposals). Default: grid",
    )
    score.add_argument("--top-b", type=int, default=10, help="regions kept per image")
    score.add_argument("--whole-image", action="store_true", help="add the whole image to each image's regions")
    score.add_argument("--no-penalty", action="store_true", help="GROOVIST ablation -P: no θ penalty")
    score.add_argument(
        "--weighting", choices=("concreteness", "idf", "none"), default="concreteness",
        help="NP weights: Brysbaert concreteness (GROOVIST), idf (ablation -C +idf) or none (-C)",
    )
    score.add_argument("--nouns", action="store_true", help="ablation: head nouns instead of noun phrases")
    score.add_argument(
        "--expressions", action="store_true",
        help="concreteness: try the whole phrase and multi-word expressions ('parking lot') first",
    )
    score.add_argument("--cache-dir", type=Path, default=None, help="embedding cache folder (default ~/.cache/vst-eval)")
    score.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="where models run")
    score.add_argument("--batch-size", type=int, default=32, help="model batch size (texts, region crops, sentence pairs)")
    score.add_argument(
        "--workers", type=int, default=0, help="threads decoding and cropping images beside the model (0: one per core, at most 8)"
    )
    score.add_argument(
        "--no-spans", action="store_true",
        help="RoViST-NR numbers only, from one vectorised pass per chunk (several times faster); the records "
        "hold no repeated spans, which the dashboard recomputes for the stories it shows",
    )
    score.add_argument(
        "--shard", default=None, metavar="I/N",
        help="score only shard I of N (1 <= I <= N): stories split by a stable hash of sequence_id, so N jobs with "
        "--shard 1/N ... N/N cover every story exactly once; θ 'dataset' and idf still use the whole INPUT",
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

    sop = sub.add_parser(
        "train-sop",
        help="fine-tune a sentence-order classifier for the coherence metric",
        description=(
            "Fine-tune a sentence-order classifier from any story set this tool reads (VIST SIS JSON "
            "included): adjacent pairs in order are positives, the same pairs swapped negatives. Reports "
            "held-out accuracy per epoch, stops early, and writes the best epoch to --out, a directory "
            "that `score --coherence-model DIR` accepts."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sop.add_argument("stories", type=Path, metavar="STORIES", help="story set (JSON, JSONL or VIST annotation JSON)")
    sop.add_argument("--out", type=Path, required=True, help="checkpoint directory to write")
    sop.add_argument("--base", default=DEFAULT_NSP_MODEL, help="base model (hub id or local directory)")
    sop.add_argument("--epochs", type=int, default=3, help="maximum number of epochs")
    sop.add_argument("--batch-size", type=int, default=16, help="training batch size (pairs)")
    sop.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate")
    sop.add_argument("--held-out", type=float, default=0.1, help="fraction of image sequences held out")
    sop.add_argument("--patience", type=int, default=2, help="epochs without held-out improvement before stopping")
    sop.add_argument("--max-length", type=int, default=128, help="maximum tokens per pair")
    sop.add_argument("--seed", type=int, default=13, help="random seed (split, shuffling, initialisation)")
    sop.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="where to train")
    sop.add_argument("--no-progress", action="store_true", help="hide the progress bars")

    fetch = sub.add_parser(
        "fetch-models",
        help="check the default model weights, download what is missing, and say which folders to copy",
        description=(
            "For each model: report whether it is already in the local caches and loads, download it when it "
            "is missing and the model hub is reachable, check it by scoring one input, and print the cache "
            "folders to copy to an offline machine. Exit 4 when a model is missing or does not load."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    fetch.add_argument("--coherence-model", default=DEFAULT_NSP_MODEL, help="next-sentence model (hub id or folder)")
    fetch.add_argument("--clip-model", default="ViT-B-32", help="open_clip architecture")
    fetch.add_argument("--clip-pretrained", default="openai", help="open_clip pretrained tag")
    fetch.add_argument(
        "--rovist-c", default=None, metavar="PATH",
        help="also check the authors' RoViST-C checkpoint file and fetch its ALBERT tokenizer",
    )
    fetch.add_argument("--coherence-tokenizer", default=None, help="tokenizer for --rovist-c (default albert-large-v1)")
    fetch.add_argument("--detector", action="store_true", help="also fetch torchvision's Faster R-CNN weights")

    from vst_core.bench import add_bench_arguments

    add_bench_arguments(sub.add_parser(
        "bench",
        help="measure scoring throughput against the bare model forward (random-weight full-size models)",
        description="Benchmark on a synthetic story set with random-weight models: prints a JSON summary.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    ))

    cache = sub.add_parser("cache", help="report or clear the embedding cache")
    cache.add_argument("--cache-dir", type=Path, default=None, help="cache folder (default ~/.cache/vst-eval)")
    cache.add_argument("--clear", action="store_true", help="delete every cached embedding")

    meta = sub.add_parser(
        "meta-eval",
        help="how each metric agrees with human judgements (correlations, pairwise accuracy, bins)",
        description=(
            "Join a scores JSONL with human judgements (long: story_id,rater,aspect,value; wide: story_id,"
            "<aspects>; or pairwise: story_a,story_b,rank_a,rank_b) and report story- and system-level "
            "correlations with bootstrap intervals, pairwise ranking accuracy (ties wrong) by agreement and "
            "ranking gap, T/P bins, error-label correlations and reference-based baselines. The numbers "
            "are the ones the dashboard's Meta-evaluation page shows."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    meta.add_argument("scores", type=Path, metavar="SCORES", help="scores JSONL written by `score`")
    meta.add_argument("human", type=Path, metavar="HUMAN", help="human judgements CSV")
    meta.add_argument("--out", type=Path, required=True, help="report JSON to write")
    meta.add_argument("--csv", type=Path, default=None, metavar="DIR", help="also write every table as CSV into DIR")
    meta.add_argument("--metrics", default=None, help="comma-separated metric columns (default: all present)")
    meta.add_argument("--aspects", default=None, help="comma-separated human aspects (default: all)")
    meta.add_argument("--aggregate", choices=("mean", "median"), default="mean", help="how raters are combined")
    meta.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (0: no intervals)")
    meta.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    meta.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level")
    meta.add_argument("--gap-bins", default=None, help="ranking-gap bin edges, e.g. 0,0.1,0.2,0.3,1 (default: quartiles)")
    meta.add_argument("--t-split", type=float, default=1.0, help="high temporal misalignment: T >= this")
    meta.add_argument("--p-split", type=float, default=None, help="high noun-phrase proportion: P > this (default: the mode)")
    meta.add_argument("--pair-aspect", default=None, help="aspect that orders story pairs built from ratings (default: overall, else the last)")
    meta.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    meta.add_argument("--no-baselines", action="store_true", help="skip BLEU/ROUGE-L/CIDEr/METEOR")
    return parser


def _tqdm_progress(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="story", desc="scoring", file=sys.stderr)


def cmd_score(args: argparse.Namespace) -> int:
    from vst_core.pipeline import parse_shard

    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        settings = Settings(
            metrics=parse_metrics(args.metrics),
            nr_ngram=args.nr_n,
            nr_variant=args.nr_variant,
            spacy_model=args.spacy_model,
            coherence_model=args.coherence_model,
            coherence_tokenizer=args.coherence_tokenizer,
            coherence_repeat_zero=not args.keep_repeated_pairs,
            device=args.device,
            batch_size=args.batch_size,
            workers=args.workers,
            clip_arch=args.clip_model,
            clip_pretrained=args.clip_pretrained,
            clip_checkpoint=args.clip_checkpoint,
            clip_config=args.clip_config,
            theta="VIST" if args.theta == "dataset" else args.theta,
            regions="grid" if args.regions in (None, "grid") else "detector" if args.regions == "detector" else "csv",
            regions_file=None if args.regions in (None, "grid", "detector") else args.regions,
            top_b=args.top_b,
            whole_image=args.whole_image,
            penalize=not args.no_penalty,
            weighting=args.weighting,
            units="nouns" if args.nouns else "phrases",
            expressions=args.expressions,
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
    models = Models(settings, cache_dir=args.cache_dir)
    try:
        if args.theta == "dataset":
            from vst_core.pipeline import dataset_theta

            theta, count = dataset_theta(story_set, models)
            settings = settings.with_(theta=repr(theta))
            models = Models(settings, clip=models.clip, cache=models.cache)
            print(f"θ = {theta:.6f} (mean NP score over {count} phrases of {args.input})", file=sys.stderr)
        summary = score_story_set(
            story_set,
            settings,
            args.out,
            overwrite=args.overwrite,
            progress=None if args.no_progress else _tqdm_progress,
            models=models,
            shard=shard,
            spans=not args.no_spans,
        )
    except ResumeMismatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ModelLoadError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_WEIGHTS
    for problem in summary.problems[len(story_set.problems):]:
        print(problem, file=sys.stderr)
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    skipped_lines = sum(1 for p in story_set.problems if p.kind == "line")
    print(
        f"scored {summary.scored} stories, skipped {summary.skipped} already in {summary.out}"
        f"{f', {len(summary.failed)} with errors (see the errors field)' if summary.failed else ''}"
        f"{f', {skipped_lines} unreadable input lines' if skipped_lines else ''}; "
        f"signature {summary.signature_id}",
        file=sys.stderr,
    )
    return 0


def cmd_train_sop(args: argparse.Namespace) -> int:
    from vst_core.models.sop_train import SOPConfig, train_sop

    try:
        story_set = read_story_set(args.stories, check_images=False)
    except StorySetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for problem in story_set.all_problems():
        print(problem, file=sys.stderr)
    config = SOPConfig(
        base=args.base, epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
        held_out=args.held_out, patience=args.patience, max_length=args.max_length, seed=args.seed, device=args.device,
    )

    def bar(total: int, desc: str) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=total, unit="batch", desc=desc, file=sys.stderr)

    try:
        report = train_sop(
            story_set, args.out, config, progress=None if args.no_progress else bar,
            log=lambda line: print(line, file=sys.stderr),
        )
    except WeightsUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_WEIGHTS
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(
        f"trained on {report.train_pairs} pairs ({report.held_out_pairs} held out); best epoch {report.best_epoch} "
        f"saved to {report.out}",
        file=sys.stderr,
    )
    return 0


def cmd_fetch_models(args: argparse.Namespace) -> int:
    """Model by model: already cached (and loads), downloaded now, or missing; each is built once and
    checked by scoring one input. Exit 4 when any model is missing or does not load."""
    from vst_core.models.fetch import fetch_models

    report = fetch_models(
        coherence_model=args.coherence_model, clip_arch=args.clip_model, clip_pretrained=args.clip_pretrained,
        rovist_c=args.rovist_c, coherence_tokenizer=args.coherence_tokenizer, detector=args.detector,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(report.summary(), file=sys.stderr)
    return 0 if report.ok else EXIT_WEIGHTS


def cmd_cache(args: argparse.Namespace) -> int:
    from vst_core.embeddings import EmbeddingCache, default_cache_dir

    path = (args.cache_dir or default_cache_dir()) / "embeddings.sqlite"
    if not path.exists():
        print(f"no embedding cache at {path}", file=sys.stderr)
        return 0
    cache = EmbeddingCache(path)
    report = cache.report()
    if args.clear:
        cache.clear()
        print(f"cleared {report['entries']} embeddings ({report['bytes']} bytes) from {path}", file=sys.stderr)
    else:
        dims = ", ".join(f"{c} of dim {d}" for d, c in report["by_dim"].items()) or "none"  # type: ignore[union-attr]
        print(
            f"{path}: {report['entries']} embeddings ({dims}), {report['bytes']} bytes "
            f"({int(report['bytes']) / 1e6:.1f} MB); shared by `vst score` and the dashboard; clear with --clear",
            file=sys.stderr,
        )
    return 0


def _csv_list(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def cmd_meta_eval(args: argparse.Namespace) -> int:
    import json

    from vst_core.data import read_scores
    from vst_core.meta_eval import JudgementsError, MetaSettings, read_judgements, run_meta_eval

    try:
        edges = tuple(float(v) for v in _csv_list(args.gap_bins) or []) or None
        settings = MetaSettings(
            aggregate=args.aggregate, resamples=args.resamples, seed=args.seed, confidence=args.confidence,
            gap_edges=edges, t_split=args.t_split, p_split=args.p_split, baselines=not args.no_baselines,
            pair_aspect=args.pair_aspect,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not args.scores.is_file():
        print(f"error: no scores file at {args.scores}", file=sys.stderr)
        return EXIT_INPUT
    records, problems = read_scores(args.scores)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if not records:
        print(f"error: {args.scores} holds no score records", file=sys.stderr)
        return EXIT_INPUT
    try:
        judgements = read_judgements(args.human)
    except (OSError, JudgementsError) as exc:
        print(f"error: {args.human}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    def bar(total: int) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=total, unit="cell", desc="correlations", file=sys.stderr, disable=args.no_progress)

    if settings.baselines:
        print("computing BLEU, ROUGE-L, CIDEr and METEOR against the references ...", file=sys.stderr)
    report = run_meta_eval(
        records, judgements, settings, metrics=_csv_list(args.metrics), aspects=_csv_list(args.aspects), progress=bar
    )
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    for name, reason in report.unavailable.items():
        print(f"warning: {name} unavailable: {reason}", file=sys.stderr)
    match = report.match
    print(
        f"matched {match['matched']} of {match['judged']} judged stories to {match['scored']} scored ones; "
        f"{len(report.metrics)} metrics x {len(report.aspects)} aspects; {report.description}",
        file=sys.stderr,
    )
    if match["matched"] == 0:
        print("error: no judged story has scores; nothing to correlate", file=sys.stderr)
        return EXIT_INPUT
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
        for name in report.tables():
            (args.csv / f"{name}.csv").write_text(report.csv(name), encoding="utf-8")
    print(f"wrote {args.out}" + (f" and {len(report.tables())} CSV tables in {args.csv}" if args.csv else ""), file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    if args.command == "score":
        return cmd_score(args)
    if args.command == "train-sop":
        return cmd_train_sop(args)
    if args.command == "fetch-models":
        return cmd_fetch_models(args)
    if args.command == "cache":
        return cmd_cache(args)
    if args.command == "meta-eval":
        return cmd_meta_eval(args)
    if args.command == "bench":
        from vst_core.bench import cmd_bench

        return cmd_bench(args)
    return EXIT_USAGE  # pragma: no cover - argparse enforces the command


if __name__ == "__main__":
    sys.exit(main())
