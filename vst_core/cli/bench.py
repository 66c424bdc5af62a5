"""``vst bench``: the benchmark of :mod:`vst_core.bench` (JSON summary on stdout and ``--out``, a
progress line per phase on stderr)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from vst_core.bench.harness import PHASES, BenchConfig, Log, run_bench
from vst_core.bench.standin import parse_rates
from vst_core.cli.common import EXIT_USAGE, DefaultsHelp, error


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="measure scoring throughput against the bare model forward (random-weight full-size models)",
        description="Benchmark on a synthetic story set with random-weight models: prints a JSON summary.",
        formatter_class=DefaultsHelp,
    )
    d = BenchConfig()
    p.add_argument("--stories", type=int, default=d.stories, help="stories in the throughput set")
    p.add_argument("--images-per-story", type=int, default=d.images_per_story, help="images per story")
    p.add_argument("--regions", type=int, default=d.regions, help="regions per image (top-b)")
    p.add_argument("--image-size", default="x".join(map(str, d.image_size)), help="synthetic image size WxH")
    p.add_argument("--arch", default=d.arch, help="open_clip architecture, built with random weights")
    p.add_argument("--clip-config", default=None, help="open_clip model-config JSON that defines --arch")
    p.add_argument(
        "--coherence-size",
        choices=("base", "tiny"),
        default=d.coherence_size,
        help="pair-scorer architecture: base = bert-base (the default bert-nsp scorer), tiny = 2 layers of width 32",
    )
    p.add_argument(
        "--batch-sizes", default="", help="comma-separated batch sizes to try (default 8,16,32 on CPU, 64,128,256,512 on CUDA)"
    )
    p.add_argument("--seconds", type=float, default=d.raw_seconds, help="seconds per batch size of the raw forward")
    p.add_argument(
        "--pipeline-runs",
        type=int,
        default=d.pipeline_runs,
        help="cold pipeline runs, each with its own raw limits; the median run's ratios are reported",
    )
    p.add_argument("--nr-stories", type=int, default=d.nr_stories, help="text-only stories of the RoViST-NR comparison")
    p.add_argument("--rss-stories", type=int, default=d.rss_stories, help="stories scored by the memory process")
    p.add_argument("--rss-regions", type=int, default=d.rss_regions, help="regions per image in the memory process")
    p.add_argument("--judge-stories", type=int, default=d.judge_stories, help="stories the rubric judge rates")
    p.add_argument(
        "--judge-size",
        choices=("replica", "full"),
        default=d.judge_size,
        help="rubric judge architecture: replica = the tests' narrowed Qwen2 (2 layers of width 64), "
        "full = Qwen2.5-0.5B-Instruct's (494 M parameters)",
    )
    p.add_argument(
        "--judge-server-stories", type=int, default=d.judge_server_stories, help="stories the served-judge client rates"
    )
    p.add_argument(
        "--judge-server-latency-ms",
        type=float,
        default=d.judge_server_latency * 1000,
        help="milliseconds the local judge server takes per request",
    )
    p.add_argument(
        "--judge-server-concurrency",
        default=",".join(map(str, d.judge_server_concurrency)),
        help="comma-separated requests in flight to try",
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device, help="where models run")
    p.add_argument("--workers", type=int, default=d.workers, help="image preprocessing threads (0: one per core, at most 8)")
    p.add_argument(
        "--preprocess",
        choices=("auto", "pil", "device"),
        default=d.preprocess,
        help="preprocessing of the pipeline and warm runs (auto: device on CUDA, pil on a CPU)",
    )
    p.add_argument(
        "--prep-workers", default="", help="comma-separated worker counts of the prep phase (default 1,2; 1,2,4,8,16 on CUDA)"
    )
    p.add_argument("--prep-images", type=int, default=d.prep_images, help="images of the prep phase's set")
    p.add_argument("--warm-stories", type=int, default=d.warm_stories, help="stories of the warm rerun (five a sequence)")
    p.add_argument(
        "--stand-in",
        default=d.stand_in,
        metavar="CROPS_PER_S[,TEXTS_PER_S]",
        help="rates of the stand-in accelerator (forwards become waits of batch/rate): the standin phase, and the "
        "e2e phase on a CPU (texts default to 4x the crops)",
    )
    p.add_argument(
        "--e2e-sequences",
        type=int,
        default=d.e2e_sequences,
        help="sequences of the end-to-end runs (0: 600 on a CPU, 1000 on CUDA)",
    )
    p.add_argument("--skip", default="", help=f"comma-separated phases to leave out: {', '.join(PHASES)}")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON summary to this file")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    try:
        skip = tuple(p.strip() for p in args.skip.split(",") if p.strip())
        unknown = [p for p in skip if p not in PHASES]
        if unknown:
            raise ValueError(f"unknown phase(s) {', '.join(unknown)}; phases: {', '.join(PHASES)}")
        width, height = (int(v) for v in args.image_size.lower().split("x"))
        sizes = tuple(int(v) for v in args.batch_sizes.split(",") if v.strip())
        prep_workers = tuple(int(v) for v in args.prep_workers.split(",") if v.strip())
        served = tuple(int(v) for v in args.judge_server_concurrency.split(",") if v.strip())
        parse_rates(args.stand_in)
        if args.e2e_sequences < 0:
            raise ValueError("--e2e-sequences must be >= 0")
        if not served or min(served) < 1 or args.judge_server_stories < 1 or not args.judge_server_latency_ms >= 0:
            raise ValueError("--judge-server-stories and --judge-server-concurrency must be >= 1, the latency >= 0")
        counts = (args.stories, args.images_per_story, args.regions, args.nr_stories, args.rss_stories, args.rss_regions)
        if min((*counts, width, height, *sizes, *prep_workers, args.prep_images, args.warm_stories, args.pipeline_runs)) < 1:
            raise ValueError("sizes and counts must be >= 1")
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    config = replace(
        BenchConfig(),
        stories=args.stories,
        images_per_story=args.images_per_story,
        regions=args.regions,
        image_size=(width, height),
        arch=args.arch,
        clip_config=args.clip_config,
        coherence_size=args.coherence_size,
        batch_sizes=sizes,
        raw_seconds=args.seconds,
        pipeline_runs=args.pipeline_runs,
        nr_stories=args.nr_stories,
        rss_stories=args.rss_stories,
        rss_regions=args.rss_regions,
        judge_stories=args.judge_stories,
        judge_size=args.judge_size,
        judge_server_stories=args.judge_server_stories,
        judge_server_latency=args.judge_server_latency_ms / 1000,
        judge_server_concurrency=served,
        device=args.device,
        workers=args.workers,
        preprocess=args.preprocess,
        prep_workers=prep_workers,
        prep_images=args.prep_images,
        warm_stories=args.warm_stories,
        stand_in=args.stand_in,
        e2e_sequences=args.e2e_sequences,
        skip=skip,
    )
    result = run_bench(config, log=Log(quiet=args.quiet))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0
