"""Loading Hugging Face weights: local cache first, a fast reachability check, clear errors."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

T = TypeVar("T")


class WeightsUnavailableError(RuntimeError):
    """Weights are neither in the local cache nor downloadable; the message says how to get them."""


def hf_cache_dir() -> Path:
    """Where Hugging Face stores downloaded models on this machine."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except Exception:  # pragma: no cover - huggingface_hub ships with transformers
        return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ).lower() in ("1", "true", "yes")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Can the model hub be reached? (a TCP connect, so an offline machine answers in seconds)."""
    if hub_offline():
        return False
    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    except Exception:  # pragma: no cover
        return False
    parsed = urlparse(endpoint)
    host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
    if not host:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def missing_weights_message(what: str, name: str, extra: str = "") -> str:
    return (
        f"{what} weights {name!r} are not in the local cache ({hf_cache_dir()}) and cannot be downloaded "
        f"from here. Either run `python -m vst_core fetch-models` on a connected machine (same cache), "
        f"or pass a local checkpoint directory{extra}."
    )


def load_hf(name: str, loader: Callable[..., T], what: str, extra: str = "") -> T:
    """``loader(name, local_files_only=...)`` from a path or the cache, downloading only when reachable."""
    if Path(name).exists():
        return loader(name)
    try:
        return loader(name, local_files_only=True)
    except OSError:
        pass
    if not hub_reachable():
        raise WeightsUnavailableError(missing_weights_message(what, name, extra))
    try:
        return loader(name)
    except OSError as exc:
        raise WeightsUnavailableError(f"{missing_weights_message(what, name, extra)} ({exc})") from exc
