"""CLIP built from torch alone (``models/clip_torch.py``) is open_clip's CLIP: the same parameter
names and shapes for every plain built-in configuration, bit-equal vectors on random weights (GELU
and QuickGELU, the trimmed text path included), the same pixels from the evaluation transform, and
a build that imports neither open_clip, torchvision nor transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vst_core.models.clip_preprocess import EvalTransform, _split_preprocess, tensor_transform
from vst_core.models.clip_torch import build_plain_clip, open_clip_folder, plain_config, simple_tokenizer

pytestmark = pytest.mark.slow  # builds open_clip models

TEXTS = ["a dog on a beach", "the family went to the park and had a great time with the kids", "ok", ""]


def _plain_names() -> list[str]:
    folder = open_clip_folder()
    assert folder is not None
    return sorted(p.stem for p in (folder / "model_configs").glob("*.json") if plain_config(p.stem) is not None)


def test_every_plain_configuration_has_open_clips_parameters() -> None:
    import open_clip
    import torch

    names = _plain_names()
    assert {"ViT-B-32", "ViT-B-16", "ViT-L-14", "ViT-B-32-quickgelu"} <= set(names)
    assert plain_config("RN50") is None and plain_config("coca_ViT-B-32") is None and plain_config("no-such") is None
    for name in names:
        with torch.device("meta"):
            ours = build_plain_clip(plain_config(name) or {}, quick_gelu=False)
            theirs = open_clip.create_model(name, device="meta")
        mine = {k: (tuple(v.shape), v.dtype) for k, v in ours.state_dict().items()}
        assert mine == {k: (tuple(v.shape), v.dtype) for k, v in theirs.state_dict().items()}, name
        assert ours.context_length == theirs.context_length and ours.visual.image_size == theirs.visual.image_size


@pytest.fixture(scope="module", params=[False, True], ids=["gelu", "quickgelu"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, Path]:
    """open_clip's ViT-S-32 with random (perturbed) weights and ours loaded from its file."""
    import open_clip
    import torch

    from vst_core.models.checkpoints import read_checkpoint
    from vst_core.models.clip_build import load_exact

    torch.manual_seed(3)
    theirs = open_clip.create_model("ViT-S-32", force_quick_gelu=request.param).eval()
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.02)  # layer norms and biases away from 1 and 0
    path = tmp_path_factory.mktemp("clip") / "vit-s-32.pt"
    torch.save(theirs.state_dict(), path)
    ours = build_plain_clip(plain_config("ViT-S-32") or {}, quick_gelu=request.param)
    assert load_exact(ours, read_checkpoint(path, "CLIP weights", mmap=True))
    return theirs, ours.eval(), path


def test_vectors_equal_open_clips(pair: tuple[object, object, Path]) -> None:
    import open_clip
    import torch

    from vst_core.models.clip import _encode_text_trimmed

    theirs, ours, _ = pair
    images = torch.randn(3, 3, 224, 224)
    tokens = open_clip.get_tokenizer("ViT-S-32")(TEXTS)
    assert torch.equal(simple_tokenizer(77)(TEXTS), tokens)
    with torch.inference_mode():
        assert torch.equal(ours.encode_image(images), theirs.encode_image(images))  # type: ignore[attr-defined]
        assert torch.equal(ours.encode_text(tokens), theirs.encode_text(tokens))  # type: ignore[attr-defined]
        assert torch.equal(_encode_text_trimmed(ours, tokens), _encode_text_trimmed(theirs, tokens))


