"""GROOVIST's reference profile against a transcription of akskuchi/groovist (``groovist.py``,
``utils.py``) on the same weights, regions and phrases, story by story and phrase by phrase.

The transcription follows the reference code's steps, independently of ``vst_core``'s grounding
code: the story's phrases (dropped when a pronoun as a whole, each once), each phrase's weight
(whitespace words; a word's concreteness rating, else its WordNet noun lemma's; the mean over
words found, 1 when none is), ``clip.tokenize`` of the phrases, L2-normalised text embeddings;
per image the first B = 10 regions of the regions file, cut from the image (the reference code
reads regions saved as image files; here they are cut in memory with Pillow, lossless), CLIP's
preprocessing, L2-normalised image embeddings; per phrase the best cosine over the regions of
each image, then over the images; ×2.5; s ≥ θ kept, else −(θ − s); × weight; the mean.

The phrases come from our record (the reference code takes them from its own input file, made
by a separate spaCy script): this test checks everything after the text side, whose parts are
checked in ``tests/test_parity.py``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, ParityLog, clip_args
from PIL import Image
from test_clipscore_parity import MEAN, STD, reference_tokens, tiny_model

from vst_core.cli import main
from vst_core.data import read_story_set
from vst_core.formulas.grounding import THETA_PRESETS
from vst_core.text.concreteness import brysbaert_norms
from vst_core.text.wordnet import noun_lemma

pytestmark = pytest.mark.slow  # CLIP models end to end

B = 10


def regions_csv(path: Path) -> Path:
    """Twelve boxes per sample image (integer and fractional corners), more than B, in a regions CSV."""
    story_set = read_story_set(SAMPLE)
    names = sorted({p for s in story_set for p in s.images})
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["image_name", "image_id", "bbox", "object", "score"])
        for k, name in enumerate(names):
            w, h = Image.open(story_set.root / name).size
            for j in range(12):
                a, b = (j % 4) / 5, (j // 4) / 4
                box = [a * w + 0.37 * j, b * h + 0.5, min(w, a * w + w / 2 + 1.25 * j), min(h, b * h + h / 2)]
                out.writerow([name, k, json.dumps([round(v, 2) for v in box]), f"thing{j}", 1.0])
    return path


def reference_weights(phrases: list[str]) -> list[float]:
    """``utils.get_concreteness_ratings`` (phrases already filtered) with the same ratings and lemmas."""
    ratings = brysbaert_norms()
    weights = []
    for phrase in phrases:
        total, count = 0.0, 0
        for word in phrase.strip().split(" "):
            if word in ratings:
                total, count = total + ratings[word], count + 1
            elif noun_lemma(word) in ratings:
                total, count = total + ratings[noun_lemma(word)], count + 1
        weights.append(total / count if count else 1.0)
    return weights


def reference_groovist(
    model: object,
    size: int,
    context: int,
    phrases: list[str],
    images: list[Path],
    boxes: dict[str, list[list[float]]],
    theta: float,
) -> tuple[float, list[float]]:
    """(G, per-phrase scores) as ``groovist.py`` computes them."""
    import torch
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

    preprocess = Compose(
        [
            Resize(size, interpolation=InterpolationMode.BICUBIC),
            CenterCrop(size),
            lambda i: i.convert("RGB"),
            ToTensor(),
            Normalize(MEAN, STD),
        ]
    )
    with torch.no_grad():
        text = model.encode_text(torch.tensor([reference_tokens(p, context) for p in phrases]))  # type: ignore[attr-defined]
        text = torch.nn.functional.normalize(text, p=2, dim=-1)
        alignment = torch.zeros((len(images), len(phrases)))
        for i, path in enumerate(images):
            image = Image.open(path)
            crops = [preprocess(image.crop(tuple(box)).convert("RGB")).unsqueeze(0) for box in boxes[path.name][:B]]
            regions = torch.nn.functional.normalize(model.encode_image(torch.stack(crops).squeeze(1)), p=2, dim=-1)  # type: ignore[attr-defined]
            alignment[i] = torch.max(text @ regions.T, dim=1)[0]
        scores = torch.max(alignment, dim=0)[0] * 2.5
        scores = torch.where(scores >= theta, scores, -(theta - scores)) * torch.tensor(reference_weights(phrases))
    return float(scores.sum() / scores.size()[0]), [float(v) for v in scores]


def compare(out: Path, model: object, size: int, context: int, regions: Path) -> tuple[int, float, int]:
    """(stories compared, largest |Δ| of G or of a phrase's contribution / its weight, phrases compared)."""
    story_set = read_story_set(SAMPLE)
    boxes: dict[str, list[list[float]]] = {}
    with regions.open() as fh:
        for row in csv.DictReader(fh):
            boxes.setdefault(Path(row["image_name"]).name, []).append(json.loads(row["bbox"]))
    records = {r["story_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    worst, n_phrases, n_stories = 0.0, 0, 0
    for story in story_set:
        grounding = records[story.story_id]["metrics"]["grounding"]
        phrases = [p["text"] for p in grounding["phrases"]]
        if not phrases:
            assert grounding["unbounded"] is None
            continue
        g, per_phrase = reference_groovist(
            model, size, context, phrases, [story_set.root / p for p in story.images], boxes, THETA_PRESETS["VIST"]
        )
        ours = [p["contribution"] for p in grounding["phrases"]]
        weights = np.asarray([p["weight"] for p in grounding["phrases"]])
        # G to 1e-6; a phrase's contribution per unit of weight (weights reach 5, the reference runs in float32)
        worst = max(worst, abs(grounding["unbounded"] - g), float(np.max(np.abs(np.asarray(ours) - per_phrase) / weights)))
        assert abs(grounding["score"] - np.tanh(g)) <= 1e-6
        n_phrases += len(phrases)
        n_stories += 1
    return n_stories, worst, n_phrases


def check(model: object, size: int, context: int, clip: list[str], tmp_path: Path, parity: ParityLog, models: str) -> None:
    """``vst score --grounding-profile reference`` on the sample against the transcription, recorded."""
    regions = regions_csv(tmp_path / "regions.csv")
    out = tmp_path / "scores.jsonl"
    args = ["score", str(SAMPLE), "--out", str(out), "--metrics", "grounding", "--grounding-profile", "reference"]
    assert main([*args, "--regions", str(regions), "--device", "cpu", "--no-progress", *clip]) == 0
    stories, worst, phrases = compare(out, model, size, context, regions)
    assert stories >= 7 and worst <= 1e-6, (stories, worst)
    parity.record(
        metric="GROOVIST (`--grounding-profile reference`)",
        reference="akskuchi/groovist `groovist.py` + `utils.py` (transcribed)",
        compared=f"{stories} sample stories, {phrases} phrases, 12 boxes per image (B = 10, fractional corners), θ VIST; {models}",
        figure=f"G and every phrase's contribution / weight, max |Δ| {worst:.1e}",
    )


@pytest.mark.parity
def test_groovist_reference_profile_equals_the_reference_code(
    tiny_clip: tuple[Path, Path], tmp_path: Path, parity: ParityLog
) -> None:
    check(tiny_model(tiny_clip), 32, 16, clip_args(tiny_clip), tmp_path, parity, "tiny random CLIP")


@pytest.mark.real_layout
@pytest.mark.parity
def test_groovist_with_the_default_model_equals_the_reference_code(
    layout: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parity: ParityLog
) -> None:
    from conftest import point_at

    from vst_core.models.clip import load_clip

    point_at(monkeypatch, layout.env())  # type: ignore[attr-defined]
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))
    models = "ViT-B-32/openai by its real name (random-weight replica)"
    check(load_clip(device="cpu").model, 224, 77, [], tmp_path, parity, models)
