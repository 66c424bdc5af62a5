"""Rates the benchmark measures: the bare CLIP image and text forwards, the text side, and RoViST-NR against
the public code's double loops (:func:`reference_nr`, found only in a source checkout)."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import vst_core
from vst_core.models.clip import ClipEncoder

#: The public RoViST NR code, transcribed once for the tests and the benchmark; it lives in the
#: source checkout's ``benchmarks/`` folder and is not installed with the package.
REFERENCE_CODE = Path(vst_core.__file__).resolve().parent.parent / "benchmarks" / "reference_code.py"

ReferenceNR = Callable[[list[list[str]]], float | None]


@cache
def reference_nr() -> ReferenceNR | None:
    """``reference_nr`` of the checkout this package runs from (loaded from its file, without
    touching ``sys.path``), or None when the package is installed without a checkout."""
    if not REFERENCE_CODE.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_vst_bench_reference_code", REFERENCE_CODE)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: ReferenceNR = module.reference_nr
    return found


def _ready_batch(encoder: ClipEncoder, batch_size: int) -> Any:
    """A random (batch_size, 3, H, W) tensor on the encoder's device, H and W the visual tower's input size."""
    import torch

    size = getattr(getattr(encoder.model, "visual", None), "image_size", 224)
    height, width = size if isinstance(size, (tuple, list)) else (size, size)
    return torch.randn(batch_size, 3, height, width, device=encoder.device)


def raw_image_throughput(encoder: ClipEncoder, batch_sizes: Sequence[int], seconds: float) -> dict[int, float]:
    """Crops/s of the bare ``encode_image`` forward on ready tensors, per batch size."""
    import torch

    model, device = encoder.model, encoder.device
    out: dict[int, float] = {}
    for bs in batch_sizes:
        x = _ready_batch(encoder, bs)
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


def page_faults_per_forward(encoder: ClipEncoder, batch_size: int, forwards: int = 3) -> float:
    """Minor page faults of the process per bare ``encode_image`` forward at ``batch_size`` (after a
    warm-up): near 0 when the memory a forward frees is kept for the next
    (:func:`vst_core.models.device.keep_freed_memory`), about 10^5 on the CPU when it is handed back."""
    import resource

    import torch

    model, device, x = encoder.model, encoder.device, _ready_batch(encoder, batch_size)
    with torch.inference_mode(), torch.autocast("cuda", enabled=device == "cuda"):
        model.encode_image(x)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(forwards):
            model.encode_image(x)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / forwards


def raw_text_throughput(encoder: ClipEncoder, texts: Sequence[str], seconds: float) -> float:
    """Texts/s of the bare text-tower forward over ``texts``, tokenised beforehand and batched as
    :meth:`ClipEncoder.encode_text` batches them (by length, at its ``text_batch_size``, each
    batch cut after its longest text where the tower allows it); the whole list is run again until
    ``seconds`` have passed, after one warm-up pass."""
    import torch

    batches = encoder.text_batches(texts)
    if not batches:
        return 0.0

    def run() -> int:
        for _, tokens in batches:
            encoder.text_tower(tokens)
        if encoder.device == "cuda":
            torch.cuda.synchronize()
        return len(texts)

    run()  # warm-up
    return _rate(run, seconds)


def _rate(run: Callable[[], int], seconds: float) -> float:
    """Items/s of ``run`` (returning its item count), repeated for at least ``seconds``."""
    done, start = 0, time.perf_counter()
    while done == 0 or time.perf_counter() - start < seconds:
        done += run()
    return done / (time.perf_counter() - start)


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


def nr_throughput(texts: list[list[str]], reference: ReferenceNR, seconds: float = 1.0) -> dict[str, float]:
    """Stories/s of RoViST-NR (reference variant, n = 4) from sentences to numbers, three ways,
    all with the same tokenizer (the variant's: NLTK Punkt and Treebank words, as the public code):
    the vectorised pass of ``vst score --no-spans``, the default per-story pass with the repeated
    spans, and ``reference`` (the public code's double loops); every score is checked to agree with
    the baseline first. ``*_tokens``: the same from tokens, i.e. the numeric core alone.

    The tokenizer is most of the end-to-end time (NLTK's Treebank regular expressions run about 30
    substitutions per sentence); an earlier version of this benchmark gave the baseline our one-regex
    tokenizer instead, which made the vectorised pass look slower than the loop."""
    from vst_core.config import Settings
    from vst_core.data import Story
    from vst_core.metric_modules import rovist_nr
    from vst_core.metric_modules.rovist_nr.batch import nr_words, redundancy_of, redundancy_without_spans
    from vst_core.metrics.redundancy import non_redundancy_scores

    settings = Settings(metrics=(rovist_nr.NAME,), nr_variant="reference")
    stories = [Story(f"s{k}", f"s{k}", "bench", tuple(sentences)) for k, sentences in enumerate(texts)]
    fast = redundancy_without_spans(stories, settings)
    for story in stories:
        ref = reference(nr_words(story, "reference"))
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
            reference(nr_words(story, "reference"))
        return len(stories)

    tokens = [nr_words(story, "reference") for story in stories]

    def vectorised_tokens() -> int:
        non_redundancy_scores(tokens, n=4, variant="reference")
        return len(tokens)

    def baseline_tokens() -> int:
        for story_tokens in tokens:
            reference(story_tokens)
        return len(tokens)

    return {
        "vectorised": _rate(vectorised, seconds),
        "spans": _rate(with_spans, seconds),
        "baseline": _rate(baseline, seconds),
        "vectorised_tokens": _rate(vectorised_tokens, seconds),
        "baseline_tokens": _rate(baseline_tokens, seconds),
    }
