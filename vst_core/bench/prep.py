"""The CPU's share of image preprocessing, apart from the model: encoders whose forward (and, for
``prep_crops_per_s``, every device-side step) is replaced by a no-op, driven through the product's
own grounder over a synthetic set. What they measure is the ceiling the CPU sets on a GPU run:

    prep_crops_per_s         decode, crop and batching on the CPU, all workers (``pil``: Pillow's crop and
                             resize in the workers, uint8 batches stacked; ``device``: each image decoded
                             once, its crops' boxes listed), the upload, resize and normalisation skipped
    device_prep_crops_per_s  the device-side steps alone (``pil``: uint8 -> float and normalisation;
                             ``device``: slicing, antialiased resize, centre crop, normalisation) run on
                             this machine's device (the CPU here), crops per second of their own time
    preprocess_max_abs_pixel largest difference of one 8-bit channel value between the two paths
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.config import Settings
from vst_core.data import StorySet
from vst_core.models.clip import ClipEncoder, CropBatch, PixelBox, TensorTransform


class PrepOnlyEncoder(ClipEncoder):
    """The product's encoder with the device left out: no upload, no conversion, no resize on the
    device, no forward; each image row comes back as zeros. Measures what the CPU alone costs."""

    seconds: float = 0.0

    def _on_device(self, host: Any) -> Any:
        return host

    def _canvas_on_device(self, host: Any) -> Any:
        return host

    def _upload(self, host: Any) -> Any:
        return host

    def _device_batch(self, crops: CropBatch, transform: TensorTransform) -> Any:
        return np.zeros(len(crops)), list(range(len(crops)))

    def _forward_device(self, batch: Any) -> np.ndarray:
        return np.zeros((len(batch), self.embed_dim), np.float32)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return np.zeros((len(texts), self.embed_dim), np.float32)

    def encode_images(self, images: Sequence[Any], *, load: Callable[[Any], Any] | None = None) -> np.ndarray:
        start = time.perf_counter()
        try:
            return super().encode_images(images, load=load)
        finally:
            self.seconds += time.perf_counter() - start

    def encode_crops(self, sources: Sequence[Any], load: Callable[[Any], tuple[np.ndarray, list[PixelBox]]]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return super().encode_crops(sources, load)
        finally:
            self.seconds += time.perf_counter() - start


class DeviceStepsEncoder(PrepOnlyEncoder):
    """The device-side steps run for real on the encoder's device and are timed on their own
    (``device_seconds``); only the forward is a no-op."""

    device_seconds: float = 0.0
    _depth: int = 0

    def _timed(self, step: Callable[[], Any]) -> Any:
        """``step()``, its seconds added once however the steps nest."""
        start = time.perf_counter()
        self._depth += 1
        try:
            out = step()
            if self.device == "cuda":
                self._torch.cuda.synchronize()
        finally:
            self._depth -= 1
        if self._depth == 0:
            self.device_seconds += time.perf_counter() - start
        return out

    def _on_device(self, host: Any) -> Any:
        return self._timed(lambda: ClipEncoder._on_device(self, host))

    def _upload(self, host: Any) -> Any:
        return self._timed(lambda: ClipEncoder._upload(self, host))

    def _canvas_on_device(self, host: Any) -> Any:
        return self._timed(lambda: ClipEncoder._canvas_on_device(self, host))

    def _device_batch(self, crops: CropBatch, transform: TensorTransform) -> Any:
        return self._timed(lambda: ClipEncoder._device_batch(self, crops, transform))


def noop_encoder(source: ClipEncoder, kind: type[PrepOnlyEncoder] = PrepOnlyEncoder, *, workers: int = 0) -> PrepOnlyEncoder:
    """``kind`` sharing ``source``'s model, preprocessing and signature (the model never runs)."""
    return kind.like(source, workers=workers)


def prep_rates(
    story_set: StorySet, settings: Settings, source: ClipEncoder, workers: Sequence[int], seconds: float = 1.0
) -> dict[str, Any]:
    """Crops/s of the CPU's share (per preprocessing and number of workers), and of the device-side
    steps on ``source``'s device; each measured over fresh grounders, repeated for ``seconds``."""
    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.images.grounder import Grounder

    stories = [s for s in story_set if s.images]

    def run(encoder: PrepOnlyEncoder, preprocess: str) -> int:
        grounder = Grounder(settings.with_(preprocess=preprocess), encoder, root=story_set.root, cache=EmbeddingCache(None))
        before = encoder.images_encoded
        grounder.prepare(stories)
        return encoder.images_encoded - before

    figures: dict[str, Any] = {}
    for preprocess in ("pil", "device"):
        by_workers: dict[str, float] = {}
        for n in workers:
            encoder = noop_encoder(source, workers=n)
            crops = 0
            while crops == 0 or encoder.seconds < seconds:
                crops += run(encoder, preprocess)
            by_workers[str(n)] = round(crops / encoder.seconds, 1)
        figures[f"prep_crops_per_s_{preprocess}_by_workers"] = by_workers
        timer = noop_encoder(source, DeviceStepsEncoder)
        assert isinstance(timer, DeviceStepsEncoder)
        crops = 0
        while crops == 0 or timer.device_seconds < seconds:
            crops += run(timer, preprocess)
        figures[f"device_prep_crops_per_s_{preprocess}"] = round(crops / timer.device_seconds, 1)
    return figures


def pixel_difference(image_paths: Sequence[Path], source: ClipEncoder, boxes_per_image: int = 10) -> dict[str, float]:
    """Largest and mean absolute difference of the 8-bit model inputs of the two preprocessing paths
    over the grid regions of ``image_paths`` (before normalisation)."""
    import torch

    from vst_core.data.images import open_image
    from vst_core.data.regions import grid_proposals
    from vst_core.images.grounder import _crop, _pixel_box
    from vst_core.models.clip_preprocess import _cut, resize_crops

    transform = source._tensor
    split = source._split
    if transform is None or split is None:
        return {}
    worst, total, count = 0.0, 0.0, 0
    for path in image_paths:
        image = open_image(path)
        pixels = torch.from_numpy(np.array(image))
        for box in grid_proposals(*image.size)[:boxes_per_image]:
            pil = torch.from_numpy(np.array(split[0](_crop(image, box)), dtype=np.uint8)).permute(2, 0, 1).float()
            dev = resize_crops([_cut(pixels, _pixel_box(box))], transform)[0]
            diff = (pil - dev).abs()
            worst = max(worst, float(diff.max()))
            total += float(diff.sum())
            count += diff.numel()
    return {"preprocess_max_abs_pixel": worst, "preprocess_mean_abs_pixel": round(total / max(count, 1), 4)}
