"""The host-op ledger of the ``device`` image path (``vst_core.bench.ledger``), counted without
timing on photos of 24 sizes: no torch call or kernel per crop, no torch call in the decode
workers, no upload per photo, one copy back a chunk; and the pixels of the batched gather equal
those of cutting each crop as a slice (the path the cache keys were made with)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # imports torch


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    from vst_core.bench.ledger import SIZES, ledger_figures

    # 12 and 24 photos of 12 sizes: both runs fit one window of 8 batches of 64, so what grows
    # between them is per-crop and per-photo work only (shape groups stay the same)
    return ledger_figures(12, sizes=SIZES[:12], batch_size=64)


def test_no_torch_call_or_kernel_per_crop(figures: dict[str, float]) -> None:
    """Twice the photos of the same sizes add no per-crop work: before the batched gather each crop
    cost about 12.8 torch calls and 5.4 kernels (photos of 24 sizes, batches of 256)."""
    assert figures["ledger_torch_calls_per_crop"] <= 0.5
    assert figures["ledger_kernels_per_crop"] <= 0.5


def test_no_torch_call_in_the_workers_and_no_upload_per_photo(figures: dict[str, float]) -> None:
    assert figures["ledger_torch_calls_per_photo_workers"] == 0
    assert figures["ledger_uploads_per_photo"] < 0.5  # one window canvas and one index block a batch
    assert figures["ledger_uploads_per_batch"] <= 2


def test_the_main_thread_copies_no_photo(figures: dict[str, float]) -> None:
    """A window's photos are copied into its canvas by the worker threads: the main thread, which
    launches the GPU's work, copied every photo's bytes itself before (1.3 MB a photo here)."""
    assert figures["ledger_main_copy_bytes_per_photo"] == 0


def test_one_copy_back_and_no_other_sync_a_chunk(figures: dict[str, float]) -> None:
    assert figures["ledger_d2h_per_chunk"] == 1
    assert figures["ledger_syncs_per_chunk"] == 1  # the copy back itself


def test_a_shape_group_costs_three_kernels(figures: dict[str, float]) -> None:
    """A group is one gather and two resizes; the passes' roundings and clamps are made once a
    batch (they were two of each a group: 7 kernels a group, 76 a batch at 24 sizes)."""
    groups = figures["ledger_groups_per_batch"]
    assert groups >= 4  # photos of many sizes: many shapes a batch
    assert figures["ledger_kernels_per_batch"] <= 3 * groups + 15, figures  # a window's canvas, the joins, normalising


def test_photos_of_one_size_cost_a_few_kernels_a_batch() -> None:
    from vst_core.bench.ledger import ledger_figures

    one = ledger_figures(24, sizes=[(500, 375)], batch_size=64)
    assert one["ledger_kernels_per_batch"] <= 40


@pytest.mark.parametrize("batch_size", [5, 64])
def test_the_gathered_pixels_equal_the_sliced_ones(batch_size: int) -> None:
    """Crops of photos of many sizes (some smaller than the model's input, boxes past the edge),
    in several windows with crops held over: each batch row is exactly what
    :func:`resize_crops_grouped` gives for that crop cut as a slice."""
    import torch

    from vst_core.bench.ledger import tiny_clip
    from vst_core.models.clip import ClipEncoder, CropBatch
    from vst_core.models.clip_preprocess import EvalTransform, _cut, resize_crops_grouped

    rng = np.random.default_rng(3)
    sizes = [(500, 375), (375, 500), (64, 48), (333, 500), (120, 700), (30, 30), (501, 377)]
    photos = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for w, h in sizes * 3]
    boxes = [
        [(0, 0, w // 2, h // 2), (w // 4, h // 4, 3 * w // 4, 3 * h // 4), (0, 0, w, h), (w - 3, h - 3, w + 9, h + 9)]
        for h, w in (p.shape[:2] for p in photos)
    ]
    seen: dict[int, Any] = {}

    class Capture(ClipEncoder):
        @property
        def overlaps(self) -> bool:
            return True

        def _normalise(self, batch: Any) -> Any:
            return batch

        def _device_batch(self, crops: CropBatch, transform: Any) -> Any:
            batch, order = super()._device_batch(crops, transform)
            for r, k in enumerate(order):
                seen[int(crops.rows["idx"][k])] = batch[r].clone()
            return batch, order

        def _forward_device(self, batch: Any) -> Any:
            return torch.zeros(len(batch), self.embed_dim)

    pre = EvalTransform(224, (224, 224), "bicubic", (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    encoder = Capture(tiny_clip(), pre, None, "tiny", device="cpu", batch_size=batch_size, workers=2)
    out = encoder.encode_crops(list(range(len(photos))), lambda k: (photos[k], boxes[k]))
    crops = [(p, b) for p, bs in zip(photos, boxes, strict=True) for b in bs]
    assert len(out) == len(crops) == len(seen)
    transform = encoder._tensor
    assert transform is not None
    for idx, (photo, box) in enumerate(crops):
        expected, _ = resize_crops_grouped([_cut(torch.from_numpy(photo), box)], transform)
        assert torch.equal(seen[idx], expected[0]), idx


def test_the_graph_forward_pads_the_last_batch_and_copies_each_result() -> None:
    """The bookkeeping of the CUDA-graph forward, with an eager replay on the CPU: full and partial
    batches give the eager forward's rows, a result is not overwritten by the next replay, a batch
    of another shape or a capture that fails runs eagerly."""
    import torch

    from vst_core.bench.ledger import tiny_clip
    from vst_core.models.forward_graph import eager_capture, graph_forward

    model = tiny_clip()

    def forward(x: Any) -> Any:
        with torch.inference_mode():
            return torch.nn.functional.normalize(model.encode_image(x).float(), dim=-1)

    torch.manual_seed(1)
    full, part = torch.randn(4, 3, 224, 224), torch.randn(3, 3, 224, 224)
    held: list[Any] = []
    a = graph_forward(forward, full, held, 4, eager_capture)
    b = graph_forward(forward, part, held, 4, eager_capture)
    assert len(held) == 1 and held[0] is not None
    assert torch.allclose(a, forward(full), atol=1e-6) and torch.allclose(b, forward(part), atol=1e-6)
    assert torch.allclose(a, forward(full), atol=1e-6), "the second replay left the first result as it was"
    other = torch.randn(2, 3, 224, 224)[:, :, :200]
    with pytest.raises(RuntimeError):  # another shape is not the graph's: eager, where the tiny model refuses it
        graph_forward(forward, other, held, 4, eager_capture)

    def broken(fn: Any, static_in: Any) -> Any:
        raise RuntimeError("capture failed")

    fallback: list[Any] = []
    assert torch.allclose(graph_forward(forward, full, fallback, 4, broken), forward(full), atol=1e-6)
    assert fallback == [None]
