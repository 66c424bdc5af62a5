"""The ``vst bench`` harness lives in :mod:`vst_core.bench` (installed with the package); this module
keeps the names importable from the checkout's ``benchmarks`` folder for scripts and tests."""

from __future__ import annotations

from vst_core.bench.harness import (
    PHASES,
    RSS_TARGET_MB,
    TARGETS,
    BenchConfig,
    run_bench,
)
from vst_core.bench.inputs import random_clip, random_pair_scorer, synthetic_sentences, synthetic_story_set
from vst_core.bench.memory import peak_rss, rss_worker
from vst_core.bench.throughput import nr_throughput, raw_image_throughput, text_throughput

__all__ = [
    "PHASES",
    "RSS_TARGET_MB",
    "TARGETS",
    "BenchConfig",
    "nr_throughput",
    "peak_rss",
    "random_clip",
    "random_pair_scorer",
    "raw_image_throughput",
    "rss_worker",
    "run_bench",
    "synthetic_sentences",
    "synthetic_story_set",
    "text_throughput",
]
