"""Where models run: ``auto`` picks CUDA when a GPU is visible, else the CPU."""

from __future__ import annotations


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` or ``cpu``; ``cuda`` without a GPU raises RuntimeError with the fix."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but no CUDA GPU is available; use --device cpu")
    return device
