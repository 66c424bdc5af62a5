"""Throughput of the scoring pipeline against the bare model forward on the same machine.

Models are full-size architectures with random weights (the cost of a forward pass does not
depend on the weight values): open_clip ``ViT-B-32`` with ``pretrained=None``, and each metric's
own model as its package builds it (``Bench.replica``). The story set is synthetic (JPEG images and template
stories in a temporary folder) and the embedding cache a temporary file, so the user's cache is
untouched. Figures, one phase each (``BenchConfig.skip`` leaves phases out):

    raw_crops_per_s         bare ``encode_image`` forward on ready tensors at the best batch size tried,
                            mean of its measurements just before and just after the reported pipeline run
    pipeline_crops_per_s    crops encoded / seconds of a cold-cache grounding run of the set
                            (decode, crop, preprocess, encode regions and phrases, aggregate, write);
                            ``pipeline_runs`` runs (3), each with its own raw limits, the median reported
    pipeline_vs_raw         pipeline_crops_per_s / raw_crops_per_s (every run's in ``pipeline_vs_raw_runs``)
    raw_text_per_s          bare text-tower forward over the texts the pipeline run encodes (its phrase units),
                            tokenised beforehand and batched as the encoder batches them; mean of its
                            measurements just before and just after the reported pipeline run
    pipeline_vs_forwards    seconds the run's bare model forwards take (crops_encoded / raw_crops_per_s +
                            texts_encoded / raw_text_per_s) / pipeline_seconds: the share of the run that
                            is model work, the image and the text tower alike (``pipeline_vs_raw`` counts
                            the text tower as overhead); ``pipeline_*_forward_seconds`` the forwards'
                            seconds inside the run
    raw_page_faults_per_forward  minor page faults of the process per bare forward at the best batch size
                            (about 0 when freed memory is kept for the next forward, ``freed_memory_kept``:
                            :func:`vst_core.models.device.keep_freed_memory`)
    warm_speedup            pipeline_seconds / seconds of the first cold run again over its cache
    warm_stories_per_s      stories/s of a rerun of ``warm_stories`` stories (five a sequence) with every
                            vector cached: grounding, CLIPScore and RoViST-NR with its spans, the records
                            written (``_no_spans``: with ``--no-spans``); the best of three reruns, each
                            rate in ``..._runs``; the cache is filled first by the same pipeline with the
                            forward a no-op (:mod:`vst_core.bench.prep`)
    standin_crops_per_s     crops/s of a cold grounding run of the set in this process with the stand-in
                            accelerator (:mod:`vst_core.bench.standin`: forwards are waits of batch/rate
                            seconds; decoding overlaps them as on CUDA, ``device`` preprocessing);
                            ``standin_vs_rate`` its share of the stand-in's rate: what the CPU leaves of a GPU
    e2e_*, startup_seconds  ``vst score`` end to end in a new process, cold and warm, on a generated set of
                            ``e2e_sequences`` sequences (:mod:`vst_core.bench.e2e`): the stand-in on a CPU,
                            the model on CUDA (``e2e_vs_raw`` against the raw forward)
    prep_crops_per_s        the CPU's share per crop on a GPU run with the ``device`` preprocessing: decode,
                            crop and batching, all workers, model and device-side steps no-ops; by workers
                            and for ``pil`` too; ``device_prep_crops_per_s`` the device-side steps on this
                            machine's device; ``preprocess_max_abs_pixel`` the two paths' largest difference
    text_*_stories_per_s    sentence splitting, and noun phrases story by story and batched
    <metric>_*              each metric's own phases (``spec.tools.bench``, in its package's
                            ``bench.py``; ``vst bench --help`` lists them), after the text phase
    peak_rss_mb             peak resident memory of a separate process scoring ``rss_stories``
                            stories with every metric (models loaded once)
"""

from __future__ import annotations

import dataclasses
import os
import platform
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vst_core.bench.grounding_phases import (
    grounding_settings,
    pipeline_phase,
    prep_phase,
    raw_phase,
    warm_phase,
    warm_stories_phase,
)
from vst_core.bench.inputs import random_clip, sizes_of, synthetic_story_set
from vst_core.bench.memory import peak_rss
from vst_core.bench.run import (  # noqa: F401 - the benchmark's API, here as before
    CUDA_E2E_TARGETS,
    CUDA_TARGETS,
    E2E_TARGETS,
    MAX_TARGETS,
    PHASES,
    RSS_TARGET_MB,
    TARGETS,
    BenchConfig,
    BenchRun,
    Figures,
    Log,
    metric_phases,
    models_said,
    replicas,
)
from vst_core.bench.throughput import text_throughput
from vst_core.config import DEVICE_BATCH, Settings
from vst_core.images.options import image_preprocess
from vst_core.models.device import keep_freed_memory
from vst_core.signature import signature_id

# --------------------------------------------------------------------------- phases


