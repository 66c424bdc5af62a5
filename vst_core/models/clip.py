"""CLIP encoder on open_clip: batched, L2-normalised text and image embeddings.

Loaded by architecture + pretrained tag (default ``ViT-B-32`` / ``openai``, the model GROOVIST
uses) or by a local checkpoint file; an extra architecture can be registered from an open_clip
model-config JSON. Weights are taken from the local cache first; when they are absent and
cannot be downloaded, loading fails at once with a message saying how to get them.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vst_core.models.device import resolve_device
from vst_core.models.hub import (
    ModelLoadError,
    WeightsUnavailableError,
    hf_cache_dir,
    hub_file,
    hub_reachable,
    sniff_checkpoint,
    weights_digest,
)

log = logging.getLogger(__name__)

DEFAULT_ARCH = "ViT-B-32"
DEFAULT_PRETRAINED = "openai"


def clip_cache_dirs() -> list[Path]:
    """Folders where OpenAI CLIP's ``clip.load`` keeps its TorchScript files:
    ``$XDG_CACHE_HOME/clip`` and ``~/.cache/clip`` (the package's own default)."""
    dirs = [Path(os.path.expanduser("~/.cache/clip"))]
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        dirs.insert(0, Path(xdg) / "clip")
    return list(dict.fromkeys(dirs))


@dataclass(frozen=True)
class ClipWeights:
    """Which CLIP weights a setting resolves to, found without building a model.

    ``kind``: ``open_clip`` (a state dict open_clip loads into ``arch``) or ``openai`` (OpenAI's
    TorchScript archive or state dict, which defines its own architecture and uses QuickGELU).
    ``path`` is None while a pretrained tag is not downloaded yet.
    """

    arch: str
    source: str  # the pretrained tag, or "file"
    kind: Literal["open_clip", "openai"]
    quick_gelu: bool
    path: Path | None
    preprocess: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> str:
        """``arch/source/activation/sha:digest``: names the exact weights and activation."""
        digest = weights_digest(self.path) if self.path is not None else "not-downloaded"
        arch = "openai-clip" if self.kind == "openai" and self.source == "file" else self.arch
        return f"{arch}/{self.source}/{'quickgelu' if self.quick_gelu else 'gelu'}/sha:{digest}"


_OPENAI_META = ("input_resolution", "context_length", "vocab_size")


def _is_openai_state_dict(state: Any) -> bool:
    """OpenAI CLIP's own state dicts carry these three entries; open_clip's do not."""
    return isinstance(state, dict) and set(_OPENAI_META) <= set(state)


_KINDS: dict[tuple[str, int, int], Literal["open_clip", "openai"]] = {}


def _checkpoint_kind(path: Path) -> Literal["open_clip", "openai"]:
    """Whether a weights file is OpenAI's (TorchScript, or a state dict with OpenAI's metadata) or an
    open_clip state dict; memoised by path, size and mtime, since the signature asks often."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _KINDS:
        fmt = sniff_checkpoint(path)
        kind: Literal["open_clip", "openai"] = "openai" if fmt == "torchscript" else "open_clip"
        if fmt in ("torch-zip", "torch-legacy"):
            import torch

            try:
                state = torch.load(path, map_location="meta", weights_only=True, mmap=fmt == "torch-zip")
            except Exception as exc:
                raise ModelLoadError(f"CLIP checkpoint {path} cannot be read safely: {_short(exc)}") from None
            if _is_openai_state_dict(state):
                kind = "openai"
        _KINDS[key] = kind
    return _KINDS[key]


def _checkpoint_weights(
    arch: str, path: Path, source: str = "file", quick_gelu: bool = False, preprocess: dict[str, Any] | None = None
) -> ClipWeights:
    """The weights in ``path``: OpenAI's files always with QuickGELU and OpenAI's preprocessing;
    an open_clip state dict with ``quick_gelu`` (or an ``-quickgelu`` arch) and ``preprocess``."""
    if _checkpoint_kind(path) == "openai":
        return ClipWeights(arch, source, "openai", True, path, dict(_OPENAI_PREPROCESS))
    return ClipWeights(arch, source, "open_clip", quick_gelu or arch.endswith("-quickgelu"), path, dict(preprocess or {}))


_OPENAI_PREPROCESS: dict[str, Any] = {
    "mean": (0.48145466, 0.4578275, 0.40821073),
    "std": (0.26862954, 0.26130258, 0.27577711),
    "interpolation": "bicubic",
    "resize_mode": "shortest",
}


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cached_pretrained_file(arch: str, tag: str) -> str | None:
    """Local path of the weights of an open_clip (arch, tag), if already downloaded: the hub cache
    (safetensors first, as open_clip tries), then OpenAI's file in the ``clip.load`` folders."""
    from open_clip.pretrained import get_pretrained_cfg

    cfg = get_pretrained_cfg(arch, tag)
    if not cfg:
        return None
    hub = cfg.get("hf_hub", "")
    if hub:
        repo, filename = os.path.split(hub)  # "org/name/" (default file names) or "org/name/file"
        names = [filename] if filename else ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        if filename.endswith(".bin"):
            names.insert(0, filename[:-4] + ".safetensors")
        found = hub_file(repo, tuple(names))
        if found is not None:
            return str(found)
    url = cfg.get("url", "")
    if url:
        for folder in clip_cache_dirs():
            target = folder / os.path.basename(url)
            if target.is_file():
                return str(target)
    return None


def resolve_clip_weights(
    arch: str = DEFAULT_ARCH, pretrained: str | None = DEFAULT_PRETRAINED, checkpoint: str | Path | None = None
) -> ClipWeights:
    """The weights a CLIP setting names, without building the model (cheap: file lookups and a
    look at the checkpoint's first bytes). Raises :class:`ModelLoadError` for an unusable file."""
    if checkpoint is not None:
        path = Path(checkpoint)
        if not path.is_file():
            raise WeightsUnavailableError(f"CLIP checkpoint not found: {path} (give the path of a weights file)")
        return _checkpoint_weights(arch, path)
    if not pretrained:
        raise ValueError("give a pretrained tag or a checkpoint path")
    from open_clip.pretrained import get_pretrained_cfg

    cfg = get_pretrained_cfg(arch, pretrained)
    if not cfg:
        import open_clip

        tags = ", ".join(t for a, t in open_clip.list_pretrained() if a == arch) or "none"
        raise ModelLoadError(f"no pretrained tag {pretrained!r} for CLIP {arch}; known tags: {tags}")
    quick = bool(cfg.get("quick_gelu", False)) or arch.endswith("-quickgelu")
    preprocess = {k: cfg[k] for k in ("mean", "std", "interpolation", "resize_mode") if k in cfg}
    local = cached_pretrained_file(arch, pretrained)
    if local is None:
        return ClipWeights(arch, pretrained, "open_clip", quick, None, preprocess)
    return _checkpoint_weights(arch, Path(local), pretrained, quick, preprocess)


def checkpoint_signature(arch: str, checkpoint: str | Path) -> str:
    """``arch/file:<digest>`` of a local checkpoint (``arch/file:missing`` when absent)."""
    path = Path(checkpoint)
    return f"{arch}/file:{weights_digest(path) if path.is_file() else 'missing'}"


def clip_signature(arch: str, pretrained: str | None, checkpoint: str | Path | None) -> str:
    """The weights signature of a CLIP setting, or ``arch/source/unusable`` when it cannot load."""
    if pretrained and pretrained.startswith("file:") and checkpoint is None:
        return f"{arch}/{pretrained}"  # a digest recorded in a scores file: the file is not here
    try:
        return resolve_clip_weights(arch, pretrained, checkpoint).signature
    except (ModelLoadError, ValueError, OSError):
        return f"{arch}/{'file' if checkpoint else pretrained}/unusable"


def default_workers() -> int:
    """Preprocessing threads: one per core, at most 8 (decode and resize release the GIL)."""
    return max(1, min(8, os.cpu_count() or 1))


def clip_cache_hint() -> str:
    return f"{hf_cache_dir()}, or OpenAI's file in {' or '.join(str(d) for d in clip_cache_dirs())}"


class ClipEncoder:
    """Batched CLIP encoder; ``signature`` names the exact weights for caches and exports.

    Images are preprocessed by ``workers`` threads: on CUDA a batch ahead of the model, so
    decoding, cropping and resizing overlap with the forward pass (fp16 autocast, pinned memory);
    on a CPU between forwards, where the forward itself uses every core.
    """

    def __init__(
        self,
        model: Any,
        preprocess: Any,
        tokenizer: Any,
        signature: str,
        *,
        device: str,
        batch_size: int = 64,
        workers: int = 0,
    ) -> None:
        import torch

        self.model = model.to(device).eval()
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.signature = signature
        self.device = device
        self.batch_size = batch_size
        self.workers = workers or default_workers()
        self.context_length = int(getattr(model, "context_length", 77) or 77)
        self._torch = torch
        self._trim = _trimmable(model)
        self._split = _split_preprocess(preprocess)
        self.images_encoded = 0  # crops through the image tower, for throughput reports

    def _text_length(self, text: str) -> int | None:
        inner = getattr(self.tokenizer, "tokenizer", self.tokenizer)
        encode = getattr(inner, "encode", None)
        if encode is None:
            return None
        try:
            return len(encode(text)) + 2  # start and end tokens
        except Exception:
            return None

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """(N, D) float32, unit rows. Texts over the context length are truncated with a warning.

        Texts are batched by token length and, for a causal text tower pooled at the end token,
        each batch is cut after its longest text: later (padding) positions cannot influence
        earlier ones under a causal mask, so the vectors are those of the full-length forward.
        """
        torch = self._torch
        lengths = []
        for text in texts:
            length = self._text_length(text)
            lengths.append(length or self.context_length)
            if length is not None and length > self.context_length:
                log.warning("text of %d tokens truncated to CLIP's context length %d: %.60r", length, self.context_length, text)
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out = np.zeros((len(texts), self.embed_dim), np.float32)
        for start in range(0, len(texts), self.batch_size):
            idx = order[start : start + self.batch_size]
            tokens = self.tokenizer([texts[i] for i in idx], context_length=self.context_length).to(self.device)
            with torch.inference_mode(), torch.autocast("cuda", enabled=self.device == "cuda"):
                emb = (_encode_text_trimmed(self.model, tokens) if self._trim else self.model.encode_text(tokens)).float()
            out[idx] = torch.nn.functional.normalize(emb, dim=-1).cpu().numpy()
        return out

    def _prepare(self, item: Any, load: Callable[[Any], Any] | None) -> Any:
        image = load(item) if load is not None else item
        if self._split is None:
            return self.preprocess(image.convert("RGB"))
        return np.asarray(self._split[0](image.convert("RGB")), dtype=np.uint8)

    def _to_batch(self, prepared: list[Any]) -> Any:
        """Stack preprocessed images; with a split preprocess, ToTensor and Normalize run here once
        for the whole batch (the same float operations, so the same values), which keeps torch's
        own thread pool out of the worker threads."""
        torch = self._torch
        if self._split is None:
            return torch.stack(prepared)
        batch = torch.from_numpy(np.stack(prepared)).permute(0, 3, 1, 2).contiguous().to(torch.float32).div(255)
        for norm in self._split[1]:
            mean = torch.as_tensor(norm.mean, dtype=batch.dtype).view(1, -1, 1, 1)
            std = torch.as_tensor(norm.std, dtype=batch.dtype).view(1, -1, 1, 1)
            batch = batch.sub_(mean).div_(std)
        return batch

    def encode_images(self, images: Sequence[Any], *, load: Callable[[Any], Any] | None = None) -> np.ndarray:
        """(N, D) float32, unit rows, for PIL images (any mode; converted to RGB).

        With ``load``, ``images`` are items (e.g. an image and a box) that ``load`` turns into PIL
        images in the worker threads, so cropping runs in parallel too.
        """
        torch = self._torch
        n = len(images)
        if not n:
            return np.zeros((0, self.embed_dim), np.float32)
        self.images_encoded += n
        starts = list(range(0, n, self.batch_size))
        chunks: list[np.ndarray] = []
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clip-preprocess") as pool:
            queued: deque[list[Future[Any]]] = deque()

            def submit(k: int) -> None:
                if k < len(starts):
                    batch = images[starts[k] : starts[k] + self.batch_size]
                    queued.append([pool.submit(self._prepare, item, load) for item in batch])

            # On a GPU the threads prepare the next batches while the current one is encoded. On a
            # CPU the model already uses every core: a thread working beside it stalls all of torch's
            # threads at their next barrier, so the threads prepare each batch between forwards.
            overlap = self.device != "cpu"
            submit(0)
            if overlap:
                submit(1)
            for k in range(len(starts)):
                batch = self._to_batch([f.result() for f in queued.popleft()])
                if overlap:
                    submit(k + 2)
                if self.device == "cuda":
                    batch = batch.pin_memory()
                batch = batch.to(self.device, non_blocking=True)
                with torch.inference_mode(), torch.autocast("cuda", enabled=self.device == "cuda"):
                    emb = self.model.encode_image(batch).float()
                if not overlap:
                    submit(k + 1)
                chunks.append(torch.nn.functional.normalize(emb, dim=-1).cpu().numpy())
        return np.concatenate(chunks)

    @property
    def embed_dim(self) -> int:
        proj = getattr(self.model, "text_projection", None)
        if proj is None:
            return 512
        return int(proj.out_features if hasattr(proj, "out_features") else proj.shape[-1])


def _split_preprocess(preprocess: Any) -> tuple[Any, list[Any]] | None:
    """(PIL part, Normalize steps) of a torchvision ``Compose`` ending in ToTensor + Normalize;
    None for any other preprocess (then it runs whole in the worker threads)."""
    try:
        from torchvision.transforms import Compose, Normalize, ToTensor
    except ImportError:  # pragma: no cover - open_clip needs torchvision
        return None
    steps = list(getattr(preprocess, "transforms", []) or [])
    at = [k for k, t in enumerate(steps) if isinstance(t, ToTensor)]
    if len(at) != 1 or not all(isinstance(t, Normalize) for t in steps[at[0] + 1 :]):
        return None
    return Compose(steps[: at[0]]), steps[at[0] + 1 :]


def _trimmable(model: Any) -> bool:
    """Whether the text tower is open_clip's causal transformer pooled at the end token."""
    needed = ("token_embedding", "positional_embedding", "transformer", "ln_final", "attn_mask", "text_pool_type")
    if not all(hasattr(model, a) for a in needed) or model.attn_mask is None:
        return False
    mask = model.attn_mask
    causal = bool(mask.ndim == 2 and mask.shape[0] > 1 and float(mask[0, 1]) == float("-inf") and float(mask[1, 0]) == 0.0)
    return causal and model.text_pool_type == "argmax" and bool(getattr(model.transformer, "batch_first", False))


def _encode_text_trimmed(model: Any, tokens: Any) -> Any:
    """open_clip's ``encode_text`` on the tokens up to the batch's last non-padding position."""
    from open_clip.transformer import text_global_pool

    used = (tokens != 0).any(dim=0).nonzero()
    length = int(used.max()) + 1 if len(used) else 1
    tokens = tokens[:, :length]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast_dtype) + model.positional_embedding[:length].to(cast_dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = text_global_pool(x, tokens, model.text_pool_type)
    proj = model.text_projection
    if proj is not None:
        import torch

        x = proj(x) if isinstance(proj, torch.nn.Linear) else x @ proj
    return x


def load_clip(
    arch: str = DEFAULT_ARCH,
    pretrained: str | None = DEFAULT_PRETRAINED,
    *,
    checkpoint: str | Path | None = None,
    model_config: str | Path | None = None,
    device: str = "auto",
    batch_size: int = 64,
    workers: int = 0,
) -> ClipEncoder:
    """Load CLIP by (arch, pretrained tag) or from a local checkpoint file, for what it is.

    A tag is always loaded from its local file (downloaded first when missing and reachable), with
    the tag's activation (QuickGELU for OpenAI's weights) and preprocessing, so a first run and a
    later one build the same model. OpenAI's TorchScript archives and state dicts define their own
    architecture. Every failure is a :class:`ModelLoadError` naming the model, the path and the fix.
    """
    import open_clip

    if model_config is not None:
        try:
            open_clip.add_model_config(str(model_config))
        except Exception as exc:
            raise ModelLoadError(f"CLIP model config {model_config} cannot be read: {_short(exc)}") from None
    weights = resolve_clip_weights(arch, pretrained, checkpoint)
    if weights.kind == "open_clip" and arch not in open_clip.list_models():
        raise ModelLoadError(f"unknown CLIP architecture {arch!r} (see open_clip.list_models(), or pass --clip-config JSON)")
    device = resolve_device(device)
    if weights.path is None:
        weights = _download(weights)
    assert weights.path is not None
    try:
        model, preprocess, tokenizer = _build(weights, arch, checkpoint is not None)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(
            f"CLIP weights {weights.path} do not load as {arch if weights.kind == 'open_clip' else 'an OpenAI CLIP model'}: "
            f"{_short(exc)}. Check --clip-model / --clip-checkpoint (or the sidebar's CLIP fields)."
        ) from None
    return ClipEncoder(model, preprocess, tokenizer, weights.signature, device=device, batch_size=batch_size, workers=workers)


def _build(weights: ClipWeights, arch: str, from_file: bool) -> tuple[Any, Any, Any]:
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
    if not weights.quick_gelu and from_file and f"{arch}-quickgelu" in open_clip.list_models():
        log.warning(
            "CLIP %s built with GELU for %s; if these are OpenAI's weights, use --clip-model %s-quickgelu",
            arch,
            weights.path,
            arch,
        )
    return model, preprocess, open_clip.get_tokenizer(arch)


def _download(weights: ClipWeights) -> ClipWeights:
    """Download a pretrained tag's file (as open_clip would) and resolve it again."""
    if not hub_reachable():
        raise WeightsUnavailableError(
            f"CLIP weights {weights.arch}/{weights.source} are not in the local cache ({clip_cache_hint()}) and "
            "cannot be downloaded from here. Either run `vst fetch-models` on a connected machine and copy its "
            "cache folders here, or pass a local weights file (--clip-checkpoint PATH, or the sidebar's "
            "'CLIP checkpoint file')."
        )
    from open_clip.pretrained import download_pretrained, get_pretrained_cfg

    try:
        download_pretrained(get_pretrained_cfg(weights.arch, weights.source))
    except Exception as exc:
        raise WeightsUnavailableError(
            f"CLIP weights {weights.arch}/{weights.source} could not be downloaded: {_short(exc)}"
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
    model.load_state_dict({k: v.float() for k, v in state.items() if k not in _OPENAI_META}, strict=False)
    p = _OPENAI_PREPROCESS
    preprocess = image_transform(
        model.visual.image_size,
        is_train=False,
        mean=p["mean"],
        std=p["std"],
        interpolation=p["interpolation"],
        resize_mode=p["resize_mode"],
    )
    return model, preprocess