@pytest.mark.parametrize("size", [(500, 375), (375, 500), (224, 224), (50, 30), (1, 400)])
@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_eval_transform_gives_open_clips_pixels(size: tuple[int, int], mode: str) -> None:
    import torch
    from open_clip.transform import image_transform
    from PIL import Image

    rng = np.random.default_rng(sum(size))
    image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    theirs = image_transform(224, is_train=False, mean=mean, std=std, interpolation=mode, resize_mode="shortest")
    ours = EvalTransform(224, (224, 224), mode, mean, std)
    assert torch.equal(ours(image), theirs(image))
    assert tensor_transform(ours) == tensor_transform(theirs)
    split_ours, split_theirs = _split_preprocess(ours), _split_preprocess(theirs)
    assert split_ours is not None and split_theirs is not None
    assert np.array_equal(np.asarray(split_ours[0](image)), np.asarray(split_theirs[0](image)))
    assert [(tuple(n.mean), tuple(n.std)) for n in split_ours[1]] == [(tuple(n.mean), tuple(n.std)) for n in split_theirs[1]]


def test_eval_transform_pads_a_small_image_as_center_crop_does() -> None:
    import torch
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, Normalize, ToTensor

    image = Image.fromarray(np.full((5, 9, 3), 200, dtype=np.uint8))
    ours = EvalTransform(3, (8, 12), "bicubic", (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    resized = ours.pil_part(image)
    theirs = Compose([CenterCrop((8, 12)), ToTensor(), Normalize((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))])
    assert resized.size == (12, 8)
    assert torch.equal(ours(image), theirs(image.resize((5, 3), Image.Resampling.BICUBIC)))


def test_a_real_name_builds_without_open_clip(pair: tuple[object, object, Path], tmp_path: Path) -> None:
    """``load_clip("ViT-S-32", checkpoint=...)`` in a new process: our module, the same vectors,
    and none of open_clip, torchvision or transformers imported."""
    import torch

    theirs, _, path = pair
    quick = type(theirs.visual.transformer.resblocks[0].mlp.gelu).__name__ == "QuickGELU"  # type: ignore[attr-defined]
    out = tmp_path / "v.npy"
    code = (
        "import sys, numpy as np\n"
        "from vst_core.models.clip import load_clip\n"
        f"enc = load_clip('ViT-S-32', None, checkpoint={str(path)!r}, device='cpu', activation={'quickgelu' if quick else 'gelu'!r})\n"
        f"np.save({str(out)!r}, enc.encode_text({TEXTS!r}))\n"
        "print(type(enc.model).__module__, sorted(m for m in ('open_clip', 'torchvision', 'transformers') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["vst_core.models.clip_torch", "[]"]
    import open_clip

    with torch.inference_mode():
        want = torch.nn.functional.normalize(theirs.encode_text(open_clip.get_tokenizer("ViT-S-32")(TEXTS)).float(), dim=-1)  # type: ignore[attr-defined]
    assert np.array_equal(np.load(out), want.numpy())


def test_a_registered_configuration_and_other_layouts_go_through_open_clip(
    pair: tuple[object, object, Path], tmp_path: Path
) -> None:
    """A model-config JSON of the user's and a checkpoint that is not exactly the state dict (a
    prefix open_clip strips) are built by open_clip, as before."""
    import torch

    from vst_core.models.clip_build import build_clip
    from vst_core.models.clip_weights import resolve_clip_weights

    theirs, _, path = pair
    quick = type(theirs.visual.transformer.resblocks[0].mlp.gelu).__name__ == "QuickGELU"  # type: ignore[attr-defined]
    activation = "quickgelu" if quick else "gelu"
    weights = resolve_clip_weights("ViT-S-32", None, str(path), activation)
    assert type(build_clip(weights, "ViT-S-32")[0]).__module__ == "vst_core.models.clip_torch"
    assert type(build_clip(weights, "ViT-S-32", registered=True)[0]).__module__.startswith("open_clip")
    prefixed = tmp_path / "prefixed.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in torch.load(path, weights_only=True).items()}}, prefixed)
    model = build_clip(resolve_clip_weights("ViT-S-32", None, str(prefixed), activation), "ViT-S-32")[0]
    assert type(model).__module__.startswith("open_clip")
    config = json.loads(((open_clip_folder() or Path()) / "model_configs" / "ViT-S-32.json").read_text())
    assert plain_config("ViT-S-32") == config