def text_phase(run: BenchRun) -> Figures:
    """text: stories/s of sentence splitting and of noun phrases (story by story, and batched)."""
    stories = run.config.text_stories
    run.say(f"text side (sentence split, noun phrases) on {stories} stories")
    rates = text_throughput(run.sentences(stories), min(1.0, run.config.raw_seconds))
    return {
        "text_split_stories_per_s": round(rates["split"], 1),
        "text_phrases_per_story_stories_per_s": round(rates["phrases_per_story"], 1),
        "text_phrases_batched_stories_per_s": round(rates["phrases_batched"], 1),
    }


#: The batch the stand-in's GPU runs (a CPU's best batch is far smaller, and not what a GPU run does).
STANDIN_BATCH = 256


def standin_phase(run: BenchRun, settings: Settings) -> Figures:
    """standin: a cold grounding run of the set with the stand-in accelerator (the CPU's share of a GPU run)."""
    from vst_core.bench.standin import parse_rates, stand_in_encoder
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    crops_per_s, texts_per_s = parse_rates(run.config.stand_in)
    encoder = stand_in_encoder(run.clip, crops_per_s, texts_per_s)
    encoder.batch_size = STANDIN_BATCH
    device = settings.with_(preprocess="device", batch_size=STANDIN_BATCH)
    run.say(f"standin: grounding the set with forwards as waits ({crops_per_s:.0f} crops/s, {texts_per_s:.0f} texts/s)")
    own = replicas(run.config, run.folder, run.device, STANDIN_BATCH, device.metrics)
    models = Models(device, clip=encoder, cache=EmbeddingCache(run.folder / "standin-cache" / "embeddings.sqlite"), **own)
    start = time.perf_counter()
    score_story_set(run.story_set, device, run.folder / "standin.jsonl", overwrite=True, models=models)
    seconds = time.perf_counter() - start
    rate = encoder.images_encoded / seconds
    run.say(
        f"standin: {encoder.images_encoded} crops in {seconds:.1f}s = {rate:.1f} crops/s ({rate / crops_per_s:.3f} of the rate)"
    )
    return {
        "standin_rates": [crops_per_s, texts_per_s],
        "standin_crops_per_s": round(rate, 1),
        "standin_vs_rate": round(rate / crops_per_s, 3),
        "standin_vs_forwards": round((encoder.image_seconds + encoder.text_seconds) / seconds, 3),
    }


def ledger_phase(run: BenchRun, batch_size: int) -> Figures:
    """ledger: the host-op ledger of the ``device`` image path (:mod:`vst_core.bench.ledger`),
    counted on ``prep_images`` (at most 96) and twice as many photos of the run's sizes at the
    CUDA default batch of 256 (on CUDA, the batch the raw phase found best); no timing, so the
    figures are the same on any machine."""
    from vst_core.bench.ledger import ledger_figures

    sizes = sizes_of(run.config.image_size)
    batch = batch_size if run.device == "cuda" else DEVICE_BATCH["cuda"]
    run.say(f"ledger: host ops of the device path on photos of {len(sizes)} size(s), batch {batch}")
    figures = ledger_figures(max(2, min(96, run.config.prep_images)), sizes, batch_size=batch)
    run.say(
        f"ledger: {figures['ledger_kernels_per_crop']} kernels and {figures['ledger_torch_calls_per_crop']} torch calls a crop, "
        f"{figures['ledger_kernels_per_batch']} kernels a batch, predicted host {figures['ledger_predicted_host_ms_per_batch']} ms a batch"
    )
    return figures


def e2e_phase(run: BenchRun, raw_crops_per_s: float | None) -> Figures:
    """e2e: ``vst score`` end to end in new processes, cold and warm (:mod:`vst_core.bench.e2e`)."""
    from vst_core.bench.e2e import E2EConfig, end_to_end

    config = run.config
    cuda = run.device == "cuda"
    e2e = E2EConfig(
        sequences=config.e2e_sequences or (1000 if cuda else 600),
        images_per_story=config.images_per_story,
        regions=config.regions,
        image_size=config.image_size,
        arch=config.arch,
        model_config=config.clip_config,
        device=run.device,
        batch_size=0 if cuda else STANDIN_BATCH,  # on CUDA the user's default: by the device
        workers=config.workers,
        stand_in=None if cuda else config.stand_in,
        seed=config.seed,
        # the default command (weights of the default tag in a hub cache) where the model is the default
        weights="tag" if config.arch == "ViT-B-32" and not config.clip_config else "file",
    )
    return end_to_end(e2e, run.folder / "e2e", run.say, raw_crops_per_s=raw_crops_per_s if cuda else None)


def rss_phase(run: BenchRun, batch_size: int) -> Figures:
    """rss: peak resident memory of a fresh process scoring ``rss_stories`` stories with every metric."""
    run.say(f"peak memory: scoring {run.config.rss_stories} stories with every metric in a separate process")
    return peak_rss(run.config, batch_size)


# --------------------------------------------------------------------------- the run


#: Stories of the throughput set when none are given: 16 on a CPU (the real forward is slow there),
#: 1,000 on CUDA (55,000 crops), so the pipeline's fixed costs do not decide its ratio to the forward.
PIPELINE_STORIES_CPU, PIPELINE_STORIES_CUDA = 16, 1000


