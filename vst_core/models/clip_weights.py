"""Which CLIP weights a setting means: a pretrained tag's file in the local caches (the hub cache or
OpenAI's own folder) or a local checkpoint, what kind of file it is (open_clip or OpenAI), the
activation and preprocessing it needs, and its signature (architecture, activation, digest)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vst_core.hashing import weights_digest
from vst_core.models.checkpoints import read_checkpoint, regular_checkpoint, sniff_checkpoint
from vst_core.models.clip_torch import is_model_name
from vst_core.models.hub import (
    ModelLoadError,
    hf_cache_dir,
    hub_file,
    option,
    without_unsafe_advice,
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


OPENAI_META = ("input_resolution", "context_length", "vocab_size")


def _is_openai_state_dict(state: Any) -> bool:
    """OpenAI CLIP's own state dicts carry these three entries; open_clip's do not."""
    return isinstance(state, dict) and set(OPENAI_META) <= set(state)


_KINDS: dict[tuple[str, int, int], Literal["open_clip", "openai"]] = {}


def _checkpoint_kind(path: Path) -> Literal["open_clip", "openai"]:
    """Whether a weights file is OpenAI's (TorchScript, or a state dict with OpenAI's metadata) or an
    open_clip state dict; memoised by path, size and mtime, since the signature asks often."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _KINDS:
        fmt = sniff_checkpoint(path)
        kind: Literal["open_clip", "openai"] = "openai" if fmt == "torchscript" else "open_clip"
        if fmt == "torch-legacy" or (fmt == "torch-zip" and _may_hold_openai_meta(path)):
            state = read_checkpoint(path, "CLIP weights", map_location="meta", mmap=True)  # the layout alone
            if _is_openai_state_dict(state):
                kind = "openai"
        _KINDS[key] = kind
    return _KINDS[key]


