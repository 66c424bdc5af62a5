"""CLIPScore against a transcription of jmhessel/clipscore's computation (``clipscore.py``:
``CLIPCapDataset``, ``CLIPImageDataset``, ``get_clip_score``) on the same weights and images.

The transcription is written here from the reference code's steps, independently of
``vst_core``: the caption is ``"A photo depicts " + sentence`` tokenised as ``clip.tokenize(...,
truncate=True)`` (start token, BPE, end token; cut to the context length with the end token
last), the image is resized (bicubic, shorter side) and centre-cropped to the model's input size,
converted to RGB and normalised with CLIP's mean and std; both embeddings are L2-normalised and
the pair scores 2.5 · max(cos, 0); the story's CLIPScore is the mean over its pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, ParityLog, clip_args

from vst_core.cli import main
from vst_core.data import read_story_set

pytestmark = pytest.mark.slow  # CLIP models end to end

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


def reference_tokens(text: str, context_length: int) -> list[int]:
    """``clip.tokenize(text, truncate=True)`` for one text, with the same BPE vocabulary."""
    from open_clip.tokenizer import SimpleTokenizer

    bpe = SimpleTokenizer()
    sot, eot = bpe.encoder["<start_of_text>"], bpe.encoder["<end_of_text>"]
    tokens = [sot, *bpe.encode(text), eot]
    if len(tokens) > context_length:
        tokens = tokens[:context_length]
        tokens[-1] = eot
    return tokens + [0] * (context_length - len(tokens))


def reference_clipscores(
    model: object, image_size: int, context_length: int, stories: list[tuple[list[str], list[Path]]]
) -> list[list[float]]:
    """Per story, the per-pair CLIPScores as the reference code computes them."""
    import torch
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

    transform = Compose(
        [
            Resize(image_size, interpolation=InterpolationMode.BICUBIC),
            CenterCrop(image_size),
            lambda image: image.convert("RGB"),
            ToTensor(),
            Normalize(MEAN, STD),
        ]
    )
    out = []
    with torch.no_grad():
        for sentences, images in stories:
            n = min(len(sentences), len(images))
            captions = torch.tensor([reference_tokens("A photo depicts " + s, context_length) for s in sentences[:n]])
            pixels = torch.stack([transform(Image.open(p)) for p in images[:n]])
            text = model.encode_text(captions).numpy()  # type: ignore[attr-defined]
            image = model.encode_image(pixels).numpy()  # type: ignore[attr-defined]
            text = text / np.sqrt(np.sum(text**2, axis=1, keepdims=True))
            image = image / np.sqrt(np.sum(image**2, axis=1, keepdims=True))
            out.append([float(v) for v in 2.5 * np.clip(np.sum(image * text, axis=1), 0, None)])
    return out


def tiny_model(tiny_clip: tuple[Path, Path]) -> object:
    """The tiny CLIP of the ``tiny_clip`` fixture as open_clip builds it from its checkpoint."""
    import open_clip
    import torch

    model = open_clip.create_model("vst-tiny-clip")
    model.load_state_dict(torch.load(tiny_clip[1], weights_only=True))
    return model.eval()


def sample_inputs() -> tuple[list[str], list[tuple[list[str], list[Path]]]]:
    story_set = read_story_set(SAMPLE)
    keys = [s.story_id for s in story_set]
    return keys, [(list(s.sentences), [story_set.root / p for p in s.images]) for s in story_set]


def ours(out: Path) -> dict[str, dict]:
    return {r["story_id"]: r for r in map(json.loads, out.read_text().splitlines())}


def compare(records: dict[str, dict], keys: list[str], want: list[list[float]]) -> float:
    """The largest difference per pair and per story; every story must be scored."""
    worst = 0.0
    for key, pairs in zip(keys, want, strict=True):
        got = records[key]["metrics"]["clipscore"]
        assert len(got["pairs"]) == len(pairs), key
        worst = max(worst, float(np.max(np.abs(np.asarray(got["pairs"]) - pairs))), abs(got["score"] - float(np.mean(pairs))))
    return worst


@pytest.mark.parity
def test_clipscore_equals_the_reference_computation(tiny_clip: tuple[Path, Path], tmp_path: Path, parity: ParityLog) -> None:
    """A tiny random CLIP (context length 16, so most captions are cut as clip.tokenize cuts them)."""
    model = tiny_model(tiny_clip)
    keys, stories = sample_inputs()
    want = reference_clipscores(model, 32, 16, stories)
    out = tmp_path / "scores.jsonl"
    code = main(
        [
            "score",
            str(SAMPLE),
            "--out",
            str(out),
            "--metrics",
            "clipscore",
            "--device",
            "cpu",
            "--no-progress",
            *clip_args(tiny_clip),
        ]
    )
    assert code == 0
    records = ours(out)
    worst = compare(records, keys, want)
    assert worst <= 1e-6, worst
    assert records[keys[0]]["signature"]["settings"]["clipscore_prompt"] == "A photo depicts "
    parity.record(
        metric="CLIPScore",
        reference="jmhessel/clipscore `get_clip_score` (transcribed)",
        compared=f"{len(keys)} sample stories, every sentence–image pair; tiny random CLIP (captions cut at 16 tokens)",
        figure=f"{len(keys)}/{len(keys)} stories, max |Δ| {worst:.1e}",
    )

    # the bare sentence only behind the named option, and then the numbers differ
    bare = tmp_path / "bare.jsonl"
    assert (
        main(
            [
                "score",
                str(SAMPLE),
                "--out",
                str(bare),
                "--metrics",
                "clipscore",
                "--clipscore-prompt",
                "",
                "--device",
                "cpu",
                "--no-progress",
                *clip_args(tiny_clip),
            ]
        )
        == 0
    )
    other = ours(bare)
    assert other[keys[0]]["signature"]["id"] != records[keys[0]]["signature"]["id"]
    assert any(other[k]["metrics"]["clipscore"]["pairs"] != records[k]["metrics"]["clipscore"]["pairs"] for k in keys)


@pytest.mark.real_layout
@pytest.mark.parity
def test_clipscore_with_the_default_model_equals_the_reference(
    layout: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parity: ParityLog
) -> None:
    """The default ViT-B-32/openai by its real name (random-weight replica, QuickGELU, context 77)."""
    from conftest import point_at

    from vst_core.models.clip import load_clip

    point_at(monkeypatch, layout.env())  # type: ignore[attr-defined]
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))
    model = load_clip(device="cpu").model
    keys, stories = sample_inputs()
    want = reference_clipscores(model, 224, 77, stories)
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--metrics", "clipscore", "--device", "cpu", "--no-progress"]) == 0
    worst = compare(ours(out), keys, want)
    assert worst <= 1e-6, worst
    parity.record(
        metric="CLIPScore",
        reference="jmhessel/clipscore `get_clip_score` (transcribed)",
        compared=f"{len(keys)} sample stories, every pair; ViT-B-32/openai by its real name (random-weight replica)",
        figure=f"{len(keys)}/{len(keys)} stories, max |Δ| {worst:.1e}",
    )
