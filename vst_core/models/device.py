"""Where models run: ``auto`` picks CUDA when a GPU is visible, else the CPU."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` or ``cpu``; ``cuda`` without a GPU raises RuntimeError with the fix."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but no CUDA GPU is available; use --device cpu")
    return device


@contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` intra-op threads (0 leaves torch's choice) and restore the
    count after; yields the count in force. Small CPU steps wait on each other across OpenMP threads,
    which spin at every barrier: on a machine with other work on its cores, one thread can be many
    times faster than all of them (see the README's Performance)."""
    import torch

    before = torch.get_num_threads()
    if threads > 0:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
