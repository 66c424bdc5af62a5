"""The benchmark's inputs: a synthetic story set (JPEG images and template stories written into a
folder), template sentences, and full-size models with random weights behind the product's adapters
(the cost of a forward pass does not depend on the weight values, so nothing is downloaded)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.data import StorySet, read_story_set
from vst_core.models.clip import ClipEncoder
from vst_core.models.pairs import TransformerPairScorer

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


def synthetic_sentences(stories: int, *, join: int = 1, seed: int = 0) -> list[list[str]]:
    """Template stories of five sentences (about ten tokens each, as in VIST); ``join`` > 1 glues
    that many template sentences into one, for the long-sentence comparison."""
    pick = random.Random(seed)
    out = []
    for _ in range(stories):
        parts = [_fill(pick.choice(_TEMPLATES), pick) for _ in range(5 * join)]
        out.append([" ".join(parts[k : k + join]).replace(". ", ", ") for k in range(0, len(parts), join)])
    return out


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