def _may_hold_openai_meta(path: Path) -> bool:
    """Whether a PyTorch zip checkpoint's pickle names every :data:`OPENAI_META` entry anywhere: read
    with :mod:`pickletools` (nothing is unpickled, torch is not imported); when it does, loading on
    the meta device decides. A pickle that cannot be read is left to that load too."""
    import pickletools
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            name = next(n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl")
            data = archive.read(name)
        strings = {arg for op, arg, _ in pickletools.genops(data) if isinstance(arg, str) and "UNICODE" in op.name}
    except Exception:
        return True
    return set(OPENAI_META) <= strings


#: How a setting names the activation: ``auto`` (as the weights say) or explicitly.
Activation = Literal["auto", "gelu", "quickgelu"]


class ActivationUnknownError(ModelLoadError):
    """A checkpoint file that does not say which activation its weights were trained with."""


def _snapshot_config(path: Path) -> dict[str, Any] | None:
    """The ``open_clip_config.json`` beside a weights file (a hub snapshot states its model there)."""
    found = path.parent / "open_clip_config.json"
    try:
        if found.is_file() and found.stat().st_size < 1_000_000:
            data = json.loads(found.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None
    return None


def _has_both_activations(arch: str) -> bool:
    """Whether open_clip knows ``arch`` in a GELU and a QuickGELU version (ViT-B-32 and ViT-B-32-quickgelu)."""
    import open_clip

    return not arch.endswith("-quickgelu") and f"{arch}-quickgelu" in open_clip.list_models()


def _checkpoint_weights(
    arch: str,
    path: Path,
    source: str = "file",
    quick_gelu: bool | None = None,
    preprocess: dict[str, Any] | None = None,
    activation: Activation = "auto",
) -> ClipWeights:
    """The weights in ``path`` and the activation they need.

    OpenAI's files (TorchScript, or a state dict with OpenAI's metadata) are always QuickGELU with
    OpenAI's preprocessing, whatever ``arch`` says; ``activation="gelu"`` for one is refused. An
    open_clip state dict takes, in order: ``activation`` when given, an ``-quickgelu`` arch, the
    pretrained tag's ``quick_gelu``, the ``open_clip_config.json`` of its hub snapshot; else an
    architecture that exists with either activation is refused with the fix (never GELU silently).
    """
    if _checkpoint_kind(path) == "openai":
        if activation == "gelu":
            raise ModelLoadError(
                f"CLIP checkpoint {path} is OpenAI's format, whose weights use QuickGELU: drop {option('clip_activation', 'gelu')}"
            )
        return ClipWeights(arch, source, "openai", True, path, dict(OPENAI_PREPROCESS))
    prep = dict(preprocess or {})
    if activation != "auto":
        if activation == "gelu" and arch.endswith("-quickgelu"):
            raise ModelLoadError(
                f"{option('clip_model', arch)} is the QuickGELU version: use {arch[: -len('-quickgelu')]} for GELU"
            )
        quick = activation == "quickgelu"
    elif arch.endswith("-quickgelu"):
        quick = True
    elif quick_gelu is not None:
        quick = quick_gelu
    else:
        config = _snapshot_config(path) if source == "file" else None
        model_cfg = config.get("model_cfg") if config else None
        if isinstance(model_cfg, dict):
            quick = bool(model_cfg.get("quick_gelu", False))
            pre = config.get("preprocess_cfg") if config else None
            if isinstance(pre, dict) and not prep:
                prep = {k: pre[k] for k in ("mean", "std", "interpolation", "resize_mode") if k in pre}
        elif _has_both_activations(arch):
            raise ActivationUnknownError(
                f"CLIP checkpoint {path} does not say which activation its weights were trained with, and {arch} "
                "exists with either. OpenAI's weights and models fine-tuned from them (GROOVIST's CLIP among them) "
                f"need QuickGELU: add {option('clip_activation', 'quickgelu')} (or {option('clip_model', arch + '-quickgelu')}). "
                f"Weights trained with open_clip's default GELU: add {option('clip_activation', 'gelu')}."
            )
        else:
            quick = bool(_model_config(arch).get("quick_gelu", False))
    return ClipWeights(arch, source, "open_clip", quick, path, prep)


def _model_config(arch: str) -> dict[str, Any]:
    import open_clip

    return open_clip.get_model_config(arch) or {}


OPENAI_PREPROCESS: dict[str, Any] = {
    "mean": (0.48145466, 0.4578275, 0.40821073),
    "std": (0.26862954, 0.26130258, 0.27577711),
    "interpolation": "bicubic",
    "resize_mode": "shortest",
}


def short_error(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception, shortened, without a library's advice to load a file
    with ``weights_only=False``."""
    text = without_unsafe_advice(f"{type(exc).__name__}: {exc}".strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_PRETRAINED_TABLE: list[Any] = []


def pretrained_cfg(arch: str, tag: str) -> dict[str, Any]:
    """open_clip's configuration of a pretrained (arch, tag) (``{}`` when it has none), as
    ``open_clip.pretrained.get_pretrained_cfg`` gives it, without importing open_clip: its table
    module is read on its own, with no package around it and neither torch nor the hub client, which
    only its download functions use (importing open_clip costs about 2.6 s on 2 cores, torch
    included: a rerun whose vectors are all cached names its weights without it). Any failure falls
    back to open_clip itself; ``tests/test_clip_activation.py`` checks every tag against it.

    >>> pretrained_cfg("ViT-B-32", "openai")["quick_gelu"], pretrained_cfg("ViT-B-32", "no-such-tag")
    (True, {})
    """
    if not _PRETRAINED_TABLE:
        _PRETRAINED_TABLE.append(_open_clip_table())
    table = _PRETRAINED_TABLE[0]
    if table is None:
        from open_clip.pretrained import get_pretrained_cfg

        return dict(get_pretrained_cfg(arch, tag))
    return dict(table.get_pretrained_cfg(arch, tag))


def _open_clip_table() -> Any:
    """open_clip's ``pretrained`` module loaded alone (see :func:`pretrained_cfg`), or None."""
    import importlib.util
    import sys
    import types

    from vst_core.models.clip_torch import open_clip_folder

    try:
        folder = open_clip_folder()
        if folder is None:
            return None
        package = types.ModuleType("_vst_open_clip_table")
        package.__path__ = [str(folder)]
        blocked = [name for name in ("safetensors.torch", "huggingface_hub") if name not in sys.modules]
        sys.modules["_vst_open_clip_table"] = package
        try:
            for name in blocked:
                sys.modules[name] = None  # type: ignore[assignment]  # ImportError: the download helpers are left out
            for part in ("constants", "version", "pretrained"):
                spec = importlib.util.spec_from_file_location(f"_vst_open_clip_table.{part}", folder / f"{part}.py")
                if spec is None or spec.loader is None:
                    return None
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
            return sys.modules["_vst_open_clip_table.pretrained"]
        finally:
            for name in blocked:
                sys.modules.pop(name, None)
    except Exception:
        return None


def cached_pretrained_file(arch: str, tag: str) -> str | None:
    """Local path of the weights of an open_clip (arch, tag), if already downloaded: the hub cache
    (safetensors first, as open_clip tries), then OpenAI's file in the ``clip.load`` folders."""
    cfg = pretrained_cfg(arch, tag)
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
    arch: str = DEFAULT_ARCH,
    pretrained: str | None = DEFAULT_PRETRAINED,
    checkpoint: str | Path | None = None,
    activation: Activation = "auto",
) -> ClipWeights:
    """The weights a CLIP setting names, without building the model (cheap: file lookups and a
    look at the checkpoint's first bytes). Raises :class:`ModelLoadError` for an unusable file or
    an architecture that is not a model's name (:func:`clip_model_name`)."""
    clip_model_name(arch)
    if checkpoint is not None:
        path = regular_checkpoint(checkpoint, "CLIP checkpoint")  # a folder, FIFO or device is said so, never opened
        return _checkpoint_weights(arch, path, activation=activation)
    if not pretrained:
        raise ValueError("give a pretrained tag or a checkpoint path")
    cfg = pretrained_cfg(arch, pretrained)
    if not cfg:
        import open_clip

        tags = ", ".join(t for a, t in open_clip.list_pretrained() if a == arch) or "none"
        raise ModelLoadError(f"no pretrained tag {pretrained!r} for CLIP {arch}; known tags: {tags}")
    quick = bool(cfg.get("quick_gelu", False)) or arch.endswith("-quickgelu")
    if activation != "auto":
        quick = activation == "quickgelu"
    preprocess: dict[str, Any] = {k: cfg[k] for k in ("mean", "std", "interpolation", "resize_mode") if k in cfg}
    local = cached_pretrained_file(arch, pretrained)
    if local is None:
        return ClipWeights(arch, pretrained, "open_clip", quick, None, preprocess)
    return _checkpoint_weights(arch, Path(local), pretrained, quick, preprocess)


def clip_model_name(arch: str) -> str:
    """``arch`` when it is a model's name (open_clip's, or the stem of a ``--clip-config`` file),
    never a path: a name with a path separator, ``..``, a NUL or a control character is a
    :class:`ModelLoadError` (a name finds its configuration file by name; a path would reach any
    ``.json`` file).

    >>> clip_model_name("ViT-B-32-quickgelu")
    'ViT-B-32-quickgelu'
    >>> clip_model_name("../../etc/x")
    Traceback (most recent call last):
    ...
    vst_core.models.hub.ModelLoadError: --clip-model '../../etc/x' is not a model name: ...
    """
    if not is_model_name(arch):
        raise ModelLoadError(
            f"{option('clip_model')} {arch!r} is not a model name: a name has no path separator, '..', NUL or "
            f"control character (give a model configuration file with {option('clip_config', 'JSON')})"
        )
    return arch


def checkpoint_signature(arch: str, checkpoint: str | Path) -> str:
    """``arch/file:<digest>`` of a local checkpoint (``arch/file:missing`` when absent)."""
    path = Path(checkpoint)
    return f"{arch}/file:{weights_digest(path) if path.is_file() else 'missing'}"


def clip_signature(arch: str, pretrained: str | None, checkpoint: str | Path | None, activation: Activation = "auto") -> str:
    """The weights signature of a CLIP setting, or ``arch/source/unusable`` when it cannot load."""
    if pretrained and pretrained.startswith("file:") and checkpoint is None:
        return f"{arch}/{pretrained}"  # a digest recorded in a scores file: the file is not here
    try:
        return resolve_clip_weights(arch, pretrained, checkpoint, activation).signature
    except (ModelLoadError, ValueError, OSError):
        return f"{arch}/{'file' if checkpoint else pretrained}/unusable"


def clip_cache_hint() -> str:
    return f"{hf_cache_dir()}, or OpenAI's file in {' or '.join(str(d) for d in clip_cache_dirs())}"
