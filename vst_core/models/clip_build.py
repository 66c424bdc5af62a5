"""An open_clip model built from resolved weights (:mod:`vst_core.models.clip_weights`): a
pretrained tag's file (downloaded first when missing and reachable), an open_clip checkpoint, or
an OpenAI file (TorchScript archive or state dict) read for its tensors only. Every file is read
once, by :func:`vst_core.models.checkpoints.read_checkpoint` (nothing in it runs, every weight is
finite); open_clip gets the tensors, never the file. The encoder that runs it is
:class:`vst_core.models.clip.ClipEncoder`."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vst_core.models.checkpoints import PICKLED, CheckpointFormat, read_checkpoint, sniff_checkpoint
from vst_core.models.clip_preprocess import EvalTransform
from vst_core.models.clip_torch import build_plain_clip, plain_config, simple_tokenizer
from vst_core.models.clip_weights import (
    OPENAI_META,
    OPENAI_PREPROCESS,
    ClipWeights,
    clip_cache_hint,
    resolve_clip_weights,
    short_error,
)
from vst_core.models.hub import WeightsUnavailableError, hub_reachable, option

#: The files a CLIP checkpoint may be: ``torch.save``'d or safetensors; for OpenAI's weights also
#: ``clip.load``'s TorchScript archive, of which only the tensors are read.
CLIP_FORMATS: tuple[CheckpointFormat, ...] = (*PICKLED, "safetensors")
OPENAI_FORMATS: tuple[CheckpointFormat, ...] = (*CLIP_FORMATS, "torchscript")


def build_clip(weights: ClipWeights, arch: str, *, registered: bool = False) -> tuple[Any, Any, Any]:
    """(model, image preprocessing, tokenizer) from resolved weights, on the CPU: by
    :mod:`vst_core.models.clip_torch` for a plain open_clip configuration whose checkpoint holds
    exactly its parameters (torch alone: no open_clip import), else by open_clip. ``registered``:
    ``arch`` was registered from a model-config JSON of the user's (then open_clip builds it). The
    file is read once (:func:`read_checkpoint`): a file that is not weights, holds code or a
    non-finite weight is a ModelLoadError naming it."""
    assert weights.path is not None
    if weights.kind == "openai":
        state = read_checkpoint(weights.path, "OpenAI CLIP weights", formats=OPENAI_FORMATS)
        import open_clip

        model, preprocess = _build_openai(state)
        return model, preprocess, open_clip.get_tokenizer("ViT-B-32")
    state = read_checkpoint(weights.path, "CLIP weights", formats=CLIP_FORMATS, mmap=True)
    if not registered and sniff_checkpoint(weights.path) == "torch-zip":  # read by memory map; other files: open_clip
        plain = plain_build(weights, arch, state)
        if plain is not None:
            return plain
    import open_clip

    p = weights.preprocess
    with no_random_init():  # every parameter is then loaded from the file (strict): random values would be overwritten
        model, _, preprocess = open_clip.create_model_and_transforms(
            arch,
            pretrained=str(weights.path),
            load_weights=False,  # loaded below
            pretrained_image=False,
            pretrained_text=False,
            device="cpu",
            force_quick_gelu=weights.quick_gelu,
            image_mean=p.get("mean"),
            image_std=p.get("std"),
            image_interpolation=p.get("interpolation"),
            image_resize_mode=p.get("resize_mode"),
        )
    if not load_exact(model, state):
        load_converted(model, state)
    return model, preprocess, open_clip.get_tokenizer(arch)


def plain_build(weights: ClipWeights, arch: str, state: Any) -> tuple[Any, Any, Any] | None:
    """(model, :class:`EvalTransform`, tokenizer) built by :mod:`vst_core.models.clip_torch` when
    ``arch`` is a plain open_clip configuration, its preprocessing a shortest-side resize and
    ``state`` (the checkpoint's tensors) exactly the model's parameters; None otherwise (open_clip
    builds it then)."""
    config = plain_config(arch)
    p = weights.preprocess
    if (
        config is None
        or p.get("resize_mode") not in (None, "shortest")
        or p.get("interpolation") not in (None, "bicubic", "bilinear")
    ):
        return None
    size = int(config["vision_cfg"]["image_size"])
    mean, std = p.get("mean") or OPENAI_PREPROCESS["mean"], p.get("std") or OPENAI_PREPROCESS["std"]  # open_clip's defaults
    transform = EvalTransform(size, (size, size), p.get("interpolation") or "bicubic", tuple(mean), tuple(std))
    with no_random_init():
        model = build_plain_clip(config, quick_gelu=weights.quick_gelu)
    if not load_exact(model, state):
        return None
    return model.eval(), transform, simple_tokenizer(int(config["text_cfg"].get("context_length", 77)))


def load_exact(model: Any, state: Any) -> bool:
    """Load a checkpoint's tensors (as :func:`read_checkpoint` gives them: a zip checkpoint by
    memory map) when they are exactly ``model``'s state dict (the same names, shapes and types,
    under ``state_dict`` or not): what open_clip's ``load_checkpoint`` does to such a file (its
    conversions change nothing there), without reading the file into memory first (about half of
    ViT-B-32's build on 2 cores). False, with nothing loaded, for any other layout (a prefix, other
    names): :func:`load_converted` then loads it."""
    import torch

    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    own = model.state_dict()
    if not isinstance(state, dict) or set(state) != set(own):
        return False
    for name, tensor in own.items():
        theirs = state[name]
        if not isinstance(theirs, torch.Tensor) or theirs.shape != tensor.shape or theirs.dtype != tensor.dtype:
            return False
    model.load_state_dict(state, strict=True)
    return True


_OPEN_CLIP_READER = threading.Lock()


def load_converted(model: Any, state: Any) -> None:
    """Load a checkpoint's tensors in another layout into an open_clip ``model`` with open_clip's
    own conversions (``load_checkpoint``: a ``module.`` prefix, third-party and older layouts,
    resized position embeddings), strict. open_clip is handed the tensors the guarded loader read:
    its file reader is swapped, for the call, for one that returns them, so it never opens the file."""
    import torch
    from open_clip import factory

    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not state or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError("the checkpoint is not a state dict (a dict of tensors, under 'state_dict' or not)")
    if all(str(k).startswith("module.") for k in state):
        state = {str(k)[len("module.") :]: v for k, v in state.items()}

    def tensors_read(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
        return dict(state)

    with _OPEN_CLIP_READER:
        reader = factory.load_state_dict
        factory.load_state_dict = tensors_read
        try:
            factory.load_checkpoint(model, "checkpoint.pt", strict=True)
        finally:
            factory.load_state_dict = reader


#: torch.nn.init's random fills, skipped by :func:`no_random_init` in the thread that builds.
_RANDOM_FILLS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "xavier_uniform_",
    "xavier_normal_",
    "orthogonal_",
)
_SKIP = threading.local()
_WRAP_LOCK = threading.Lock()


@contextmanager
def no_random_init() -> Iterator[None]:
    """While a model whose every parameter is then loaded from a checkpoint with ``strict=True`` is
    built in this thread, torch.nn.init's random fills return their tensor untouched (about 0.8 s of
    ViT-B-32's build on 2 cores); other threads initialise as usual. A parameter the file lacks
    fails the strict load, so none keeps unset values."""
    import torch.nn.init as init

    with _WRAP_LOCK:
        if not getattr(init, "_vst_wrapped", False):
            for name in _RANDOM_FILLS:
                original = getattr(init, name, None)
                if original is not None:
                    setattr(init, name, _skippable(original))
            init._vst_wrapped = True  # type: ignore[attr-defined]
    _SKIP.active = getattr(_SKIP, "active", 0) + 1
    try:
        yield
    finally:
        _SKIP.active -= 1


def _skippable(fill: Any) -> Any:
    @functools.wraps(fill)
    def wrapper(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        return tensor if getattr(_SKIP, "active", 0) else fill(tensor, *args, **kwargs)

    return wrapper


def download_clip(weights: ClipWeights) -> ClipWeights:
    """Download a pretrained tag's file (as open_clip would) and resolve it again."""
    if not hub_reachable():
        raise WeightsUnavailableError(
            f"CLIP weights {weights.arch}/{weights.source} are not in the local cache ({clip_cache_hint()}) and "
            "cannot be downloaded from here. Either run `vst fetch-models` on a connected machine and copy its "
            f"cache folders here, or pass a local weights file with {option('clip_checkpoint', 'PATH')}."
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


def _build_openai(state: Any) -> tuple[Any, Any]:
    """An OpenAI CLIP's tensors (from its TorchScript archive or state dict, read by
    :func:`read_checkpoint`: the archive's code is never run) as an open_clip model (QuickGELU, fp32)
    with OpenAI's preprocessing."""
    from open_clip.model import build_model_from_openai_state_dict
    from open_clip.transform import image_transform

    if not isinstance(state, dict):
        raise ValueError(f"an OpenAI CLIP file holds a state dict, not a {type(state).__name__}")
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
