"""CLIP built from torch alone, for open_clip's plain ViT configurations (a ViT image tower, a
causal text transformer pooled at its end token, no timm or Hugging Face tower): the same modules,
parameter names and operations as open_clip's ``CLIP``, so open_clip's checkpoints load into it
strictly and give the same vectors (``tests/test_clip_torch.py`` compares both on random weights).

Why: importing open_clip imports torchvision (and through it ``torch._dynamo``) and transformers,
about 2 s of a cold ``vst score`` on 2 cores before the first forward; this module needs torch
only. Any other configuration, an OpenAI file, or a model-config JSON of the user's is built by
open_clip (:func:`vst_core.models.clip_build.build_clip` decides).

>>> plain_config("ViT-B-32")["vision_cfg"]["patch_size"], plain_config("RN50")
(32, None)
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

#: The keys a plain configuration may have, top level and per tower (open_clip's names).
PLAIN_KEYS = frozenset({"embed_dim", "vision_cfg", "text_cfg", "quick_gelu"})
PLAIN_VISION = frozenset({"image_size", "layers", "width", "patch_size", "head_width", "mlp_ratio"})
PLAIN_TEXT = frozenset({"context_length", "vocab_size", "width", "heads", "layers", "mlp_ratio"})


def open_clip_folder() -> Path | None:
    """open_clip's installed package folder, found without importing it."""
    try:
        found = importlib.util.find_spec("open_clip")
    except (ImportError, ValueError):
        return None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    return Path(locations[0]) if locations else None


def is_model_name(arch: str) -> bool:
    r"""Whether ``arch`` is a name, not a path: non-empty, without a path separator, ``..``, a NUL or
    another control character.

    >>> is_model_name("ViT-B-32"), is_model_name("../ViT-B-32"), is_model_name("/tmp/x"), is_model_name("a\\b")
    (True, False, False, False)
    """
    return (
        isinstance(arch, str)
        and bool(arch)
        and "/" not in arch
        and "\\" not in arch
        and ".." not in arch
        and not any(ord(c) < 32 or ord(c) == 127 for c in arch)
    )


