"""The two image preprocessing paths: Pillow in the worker threads (``pil``) and tensors on the model's
device (``device``, run here with tensors on the CPU). Their pixels, vectors and scores agree within
the bounds the README and the GROOVIST card state; the choice is a setting in the signature."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE

from vst_core.config import Settings, SettingsError, settings_from_signature
from vst_core.images.embeddings import EmbeddingCache
from vst_core.images.options import image_preprocess
from vst_core.scoring.registry import Models

#: Documented bounds (README "Performance", docs/metrics/groovist.md).
MAX_PIXEL_LEVELS = 2
MAX_MEAN_PIXEL = 0.01
MAX_DELTA_G = 1e-3


def test_reference_profile_keeps_pillow() -> None:
    with pytest.raises(SettingsError, match="reference grounding profile"):
        Settings(grounding_profile="reference", preprocess="device")
    assert image_preprocess(Settings(grounding_profile="reference", preprocess="auto", device="cuda")) == "pil"
    with pytest.raises(SettingsError, match="preprocess must be"):
        Settings(preprocess="gpu")  # type: ignore[arg-type]


def test_signature_records_the_resolved_preprocessing() -> None:
    grounding = ("grounding",)
    assert Settings(metrics=grounding, device="cpu").as_dict()["preprocess"] == "pil"
    assert Settings(metrics=grounding, device="cpu", preprocess="device").as_dict()["preprocess"] == "device"
    assert "preprocess" not in Settings(metrics=("redundancy",), preprocess="device").as_dict()
    # a signature written before the choice existed was made with Pillow's pixels
    old = Settings(metrics=grounding, device="cpu").as_dict()
    del old["preprocess"]
    assert image_preprocess(settings_from_signature({"settings": old})) == "pil"
    again = settings_from_signature({"settings": Settings(metrics=grounding, preprocess="device").as_dict()})
    assert image_preprocess(again) == "device"


def _crops() -> list[tuple[np.ndarray, tuple[int, int, int, int]]]:
    """Every sample photo's grid regions, and crops of awkward shapes: tiny (upscaled 50x), a thin
    strip, one pixel, the whole image."""
    from PIL import Image

    from vst_core.data.regions import grid_proposals
    from vst_core.images.grounder import _pixel_box

    out = []
    for path in sorted((SAMPLE.parent / "images").iterdir()):
        pixels = np.array(Image.open(path).convert("RGB"))
        h, w = pixels.shape[:2]
        boxes = [_pixel_box(b) for b in grid_proposals(w, h)]
        boxes += [(5, 5, 9, 9), (0, 10, w, 14), (3, 3, 4, 4), (0, 0, w, h)]
        out.extend((pixels, b) for b in boxes)
    return out


@pytest.mark.slow  # torch and torchvision
def test_device_resize_gives_pillows_pixels() -> None:
    import torch
    from open_clip.transform import image_transform
    from PIL import Image

    from vst_core.models.clip_preprocess import _cut, _split_preprocess, resize_crops, tensor_transform

    preprocess = image_transform(224, is_train=False)
    transform, split = tensor_transform(preprocess), _split_preprocess(preprocess)
    assert transform is not None and split is not None
    assert (transform.size, transform.crop, transform.mode) == (224, (224, 224), "bicubic")
    worst, total, count = 0.0, 0.0, 0
    for pixels, (x1, y1, x2, y2) in _crops():
        pil = np.asarray(split[0](Image.fromarray(pixels).crop((x1, y1, x2, y2))), dtype=np.float32).transpose(2, 0, 1)
        dev = resize_crops([_cut(torch.from_numpy(pixels), (x1, y1, x2, y2))], transform)[0].numpy()
        diff = np.abs(pil - dev)
        worst, total, count = max(worst, float(diff.max())), total + float(diff.sum()), count + diff.size
    assert worst <= MAX_PIXEL_LEVELS
    assert total / count <= MAX_MEAN_PIXEL


@pytest.mark.slow  # torch and torchvision
def test_tensor_transform_refuses_what_it_cannot_reproduce() -> None:
    from torchvision import transforms as T

    from vst_core.models.clip import tensor_transform

    norm = T.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    assert tensor_transform(T.Compose([T.Resize((224, 224)), T.CenterCrop(224), T.ToTensor(), norm])) is None
    assert (
        tensor_transform(
            T.Compose([T.Resize(224, interpolation=T.InterpolationMode.NEAREST), T.CenterCrop(224), T.ToTensor(), norm])
        )
        is None
    )
    assert tensor_transform(T.Compose([T.Resize(224), T.CenterCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), norm])) is None
    found = tensor_transform(T.Compose([T.Resize(256), T.CenterCrop((200, 224)), T.ToTensor(), norm]))
    assert found is not None and (found.size, found.crop, found.mode) == (256, (200, 224), "bilinear")


def _grounded(
    tiny_clip: tuple[Path, Path], preprocess: str, cache: EmbeddingCache
) -> tuple[dict[str, np.ndarray], list[dict[str, float]]]:
    from test_grounding_pipeline import settings_for

    from vst_core.data import read_story_set

    settings = settings_for(tiny_clip, preprocess=preprocess, batch_size=7, whole_image=True)  # batches that cut through images
    story_set = read_story_set(SAMPLE)
    grounder = Models(settings, cache=cache).grounder(story_set.root)
    grounder.prepare(list(story_set))
    regions = {e.ref: np.concatenate([e.region_emb, e.whole_emb[None]]) for e in grounder.images.values()}
    scores = []
    for story in story_set:
        found = grounder.score(story)
        scores.append({name: float(record.score) for name, record in found.items()})  # type: ignore[attr-defined]
    return regions, scores


@pytest.mark.slow  # tiny CLIP end to end
def test_device_path_scores_equal_the_pillow_path_within_the_bound(tiny_clip: tuple[Path, Path]) -> None:
    cache = EmbeddingCache(None)
    pil_regions, pil_scores = _grounded(tiny_clip, "pil", cache)
    filled = cache.size()[0]
    dev_regions, dev_scores = _grounded(tiny_clip, "device", cache)
    assert cache.size()[0] > filled  # other pixels, other keys: never one path's vectors for the other
    assert pil_regions.keys() == dev_regions.keys()
    for ref in pil_regions:
        cosines = np.sum(pil_regions[ref] * dev_regions[ref], axis=1)
        assert np.all(1 - cosines <= 1e-3), ref
        assert not np.allclose(pil_regions[ref], 0)
    for pil, dev in zip(pil_scores, dev_scores, strict=True):
        assert pil.keys() == dev.keys() == {"grounding", "clipscore", "rovist_vg_clip"}
        for name in pil:
            assert abs(pil[name] - dev[name]) <= MAX_DELTA_G, name


@pytest.mark.slow  # tiny CLIP end to end
def test_device_path_reports_a_broken_image_per_story(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    import json
    import shutil

    from vst_core.data import read_story_set

    folder = tmp_path / "set"
    shutil.copytree(SAMPLE.parent, folder)
    first = json.loads((folder / "stories.jsonl").read_text().splitlines()[0])
    broken = folder / first["images"][0]
    broken.write_bytes(broken.read_bytes()[:400])  # a header, then nothing
    config, checkpoint = tiny_clip
    settings = Settings(
        metrics=("grounding",),
        clip_model="vst-tiny-clip",
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        device="cpu",
        preprocess="device",
    )
    story_set = read_story_set(folder / "stories.jsonl", check_images=False)
    grounder = Models(settings, cache=EmbeddingCache(None)).grounder(story_set.root)
    grounder.prepare(list(story_set))
    failed = [s for s in story_set if first["images"][0] in s.images]
    with pytest.raises(ValueError, match="cannot read"):
        grounder.score(failed[0])
    fine = [s for s in story_set if first["images"][0] not in s.images]
    assert fine and all(grounder.score(s)["grounding"].score is not None for s in fine)  # type: ignore[attr-defined]


@pytest.mark.slow  # builds the tiny CLIP
def test_a_batch_of_mixed_crop_shapes_comes_back_in_the_order_given(tiny_clip: tuple[Path, Path]) -> None:
    """The device path resizes a batch's crops by shape group and puts the rows back: each crop's
    vector is the one it gets encoded alone, whatever the batch size and the mix of shapes."""
    from vst_core.models.clip import load_clip

    config, checkpoint = tiny_clip
    encoder = load_clip("vst-tiny-clip", None, checkpoint=checkpoint, model_config=config, activation="gelu", device="cpu")
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((40, 60), (64, 48), (33, 90))]
    boxes = [[(0, 0, 20, 30), (5, 5, 45, 25), (0, 0, w, h), (10, 3, 30, 33)] for h, w in (im.shape[:2] for im in images)]
    sources = list(zip(images, boxes, strict=True))

    def load(source: tuple[np.ndarray, list[tuple[int, int, int, int]]]) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
        return source

    together = {}
    for batch in (3, 5, 64):
        encoder.batch_size = batch
        together[batch] = encoder.encode_crops(sources, load)
    encoder.batch_size = 1
    alone = np.concatenate([encoder.encode_crops([(im, [box])], load) for im, bs in sources for box in bs])
    for batch, vectors in together.items():
        assert vectors.shape == alone.shape
        assert np.abs(vectors - alone).max() < 1e-5, batch
