"""Throughput of the scoring pipeline against the bare model forward on the same machine.

(Over 400 lines on purpose: one harness whose phases share the synthetic set, the models and the
report, so that every figure of a run is measured the same way; ``vst bench`` is its entry.)

Models are full-size architectures with random weights (the cost of a forward pass does not
depend on the weight values): open_clip ``ViT-B-32`` with ``pretrained=None`` and
``BertForNextSentencePrediction(BertConfig())``, the architecture of the default pair scorer
``bert-nsp`` (``bert-base-uncased``). The story set is synthetic (JPEG images and template
stories in a temporary folder) and the embedding cache a temporary file, so the user's cache is
untouched. Figures:

    raw_crops_per_s         bare ``encode_image`` forward on ready tensors at the best batch size tried,
                            mean of its measurements just before and just after the pipeline run
    pipeline_crops_per_s    crops encoded / seconds of a cold-cache grounding run of the set
                            (decode, crop, preprocess, encode regions and phrases, aggregate, write)
    pipeline_vs_raw         pipeline_crops_per_s / raw_crops_per_s
    warm_speedup            cold run seconds / seconds of the same run again with the cache
    nr_speedup_vs_reference RoViST-NR stories/s of the vectorised pass (``score --no-spans``) over
                            :func:`reference_nr`, both from the sentences with one tokenizer;
                            also the per-story pass with repeated spans, and 4x longer sentences
    coherence_pairs_per_s   sentence pairs/s of the pair scorer
    peak_rss_mb             peak resident memory of a separate process scoring ``rss_stories``
                            stories with every metric (models loaded once)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.reference_code import reference_nr
from vst_core.config import Settings
from vst_core.data import StorySet, read_story_set
from vst_core.models.clip import ClipEncoder
from vst_core.models.pairs import TransformerPairScorer
from vst_core.signature import signature_id

#: Targets the figures are read against (CPU and GPU alike).
TARGETS: dict[str, float] = {"pipeline_vs_raw": 0.85, "warm_speedup": 20.0, "nr_speedup_vs_reference": 20.0}
#: Peak memory target for scoring ``rss_stories`` stories on CPU, in MB.
RSS_TARGET_MB = 4000.0
PHASES: tuple[str, ...] = ("raw", "pipeline", "warm", "nr", "text", "coherence", "rss")

_ADJECTIVES = (
    "old red small big wooden bright dark happy tall green blue white black young quiet busy sunny "
    "rainy colorful empty crowded beautiful tiny huge shiny dusty famous local fresh warm cold"
).split()
_NOUNS = (
    "dog cat beach park house car tree boat bridge church table cake ball girl boy man woman family "
    "friend street city river lake mountain garden window door flower bird horse train bus road "
    "building tower market shop kitchen dinner picture camera hat dress shirt guitar stage crowd "
    "team field fence chair bench sign lamp"
).split()
_VERBS = "saw found visited liked watched painted passed photographed admired reached".split()
_TEMPLATES = (
    "We {v} the {a} {n} near the {b} {m}.",
    "Then my {n} {v} a {a} {m} by the {b} {o}.",
    "The {a} {n} was next to the {b} {m}.",
    "Later we {v} the {a} {n} and the {m}.",
    "Finally the {a} {n} {v} our {b} {m} at the {o}.",
)


def _fill(template: str, pick: random.Random) -> str:
    """One synthetic sentence: a template with random verb, adjectives and nouns."""
    return template.format(
        v=pick.choice(_VERBS),
        a=pick.choice(_ADJECTIVES),
        b=pick.choice(_ADJECTIVES),
        n=pick.choice(_NOUNS),
        m=pick.choice(_NOUNS),
        o=pick.choice(_NOUNS),
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
    nr_stories: int = 5000
    rss_stories: int = 200
    rss_regions: int = 1
    rss_stories_per_sequence: int = 5
    device: str = "auto"
    workers: int = 0
    skip: tuple[str, ...] = ()
    seed: int = 0


@dataclass
class _Log:
    quiet: bool = False
    start: float = field(default_factory=time.perf_counter)

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"[bench {time.perf_counter() - self.start:6.1f}s] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- inputs


def synthetic_story_set(
    folder: Path, stories: int, images_per_story: int, size: tuple[int, int], *, stories_per_sequence: int = 1, seed: int = 0
) -> StorySet:
    """Write ``stories`` template stories of 5 sentences over JPEG images into ``folder`` and read
    them back; ``stories_per_sequence`` stories share one image sequence (as VIST's annotators do)."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    from PIL import Image

    width, height = size
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    records: list[dict[str, Any]] = []
    sequences = -(-stories // stories_per_sequence)
    for q in range(sequences):
        names = []
        for k in range(images_per_story):
            a, b, c = rng.uniform(0.005, 0.05, 3)
            base = np.stack([np.sin(xx * a + q), np.cos(yy * b + k), np.sin((xx + yy) * c)], axis=-1)
            noise = rng.normal(0, 0.15, (height, width, 3))
            pixels = np.clip((base + noise + 1) * 127.5, 0, 255).astype(np.uint8)
            name = f"images/s{q:05d}_{k}.jpg"
            Image.fromarray(pixels).save(folder / name, quality=90)
            names.append(name)
        for r in range(stories_per_sequence):
            if len(records) == stories:
                break
            sentences = [_fill(t, pick) for t in _TEMPLATES]
            records.append(
                {"story_id": f"q{q}-r{r}", "sequence_id": f"q{q}", "system": f"sys{r}", "images": names, "sentences": sentences}
            )
    path = folder / "stories.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return read_story_set(path, check_images=False)


def random_clip(
    arch: str, *, device: str, batch_size: int, workers: int = 0, model_config: str | None = None, seed: int = 0
) -> ClipEncoder:
    """open_clip ``arch`` with random weights (``pretrained=None``) behind the product's encoder."""
    import open_clip
    import torch

    from vst_core.models.device import resolve_device

    if model_config:
        open_clip.add_model_config(model_config)
    torch.manual_seed(seed)
    model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
    device = resolve_device(device)
    return ClipEncoder(
        model,
        preprocess,
        open_clip.get_tokenizer(arch),
        f"{arch}/random-seed{seed}",
        device=device,
        batch_size=batch_size,
        workers=workers,
    )


def random_pair_scorer(size: str, folder: Path, *, device: str, batch_size: int, seed: int = 0) -> TransformerPairScorer:
    """``BertForNextSentencePrediction`` of ``bert-base`` size (or tiny) with random weights and a
    word-level vocabulary covering the synthetic stories (one token per word, as for common words)."""
    import torch
    from transformers import BertConfig, BertForNextSentencePrediction, BertTokenizerFast  # type: ignore[attr-defined]

    words = sorted(set(_ADJECTIVES + _NOUNS + _VERBS + " ".join(_TEMPLATES).lower().replace(".", " ").split()))
    words = [w for w in words if "{" not in w] + [".", ","]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    config = (
        BertConfig()
        if size == "base"
        else BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    )
    torch.manual_seed(seed)
    model = BertForNextSentencePrediction(config)
    return TransformerPairScorer(f"bert-nsp:random-{size}", tokenizer, model, positive=0, device=device, batch_size=batch_size)


# --------------------------------------------------------------------------- phases


def raw_image_throughput(encoder: ClipEncoder, batch_sizes: Sequence[int], seconds: float) -> dict[int, float]:
    """Crops/s of the bare ``encode_image`` forward on ready tensors, per batch size."""
    import torch

    model, device = encoder.model, encoder.device
    size = getattr(getattr(model, "visual", None), "image_size", 224)
    height, width = size if isinstance(size, (tuple, list)) else (size, size)
    out: dict[int, float] = {}
    for bs in batch_sizes:
        x = torch.randn(bs, 3, height, width, device=device)
        with torch.inference_mode(), torch.autocast("cuda", enabled=device == "cuda"):
            model.encode_image(x)  # warm-up
            if device == "cuda":
                torch.cuda.synchronize()
            done, start = 0, time.perf_counter()
            while done < bs or time.perf_counter() - start < seconds:
                model.encode_image(x)
                done += bs
            if device == "cuda":
                torch.cuda.synchronize()
        out[bs] = done / (time.perf_counter() - start)
    return out


def _rate(run: Callable[[], int], seconds: float) -> float:
    """Items/s of ``run`` (returning its item count), repeated for at least ``seconds``."""
    done, start = 0, time.perf_counter()
    while done == 0 or time.perf_counter() - start < seconds:
        done += run()
    return done / (time.perf_counter() - start)


def synthetic_sentences(stories: int, *, join: int = 1, seed: int = 0) -> list[list[str]]:
    """Template stories of five sentences (about ten tokens each, as in VIST); ``join`` > 1 glues
    that many template sentences into one, for the long-sentence comparison."""
    pick = random.Random(seed)
    out = []
    for _ in range(stories):
        parts = [_fill(pick.choice(_TEMPLATES), pick) for _ in range(5 * join)]
        out.append([" ".join(parts[k : k + join]).replace(". ", ", ") for k in range(0, len(parts), join)])
    return out


def text_throughput(texts: list[list[str]], seconds: float = 1.0) -> dict[str, float]:
    """Stories/s of the text side alone: splitting a story given as one text (Punkt), and noun
    phrases with spaCy story by story against one ``nlp.pipe`` over a whole batch."""
    from vst_core.text.phrases import load_spacy, noun_phrases, noun_phrases_many
    from vst_core.text.public import split_story

    joined = [" ".join(sentences) for sentences in texts]
    nlp = load_spacy()
    noun_phrases(["A warm-up sentence."], nlp)

    def split() -> int:
        for text in joined:
            split_story(text)
        return len(joined)

    def per_story() -> int:
        for sentences in texts:
            noun_phrases(sentences, nlp)
        return len(texts)

    def batched() -> int:
        noun_phrases_many(texts, nlp)
        return len(texts)

    return {
        "split": _rate(split, seconds),
        "phrases_per_story": _rate(per_story, seconds),
        "phrases_batched": _rate(batched, seconds),
    }


def nr_throughput(texts: list[list[str]], seconds: float = 1.0) -> dict[str, float]:
    """Stories/s of RoViST-NR (reference variant, n = 4) from sentences to numbers, three ways,
    all with the same tokenizer: the vectorised pass of ``vst score --no-spans``, the default
    per-story pass with the repeated spans, and :func:`reference_nr`; every score is
    checked to agree with the baseline first."""
    from vst_core.config import Settings
    from vst_core.data import Story
    from vst_core.metrics.redundancy import non_redundancy_scores
    from vst_core.scoring.story import redundancy_of, redundancy_without_spans
    from vst_core.text.phrases import token_texts

    settings = Settings(metrics=("redundancy",), nr_variant="reference")
    stories = [Story(f"s{k}", f"s{k}", "bench", tuple(sentences)) for k, sentences in enumerate(texts)]
    fast = redundancy_without_spans(stories, settings)
    for story in stories:
        ref = reference_nr([token_texts(s) for s in story.sentences])
        ours = fast[story.key].score
        if (ours is None) != (ref is None) or (ours is not None and abs(ours - ref) > 1e-9):  # type: ignore[operator]
            raise AssertionError(f"NR differs from the baseline on {story.story_id}: {ours} vs {ref}")

    def vectorised() -> int:
        redundancy_without_spans(stories, settings)
        return len(stories)

    def with_spans() -> int:
        for story in stories:
            redundancy_of(story, settings.nr_ngram, settings.nr_variant)
        return len(stories)

    def baseline() -> int:
        for story in stories:
            reference_nr([token_texts(s) for s in story.sentences])
        return len(stories)

    tokens = [[token_texts(s) for s in story.sentences] for story in stories]

    def vectorised_tokens() -> int:
        non_redundancy_scores(tokens, n=4, variant="reference")
        return len(tokens)

    def baseline_tokens() -> int:
        for story_tokens in tokens:
            reference_nr(story_tokens)
        return len(tokens)

    return {
        "vectorised": _rate(vectorised, seconds),
        "spans": _rate(with_spans, seconds),
        "baseline": _rate(baseline, seconds),
        "vectorised_tokens": _rate(vectorised_tokens, seconds),
        "baseline_tokens": _rate(baseline_tokens, seconds),
    }


def _warm_text_tools() -> None:
    """Load spaCy and the concreteness norms now, so model and table loading stay out of timings."""
    from vst_core.text.concreteness import phrase_concreteness
    from vst_core.text.phrases import noun_phrases

    noun_phrases(["The old dog sat by the big tree."])
    phrase_concreteness(["dog"], None)


def _grounding_run(story_set: StorySet, settings: Settings, clip: ClipEncoder, cache: Any, out: Path) -> float:
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    models = Models(settings, clip=clip, cache=cache)
    start = time.perf_counter()
    summary = score_story_set(story_set, settings, out, overwrite=True, models=models)
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


def run_bench(config: BenchConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the phases not in ``config.skip`` and return the JSON-able summary."""
    import torch

    from vst_core.grounding.embeddings import EmbeddingCache
    from vst_core.models.device import resolve_device

    say = log or _Log()
    device = resolve_device(config.device)
    batch_sizes = config.batch_sizes or ((64, 128, 256, 512) if device == "cuda" else (8, 16, 32))
    result: dict[str, Any] = {
        "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "clip_arch": config.arch,
        "coherence_arch": "BertForNextSentencePrediction(" + ("BertConfig())" if config.coherence_size == "base" else "tiny)"),
        "stories": config.stories,
        "images_per_story": config.images_per_story,
        "regions_per_image": config.regions,
        "image_size": list(config.image_size),
        "batch_sizes_tried": list(batch_sizes),
    }
    with tempfile.TemporaryDirectory(prefix="vst-bench-") as tmp:
        folder = Path(tmp)
        say(f"writing {config.stories} synthetic stories ({config.images_per_story} images each)")
        story_set = synthetic_story_set(
            folder / "set", config.stories, config.images_per_story, config.image_size, seed=config.seed
        )
        clip = random_clip(
            config.arch,
            device=device,
            batch_size=batch_sizes[0],
            workers=config.workers,
            model_config=config.clip_config,
            seed=config.seed,
        )
        best = batch_sizes[0]
        if "raw" not in config.skip:
            say(f"raw encode_image forward at batch sizes {list(batch_sizes)}")
            raw = raw_image_throughput(clip, batch_sizes, config.raw_seconds)
            best = max(raw, key=raw.__getitem__)
            result["raw_crops_per_s_by_batch"] = {str(k): round(v, 2) for k, v in raw.items()}
            result["raw_crops_per_s"] = round(raw[best], 2)
            say(f"raw: {raw[best]:.1f} crops/s at batch {best}")
        result["batch_size"] = best
        clip.batch_size = best
        settings = Settings(
            metrics=("grounding",),
            clip_arch=config.arch,
            clip_pretrained=f"random-seed{config.seed}",
            clip_config=config.clip_config,
            top_b=config.regions,
            device=device,
            batch_size=best,
            workers=config.workers,
        )
        result["signature_id"] = signature_id(settings)
        result["workers"] = clip.workers
        if "pipeline" not in config.skip:
            _warm_text_tools()
            cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite")
            if "raw_crops_per_s" in result:  # the forward at the chosen size, just before the run
                before = raw[best] if best == batch_sizes[-1] else raw_image_throughput(clip, (best,), config.raw_seconds)[best]
            say("pipeline: grounding the set with a cold cache")
            encoded = clip.images_encoded
            cold = _grounding_run(story_set, settings, clip, cache, folder / "cold.jsonl")
            crops = clip.images_encoded - encoded
            result["crops_encoded"] = crops
            result["pipeline_seconds"] = round(cold, 3)
            result["pipeline_crops_per_s"] = round(crops / cold, 2)
            say(f"pipeline: {crops} crops in {cold:.1f}s = {crops / cold:.1f} crops/s")
            if "raw_crops_per_s" in result:
                # the raw forward again at the chosen batch size, right after the pipeline: the limit is
                # the mean of the measurements just before and just after it, so a drift in the
                # machine's speed (shared cores, clock changes) moves both sides of the ratio alike
                again = raw_image_throughput(clip, (best,), config.raw_seconds)[best]
                result["raw_crops_per_s_before"] = round(before, 2)
                result["raw_crops_per_s_after"] = round(again, 2)
                result["raw_crops_per_s"] = round((before + again) / 2, 2)
                result["pipeline_vs_raw"] = round(crops / cold / result["raw_crops_per_s"], 3)
                say(f"raw again at batch {best}: {again:.1f} crops/s")
            if "warm" not in config.skip:
                say("warm: the same run again with the cache")
                warm = _grounding_run(story_set, settings, clip, EmbeddingCache(cache.path), folder / "warm.jsonl")
                result["warm_seconds"] = round(warm, 3)
                result["warm_speedup"] = round(cold / warm, 1)
                say(f"warm: {warm:.2f}s ({cold / warm:.1f}x)")
        if "text" not in config.skip:
            say(f"text side (sentence split, noun phrases) on {min(config.nr_stories, 500)} stories")
            rates = text_throughput(
                synthetic_sentences(min(config.nr_stories, 500), seed=config.seed), min(1.0, config.raw_seconds)
            )
            result["text_split_stories_per_s"] = round(rates["split"], 1)
            result["text_phrases_per_story_stories_per_s"] = round(rates["phrases_per_story"], 1)
            result["text_phrases_batched_stories_per_s"] = round(rates["phrases_batched"], 1)
        if "nr" not in config.skip:
            say(f"RoViST-NR against the double-loop baseline on {config.nr_stories} stories")
            seconds = min(1.0, config.raw_seconds)
            rates = nr_throughput(synthetic_sentences(config.nr_stories, seed=config.seed), seconds)
            result["nr_stories"] = config.nr_stories
            result["nr_stories_per_s"] = round(rates["vectorised"], 1)
            result["nr_with_spans_stories_per_s"] = round(rates["spans"], 1)
            result["nr_reference_stories_per_s"] = round(rates["baseline"], 1)
            result["nr_speedup_vs_reference"] = round(rates["vectorised"] / rates["baseline"], 2)
            result["nr_tokenized_speedup_vs_reference"] = round(rates["vectorised_tokens"] / rates["baseline_tokens"], 2)
            long = nr_throughput(synthetic_sentences(max(config.nr_stories // 4, 1), join=4, seed=config.seed), seconds)
            result["nr_long_sentences_speedup_vs_reference"] = round(long["vectorised"] / long["baseline"], 2)
        if "coherence" not in config.skip:
            from vst_core.models.pairs import pairs_of

            scorer = random_pair_scorer(config.coherence_size, folder, device=device, batch_size=32, seed=config.seed)
            pairs = [p for story in story_set for p in pairs_of(story.sentences)]
            scorer.score_pairs(pairs[:4])  # warm-up
            say(f"coherence: {len(pairs)} sentence pairs")
            start = time.perf_counter()
            scorer.score_pairs(pairs)
            result["coherence_pairs_per_s"] = round(len(pairs) / (time.perf_counter() - start), 2)
            result["coherence_batch_size"] = scorer.batch_size
        if "rss" not in config.skip:
            say(f"peak memory: scoring {config.rss_stories} stories with every metric in a separate process")
            result.update(peak_rss(config, best))
    met = {k: result[k] >= v for k, v in TARGETS.items() if k in result}
    if "peak_rss_mb" in result:
        met["peak_rss_mb"] = result["peak_rss_mb"] < RSS_TARGET_MB
    result["targets"] = {**TARGETS, "peak_rss_mb": RSS_TARGET_MB}
    result["met"] = met
    return result


def peak_rss(config: BenchConfig, batch_size: int) -> dict[str, Any]:
    """Run :func:`rss_worker` in a fresh Python process and return its report."""
    payload = json.dumps({**asdict(config), "batch_size": batch_size})
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [env.get("PYTHONPATH")])])
    code = "import sys; sys.path.insert(0, sys.argv[2]); from benchmarks.harness import rss_worker; rss_worker(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, payload, str(Path(__file__).resolve().parent.parent)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory benchmark process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def rss_worker(payload: str) -> None:
    """Score a synthetic set with every metric (random-weight models) and print the peak RSS."""
    from vst_core.grounding.embeddings import EmbeddingCache
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    raw = json.loads(payload)
    batch_size = int(raw.pop("batch_size"))
    raw["image_size"] = tuple(raw["image_size"])
    raw["batch_sizes"] = tuple(raw["batch_sizes"])
    raw["skip"] = tuple(raw["skip"])
    config = BenchConfig(**raw)
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
        scorer = random_pair_scorer(config.coherence_size, folder, device=config.device, batch_size=batch_size, seed=config.seed)
        settings = Settings(
            metrics=("redundancy", "coherence", "grounding", "clipscore"),
            clip_arch=config.arch,
            clip_pretrained=f"random-seed{config.seed}",
            clip_config=config.clip_config,
            top_b=config.rss_regions,
            device=clip.device,
            batch_size=batch_size,
            workers=config.workers,
        )
        models = Models(settings, clip=clip, pair_scorer=scorer, cache=EmbeddingCache(folder / "embeddings.sqlite"))
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


# --------------------------------------------------------------------------- command line


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``vst bench``."""
    d = BenchConfig()
    parser.add_argument("--stories", type=int, default=d.stories, help="stories in the throughput set")
    parser.add_argument("--images-per-story", type=int, default=d.images_per_story, help="images per story")
    parser.add_argument("--regions", type=int, default=d.regions, help="regions per image (top-b)")
    parser.add_argument("--image-size", default="x".join(map(str, d.image_size)), help="synthetic image size WxH")
    parser.add_argument("--arch", default=d.arch, help="open_clip architecture, built with random weights")
    parser.add_argument("--clip-config", default=None, help="open_clip model-config JSON that defines --arch")
    parser.add_argument(
        "--coherence-size",
        choices=("base", "tiny"),
        default=d.coherence_size,
        help="pair-scorer architecture: base = bert-base (the default bert-nsp scorer), tiny = 2 layers of width 32",
    )
    parser.add_argument(
        "--batch-sizes", default="", help="comma-separated batch sizes to try (default 8,16,32 on CPU, 64,128,256,512 on CUDA)"
    )
    parser.add_argument("--seconds", type=float, default=d.raw_seconds, help="seconds per batch size of the raw forward")
    parser.add_argument("--nr-stories", type=int, default=d.nr_stories, help="text-only stories of the RoViST-NR comparison")
    parser.add_argument("--rss-stories", type=int, default=d.rss_stories, help="stories scored by the memory process")
    parser.add_argument("--rss-regions", type=int, default=d.rss_regions, help="regions per image in the memory process")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device, help="where models run")
    parser.add_argument("--workers", type=int, default=d.workers, help="image preprocessing threads (0: one per core, at most 8)")
    parser.add_argument("--skip", default="", help=f"comma-separated phases to leave out: {', '.join(PHASES)}")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON summary to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def cmd_bench(args: argparse.Namespace) -> int:
    """``vst bench``: JSON summary on stdout (and ``--out``), a progress line per phase on stderr."""
    try:
        skip = tuple(p.strip() for p in args.skip.split(",") if p.strip())
        unknown = [p for p in skip if p not in PHASES]
        if unknown:
            raise ValueError(f"unknown phase(s) {', '.join(unknown)}; phases: {', '.join(PHASES)}")
        width, height = (int(v) for v in args.image_size.lower().split("x"))
        sizes = tuple(int(v) for v in args.batch_sizes.split(",") if v.strip())
        if (
            min(
                (
                    args.stories,
                    args.images_per_story,
                    args.regions,
                    args.nr_stories,
                    args.rss_stories,
                    args.rss_regions,
                    width,
                    height,
                    *sizes,
                )
            )
            < 1
        ):
            raise ValueError("sizes and counts must be >= 1")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config = replace(
        BenchConfig(),
        stories=args.stories,
        images_per_story=args.images_per_story,
        regions=args.regions,
        image_size=(width, height),
        arch=args.arch,
        clip_config=args.clip_config,
        coherence_size=args.coherence_size,
        batch_sizes=sizes,
        raw_seconds=args.seconds,
        nr_stories=args.nr_stories,
        rss_stories=args.rss_stories,
        rss_regions=args.rss_regions,
        device=args.device,
        workers=args.workers,
        skip=skip,
    )
    result = run_bench(config, log=_Log(quiet=args.quiet))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0