def pipeline_stories(stories: int, device: str) -> int:
    """The throughput set's stories: ``stories``, or by the device when 0.

    >>> pipeline_stories(0, "cpu"), pipeline_stories(0, "cuda"), pipeline_stories(40, "cuda")
    (16, 1000, 40)
    """
    return stories or (PIPELINE_STORIES_CUDA if device == "cuda" else PIPELINE_STORIES_CPU)


def run_bench(config: BenchConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the phases not in ``config.skip`` and return the JSON-able summary."""
    from vst_core.models.device import resolve_device

    device = resolve_device(config.device)
    config = dataclasses.replace(config, stories=pipeline_stories(config.stories, device))
    batch_sizes = config.batch_sizes or ((64, 128, 256, 512) if device == "cuda" else (8, 16, 32))
    result = _machine(config, device, batch_sizes)
    skip, say = config.skip, log or Log()
    with tempfile.TemporaryDirectory(prefix="vst-bench-") as tmp:
        run = _start(config, device, batch_sizes, Path(tmp), say)
        raw: dict[int, float] = {}
        if "raw" not in skip:
            figures, raw = raw_phase(run)
            result.update(figures)
        best = max(raw, key=raw.__getitem__) if raw else batch_sizes[0]
        run.clip.batch_size = best
        settings = grounding_settings(config, device, best)
        result.update(
            batch_size=best,
            signature_id=signature_id(settings),
            workers=run.clip.workers,
            preprocess=image_preprocess(settings),
        )
        if "ledger" not in skip:
            result.update(ledger_phase(run, best))
        if "prep" not in skip:
            result.update(prep_phase(run, settings))
        if "pipeline" not in skip:
            figures, cold = pipeline_phase(run, settings, raw)
            result.update(figures)
            if "warm" not in skip:
                result.update(warm_phase(run, settings, cold))
        if "warm" not in skip:
            result.update(warm_stories_phase(run, settings))
        if "standin" not in skip:
            result.update(standin_phase(run, settings))
        if "e2e" not in skip:
            result.update(e2e_phase(run, result.get("raw_crops_per_s")))
        if "text" not in skip:
            result.update(text_phase(run))
        for phase in metric_phases():
            if phase.name not in skip:
                result.update(_own_figures(phase.name, phase.run(run)))
        if "rss" not in skip:
            result.update(rss_phase(run, best))
    return _with_targets(result)


def _own_figures(phase: str, figures: Mapping[str, Any]) -> Figures:
    """A metric phase's figures, each key starting with the phase's name (one that does not gets it in
    front), so no metric's figure takes a shared one's place.

    >>> _own_figures("nr", {"nr_stories": 5, "warm_speedup": 6})
    {'nr_stories': 5, 'nr_warm_speedup': 6}
    """
    return {k if k.startswith(f"{phase}_") else f"{phase}_{k}": v for k, v in figures.items()}


def _machine(config: BenchConfig, device: str, batch_sizes: tuple[int, ...]) -> Figures:
    """The machine, the libraries and the sizes of the run: the head of the summary."""
    import torch

    return {
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "freed_memory_kept": keep_freed_memory() if device == "cpu" else None,
        "torch": torch.__version__,
        "clip_arch": config.arch,
        **models_said(config),
        "stories": config.stories,
        "images_per_story": config.images_per_story,
        "regions_per_image": config.regions,
        "image_size": [list(s) for s in sizes_of(config.image_size)],
        "batch_sizes_tried": list(batch_sizes),
    }


def _start(config: BenchConfig, device: str, batch_sizes: tuple[int, ...], folder: Path, say: Callable[[str], None]) -> BenchRun:
    """Write the synthetic set into ``folder`` and build the random-weight encoder."""
    say(f"writing {config.stories} synthetic stories ({config.images_per_story} images each)")
    story_set = synthetic_story_set(folder / "set", config.stories, config.images_per_story, config.image_size, seed=config.seed)
    clip = random_clip(
        config.arch,
        device=device,
        batch_size=batch_sizes[0],
        workers=config.workers,
        model_config=config.clip_config,
        seed=config.seed,
    )
    return BenchRun(config, device, batch_sizes, folder, story_set, clip, say)


def _with_targets(result: Figures) -> Figures:
    """``result`` with the targets and, for each figure measured, whether it met its target."""
    cuda = result.get("device") == "cuda"
    own = {k: v for phase in metric_phases() for k, v in phase.targets.items()}
    targets = {**own, **TARGETS, **(CUDA_TARGETS if cuda else {}), **(CUDA_E2E_TARGETS if cuda else E2E_TARGETS)}
    met = {k: result[k] >= v for k, v in targets.items() if isinstance(result.get(k), (int, float))}
    met.update({k: result[k] <= v for k, v in MAX_TARGETS.items() if isinstance(result.get(k), (int, float))})
    if "peak_rss_mb" in result:
        met["peak_rss_mb"] = result["peak_rss_mb"] < RSS_TARGET_MB
    result["targets"] = {**targets, **{f"{k} (at most)": v for k, v in MAX_TARGETS.items()}, "peak_rss_mb": RSS_TARGET_MB}
    result["met"] = met
    return result


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
