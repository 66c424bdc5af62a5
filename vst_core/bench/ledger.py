"""The host-op ledger of the ``device`` image path: what the host asks of torch, counted without
timing, so a shared 2-core machine gives the figures a 16-core GPU host would see.

It runs the product's :meth:`ClipEncoder.encode_crops` on CPU tensors in the order of work a GPU run
takes (the workers decode beside the forward), on photos of many sizes, with a tiny CLIP built by
``vst_core`` (two blocks; its forward is counted once and taken out), and counts in every thread:

- Python-level torch calls (``TorchFunctionMode``): on a GPU host each releases and retakes the GIL;
- aten compute ops (``TorchDispatchMode``, views left out): each is a kernel launch on CUDA;
- host-to-device copies (``_upload``), device-to-host copies (``_collect``) and host syncs
  (``item``, ``tolist``, ``nonzero``, ``int(tensor)`` and the like);
- the photo bytes the main thread copies into window canvases itself (the workers copy them).

Runs on N and 2N photos give slopes per crop and per photo; totals over forwards give per batch.
:func:`predicted_host_ms` turns the counts into a 16-core host time a batch, with per-call costs fitted
on the committed H100 figures (forward 11.3 ms for ~350 launching calls; cut and resize 5.9 ms for
1,346 calls of which 46 launched).

>>> round(predicted_host_ms(launching=350, other=0), 1)
10.5
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: aten ops that only make a view (no kernel on CUDA).
VIEWS = frozenset(
    {
        "view", "_unsafe_view", "slice", "select", "permute", "transpose", "t", "unsqueeze", "squeeze", "expand",
        "as_strided", "alias", "reshape", "unflatten", "detach", "split", "chunk", "unbind", "narrow",
        "_reshape_alias", "view_as", "flatten", "split_with_sizes", "lift_fresh", "empty", "empty_strided",
        "from_numpy", "resolve_neg", "resolve_conj",
    }
)  # fmt: skip
#: Python-level torch calls that make the host wait for the device.
SYNCS = frozenset({"item", "tolist", "nonzero", "__int__", "__index__", "__bool__", "__float__", "cpu"})
#: Host microseconds a Python-level torch call that launches a kernel costs on the H100 host, and one
#: that does not (fitted on ``benchmarks/last_run_cuda.json`` and the review of that run).
LAUNCH_US = 30.0
CALL_US = 2.5

#: The photo sizes of the ledger: 24 (width, height) pairs, as varied as a Flickr collection.
SIZES: tuple[tuple[int, int], ...] = tuple((300 + 29 * i, 1000 - 27 * i) for i in range(24))


def predicted_host_ms(launching: float, other: float) -> float:
    """Main-thread milliseconds on the 16-core GPU host for ``launching`` kernel-launching
    Python-level torch calls and ``other`` calls that launch nothing."""
    return (launching * LAUNCH_US + other * CALL_US) / 1000.0


@dataclass
class Counts:
    """What one thread asked of torch."""

    calls: collections.Counter[str] = field(default_factory=collections.Counter)
    ops: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def torch_calls(self) -> int:
        return sum(self.calls.values())

    @property
    def kernels(self) -> int:
        return sum(v for k, v in self.ops.items() if k not in VIEWS)

    @property
    def syncs(self) -> int:
        return sum(v for k, v in self.calls.items() if k in SYNCS)

    def add(self, other: Counts) -> None:
        self.calls.update(other.calls)
        self.ops.update(other.ops)


def counting(counts: Counts) -> tuple[Any, Any]:
    """A (TorchFunctionMode, TorchDispatchMode) pair that adds to ``counts``; enter both, in order."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class Calls(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            counts.calls[getattr(func, "__name__", str(func))] += 1
            return func(*args, **(kwargs or {}))

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            counts.ops[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return Calls(), Ops()


def counted(fn: Callable[[], Any], counts: Counts) -> Any:
    calls, ops = counting(counts)
    with calls, ops:
        return fn()


def tiny_clip() -> Any:
    """A two-block CLIP built by ``vst_core`` (random weights), in eval mode."""
    import torch

    from vst_core.models.clip_torch import _modules

    torch.manual_seed(0)
    model = _modules().Clip(
        embed_dim=32, image_size=224, patch_size=32, vision_width=64, vision_layers=2, vision_heads=2,
        vision_mlp_ratio=4.0, context_length=77, vocab_size=100, text_width=32, text_layers=1, text_heads=2,
        text_mlp_ratio=4.0, quick_gelu=True,
    ).eval()  # fmt: skip
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.02)
    return model


@dataclass
class Run:
    """The counts of one :meth:`encode_crops` call."""

    photos: int
    crops: int
    forwards: int
    main: Counts  # the main thread, the forwards' own counts taken out
    workers: Counts
    uploads: int
    collects: int
    forward: Counts  # one forward's own counts
    main_copy_bytes: int = 0  # photo bytes the main thread copied into window canvases itself


