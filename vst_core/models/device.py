"""Where models run: ``auto`` picks CUDA when a GPU is visible, else the CPU."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# glibc's mallopt parameters, and the largest mmap threshold it accepts on 64-bit systems
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 * 1024 * 1024
_KEPT: list[bool] = []


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` or ``cpu``; ``cuda`` without a GPU raises RuntimeError with the fix. On
    the CPU, the process keeps the memory a forward frees from then on (:func:`keep_freed_memory`)."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        from vst_core.models.hub import ModelLoadError, option

        raise ModelLoadError(f"device 'cuda' requested but no CUDA GPU is available; use {option('device', 'cpu')}")
    if device == "cpu":
        keep_freed_memory()
    return device


def likely_device(device: str = "auto") -> str:
    """Where ``auto`` will run, guessed without importing torch (for sizes that only change speed,
    such as the stories a chunk holds): ``cuda`` where torch already found a GPU, else where the
    NVIDIA driver lists a GPU and ``CUDA_VISIBLE_DEVICES`` does not hide it all.

    >>> likely_device("cpu"), likely_device("cuda")
    ('cpu', 'cuda')
    """
    if device != "auto":
        return device
    torch = sys.modules.get("torch")
    if torch is not None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        return "cpu"
    try:
        return "cuda" if os.listdir("/proc/driver/nvidia/gpus") else "cpu"
    except OSError:
        return "cpu"


def keep_freed_memory() -> bool:
    """On glibc, keep the memory a CPU forward frees for the next one, as the allocators torch
    recommends for CPU inference do: by default glibc gives a freed block above its mmap threshold
    (a batch's activations) back to the system, and the next forward faults every page in again,
    about 100,000 page faults and 5-10% of a ViT-B-32 forward at batch 32 on the build machine
    (docs/performance.md). Sets ``M_MMAP_THRESHOLD`` to 32 MiB (glibc's largest) and
    ``M_TRIM_THRESHOLD`` to its largest, once per process; the numbers computed do not change.
    ``VST_SYSTEM_MALLOC=1`` leaves glibc's defaults. Returns whether it is in force.

    >>> keep_freed_memory()  # on Linux with glibc
    True
    """
    if not _KEPT:
        _KEPT.append(_set_malloc_options())
    return _KEPT[0]


def _set_malloc_options() -> bool:
    if os.environ.get("VST_SYSTEM_MALLOC", "").strip() not in ("", "0") or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (mallopt is glibc's and musl's)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


@contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` intra-op threads (0 leaves torch's choice) and restore the
    count after; yields the count in force. Small CPU steps wait on each other across OpenMP threads,
    which spin at every barrier: on a machine with other work on its cores, one thread can be many
    times faster than all of them (see docs/performance.md)."""
    import torch

    before = torch.get_num_threads()
    if threads > 0:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
