"""What the phases of one ``vst bench`` run share: its sizes (:class:`BenchConfig`), its state
(:class:`BenchRun`), its log, the phases and the targets the figures are read against. The shared
phases are the harness's (:data:`PHASES`); each metric adds its own from its package
(``spec.tools.bench``, :class:`vst_core.contract.Bench`), read here from the registry."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vst_core.bench.inputs import MIXED_SIZES, Sizes, synthetic_sentences, synthetic_words
from vst_core.contract import BENCH_PHASES, Bench, BenchPhase, BenchSize, BenchValue, ReplicaRequest, SharedRun, registry
from vst_core.data import StorySet
from vst_core.models.clip import ClipEncoder

#: Targets the figures are read against (CPU and GPU alike).
TARGETS: dict[str, float] = {
    "pipeline_vs_raw": 0.95,
    "pipeline_vs_forwards": 0.95,
    "warm_speedup": 20.0,
    "warm_stories_per_s": 1000.0,
    "prep_crops_per_s": 5000.0,
}


#: Targets a figure meets by staying at or below them: a rerun with every vector cached, end to end
#: (600 stories with the stand-in on a CPU, 1,000 on CUDA).
MAX_TARGETS: dict[str, float] = {"e2e_warm_seconds": 3.0}

#: ``vst score`` end to end with the stand-in at 20,000 crops/s on a CPU (crops/s), and on CUDA the
#: share of the bare forward.
E2E_TARGETS: dict[str, float] = {"e2e_crops_per_s": 4000.0}
CUDA_E2E_TARGETS: dict[str, float] = {"e2e_vs_raw": 0.5}


#: Where a GPU runs the model the end-to-end target is lower and the warm one higher.
CUDA_TARGETS: dict[str, float] = {"pipeline_vs_raw": 0.8, "pipeline_vs_forwards": 0.8, "warm_speedup": 50.0}


#: Peak memory target for scoring ``rss_stories`` stories on CPU, in MB.
RSS_TARGET_MB = 4000.0


#: The harness's own phases: the image pipeline's, the text side's, and the peak memory (last, after
#: every metric's phases: :func:`all_phases`).
PHASES: tuple[str, ...] = BENCH_PHASES


def _benches() -> list[tuple[str, Bench]]:
    """Each metric that has a part in ``vst bench``, with it, in the registry's order."""
    return [(s.name, s.tools.bench) for s in registry().specs.values() if s.tools.bench is not None]


def metric_phases() -> tuple[BenchPhase, ...]:
    """Every metric's own phases, in the registry's order (which refuses a metric whose phase is
    named like a shared one or another metric's)."""
    return tuple(p for _, bench in _benches() for p in bench.phases)


def all_phases() -> tuple[str, ...]:
    """The phases ``--skip`` may name, in the order they run."""
    return (*PHASES[:-1], *(p.name for p in metric_phases()), PHASES[-1])


def metric_sizes() -> tuple[BenchSize, ...]:
    """Every metric's bench sizes, in the registry's order (each its own flag: the registry refuses a taken one)."""
    return tuple(z for _, bench in _benches() for z in bench.sizes)


def replicas(config: BenchConfig, folder: Path, device: str, batch_size: int, metrics: Sequence[str]) -> dict[str, Any]:
    """The random-weight models of ``metrics`` that have one (each metric's ``Bench.replica``), by name:
    what a shared run injects (``Models(settings, **replicas(...))``), so no real model is loaded."""
    request = ReplicaRequest(config, folder, device, batch_size, synthetic_words())
    wanted = set(metrics)
    return {name: bench.replica(request) for name, bench in _benches() if name in wanted and bench.replica is not None}


def models_said(config: BenchConfig) -> dict[str, Any]:
    """What each metric says of its random-weight model in the head of the summary (``Bench.about``)."""
    return {k: v for _, bench in _benches() if bench.about is not None for k, v in bench.about(config).items()}


def shared_run_metrics(run: SharedRun) -> tuple[str, ...]:
    """The metrics scored in one of the shared runs (each metric's ``Bench.runs``), in the registry's order."""
    return tuple(name for name, bench in _benches() if run in bench.runs)


