"""Throughput of the scoring pipeline against the bare model forward on the same machine.

Models are full-size architectures with random weights (the cost of a forward pass does not
depend on the weight values): open_clip ``ViT-B-32`` with ``pretrained=None`` and
``BertForNextSentencePrediction(BertConfig())``, the architecture of the default pair scorer
``bert-nsp`` (``bert-base-uncased``). The story set is synthetic (JPEG images and template
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
    warm_speedup            pipeline_seconds / seconds of the first cold run again over its cache
    warm_stories_per_s      stories/s of a rerun of ``warm_stories`` stories (five a sequence) with every
                            vector cached: grounding, CLIPScore and RoViST-NR with its spans, the records
                            written (``_no_spans``: with ``--no-spans``); the best of three reruns, each
                            rate in ``..._runs``; the cache is filled first by the same pipeline with the
                            forward a no-op (:mod:`vst_core.bench.prep`)
    prep_crops_per_s        the CPU's share per crop on a GPU run with the ``device`` preprocessing: decode,
                            crop and batching, all workers, model and device-side steps no-ops; by workers
                            and for ``pil`` too; ``device_prep_crops_per_s`` the device-side steps on this
                            machine's device; ``preprocess_max_abs_pixel`` the two paths' largest difference
    text_*_stories_per_s    sentence splitting, and noun phrases story by story and batched
    nr_speedup_vs_reference RoViST-NR stories/s of the vectorised pass (``score --no-spans``) over
                            the public code's double loops, both from the sentences with one tokenizer;
                            also the per-story pass with repeated spans, and 4x longer sentences
                            (the public code is in a source checkout only: elsewhere ``nr_reference``
                            says the phase was skipped)
    coherence_pairs_per_s   sentence pairs/s of the pair scorer
    judge_stories_per_s     stories/s of the rubric judge (4 aspects x 3 paraphrases a story) with a random
                            Qwen2 of the replica's size (``judge_size="full"``: Qwen2.5-0.5B's), cold; and
                            from its answer cache (:mod:`vst_core.bench.judge`)
    judge_server_stories_per_s  stories/s of the served-judge client at concurrency 1, 8 and 32 against a
                            local server answering each request in ``judge_server_latency`` seconds, its
                            bound and the seconds per 1,000 stories (a real server's time is its own)
    peak_rss_mb             peak resident memory of a separate process scoring ``rss_stories``
                            stories with every metric (models loaded once)
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vst_core.bench.inputs import random_clip, random_pair_scorer, synthetic_sentences, synthetic_story_set
from vst_core.bench.memory import peak_rss
from vst_core.bench.throughput import (
    nr_throughput,
    page_faults_per_forward,
    raw_image_throughput,
    raw_text_throughput,
    reference_nr,
    text_throughput,
)
from vst_core.config import Settings
from vst_core.data import StorySet
from vst_core.models.clip import ClipEncoder
from vst_core.models.device import keep_freed_memory
from vst_core.signature import signature_id

#: Targets the figures are read against (CPU and GPU alike).
TARGETS: dict[str, float] = {
    "pipeline_vs_raw": 0.95,
    "pipeline_vs_forwards": 0.95,
    "warm_speedup": 20.0,
    "warm_stories_per_s": 1000.0,
    "prep_crops_per_s": 5000.0,
    "nr_speedup_vs_reference": 20.0,
}
#: Where a GPU runs the model the end-to-end target is lower and the warm one higher.
CUDA_TARGETS: dict[str, float] = {"pipeline_vs_raw": 0.8, "pipeline_vs_forwards": 0.8, "warm_speedup": 50.0}
#: Peak memory target for scoring ``rss_stories`` stories on CPU, in MB.
RSS_TARGET_MB = 4000.0
PHASES: tuple[str, ...] = ("raw", "prep", "pipeline", "warm", "nr", "text", "coherence", "judge", "judge_server", "rss")

Figures = dict[str, Any]
#: Why the NR phase is left out where the package runs without its source checkout.
NR_SKIPPED = (
    "the public RoViST NR code it is timed against (benchmarks/reference_code.py) comes with a source "
    "checkout only, not with an installed package; run vst bench from a checkout to measure it"
)


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


# --------------------------------------------------------------------------- phases


def raw_phase(run: BenchRun) -> tuple[Figures, dict[int, float]]:
    """raw: crops/s of the bare ``encode_image`` forward at every batch size tried (the figures,
    and the rate per batch size: the best size is used from then on)."""
    run.say(f"raw encode_image forward at batch sizes {list(run.batch_sizes)}")
    raw = raw_image_throughput(run.clip, run.batch_sizes, run.config.raw_seconds)
    best = max(raw, key=raw.__getitem__)
    faults = page_faults_per_forward(run.clip, best)
    run.say(f"raw: {raw[best]:.1f} crops/s at batch {best}, {faults:.0f} page faults per forward")
    return {
        "raw_crops_per_s_by_batch": {str(k): round(v, 2) for k, v in raw.items()},
        "raw_crops_per_s": round(raw[best], 2),
        "raw_page_faults_per_forward": round(faults),
    }, raw


def pipeline_phase(run: BenchRun, settings: Settings, raw: dict[int, float]) -> tuple[Figures, float]:
    """pipeline: crops/s of ``pipeline_runs`` cold-cache grounding runs of the set, each over a cache
    of its own (the figures, and the first run's seconds: the warm phase reruns over its cache).
    With ``raw`` measured, the raw image forward at the chosen batch size and the raw text forward
    over the run's texts are timed before the first run and after every run, and a run's limits are
    the means of the two measurements around it, so a drift in the machine's speed (shared cores,
    clock changes) moves both sides of ``pipeline_vs_raw`` and ``pipeline_vs_forwards`` alike. The
    ratios reported are the median run's; every run's are in ``..._runs``."""
    best, seconds = settings.batch_size, run.config.raw_seconds
    _warm_text_tools(settings)
    texts = _pipeline_texts(run, settings)  # parsed with the settings' spaCy pipeline: it is loaded too
    image_rates: list[float] = []
    text_rates: list[float] = []

    def measure_raw(image_rate: float | None = None) -> None:
        """The bare forwards now (``image_rate``: the image forward's, measured just before)."""
        image_rates.append(raw_image_throughput(run.clip, (best,), seconds)[best] if image_rate is None else image_rate)
        text_rates.append(raw_text_throughput(run.clip, texts, seconds))
        run.say(f"raw at batch {best}: {image_rates[-1]:.1f} crops/s, {text_rates[-1]:.1f} texts/s")

    if raw:  # the forwards at the chosen size just before the first run (the sweep's last size was just measured)
        measure_raw(raw[best] if best == run.batch_sizes[-1] else None)
    clip, runs = run.clip, []
    for k in range(run.config.pipeline_runs):
        run.say(f"pipeline: grounding the set with a cold cache (run {k + 1} of {run.config.pipeline_runs})")
        encoded, texts_encoded = clip.images_encoded, clip.texts_encoded
        image_seconds, text_seconds = clip.image_seconds, clip.text_seconds
        cold = _grounding_run(run, settings, "cold", cache=_cache_name(k))
        crops, encoded_texts = clip.images_encoded - encoded, clip.texts_encoded - texts_encoded
        figures: Figures = {
            "crops_encoded": crops,
            "texts_encoded": encoded_texts,
            "pipeline_seconds": round(cold, 3),
            "pipeline_crops_per_s": round(crops / cold, 2),
            "pipeline_image_forward_seconds": round(clip.image_seconds - image_seconds, 3),
            "pipeline_text_forward_seconds": round(clip.text_seconds - text_seconds, 3),
        }
        run.say(f"pipeline: {crops} crops and {encoded_texts} texts in {cold:.1f}s = {crops / cold:.1f} crops/s")
        if raw:
            measure_raw()
            before, again = image_rates[-2:]
            text_before, text_again = text_rates[-2:]
            limit = round((before + again) / 2, 2)
            text_limit = round((text_before + text_again) / 2, 2)
            forwards = crops / limit + (encoded_texts / text_limit if text_limit else 0.0)
            figures.update(
                raw_crops_per_s_before=round(before, 2),
                raw_crops_per_s_after=round(again, 2),
                raw_crops_per_s=limit,
                pipeline_vs_raw=round(crops / cold / limit, 3),
                raw_text_per_s_before=round(text_before, 2),
                raw_text_per_s_after=round(text_again, 2),
                raw_text_per_s=text_limit,
                pipeline_forwards_seconds=round(forwards, 3),
                pipeline_vs_forwards=round(forwards / cold, 3),
            )
        runs.append(figures)
    # the median run (of an even number, the slower of the middle two)
    slower_first = sorted(runs, key=lambda r: r.get("pipeline_vs_raw", -r["pipeline_seconds"]))
    median = dict(slower_first[(len(runs) - 1) // 2])
    median["pipeline_runs"] = len(runs)
    for name in ("crops_encoded", "pipeline_seconds", "pipeline_vs_raw", "pipeline_vs_forwards"):
        if name in median:
            median[f"{name}_runs"] = [r[name] for r in runs]
    return median, median["pipeline_seconds"]


def warm_phase(run: BenchRun, settings: Settings, cold: float) -> Figures:
    """warm: the first cold run again over the cache it filled; speed-up over ``cold`` seconds (the
    reported cold run's: ``pipeline_seconds / warm_seconds``)."""
    run.say("warm: the same run again with the cache")
    warm = _grounding_run(run, settings, "warm")
    run.say(f"warm: {warm:.2f}s ({cold / warm:.1f}x)")
    return {"warm_seconds": round(warm, 3), "warm_speedup": round(cold / warm, 1)}


def prep_phase(run: BenchRun, settings: Settings) -> Figures:
    """prep: the CPU's share of preprocessing per crop, by workers, for both paths; the device-side
    steps apart; and how far the two paths' pixels are apart (:mod:`vst_core.bench.prep`)."""
    from vst_core.bench.prep import pixel_difference, prep_rates

    config = run.config
    cores = os.cpu_count() or 1
    workers = config.prep_workers or tuple(
        n for n in ((1, 2, 4, 8, 16) if run.device == "cuda" else (1, 2)) if n <= max(cores, 2)
    )
    stories = max(1, config.prep_images // config.images_per_story)
    story_set = synthetic_story_set(run.folder / "prep", stories, config.images_per_story, config.image_size, seed=config.seed)
    run.say(f"prep: {stories * config.images_per_story} images, {config.regions} regions each, workers {list(workers)}")
    figures = prep_rates(story_set, settings, run.clip, workers, min(1.0, config.raw_seconds))
    most = str(max(workers))
    figures["prep_crops_per_s"] = figures["prep_crops_per_s_device_by_workers"][most]
    figures["prep_crops_per_s_pil"] = figures["prep_crops_per_s_pil_by_workers"][most]
    figures["prep_workers"] = list(workers)
    figures.update(pixel_difference(sorted((run.folder / "prep" / "images").glob("*.jpg"))[:20], run.clip, config.regions))
    run.say(f"prep: {figures['prep_crops_per_s']} crops/s (device path), {figures['prep_crops_per_s_pil']} (pil)")
    return figures


#: Warm reruns per variant; the figure is the best, every rate is kept beside it (``..._runs``).
WARM_REPEATS = 3


def warm_stories_phase(run: BenchRun, settings: Settings) -> Figures:
    """warm_stories_per_s: the best of :data:`WARM_REPEATS` reruns of ``warm_stories`` stories with
    every vector cached, each a new run (nothing in memory, a new connection to the cache file)."""
    from vst_core.bench.prep import noop_encoder
    from vst_core.grounding.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    config = run.config
    folder = run.folder / "warm"
    story_set = synthetic_story_set(folder / "set", config.warm_stories, 5, (320, 240), stories_per_sequence=5, seed=config.seed)
    warm = settings.with_(metrics=("redundancy", "grounding", "clipscore"))
    encoder = noop_encoder(run.clip)
    cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite")
    run.say(f"warm: filling the cache for {config.warm_stories} stories (forward a no-op)")
    score_story_set(story_set, warm, folder / "fill.jsonl", models=Models(warm, clip=encoder, cache=cache))
    figures: Figures = {"warm_stories": config.warm_stories}
    for spans, name in ((True, "warm_stories_per_s"), (False, "warm_stories_per_s_no_spans")):
        rates = []
        for _ in range(WARM_REPEATS):
            # a new run: nothing in memory (a new connection to the cache file too), the cache folder's memo
            models = Models(warm, clip=encoder, cache=EmbeddingCache(cache.path))
            start = time.perf_counter()
            score_story_set(story_set, warm, folder / "again.jsonl", overwrite=True, models=models, spans=spans)
            rates.append(round(config.warm_stories / (time.perf_counter() - start), 1))
        figures[name] = max(rates)  # the best of the reruns, as timeit: other work on the machine only slows a run
        figures[name + "_runs"] = rates
    run.say(f"warm: {figures['warm_stories_per_s']} stories/s ({figures['warm_stories_per_s_no_spans']} with --no-spans)")
    return figures


def text_phase(run: BenchRun) -> Figures:
    """text: stories/s of sentence splitting and of noun phrases (story by story, and batched)."""
    stories = min(run.config.nr_stories, 500)
    run.say(f"text side (sentence split, noun phrases) on {stories} stories")
    rates = text_throughput(synthetic_sentences(stories, seed=run.config.seed), min(1.0, run.config.raw_seconds))
    return {
        "text_split_stories_per_s": round(rates["split"], 1),
        "text_phrases_per_story_stories_per_s": round(rates["phrases_per_story"], 1),
        "text_phrases_batched_stories_per_s": round(rates["phrases_batched"], 1),
    }


def nr_phase(run: BenchRun) -> Figures:
    """nr: RoViST-NR stories/s, vectorised and per story, against the public code's double loops, on
    ``nr_stories`` stories and on a quarter as many with 4x longer sentences; skipped (with the
    reason under ``nr_reference``) where the public code is absent, outside a source checkout."""
    reference, count, seed = reference_nr(), run.config.nr_stories, run.config.seed
    if reference is None:
        run.say(f"RoViST-NR: {NR_SKIPPED}")
        return {"nr_reference": f"skipped: {NR_SKIPPED}"}
    run.say(f"RoViST-NR against the double-loop baseline on {count} stories")
    seconds = min(1.0, run.config.raw_seconds)
    rates = nr_throughput(synthetic_sentences(count, seed=seed), reference, seconds)
    long = nr_throughput(synthetic_sentences(max(count // 4, 1), join=4, seed=seed), reference, seconds)
    return {
        "nr_stories": count,
        "nr_stories_per_s": round(rates["vectorised"], 1),
        "nr_with_spans_stories_per_s": round(rates["spans"], 1),
        "nr_reference_stories_per_s": round(rates["baseline"], 1),
        "nr_speedup_vs_reference": round(rates["vectorised"] / rates["baseline"], 2),
        "nr_tokenized_speedup_vs_reference": round(rates["vectorised_tokens"] / rates["baseline_tokens"], 2),
        "nr_long_sentences_speedup_vs_reference": round(long["vectorised"] / long["baseline"], 2),
    }


def coherence_phase(run: BenchRun) -> Figures:
    """coherence: sentence pairs/s of the random-weight pair scorer over every consecutive pair of the set."""
    from vst_core.models.pairs import pairs_of

    config = run.config
    scorer = random_pair_scorer(config.coherence_size, run.folder, device=run.device, batch_size=32, seed=config.seed)
    pairs = [p for story in run.story_set for p in pairs_of(story.sentences)]
    scorer.score_pairs(pairs[:4])  # warm-up
    run.say(f"coherence: {len(pairs)} sentence pairs")
    start = time.perf_counter()
    scorer.score_pairs(pairs)
    return {
        "coherence_pairs_per_s": round(len(pairs) / (time.perf_counter() - start), 2),
        "coherence_batch_size": scorer.batch_size,
    }


def judge_phase(run: BenchRun) -> Figures:
    """judge: stories/s of the rubric judge, cold and from its cache (:mod:`vst_core.bench.judge`)."""
    from vst_core.bench.judge import judge_throughput

    config = run.config
    run.say(f"judge: {config.judge_stories} stories, 12 rubric prompts each, Qwen2 {config.judge_size}")
    return judge_throughput(config.judge_stories, config.judge_size, device=run.device, batch_size=8, seed=config.seed)


def judge_server_phase(run: BenchRun) -> Figures:
    """judge_server: stories/s of the served-judge client against a fixed-latency local server
    (:func:`vst_core.bench.judge.judge_server_throughput`)."""
    from vst_core.bench.judge import judge_server_throughput

    config = run.config
    run.say(
        f"judge_server: {config.judge_server_stories} stories, 12 requests each, a local server answering in "
        f"{config.judge_server_latency * 1000:.0f} ms, concurrency {', '.join(map(str, config.judge_server_concurrency))}"
    )
    return judge_server_throughput(
        config.judge_server_stories,
        latency=config.judge_server_latency,
        concurrencies=config.judge_server_concurrency,
        seed=config.seed,
    )


def rss_phase(run: BenchRun, batch_size: int) -> Figures:
    """rss: peak resident memory of a fresh process scoring ``rss_stories`` stories with every metric."""
    run.say(f"peak memory: scoring {run.config.rss_stories} stories with every metric in a separate process")
    return peak_rss(run.config, batch_size)


# --------------------------------------------------------------------------- the run


def run_bench(config: BenchConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the phases not in ``config.skip`` and return the JSON-able summary."""
    from vst_core.models.device import resolve_device

    device = resolve_device(config.device)
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
        settings = _grounding_settings(config, device, best)
        result.update(
            batch_size=best,
            signature_id=signature_id(settings),
            workers=run.clip.workers,
            preprocess=settings.image_preprocess,
        )
        if "prep" not in skip:
            result.update(prep_phase(run, settings))
        if "pipeline" not in skip:
            figures, cold = pipeline_phase(run, settings, raw)
            result.update(figures)
            if "warm" not in skip:
                result.update(warm_phase(run, settings, cold))
        if "warm" not in skip:
            result.update(warm_stories_phase(run, settings))
        for name, phase in (("text", text_phase), ("nr", nr_phase), ("coherence", coherence_phase)):
            if name not in skip:
                result.update(phase(run))
        if "judge" not in skip:
            result.update(judge_phase(run))
        if "judge_server" not in skip:
            result.update(judge_server_phase(run))
        if "rss" not in skip:
            result.update(rss_phase(run, best))
    return _with_targets(result)


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
        "coherence_arch": "BertForNextSentencePrediction(" + ("BertConfig())" if config.coherence_size == "base" else "tiny)"),
        "stories": config.stories,
        "images_per_story": config.images_per_story,
        "regions_per_image": config.regions,
        "image_size": list(config.image_size),
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


def _grounding_settings(config: BenchConfig, device: str, batch_size: int) -> Settings:
    """Settings of the pipeline and warm runs: grounding alone, with the random-weight encoder."""
    return Settings(
        metrics=("grounding",),
        clip_arch=config.arch,
        clip_pretrained=f"random-seed{config.seed}",
        clip_config=config.clip_config,
        top_b=config.regions,
        device=device,
        batch_size=batch_size,
        workers=config.workers,
        preprocess=config.preprocess,  # type: ignore[arg-type]
    )


def _with_targets(result: Figures) -> Figures:
    """``result`` with the targets and, for each figure measured, whether it met its target."""
    targets = {**TARGETS, **(CUDA_TARGETS if result.get("device") == "cuda" else {})}
    met = {k: result[k] >= v for k, v in targets.items() if k in result}
    if "peak_rss_mb" in result:
        met["peak_rss_mb"] = result["peak_rss_mb"] < RSS_TARGET_MB
    result["targets"] = {**targets, "peak_rss_mb": RSS_TARGET_MB}
    result["met"] = met
    return result


def _warm_text_tools(settings: Settings | None = None) -> None:
    """Load spaCy and the concreteness norms now, and what the run's signature reads (the spaCy
    pipeline it names, NLTK's sentence splitter and the libraries they import: about 2 s in a fresh
    process), so model, table and library loading stay out of timings as the raw forward's warm-up
    does."""
    from vst_core.signature import signature
    from vst_core.text.concreteness import phrase_concreteness
    from vst_core.text.phrases import noun_phrases

    noun_phrases(["The old dog sat by the big tree."])
    phrase_concreteness(["dog"], None)
    if settings is not None:
        signature(settings)


def _pipeline_texts(run: BenchRun, settings: Settings) -> list[str]:
    """The texts a cold run of the set sends through the text tower (parsed by a grounder of its
    own, with no memo: the timed run parses again)."""
    from vst_core.grounding.embeddings import EmbeddingCache
    from vst_core.grounding.grounder import Grounder

    grounder = Grounder(settings, run.clip, root=run.story_set.root, cache=EmbeddingCache(None))
    return grounder.texts_of(list(run.story_set))


def _cache_name(k: int) -> str:
    """The cache folder of the ``k``-th cold pipeline run (the first is the warm phase's)."""
    return "cache" if k == 0 else f"cache-{k + 1}"


def _grounding_run(run: BenchRun, settings: Settings, name: str, *, cache: str = "cache") -> float:
    """Seconds of grounding the set into ``name``.jsonl, over the embedding cache in folder ``cache``."""
    from vst_core.grounding.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    models = Models(settings, clip=run.clip, cache=EmbeddingCache(run.folder / cache / "embeddings.sqlite"))
    start = time.perf_counter()
    summary = score_story_set(run.story_set, settings, run.folder / f"{name}.jsonl", overwrite=True, models=models)
    seconds = time.perf_counter() - start
    if summary.failed:
        raise RuntimeError(f"benchmark stories failed: {summary.failed[:3]}")
    return seconds


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
