"""The grounding phases of ``vst bench``: the bare image forward, cold pipeline runs against it, the
warm rerun, the CPU's share of preprocessing and warm reruns of a large set (figures in
:mod:`vst_core.bench.harness`)."""

from __future__ import annotations

import os
import time

from vst_core.bench.inputs import synthetic_story_set
from vst_core.bench.run import BenchConfig, BenchRun, Figures, replicas, shared_run_metrics
from vst_core.bench.throughput import (
    page_faults_per_forward,
    raw_image_throughput,
    raw_text_throughput,
)
from vst_core.config import Settings


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
    """warm: the first cold run again over the vectors it cached, every record computed again;
    speed-up over ``cold`` seconds (the reported cold run's: ``pipeline_seconds / warm_seconds``)."""
    from vst_core.scoring.record_store import FILE_NAME as RECORDS_FILE

    run.say("warm: the same run again with the cache")
    # every vector cached, no record stored (e2e_warm_seconds measures a rerun the record store serves)
    (run.folder / "cache" / RECORDS_FILE).unlink(missing_ok=True)
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
    every vector cached, each a new run (nothing in memory, a new connection to the cache file, no
    record stored: every story aggregated again)."""
    from vst_core.bench.prep import noop_encoder
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.scoring.record_store import FILE_NAME as RECORDS_FILE
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    config = run.config
    folder = run.folder / "warm"
    story_set = synthetic_story_set(folder / "set", config.warm_stories, 5, (320, 240), stories_per_sequence=5, seed=config.seed)
    warm = settings.with_(metrics=shared_run_metrics("warm"))
    encoder = noop_encoder(run.clip)
    cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite")
    run.say(f"warm: filling the cache for {config.warm_stories} stories (forward a no-op)")
    own = replicas(config, folder, run.device, run.clip.batch_size, warm.metrics)
    score_story_set(story_set, warm, folder / "fill.jsonl", models=Models(warm, clip=encoder, cache=cache, **own))
    figures: Figures = {"warm_stories": config.warm_stories}
    for spans, name in ((True, "warm_stories_per_s"), (False, "warm_stories_per_s_no_spans")):
        rates = []
        for _ in range(WARM_REPEATS):
            # a new run: nothing in memory (a new connection to the cache file too), the cache folder's memo;
            # no stored record (e2e_warm_seconds measures a rerun served by the record store): every story aggregated
            (folder / "cache" / RECORDS_FILE).unlink(missing_ok=True)
            again = warm.with_(spans=spans)  # RoViST-NR's own option: --no-spans when False
            models = Models(again, clip=encoder, cache=EmbeddingCache(cache.path), **own)
            start = time.perf_counter()
            score_story_set(story_set, again, folder / "again.jsonl", overwrite=True, models=models)
            rates.append(round(config.warm_stories / (time.perf_counter() - start), 1))
        figures[name] = max(rates)  # the best of the reruns, as timeit: other work on the machine only slows a run
        figures[name + "_runs"] = rates
    run.say(f"warm: {figures['warm_stories_per_s']} stories/s ({figures['warm_stories_per_s_no_spans']} with --no-spans)")
    return figures


def grounding_settings(config: BenchConfig, device: str, batch_size: int) -> Settings:
    """Settings of the pipeline and warm runs: the metrics of the cold image runs (each metric's
    ``Bench.runs``: grounding), with the random-weight encoder."""
    return Settings(
        metrics=shared_run_metrics("grounding"),
        clip_model=config.arch,
        clip_pretrained=f"random-seed{config.seed}",
        clip_config=config.clip_config,
        top_b=config.regions,
        device=device,
        batch_size=batch_size,
        workers=config.workers,
        preprocess=config.preprocess,
    )


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
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.images.grounder import Grounder

    grounder = Grounder(settings, run.clip, root=run.story_set.root, cache=EmbeddingCache(None))
    return grounder.texts_of(list(run.story_set))


def _cache_name(k: int) -> str:
    """The cache folder of the ``k``-th cold pipeline run (the first is the warm phase's)."""
    return "cache" if k == 0 else f"cache-{k + 1}"


def _grounding_run(run: BenchRun, settings: Settings, name: str, *, cache: str = "cache") -> float:
    """Seconds of grounding the set into ``name``.jsonl, over the embedding cache in folder ``cache``."""
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    own = replicas(run.config, run.folder, run.device, run.clip.batch_size, settings.metrics)
    models = Models(settings, clip=run.clip, cache=EmbeddingCache(run.folder / cache / "embeddings.sqlite"), **own)
    start = time.perf_counter()
    summary = score_story_set(run.story_set, settings, run.folder / f"{name}.jsonl", overwrite=True, models=models)
    seconds = time.perf_counter() - start
    if summary.failed:
        raise RuntimeError(f"benchmark stories failed: {summary.failed[:3]}")
    return seconds