Figures = dict[str, Any]


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and models of a benchmark run. Defaults finish in a few minutes on 2 CPU cores."""

    stories: int = 0  # stories of the throughput set (0: 16 on a CPU, 1,000 on CUDA)
    images_per_story: int = 5
    regions: int = 10
    image_size: Sizes = MIXED_SIZES  # photos of 24 sizes (or one WxH), as varied as VIST's
    arch: str = "ViT-B-32"
    clip_config: str | None = None  # open_clip model-config JSON registering ``arch``
    batch_sizes: tuple[int, ...] = ()  # () = 8,16,32 on CPU; 64..512 on CUDA
    raw_seconds: float = 6.0
    pipeline_runs: int = 3  # cold pipeline runs; the median run's ratios are reported
    text_stories: int = 500  # stories of the text phase
    rss_stories: int = 200
    rss_regions: int = 1
    rss_stories_per_sequence: int = 5
    device: str = "auto"
    workers: int = 0
    preprocess: str = "auto"  # of the pipeline and warm runs (Settings.preprocess)
    prep_workers: tuple[int, ...] = ()  # () = 1, 2 on a CPU; 1, 2, 4, 8, 16 (up to the cores) on CUDA
    prep_images: int = 200  # images of the preprocessing set (10 regions each by default)
    warm_stories: int = 1000
    stand_in: str = "20000"  # CROPS_PER_S[,TEXTS_PER_S] of the stand-in accelerator (the standin phase; e2e on a CPU)
    e2e_sequences: int = 0  # sequences of the end-to-end vst score runs (0: 600 on a CPU, 1,000 on CUDA)
    skip: tuple[str, ...] = ()
    seed: int = 0
    sizes: dict[str, BenchValue] = field(default_factory=dict)  # each metric's own (its ``Bench.sizes``), by name

    def __post_init__(self) -> None:
        if self.pipeline_runs < 1:
            raise ValueError(f"pipeline_runs must be at least 1, got {self.pipeline_runs}")
        unknown = set(self.sizes) - {z.name for z in metric_sizes()} if self.sizes else set()
        if unknown:
            raise ValueError(f"no metric declares the bench size(s) {', '.join(sorted(unknown))}")

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> BenchConfig:
        """A config from :func:`dataclasses.asdict` through JSON (its lists are tuples again)."""
        again: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
        again["sizes"] = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.get("sizes", {}).items()}
        size = raw.get("image_size")
        if isinstance(size, list) and size and isinstance(size[0], list):
            again["image_size"] = tuple(tuple(v) for v in size)
        return cls(**again)

    def size(self, name: str) -> Any:
        """A metric's bench size: the one given in ``sizes``, else its default (KeyError when no metric declares it).

        >>> BenchConfig(sizes={"judge_stories": 2}).size("judge_stories"), BenchConfig().size("judge_stories")
        (2, 8)
        """
        if name in self.sizes:
            return self.sizes[name]
        for size in metric_sizes():
            if size.name == name:
                return size.default
        raise KeyError(f"no metric declares the bench size {name!r}")


@dataclass
class Log:
    """A progress line on stderr, stamped with the seconds since the run started."""

    quiet: bool = False
    start: float = field(default_factory=time.perf_counter)

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"[bench {time.perf_counter() - self.start:6.1f}s] {text}", file=sys.stderr, flush=True)


@dataclass
class BenchRun:
    """What the phases of one run share: its sizes, the synthetic set, the encoder and the log."""

    config: BenchConfig
    device: str
    batch_sizes: tuple[int, ...]
    folder: Path
    story_set: StorySet
    clip: ClipEncoder
    say: Callable[[str], None]

    def sentences(self, count: int, join: int = 1) -> list[list[str]]:
        """``count`` synthetic stories' sentences, each sentence ``join`` template sentences (the run's seed)."""
        return synthetic_sentences(count, join=join, seed=self.config.seed)

    def words(self) -> tuple[str, ...]:
        """Every word of the synthetic stories (a tokenizer's vocabulary)."""
        return synthetic_words()
