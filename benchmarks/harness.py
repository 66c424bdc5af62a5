"""The ``vst bench`` harness lives in :mod:`vst_core.bench` (installed with the package); this module
keeps the names importable from the checkout's ``benchmarks`` folder for scripts and tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vst_core.bench.harness import (
    PHASES,
    RSS_TARGET_MB,
    TARGETS,
    BenchConfig,
    run_bench,
)
from vst_core.bench.inputs import random_clip, synthetic_sentences, synthetic_story_set, synthetic_words
from vst_core.bench.memory import peak_rss, rss_worker
from vst_core.bench.throughput import raw_image_throughput, text_throughput
from vst_core.metrics.rovist_c import bench as _coherence_bench
from vst_core.metrics.rovist_nr.bench import nr_throughput


def random_pair_scorer(size: str, folder: Path, *, device: str, batch_size: int, seed: int = 0) -> Any:
    """The pair scorer's replica over the synthetic stories' words, as earlier versions built it here
    (:func:`vst_core.metrics.rovist_c.bench.random_pair_scorer` takes the words)."""
    return _coherence_bench.random_pair_scorer(size, folder, synthetic_words(), device=device, batch_size=batch_size, seed=seed)


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
