"""What the phases of one ``vst bench`` run share: its sizes (:class:`BenchConfig`), its state
(:class:`BenchRun`), its log, the phases and the targets the figures are read against."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vst_core.data import StorySet
from vst_core.models.clip import ClipEncoder

#: Targets the figures are read against (CPU and GPU alike).
TARGETS: dict[str, float] = {
    "pipeline_vs_raw": 0.95,
    "pipeline_vs_forwards": 0.95,
    "warm_speedup": 20.0,
    "warm_stories_per_s": 1000.0,
    "prep_crops_per_s": 5000.0,
    "nr_speedup_vs_reference": 20.0,
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


PHASES: tuple[str, ...] = (
    "raw",
    "prep",
    "pipeline",
    "warm",
    "standin",
    "e2e",
    "nr",
    "text",
    "coherence",
    "judge",
    "judge_server",
    "rss",
)


Figures = dict[str, Any]


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and models of a benchmark run. Defaults finish in a few minutes on 2 CPU cores."""

    stories: int = 16
    images_per_story: int = 5
    regions: int = 10
    image_size: tuple[int, int] = (500, 375)
    arch: str = "ViT-B-32"
    clip_config: str | None = None  # open_clip model-config JSON registering ``arch``
    coherence_size: str = "base"  # "base": BertConfig() (bert-base); "tiny": 2 layers of width 32
    batch_sizes: tuple[int, ...] = ()  # () = 8,16,32 on CPU; 64..512 on CUDA
    raw_seconds: float = 6.0
    pipeline_runs: int = 3  # cold pipeline runs; the median run's ratios are reported
    nr_stories: int = 5000
    rss_stories: int = 200
    rss_regions: int = 1
    rss_stories_per_sequence: int = 5
    judge_stories: int = 8
    judge_size: str = "replica"  # "replica": the tests' narrowed Qwen2; "full": Qwen2.5-0.5B-Instruct's architecture
    judge_server_stories: int = 16  # stories the served-judge client rates at each concurrency
    judge_server_latency: float = 0.05  # seconds the local server takes per request
    judge_server_concurrency: tuple[int, ...] = (1, 8, 32)
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

    def __post_init__(self) -> None:
        if self.pipeline_runs < 1:
            raise ValueError(f"pipeline_runs must be at least 1, got {self.pipeline_runs}")


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
