"""``vst score`` end to end, as a user runs it: a new process from start to exit, on a generated set.

The set (``sequences`` image sequences of ``images_per_story`` JPEG photos, one story each) is
written by several processes; the CLIP weights are a local checkpoint of the architecture with
random weights (the cost of a forward does not depend on the values). The command is run twice
with one cache folder: cold (empty cache) and warm (every vector cached, a new ``--out``). Each run
goes through :mod:`vst_core.bench.standin`, which traces the stages and, on a CPU with a stand-in
rate, replaces the forwards by waits. Figures:

    e2e_cold_seconds        process start to exit, empty cache
    e2e_crops_per_s         crops encoded / e2e_cold_seconds
    e2e_vs_raw              e2e_crops_per_s / the bare forward's crops/s (the stand-in's rate on a CPU)
    e2e_warm_seconds        process start to exit, every vector cached, a new --out
    startup_seconds         process start to the first forward (cold run)
    e2e_cpu_ms_per_1000_crops  CPU milliseconds per 1,000 crops by stage (decode, crop/resize, text,
                            forwards' host side, aggregation, writing), all threads
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from vst_core.bench.inputs import _TEMPLATES, MIXED_SIZES, Sizes, _fill, write_photos
from vst_core.bench.run import shared_run_metrics
from vst_core.config import DEVICE_BATCH


def write_story_set(folder: Path, sequences: int, images_per_story: int, size: Sizes, *, seed: int = 0, workers: int = 0) -> Path:
    """``folder/stories.jsonl``: one template story of five sentences over each of ``sequences``
    image sequences, their photos written by ``workers`` processes (one per core). Returns its path."""
    import random

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    names = [[f"images/s{q:06d}_{k}.jpg" for k in range(images_per_story)] for q in range(sequences)]
    write_photos(folder, [n for seq in names for n in seq], size, seed=seed, workers=workers)
    pick = random.Random(seed)
    lines = [
        json.dumps(
            {
                "story_id": f"q{q}",
                "sequence_id": f"q{q}",
                "system": "sys",
                "images": seq,
                "sentences": [_fill(t, pick) for t in _TEMPLATES],
            }
        )
        for q, seq in enumerate(names)
    ]
    path = folder / "stories.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_checkpoint(path: Path, arch: str, *, seed: int = 0, model_config: str | None = None) -> Path:
    """A state dict of open_clip ``arch`` with random weights at ``path`` (a local checkpoint)."""
    import open_clip
    import torch

    if model_config:
        open_clip.add_model_config(model_config)
    torch.manual_seed(seed)
    model = open_clip.create_model(arch, pretrained=None)
    torch.save(model.state_dict(), path)
    return path


@dataclass(frozen=True)
class E2EConfig:
    """One end-to-end measurement: the set, the model and how the forwards run."""

    sequences: int = 600
    images_per_story: int = 5
    regions: int = 10
    image_size: Sizes = MIXED_SIZES  # photos of 24 sizes, as varied as VIST's
    arch: str = "ViT-B-32"
    model_config: str | None = None
    device: str = "cpu"
    batch_size: int = 0  # 0: the user's default, by the device (the stand-in stands for CUDA: 256)
    workers: int = 0
    stand_in: str | None = None  # "CROPS_PER_S[,TEXTS_PER_S]": forwards as waits
    metrics: str = ""  # "": the metrics of the shared e2e run (each metric's ``Bench.runs``)
    seed: int = 0
    #: ``tag``: the weights of the default tag (ViT-B-32/openai), found in a hub cache as a user's
    #: first ``vst score`` finds them, and no weight options on the command line; ``file``: a local
    #: checkpoint named by ``--clip-checkpoint``.
    weights: str = "tag"


def write_tag_cache(hf_home: Path, checkpoint: Path, arch: str = "ViT-B-32", tag: str = "openai") -> Path:
    """``checkpoint`` as the weights of open_clip's (arch, tag) in a Hugging Face hub cache under
    ``hf_home`` (``hub/models--org--name/snapshots/<rev>/<file>`` and ``refs/main``), where a
    ``vst score`` with ``HF_HOME=hf_home`` and no weight options finds them. Returns the file."""
    from vst_core.models.clip_weights import pretrained_cfg

    repo = pretrained_cfg(arch, tag).get("hf_hub", "")
    if not repo:
        raise ValueError(f"open_clip has no hub file for {arch}/{tag}")
    parts = repo.strip("/").split("/")
    org_name, filename = "/".join(parts[:2]), parts[2] if len(parts) > 2 else "open_clip_pytorch_model.bin"
    folder = hf_home / "hub" / f"models--{org_name.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    target = folder / "snapshots" / ("0" * 40) / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    target.symlink_to(checkpoint.resolve())
    return target


def score_command(config: E2EConfig, stories: Path, checkpoint: Path, out: Path, cache: Path, trace: Path) -> list[str]:
    """The traced ``vst score`` command line of one run."""
    head = [sys.executable, "-m", "vst_core.bench.standin", "--trace", str(trace)]
    if config.stand_in:
        head += ["--stand-in", config.stand_in]
    weights = (
        []
        if config.weights == "tag"
        else [
            "--clip-model",
            config.arch,
            "--clip-checkpoint",
            str(checkpoint),
            "--clip-activation",
            "quickgelu",
            *(["--clip-config", config.model_config] if config.model_config else []),
        ]
    )
    return [
        *head,
        "--",
        "score",
        str(stories),
        "--out",
        str(out),
        "--metrics",
        config.metrics or ",".join(shared_run_metrics("e2e")),
        *weights,
        "--top-b",
        str(config.regions),
        "--device",
        config.device,
        # the user's command leaves the batch size to the device; the stand-in stands for CUDA's
        *(
            ["--batch-size", str(config.batch_size or (DEVICE_BATCH["cuda"] if config.stand_in else 0))]
            if config.batch_size or config.stand_in
            else []
        ),
        *(["--workers", str(config.workers)] if config.workers else []),
        "--cache-dir",
        str(cache),
        # the path a CUDA run takes (the stand-in stands for a GPU): images decoded once, crops on the device
        *(["--preprocess", "device"] if config.stand_in or config.device == "cuda" else []),
        "--no-progress",
        "--no-check-images",
    ]


def _run(command: list[str], trace: Path, hf_home: Path | None = None) -> tuple[float, dict[str, Any]]:
    """Seconds from process start to exit, and the child's trace (with the start's epoch)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if hf_home is not None:
        env.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1")
    start_epoch, start = time.time(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"vst score exited {done.returncode}: {done.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(trace.read_text(encoding="utf-8")) if trace.exists() else {}
    found["start_epoch"] = start_epoch
    return seconds, found


def end_to_end(
    config: E2EConfig, folder: Path, say: Callable[[str], None], *, raw_crops_per_s: float | None = None
) -> dict[str, Any]:
    """Cold and warm ``vst score`` runs over a set written into ``folder``; the figures of the module
    docstring. ``raw_crops_per_s`` is the bare forward's rate on this machine (the stand-in's when
    none is given)."""
    start = time.perf_counter()
    say(f"e2e: writing {config.sequences} sequences x {config.images_per_story} photos")
    stories = write_story_set(folder / "set", config.sequences, config.images_per_story, config.image_size, seed=config.seed)
    checkpoint = write_checkpoint(folder / "clip.pt", config.arch, seed=config.seed, model_config=config.model_config)
    hf_home = None
    if config.weights == "tag":
        if config.arch != "ViT-B-32" or config.model_config:
            raise ValueError("weights 'tag' measures the default command (ViT-B-32/openai); use weights 'file' for another model")
        hf_home = folder / "hf"
        write_tag_cache(hf_home, checkpoint)
    setup = time.perf_counter() - start
    cache = folder / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    figures: dict[str, Any] = {
        "e2e_sequences": config.sequences,
        "e2e_weights": "ViT-B-32/openai from the hub cache" if config.weights == "tag" else "a local checkpoint",
        "e2e_setup_seconds": round(setup, 1),
    }
    if config.stand_in:
        figures["standin_rates"] = config.stand_in
    runs: dict[str, tuple[float, dict[str, Any]]] = {}
    for name in ("cold", "warm"):
        trace = folder / f"trace-{name}.json"
        out = folder / f"scores-{name}.jsonl"
        for stale in (trace, out):  # a folder used before: not a resume (a lock file may be a running one's)
            stale.unlink(missing_ok=True)
        say(f"e2e: vst score, {name} ({'empty cache' if name == 'cold' else 'every vector cached, a new --out'})")
        runs[name] = _run(score_command(config, stories, checkpoint, out, cache, trace), trace, hf_home)
        lines = sum(1 for _ in out.open(encoding="utf-8"))
        if lines != config.sequences:
            raise RuntimeError(f"vst score wrote {lines} records of {config.sequences}")
        if name == "cold" and config.stand_in and not runs[name][1].get("crops"):
            raise RuntimeError("the cold run encoded no crop: it was not cold")
    shown = score_command(config, Path("stories.jsonl"), Path("clip.pt"), Path("scores.jsonl"), Path("cache"), Path("t"))
    figures["e2e_command"] = " ".join(["vst", *shown[shown.index("--") + 1 :]])
    cold, found = runs["cold"]
    crops = int(found.get("crops") or config.sequences * config.images_per_story * config.regions)
    rate = crops / cold
    reference = raw_crops_per_s or (float(config.stand_in.split(",")[0]) if config.stand_in else None)
    first = found.get("first_forward_epoch")
    figures.update(
        e2e_crops=crops,
        e2e_cold_seconds=round(cold, 2),
        e2e_crops_per_s=round(rate, 1),
        e2e_warm_seconds=round(runs["warm"][0], 2),
        startup_seconds=round(first - found["start_epoch"], 2) if first else None,
        e2e_warm_forwards=runs["warm"][1].get("crops", 0),
    )
    if reference:
        figures["e2e_vs_raw" if raw_crops_per_s else "e2e_vs_standin"] = round(rate / reference, 6)
    cpu = found.get("cpu_seconds") or {}
    figures["e2e_cpu_ms_per_1000_crops"] = {k: round(1e6 * v / max(crops, 1), 1) for k, v in cpu.items()}
    figures["e2e_warm_cpu_seconds"] = runs["warm"][1].get("cpu_seconds")
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vst_core.bench.e2e``: one cold and one warm measurement, JSON on stdout."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m vst_core.bench.e2e", description=main.__doc__)
    parser.add_argument("--sequences", type=int, default=600)
    parser.add_argument("--stand-in", default=None, help="CROPS_PER_S[,TEXTS_PER_S]: forwards as waits")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=0, help="0: the user's default (by the device)")
    parser.add_argument("--image-size", default="mixed", help="photo size WxH, or 'mixed': 24 sizes as varied as VIST's")
    parser.add_argument("--raw", type=float, default=None, help="the bare forward's crops/s on this machine")
    parser.add_argument(
        "--weights",
        choices=("tag", "file"),
        default="tag",
        help="tag: the default command, weights found in a hub cache; file: --clip-checkpoint",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--folder", type=Path, default=None, help="work here and keep the set, cache and scores (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    size = args.image_size.strip().lower()
    config = E2EConfig(
        sequences=args.sequences,
        stand_in=args.stand_in,
        device=args.device,
        batch_size=args.batch_size,
        weights=args.weights,
        image_size=MIXED_SIZES if size == "mixed" else cast(tuple[int, int], tuple(int(v) for v in size.split("x"))),
    )
    say = lambda text: print(text, file=sys.stderr, flush=True)
    if args.folder is not None:
        figures = end_to_end(config, args.folder, say, raw_crops_per_s=args.raw)
    else:
        with tempfile.TemporaryDirectory(prefix="vst-e2e-") as tmp:
            figures = end_to_end(config, Path(tmp), say, raw_crops_per_s=args.raw)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