def ledger_run(photos: int, sizes: Sequence[tuple[int, int]] = SIZES, *, batch_size: int = 256, workers: int = 2) -> Run:
    """Count an :meth:`encode_crops` call on ``photos`` random photos cycling through ``sizes``, each
    with its ten grid regions and the whole photo."""
    import torch

    from vst_core.data.regions import grid_proposals, select_regions, whole_image
    from vst_core.images.image_regions import _pixel_box
    from vst_core.models.clip import ClipEncoder
    from vst_core.models.clip_preprocess import EvalTransform

    model = tiny_clip()
    pre = EvalTransform(224, (224, 224), "bicubic", (0.48, 0.46, 0.41), (0.27, 0.26, 0.28))
    forward = Counts()
    with torch.inference_mode():
        x = torch.zeros(2, 3, 224, 224)
        counted(lambda: torch.nn.functional.normalize(model.encode_image(x).float(), dim=-1), forward)
    worker_counts = Counts()
    lock = threading.Lock()
    tally = {"uploads": 0, "collects": 0, "forwards": 0, "main_copy_bytes": 0}

    class Ledgered(ClipEncoder):
        @property
        def overlaps(self) -> bool:  # the GPU's order of work
            return True

        def _host_image(self, load: Any, item: Any) -> Any:
            mine = Counts()
            out = counted(lambda: ClipEncoder._host_image(self, load, item), mine)
            with lock:
                worker_counts.add(mine)
            return out

        def _window(self) -> tuple[int, int]:  # a GPU's window (the device's memory taken as 80 GB)
            from vst_core.models.clip import WINDOW_BATCHES_CUDA, WINDOW_BYTES_CUDA

            return WINDOW_BATCHES_CUDA, WINDOW_BYTES_CUDA

        def _upload_canvas(self, photos: list[np.ndarray], blocks: Any = None, window: int = 0, spread: Any = None) -> Any:
            sizes = [int(p.nbytes) for p in photos]
            spread_bytes = 0

            def counted_spread(copy: Any, parts: list[list[int]]) -> Any:
                nonlocal spread_bytes
                spread_bytes += sum(sizes[k] for part in parts for k in part)
                return spread(copy, parts)

            out = super()._upload_canvas(photos, blocks, window, counted_spread if spread is not None else None)
            tally["main_copy_bytes"] += sum(sizes) - spread_bytes  # what the main thread copied itself
            return out

        def _upload(self, host: Any) -> Any:
            tally["uploads"] += 1
            return super()._upload(host)

        def _collect(self, parts: Sequence[Any]) -> np.ndarray:
            tally["collects"] += 1
            return super()._collect(parts)

        def _forward_device(self, batch: Any) -> Any:
            tally["forwards"] += 1
            return super()._forward_device(batch)

    encoder = Ledgered(model, pre, None, "tiny", device="cpu", batch_size=batch_size, workers=workers)
    rng = np.random.default_rng(0)
    pixels = {(w, h): rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for w, h in set(sizes)}

    def load(k: int) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
        w, h = sizes[k % len(sizes)]
        boxes = select_regions(grid_proposals(w, h), w, h, top_b=10, include_whole=False) + [whole_image(w, h)]
        return pixels[(w, h)], [_pixel_box(b) for b in boxes]

    main = Counts()
    with torch.inference_mode():
        out = counted(lambda: encoder.encode_crops(list(range(photos)), load), main)
    for name, n in forward.calls.items():
        main.calls[name] -= n * tally["forwards"]
    for name, n in forward.ops.items():
        main.ops[name] -= n * tally["forwards"]
    return Run(
        photos, len(out), tally["forwards"], main, worker_counts, tally["uploads"], tally["collects"], forward,
        tally["main_copy_bytes"],
    )  # fmt: skip


def ledger_figures(photos: int = 96, sizes: Sequence[tuple[int, int]] = SIZES, *, batch_size: int = 256) -> dict[str, float]:
    """The ledger's figures on ``photos`` and twice as many photos of ``sizes``: slopes per crop and
    per photo, counts per batch and per chunk (one :meth:`encode_crops` call), and the predicted
    16-core main-thread milliseconds a batch outside the forward."""
    a, b = ledger_run(photos, sizes, batch_size=batch_size), ledger_run(2 * photos, sizes, batch_size=batch_size)
    crops, n = b.crops - a.crops, b.photos - a.photos
    launching = b.main.kernels / b.forwards
    other = max(0.0, b.main.torch_calls / b.forwards - launching)
    return {
        "ledger_sizes": len(set(sizes)),
        "ledger_batch_size": batch_size,
        "ledger_torch_calls_per_crop": round((b.main.torch_calls - a.main.torch_calls) / crops, 3),
        "ledger_kernels_per_crop": round((b.main.kernels - a.main.kernels) / crops, 3),
        "ledger_torch_calls_per_photo_workers": round((b.workers.torch_calls - a.workers.torch_calls) / n, 3),
        "ledger_uploads_per_photo": round((b.uploads - a.uploads) / n, 3),
        "ledger_main_copy_bytes_per_photo": round((b.main_copy_bytes - a.main_copy_bytes) / n),
        "ledger_kernels_per_batch": round(b.main.kernels / b.forwards, 1),
        "ledger_groups_per_batch": round(b.main.ops["index"] / b.forwards, 1),  # one gather a shape group
        "ledger_torch_calls_per_batch": round(b.main.torch_calls / b.forwards, 1),
        "ledger_uploads_per_batch": round(b.uploads / b.forwards, 2),
        "ledger_d2h_per_chunk": b.collects,
        "ledger_syncs_per_chunk": b.main.syncs,
        "ledger_forward_torch_calls": a.forward.torch_calls,
        "ledger_predicted_host_ms_per_batch": round(predicted_host_ms(launching, other), 2),
    }
