"""``vst bench``: the benchmark of :mod:`vst_core.bench` (JSON summary on stdout and ``--out``, a
progress line per phase on stderr)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from vst_core.bench.harness import BenchConfig, Log, run_bench
from vst_core.bench.inputs import MIXED_SIZES
from vst_core.bench.run import all_phases, metric_phases, metric_sizes
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
    p.add_argument("--stories", type=int, default=d.stories, help="stories in the throughput set (0: 16 on a CPU, 1,000 on CUDA)")
    p.add_argument("--images-per-story", type=int, default=d.images_per_story, help="images per story")
    p.add_argument("--regions", type=int, default=d.regions, help="regions per image (top-b)")
    p.add_argument(
        "--image-size",
        default="mixed",
        help="synthetic photo size WxH, or 'mixed': 24 sizes from 333 to 1024 pixels a side, as varied as VIST's photos",
    )
    p.add_argument("--arch", default=d.arch, help="open_clip architecture, built with random weights")
    p.add_argument("--clip-config", default=None, help="open_clip model-config JSON that defines --arch")
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
    p.add_argument("--text-stories", type=int, default=d.text_stories, help="stories of the text phase")
    p.add_argument("--rss-stories", type=int, default=d.rss_stories, help="stories scored by the memory process")
    p.add_argument("--rss-regions", type=int, default=d.rss_regions, help="regions per image in the memory process")
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
    figures = "; ".join(f"{phase.name}: {phase.figures}" for phase in metric_phases() if phase.figures)
    own = p.add_argument_group(
        "each metric's phases",
        "sizes its package declares (spec.tools.bench)" + (f". What they measure: {figures}" if figures else ""),
    )
    for size in metric_sizes():
        own.add_argument(
            size.flag,
            dest=f"size_{size.name}",
            default=size.shown,
            choices=size.choices or None,
            metavar=None if size.choices else size.name.upper(),
            help=size.help.replace("%", "%%"),
        )
    p.add_argument("--skip", default="", help=f"comma-separated phases to leave out: {', '.join(all_phases())}")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON summary to this file")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    try:
        skip = tuple(p.strip() for p in args.skip.split(",") if p.strip())
        phases = all_phases()
        unknown = [p for p in skip if p not in phases]
        if unknown:
            raise ValueError(f"unknown phase(s) {', '.join(unknown)}; phases: {', '.join(phases)}")
        mixed = args.image_size.strip().lower() == "mixed"
        width, height = (1, 1) if mixed else tuple(int(v) for v in args.image_size.lower().split("x"))
        batch_sizes = tuple(int(v) for v in args.batch_sizes.split(",") if v.strip())
        prep_workers = tuple(int(v) for v in args.prep_workers.split(",") if v.strip())
        sizes = {size.name: size.parse(getattr(args, f"size_{size.name}")) for size in metric_sizes()}
        parse_rates(args.stand_in)
        if args.e2e_sequences < 0 or args.stories < 0:
            raise ValueError("--stories and --e2e-sequences must be >= 0")
        counts = (args.images_per_story, args.regions, args.text_stories, args.rss_stories, args.rss_regions)
        if (
            min((*counts, width, height, *batch_sizes, *prep_workers, args.prep_images, args.warm_stories, args.pipeline_runs))
            < 1
        ):
            raise ValueError("sizes and counts must be >= 1")
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    config = replace(
        BenchConfig(),
        stories=args.stories,
        images_per_story=args.images_per_story,
        regions=args.regions,
        image_size=MIXED_SIZES if mixed else (width, height),
        arch=args.arch,
        clip_config=args.clip_config,
        batch_sizes=batch_sizes,
        raw_seconds=args.seconds,
        pipeline_runs=args.pipeline_runs,
        text_stories=args.text_stories,
        rss_stories=args.rss_stories,
        rss_regions=args.rss_regions,
        device=args.device,
        workers=args.workers,
        preprocess=args.preprocess,
        prep_workers=prep_workers,
        prep_images=args.prep_images,
        warm_stories=args.warm_stories,
        stand_in=args.stand_in,
        e2e_sequences=args.e2e_sequences,
        skip=skip,
        sizes=sizes,
    )
    result = run_bench(config, log=Log(quiet=args.quiet))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0
