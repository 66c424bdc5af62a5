"""An open_clip model built from resolved weights (:mod:`vst_core.models.clip_weights`): a
pretrained tag's file (downloaded first when missing and reachable), an open_clip checkpoint, or
an OpenAI file (TorchScript archive or state dict) read for its tensors only. The encoder that
runs it is :class:`vst_core.models.clip.ClipEncoder`."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from vst_core.models.clip_weights import (
    OPENAI_META,
    OPENAI_PREPROCESS,
    ClipWeights,
    clip_cache_hint,
    resolve_clip_weights,
    short_error,
)
from vst_core.models.hub import WeightsUnavailableError, hub_reachable, sniff_checkpoint


def build_clip(weights: ClipWeights, arch: str) -> tuple[Any, Any, Any]:
    """(model, image preprocessing, tokenizer) from resolved weights, on the CPU."""
    import open_clip

    assert weights.path is not None
    if weights.kind == "openai":
        model, preprocess = _build_openai(weights.path)
        return model, preprocess, open_clip.get_tokenizer("ViT-B-32")
    p = weights.preprocess
    model, _, preprocess = open_clip.create_model_and_transforms(
        arch,
        pretrained=str(weights.path),
        device="cpu",
        force_quick_gelu=weights.quick_gelu,
        image_mean=p.get("mean"),
        image_std=p.get("std"),
        image_interpolation=p.get("interpolation"),
        image_resize_mode=p.get("resize_mode"),
    )
    return model, preprocess, open_clip.get_tokenizer(arch)


def download_clip(weights: ClipWeights) -> ClipWeights:
    """Download a pretrained tag's file (as open_clip would) and resolve it again."""
    if not hub_reachable():
        raise WeightsUnavailableError(
            f"CLIP weights {weights.arch}/{weights.source} are not in the local cache ({clip_cache_hint()}) and "
            "cannot be downloaded from here. Either run `vst fetch-models` on a connected machine and copy its "
            "cache folders here, or pass a local weights file with --clip-checkpoint PATH."
        )
    from open_clip.pretrained import download_pretrained, get_pretrained_cfg

    try:
        download_pretrained(get_pretrained_cfg(weights.arch, weights.source))
    except Exception as exc:
        raise WeightsUnavailableError(
            f"CLIP weights {weights.arch}/{weights.source} could not be downloaded: {short_error(exc)}"
        ) from None
    found = resolve_clip_weights(weights.arch, weights.source)
    if found.path is None:
        raise WeightsUnavailableError(f"CLIP weights {weights.arch}/{weights.source} were downloaded but are not in the cache")
    return found


def _build_openai(path: Path) -> tuple[Any, Any]:
    """An OpenAI CLIP file (TorchScript archive or state dict) as an open_clip model (QuickGELU,
    fp32) with OpenAI's preprocessing. The TorchScript code is never run: only its tensors are read."""
    import torch
    from open_clip.model import build_model_from_openai_state_dict
    from open_clip.transform import image_transform

    if sniff_checkpoint(path) == "torchscript":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notice
            state = torch.jit.load(str(path), map_location="cpu").state_dict()
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    model = build_model_from_openai_state_dict(dict(state), quick_gelu=True, cast_dtype=None).float().eval()
    # the builder casts to fp16 on the way; load the file's tensors again so fp32 files stay exact
    model.load_state_dict({k: v.float() for k, v in state.items() if k not in OPENAI_META}, strict=False)
    p = OPENAI_PREPROCESS
    preprocess = image_transform(
        model.visual.image_size,
        is_train=False,
        mean=p["mean"],
        std=p["std"],
        interpolation=p["interpolation"],
        resize_mode=p["resize_mode"],
    )
    return model, preprocess
