"""The benchmark's peak memory: a fresh Python process scores a synthetic set with the metrics of the
shared memory run (each metric's ``Bench.runs``; random-weight models, its own as its package builds
them, the sizes of a :class:`vst_core.bench.run.BenchConfig`) and reports its peak resident memory
(``ru_maxrss``), so the figure is that of a scoring run alone."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import vst_core
from vst_core.bench.inputs import random_clip, synthetic_story_set
from vst_core.bench.run import BenchConfig, replicas, shared_run_metrics
from vst_core.config import Settings


def peak_rss(config: BenchConfig, batch_size: int) -> dict[str, Any]:
    """Run :func:`rss_worker` in a fresh Python process and return its report."""
    payload = json.dumps({**asdict(config), "batch_size": batch_size})
    env = dict(os.environ)
    # the child imports the very vst_core this process runs (an install or a checkout alike)
    package_parent = str(Path(vst_core.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [env.get("PYTHONPATH")])])
    code = "import sys; from vst_core.bench.memory import rss_worker; rss_worker(sys.argv[1])"
    done = subprocess.run([sys.executable, "-c", code, payload], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory benchmark process failed: {done.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def rss_worker(payload: str) -> None:
    """Score a synthetic set with every metric (random-weight models) and print the peak RSS."""
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    raw = json.loads(payload)
    batch_size = int(raw.pop("batch_size"))
    config = BenchConfig.from_json(raw)
    with tempfile.TemporaryDirectory(prefix="vst-bench-rss-") as tmp:
        folder = Path(tmp)
        story_set = synthetic_story_set(
            folder / "set",
            config.rss_stories,
            config.images_per_story,
            (320, 240),
            stories_per_sequence=config.rss_stories_per_sequence,
            seed=config.seed,
        )
        clip = random_clip(
            config.arch,
            device=config.device,
            batch_size=batch_size,
            workers=config.workers,
            model_config=config.clip_config,
            seed=config.seed,
        )
        metrics = shared_run_metrics("memory")
        own = replicas(config, folder, clip.device, batch_size, metrics)
        settings = Settings(
            metrics=metrics,
            clip_model=config.arch,
            clip_pretrained=f"random-seed{config.seed}",
            clip_config=config.clip_config,
            top_b=config.rss_regions,
            device=clip.device,
            batch_size=batch_size,
            workers=config.workers,
        )
        models = Models(settings, clip=clip, cache=EmbeddingCache(folder / "embeddings.sqlite"), **own)
        start = time.perf_counter()
        summary = score_story_set(story_set, settings, folder / "scores.jsonl", models=models)
        seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "peak_rss_mb": round(peak_kb / 1024, 1),
                "rss_stories": summary.scored,
                "rss_failed": len(summary.failed),
                "rss_seconds": round(seconds, 1),
                "rss_metrics": list(settings.metrics),
                "rss_regions_per_image": config.rss_regions,
                "rss_stories_per_sequence": config.rss_stories_per_sequence,
            }
        )
    )
