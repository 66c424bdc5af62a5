"""How far the two image preprocessing paths are apart, in pixels, vectors and scores.

``pil`` cuts and resizes each region crop with Pillow (the GROOVIST code's pixels); ``device`` cuts
the crops from the decoded image as tensors and resizes them with torch's antialiased bicubic on
the model's device. This prints, as JSON, for the bundled sample's photos and for a generated set:
the largest and mean difference of one 8-bit input value, max |Δ cosine| of every region vector,
and max |Δ score| of GROOVIST, CLIPScore and RoViST-VG-CLIP over every story, with a random-weight
ViT-B-32 (the real weights cannot be downloaded here; ``--clip-checkpoint`` takes a local file).

    python benchmarks/bench_preprocess.py [--stories 20] [--clip-checkpoint FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.bench.inputs import random_clip, synthetic_story_set
from vst_core.bench.prep import pixel_difference
from vst_core.config import Settings
from vst_core.data import StorySet, read_story_set
from vst_core.images.embeddings import EmbeddingCache
from vst_core.models.clip import ClipEncoder, load_clip
from vst_core.scoring.registry import Models

SAMPLE = Path(__file__).resolve().parent.parent / "assets" / "sample" / "stories.jsonl"
METRICS = ("grounding", "clipscore", "rovist_vg_clip")


def compare(story_set: StorySet, encoder: ClipEncoder, pretrained: str) -> dict[str, Any]:
    """Both paths over ``story_set``: pixel, vector and score differences."""
    runs = {}
    for preprocess in ("pil", "device"):
        settings = Settings(metrics=METRICS, clip_pretrained=pretrained, device=encoder.device, whole_image=True)
        settings = settings.with_(preprocess=preprocess)
        grounder = Models(settings, clip=encoder, cache=EmbeddingCache(None)).grounder(story_set.root)
        grounder.prepare(list(story_set))
        vectors = {e.ref: e.region_emb for e in grounder.images.values() if e.region_emb is not None}
        scores: list[dict[str, float]] = [
            {m: float(getattr(r, "score", None) or 0.0) for m, r in grounder.score(s).items()} for s in story_set
        ]
        runs[preprocess] = (vectors, scores)
    (pv, ps), (dv, ds) = runs["pil"], runs["device"]
    out: dict[str, Any] = {"stories": len(story_set), "regions": int(sum(len(v) for v in pv.values()))}
    out["max_abs_delta_cosine"] = float(max(np.max(np.abs(1 - np.sum(pv[k] * dv[k], axis=1))) for k in pv))
    for metric in METRICS:
        deltas = [abs(a[metric] - b[metric]) for a, b in zip(ps, ds, strict=True)]
        out[f"max_abs_delta_{metric}"] = float(max(deltas))
    images = sorted({story_set.root / ref for story in story_set for ref in story.images})
    out.update(pixel_difference(images, encoder))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=int, default=20, help="stories of the generated set")
    parser.add_argument("--clip-checkpoint", default=None, help="a local ViT-B-32 weights file instead of random weights")
    args = parser.parse_args()
    if args.clip_checkpoint:
        encoder = load_clip("ViT-B-32", None, checkpoint=args.clip_checkpoint, device="cpu")
        pretrained = "checkpoint"
    else:
        encoder, pretrained = random_clip("ViT-B-32", device="cpu", batch_size=32), "random-seed0"
    result: dict[str, Any] = {"clip": encoder.signature}
    result["sample"] = compare(read_story_set(SAMPLE), encoder, pretrained)
    with tempfile.TemporaryDirectory(prefix="vst-preprocess-") as tmp:
        generated = synthetic_story_set(Path(tmp) / "set", args.stories, 5, (500, 375), seed=1)
        result["generated"] = compare(generated, encoder, pretrained)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
