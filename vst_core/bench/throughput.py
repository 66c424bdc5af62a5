"""Rates the benchmark measures: the bare CLIP image and text forwards and the text side (a metric's
own rates are its package's: ``metrics/<name>/bench.py``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from vst_core.contract import rate
from vst_core.models.clip import ClipEncoder


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
    return rate(run, seconds)


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
        "split": rate(split, seconds),
        "phrases_per_story": rate(per_story, seconds),
        "phrases_batched": rate(batched, seconds),
    }