@functools.cache
def plain_config(arch: str) -> dict[str, Any] | None:
    """open_clip's built-in configuration of ``arch`` (its ``model_configs/<arch>.json``, read as a
    file) when it is plain enough for :func:`build_plain_clip`, else None (and for anything that is
    not a model's name: :func:`is_model_name`)."""
    folder = open_clip_folder()
    if folder is None or not is_model_name(arch):
        return None
    try:
        config = json.loads((folder / "model_configs" / f"{arch}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    vision, text = config.get("vision_cfg"), config.get("text_cfg")
    if not (isinstance(vision, dict) and isinstance(text, dict) and set(config) <= PLAIN_KEYS):
        return None
    if not (set(vision) <= PLAIN_VISION and set(text) <= PLAIN_TEXT):
        return None
    ints = [
        config.get("embed_dim"),
        vision.get("image_size"),
        vision.get("layers"),
        vision.get("width"),
        vision.get("patch_size"),
    ]
    ints += [text.get("width"), text.get("layers")]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
        return None
    return config


def simple_tokenizer(context_length: int) -> Any:
    """open_clip's ``SimpleTokenizer`` (the BPE tokenizer of plain configurations), its module
    loaded on its own (stdlib, ftfy, regex, numpy and torch only), as ``open_clip.get_tokenizer``
    gives it for a plain configuration."""
    folder = open_clip_folder()
    name = "_vst_open_clip_tokenizer"
    module = sys.modules.get(name)
    if module is None:
        if folder is None:
            raise ImportError("open_clip is not installed")
        spec = importlib.util.spec_from_file_location(name, folder / "tokenizer.py")
        if spec is None or spec.loader is None:
            raise ImportError(f"open_clip's tokenizer module is not readable in {folder}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return module.SimpleTokenizer(context_length=context_length)


def build_plain_clip(config: dict[str, Any], *, quick_gelu: bool) -> Any:
    """An fp32 CLIP of ``config`` (see :func:`plain_config`) whose parameters are left as torch
    allocates them: the caller loads every one from a checkpoint, strictly. QuickGELU when
    ``quick_gelu`` or the configuration says so (open_clip's ``force_quick_gelu``)."""
    vision, text = config["vision_cfg"], config["text_cfg"]
    return _modules().Clip(
        embed_dim=int(config["embed_dim"]),
        image_size=int(vision["image_size"]),
        patch_size=int(vision["patch_size"]),
        vision_width=int(vision["width"]),
        vision_layers=int(vision["layers"]),
        vision_heads=int(vision["width"]) // int(vision.get("head_width", 64)),
        vision_mlp_ratio=float(vision.get("mlp_ratio", 4.0)),
        context_length=int(text.get("context_length", 77)),
        vocab_size=int(text.get("vocab_size", 49408)),
        text_width=int(text["width"]),
        text_layers=int(text["layers"]),
        text_heads=int(text.get("heads", 8)),
        text_mlp_ratio=float(text.get("mlp_ratio", 4.0)),
        quick_gelu=bool(quick_gelu or config.get("quick_gelu", False)),
    )


@functools.cache
def _modules() -> types.SimpleNamespace:
    """The torch modules, defined on first use so that importing this module imports no torch."""
    from collections import OrderedDict

    import torch
    from torch import nn
    from torch.nn import functional as F

    class LayerNorm(nn.LayerNorm):
        """torch's LayerNorm, its output cast back to the input's type (open_clip's)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            orig_type = x.dtype
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps).to(orig_type)

    class QuickGELU(nn.Module):
        """x · σ(1.702 x), OpenAI's activation."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.sigmoid(1.702 * x)

    class Block(nn.Module):
        """x + attn(ln_1(x)), then + mlp(ln_2(x)); batch first."""

        def __init__(self, width: int, heads: int, mlp_ratio: float, act: type[nn.Module]) -> None:
            super().__init__()
            self.ln_1 = LayerNorm(width)
            self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
            self.ln_2 = LayerNorm(width)
            hidden = int(width * mlp_ratio)
            self.mlp = nn.Sequential(
                OrderedDict([("c_fc", nn.Linear(width, hidden)), ("gelu", act()), ("c_proj", nn.Linear(hidden, width))])
            )

        def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
            mask = attn_mask.to(x.dtype) if attn_mask is not None else None
            h = self.ln_1(x)
            x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
            return x + self.mlp(self.ln_2(x))

    class Transformer(nn.Module):
        """``layers`` blocks over (N, L, width)."""

        def __init__(self, width: int, layers: int, heads: int, mlp_ratio: float, act: type[nn.Module]) -> None:
            super().__init__()
            self.width, self.layers, self.batch_first, self.grad_checkpointing = width, layers, True, False
            self.resblocks = nn.ModuleList([Block(width, heads, mlp_ratio, act) for _ in range(layers)])

        def get_cast_dtype(self) -> torch.dtype:
            first: Any = self.resblocks[0]
            return first.mlp.c_fc.weight.dtype

        def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
            for block in self.resblocks:
                x = block(x, attn_mask=attn_mask)
            return x

    class Vision(nn.Module):
        """Patches, a class token and positions, the blocks, ``ln_post`` on every token, the class
        token projected."""

        def __init__(
            self,
            image_size: int,
            patch_size: int,
            width: int,
            layers: int,
            heads: int,
            mlp_ratio: float,
            out: int,
            act: type[nn.Module],
        ) -> None:
            super().__init__()
            self.image_size, self.patch_size = (image_size, image_size), (patch_size, patch_size)
            self.grid_size = (image_size // patch_size, image_size // patch_size)
            self.output_dim = out
            self.conv1 = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size, bias=False)
            self.class_embedding = nn.Parameter(torch.empty(width))
            self.positional_embedding = nn.Parameter(torch.empty(self.grid_size[0] * self.grid_size[1] + 1, width))
            self.ln_pre = LayerNorm(width)
            self.transformer = Transformer(width, layers, heads, mlp_ratio, act)
            self.ln_post = LayerNorm(width)
            self.proj = nn.Parameter(torch.empty(width, out))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.conv1(x)
            x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
            x = torch.cat([self.class_embedding.view(1, 1, -1).expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1)
            x = self.ln_pre(x + self.positional_embedding.to(x.dtype))
            x = self.ln_post(self.transformer(x))
            return x[:, 0] @ self.proj

    class Clip(nn.Module):
        """open_clip's ``CLIP`` for a plain configuration: ``encode_image``, ``encode_text``."""

        def __init__(
            self,
            *,
            embed_dim: int,
            image_size: int,
            patch_size: int,
            vision_width: int,
            vision_layers: int,
            vision_heads: int,
            vision_mlp_ratio: float,
            context_length: int,
            vocab_size: int,
            text_width: int,
            text_layers: int,
            text_heads: int,
            text_mlp_ratio: float,
            quick_gelu: bool,
        ) -> None:
            super().__init__()
            act: type[nn.Module] = QuickGELU if quick_gelu else nn.GELU
            self.visual = Vision(
                image_size, patch_size, vision_width, vision_layers, vision_heads, vision_mlp_ratio, embed_dim, act
            )
            self.transformer = Transformer(text_width, text_layers, text_heads, text_mlp_ratio, act)
            self.context_length, self.vocab_size = context_length, vocab_size
            self.token_embedding = nn.Embedding(vocab_size, text_width)
            self.positional_embedding = nn.Parameter(torch.empty(context_length, text_width))
            self.ln_final = LayerNorm(text_width)
            self.text_projection = nn.Parameter(torch.empty(text_width, embed_dim))
            self.text_pool_type = "argmax"
            self.register_buffer(
                "attn_mask", torch.full((context_length, context_length), float("-inf")).triu_(1), persistent=False
            )
            self.logit_scale = nn.Parameter(torch.empty(()))

        def encode_image(self, image: torch.Tensor, normalize: bool = False) -> torch.Tensor:
            features = self.visual(image)
            return F.normalize(features, dim=-1) if normalize else features

        def encode_text(self, text: torch.Tensor, normalize: bool = False) -> torch.Tensor:
            cast = self.transformer.get_cast_dtype()
            x = self.token_embedding(text).to(cast) + self.positional_embedding.to(cast)
            x = self.ln_final(self.transformer(x, attn_mask=self.attn_mask))
            x = x[torch.arange(x.shape[0], device=x.device), text.argmax(dim=-1)] @ self.text_projection
            return F.normalize(x, dim=-1) if normalize else x

    return types.SimpleNamespace(
        Clip=Clip, Vision=Vision, Transformer=Transformer, Block=Block, LayerNorm=LayerNorm, QuickGELU=QuickGELU
    )
