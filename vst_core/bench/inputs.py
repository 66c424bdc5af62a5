"""The benchmark's inputs: a synthetic story set (JPEG images and template stories written into a
folder), template sentences, and full-size models with random weights behind the product's adapters
(the cost of a forward pass does not depend on the weight values, so nothing is downloaded)."""

from __future__ import annotations

import json
import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.data import StorySet, read_story_set
from vst_core.models.clip import ClipEncoder

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


#: Textures drawn once per writer process; each photo is one of them shifted, tinted and re-noised.
_TEXTURES = 6

#: Photo sizes (width, height) of a collection as varied as VIST's Flickr photos: landscape and
#: portrait, 4:3, 3:2, 16:9 and square, from 333 to 1024 pixels a side. ``mixed`` photos cycle
#: through them, so a chunk holds every size.
MIXED_SIZES: tuple[tuple[int, int], ...] = (
    (500, 375), (375, 500), (500, 333), (333, 500), (500, 281), (640, 480), (480, 640), (1024, 768),
    (768, 1024), (1024, 683), (683, 1024), (800, 600), (600, 800), (500, 500), (1024, 576), (720, 540),
    (500, 400), (400, 500), (640, 427), (427, 640), (500, 354), (354, 500), (612, 612), (960, 720),
)  # fmt: skip

#: One photo size, or several cycled through.
Sizes = tuple[int, int] | tuple[tuple[int, int], ...]


def sizes_of(size: Sizes) -> tuple[tuple[int, int], ...]:
    """The sizes photos cycle through.

    >>> sizes_of((500, 375)), len(sizes_of(MIXED_SIZES))
    (((500, 375),), 24)
    """
    if len(size) == 2 and all(isinstance(v, int) for v in size):
        return (size,)  # type: ignore[return-value]
    return tuple(size)  # type: ignore[arg-type]


def _texture(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    a, b, c = rng.uniform(0.005, 0.05, 3)
    base = np.stack([np.sin(xx * a), np.cos(yy * b), np.sin((xx + yy) * c)], axis=-1)
    return np.clip((base + rng.normal(0, 0.15, (height, width, 3)) + 1) * 127.5, 0, 255).astype(np.uint8)


def _write_part(job: tuple[Path, list[tuple[str, tuple[int, int]]], int]) -> None:
    """Write the photos ``(name, (width, height))`` under ``folder``: distinct content each (shift,
    tint, noise), cut from textures of the largest size."""
    from PIL import Image

    folder, named, seed = job
    rng = np.random.default_rng(seed)
    full_w, full_h = max(w for _, (w, _) in named), max(h for _, (_, h) in named)
    textures = [_texture(rng, full_w, full_h) for _ in range(_TEXTURES)]
    for name, (width, height) in named:
        base = textures[int(rng.integers(_TEXTURES))][:height, :width]
        shifted = np.roll(base, (int(rng.integers(height)), int(rng.integers(width))), axis=(0, 1))
        tint = rng.integers(-40, 40, 3).astype(np.int16)
        noise = rng.integers(-12, 12, (height, width, 1), dtype=np.int16)
        pixels = np.clip(shifted.astype(np.int16) + tint + noise, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / name, quality=90)


def write_photos(folder: Path, names: list[str], size: Sizes, *, seed: int = 0, workers: int = 0) -> None:
    """Write the JPEG photos ``names`` (paths under ``folder``) in ``workers`` processes (one per
    core): textured, each of distinct content, about as costly to decode as a VIST photo; of one
    size, or cycling through several (:data:`MIXED_SIZES`)."""
    cycle = sizes_of(size)
    named = [(name, cycle[k % len(cycle)]) for k, name in enumerate(names)]
    workers = max(1, min(workers or os.cpu_count() or 1, len(names)))
    jobs = [(folder, named[k::workers], seed * 1000 + k) for k in range(workers) if named[k::workers]]
    if len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=len(jobs)) as pool:
            list(pool.map(_write_part, jobs))
    else:
        for job in jobs:
            _write_part(job)


def synthetic_story_set(
    folder: Path, stories: int, images_per_story: int, size: Sizes, *, stories_per_sequence: int = 1, seed: int = 0
) -> StorySet:
    """Write ``stories`` template stories of 5 sentences over JPEG images into ``folder`` and read
    them back; ``stories_per_sequence`` stories share one image sequence (as VIST's annotators do).
    The photos are written by one process per core (:func:`write_photos`)."""
    pick = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    records: list[dict[str, Any]] = []
    sequences = -(-stories // stories_per_sequence)
    photos: list[str] = []
    for q in range(sequences):
        names = [f"images/s{q:05d}_{k}.jpg" for k in range(images_per_story)]
        photos.extend(names)
        for r in range(stories_per_sequence):
            if len(records) == stories:
                break
            sentences = [_fill(t, pick) for t in _TEMPLATES]
            records.append(
                {"story_id": f"q{q}-r{r}", "sequence_id": f"q{q}", "system": f"sys{r}", "images": names, "sentences": sentences}
            )
    write_photos(folder, photos, size, seed=seed)
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


def synthetic_words() -> tuple[str, ...]:
    """Every word of the synthetic stories, lower-cased, with their punctuation (a tokenizer's
    vocabulary: one token per word, as for common words)."""
    words = sorted(set(_ADJECTIVES + _NOUNS + _VERBS + " ".join(_TEMPLATES).lower().replace(".", " ").split()))
    return (*(w for w in words if "{" not in w), ".", ",")
