"""CLIP's image preprocessing split for the encoder's two paths: the Pillow part that runs in worker
threads and the Normalize steps that run on the device (:func:`_split_preprocess`), and the whole
evaluation transform as tensor operations on the device (:class:`TensorTransform`,
:func:`resize_crops`), for crops cut from a decoded image as views (:func:`_cut`).

>>> resized_size(150, 250, 224)
(224, 373)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: A crop in the decoded image's pixels: ``(x1, y1, x2, y2)``, right and bottom exclusive.
PixelBox = tuple[int, int, int, int]


@dataclass(frozen=True)
class TensorTransform:
    """CLIP's evaluation preprocessing as tensor operations: the shorter side resized to ``size``
    (``mode``, antialiased, as torchvision's ``Resize(int)``), a centre crop of ``crop`` (H, W), and
    the result rounded to 8 bits as Pillow's resize gives it; the Normalize steps follow."""

    size: int
    crop: tuple[int, int]
    mode: str


@dataclass(frozen=True)
class Normalise:
    """One Normalize step: ``(x - mean) / std`` per channel."""

    mean: tuple[float, ...]
    std: tuple[float, ...]


@dataclass(frozen=True)
class EvalTransform:
    """CLIP's evaluation transform without torchvision: the shorter side resized to ``size`` by
    Pillow (``mode``, as torchvision's ``Resize(int)`` on a PIL image), a centre crop of ``crop``
    (H, W) padded with zeros where the image is smaller (torchvision's ``CenterCrop``), RGB, then
    ``x / 255`` and :class:`Normalise`. open_clip's ``image_transform`` for ``resize_mode="shortest"``
    gives the same pixels (``tests/test_clip_torch.py``).

    >>> from PIL import Image
    >>> t = EvalTransform(8, (8, 8), "bicubic", (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    >>> t.pil_part(Image.new("RGB", (20, 10), (255, 0, 0))).size
    (8, 8)
    """

    size: int
    crop: tuple[int, int]
    mode: str
    mean: tuple[float, ...]
    std: tuple[float, ...]

    def pil_part(self, image: Any) -> Any:
        """The Pillow steps: resize, centre crop, RGB."""
        from PIL import Image

        width, height = image.size
        new_h, new_w = resized_size(height, width, self.size)
        if (new_h, new_w) != (height, width):
            resample = Image.Resampling.BICUBIC if self.mode == "bicubic" else Image.Resampling.BILINEAR
            image = image.resize((new_w, new_h), resample)
        crop_h, crop_w = self.crop
        if crop_w > new_w or crop_h > new_h:
            left, top = (crop_w - new_w) // 2 if crop_w > new_w else 0, (crop_h - new_h) // 2 if crop_h > new_h else 0
            right, bottom = (crop_w - new_w + 1) // 2 if crop_w > new_w else 0, (crop_h - new_h + 1) // 2 if crop_h > new_h else 0
            padded = Image.new(image.mode, (new_w + left + right, new_h + top + bottom), 0)
            padded.paste(image, (left, top))
            image, (new_w, new_h) = padded, padded.size
        if (new_h, new_w) != (crop_h, crop_w):
            top, left = int(round((new_h - crop_h) / 2.0)), int(round((new_w - crop_w) / 2.0))
            image = image.crop((left, top, left + crop_w, top + crop_h))
        return image.convert("RGB")

    @property
    def norms(self) -> list[Normalise]:
        return [Normalise(self.mean, self.std)]

    def __call__(self, image: Any) -> Any:
        """(3, H, W) float32, normalised, as torchvision's ``ToTensor`` and ``Normalize`` give it."""
        import numpy as np
        import torch

        x = torch.from_numpy(np.array(self.pil_part(image), dtype=np.uint8, copy=True)).permute(2, 0, 1).float().div(255)
        mean = torch.as_tensor(self.mean, dtype=torch.float32).view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=torch.float32).view(-1, 1, 1)
        return x.sub_(mean).div_(std)


def tensor_transform(preprocess: Any) -> TensorTransform | None:
    """The :class:`TensorTransform` of an :class:`EvalTransform` or of a torchvision ``Compose`` of
    ``Resize(int)`` (bicubic or bilinear), ``CenterCrop``, RGB conversion, ``ToTensor`` and
    ``Normalize`` (open_clip's and OpenAI's evaluation transform); None for any other preprocessing."""
    if isinstance(preprocess, EvalTransform):
        return TensorTransform(preprocess.size, preprocess.crop, preprocess.mode)
    try:
        from torchvision.transforms import CenterCrop, InterpolationMode, Normalize, Resize, ToTensor
    except ImportError:  # pragma: no cover - open_clip needs torchvision
        return None
    steps = list(getattr(preprocess, "transforms", []) or [])
    if len(steps) < 4 or not isinstance(steps[0], Resize) or not isinstance(steps[1], CenterCrop):
        return None
    rest = steps[2:]
    if not all(
        isinstance(t, (ToTensor, Normalize)) or "convert" in type(t).__name__.lower() + getattr(t, "__name__", "") for t in rest
    ):
        return None
    resize, crop = steps[0], steps[1]
    size = resize.size if isinstance(resize.size, int) else (resize.size[0] if len(resize.size) == 1 else None)
    modes = {InterpolationMode.BICUBIC: "bicubic", InterpolationMode.BILINEAR: "bilinear"}
    if size is None or resize.max_size is not None or resize.interpolation not in modes:
        return None
    height, width = (crop.size, crop.size) if isinstance(crop.size, int) else tuple(crop.size)
    return TensorTransform(int(size), (int(height), int(width)), modes[resize.interpolation])


def resized_size(height: int, width: int, size: int) -> tuple[int, int]:
    """(H, W) after torchvision's ``Resize(size)``: the shorter side to ``size``, the longer one
    scaled and truncated.

    >>> resized_size(150, 250, 224)
    (224, 373)
    """
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def resize_crops(crops: Sequence[Any], transform: TensorTransform) -> Any:
    """(N, 3, H, W) float32 pixel values 0-255 of uint8 (h, w, 3) crops on one device, in their
    order: :func:`resize_crops_grouped`'s rows put back in place.

    >>> import torch
    >>> crops = [torch.full((10, 20, 3), 7, dtype=torch.uint8), torch.full((20, 10, 3), 9, dtype=torch.uint8)]
    >>> out = resize_crops(crops, TensorTransform(8, (8, 8), "bicubic"))
    >>> tuple(out.shape), float(out[0].mean()), float(out[1].mean())
    ((2, 3, 8, 8), 7.0, 9.0)
    """
    import torch

    batch, order = resize_crops_grouped(crops, transform)
    out = torch.empty_like(batch)
    out[torch.as_tensor(order, device=batch.device)] = batch
    return out


def resize_crops_grouped(crops: Sequence[Any], transform: TensorTransform) -> tuple[Any, list[int]]:
    """(rows, order): uint8 (h, w, 3) crops on one device resized and centre-cropped as ``transform``
    says, crops of one shape in one call, as (N, 3, H, W) float32 pixel values 0-255; row ``r`` is
    crop ``order[r]``. Nothing is copied from the host (no index tensor: the caller reorders what it
    computes from the rows), so on a GPU the call only queues work. Pillow's antialiased bicubic and
    torch's use the same kernel (a = -0.5); as Pillow, the width is resized first and each pass is
    rounded and clamped to 8 bits."""
    import torch

    groups: dict[tuple[int, int], list[int]] = {}
    for k, crop in enumerate(crops):
        groups.setdefault((int(crop.shape[0]), int(crop.shape[1])), []).append(k)
    parts = []
    order: list[int] = []
    for idx in groups.values():
        x = torch.stack([crops[k] for k in idx]).permute(0, 3, 1, 2).contiguous().to(torch.float32)
        parts.append(resize_group(x, transform))
        order.extend(idx)
    return (parts[0] if len(parts) == 1 else torch.cat(parts)), order


def resize_group(x: Any, transform: TensorTransform) -> Any:
    """(n, 3, H, W) float32 pixel values 0-255 of crops of one shape (h, w), resized and
    centre-cropped as ``transform`` says: two passes as Pillow makes them, widths first, each
    rounded and clamped to 8 bits (a clamped overshoot at a sharp edge is what Pillow's
    intermediate image keeps); a crop larger than the resized image is padded with zeros, as
    torchvision's ``CenterCrop`` does."""
    import torch

    h, w = int(x.shape[-2]), int(x.shape[-1])
    nh, nw = resized_size(h, w, transform.size)
    for size in ((h, nw), (nh, nw)):
        if tuple(x.shape[-2:]) != size:
            x = torch.nn.functional.interpolate(x, size=size, mode=transform.mode, align_corners=False, antialias=True)
            x = x.round_().clamp_(0, 255)
    return _centre_crop(x, nh, nw, transform)


def _centre_crop(x: Any, nh: int, nw: int, transform: TensorTransform) -> Any:
    """The centre crop of ``transform`` of (n, 3, nh, nw) resized crops, padded with zeros where
    the crop is larger, as torchvision's ``CenterCrop`` does."""
    import torch

    ch, cw = transform.crop
    top, left = int(round((nh - ch) / 2.0)), int(round((nw - cw) / 2.0))
    if top < 0 or left < 0:
        x = torch.nn.functional.pad(x, (max(-left, 0), max(cw - nw + left, 0), max(-top, 0), max(ch - nh + top, 0)))
        top, left = max(top, 0), max(left, 0)
    return x[:, :, top : top + ch, left : left + cw]


def resize_gathered(canvases: Any, block: Any, found: Sequence[Any], transform: TensorTransform, channels: Any) -> Any:
    """(N, 3, H, W) float32 pixel values 0-255 of a batch of crops planned by
    :func:`vst_core.models.crop_plan.batch_indices`: per shape group one gather from its float32
    (rows, W, 3) canvas (``canvases[g.canvas]``) by the rows and columns in the device's index
    ``block`` (``channels``: ``arange(3)`` shaped (1, 3, 1, 1) on the device) and its two resize
    passes; each pass's rounding and clamping made once for the whole batch, not once a group
    (they are elementwise: the same values), so a group costs three kernels. Rows follow the batch;
    the pixels are those of :func:`resize_crops_grouped` (:func:`resize_group`) on the same crops
    cut as slices."""
    import torch

    interpolate = torch.nn.functional.interpolate
    widths, sizes, resized = [], [], []
    for k, g in enumerate(found):
        rows = block[g.rows : g.rows + g.n * g.h].view(g.n, 1, g.h, 1)
        cols = block[g.cols : g.cols + g.n * g.w].view(g.n, 1, 1, g.w)
        x = canvases[g.canvas][rows, cols, channels]
        nh, nw = resized_size(g.h, g.w, transform.size)
        if nw != g.w:  # widths first, as Pillow resizes
            x = interpolate(x, size=(g.h, nw), mode=transform.mode, align_corners=False, antialias=True)
            resized.append(k)
        widths.append(x)
        sizes.append((nh, nw))
    for k, x in zip(resized, _round_together([widths[k] for k in resized]), strict=True):
        widths[k] = x  # the width pass's rounding, as Pillow's intermediate image keeps it
    parts = []
    for x, (nh, nw) in zip(widths, sizes, strict=True):
        if nh != int(x.shape[-2]):
            x = interpolate(x, size=(nh, nw), mode=transform.mode, align_corners=False, antialias=True)
        parts.append(_centre_crop(x, nh, nw, transform))
    batch = parts[0].contiguous() if len(parts) == 1 else torch.cat(parts)
    return batch.round_().clamp_(0, 255)  # the height pass's rounding (values already whole are kept)


def _round_together(parts: Sequence[Any]) -> list[Any]:
    """``parts`` rounded and clamped to 0-255 with one rounding and one clamping: in place when
    there is one, else as views of one joined block (one copy, not one kernel a part).

    >>> import torch
    >>> [p.tolist() for p in _round_together([torch.tensor([0.4, 300.0]), torch.tensor([[-2.0, 7.6]])])]
    [[0.0, 255.0], [[0.0, 8.0]]]
    """
    import torch

    if len(parts) < 2:
        return [p.round_().clamp_(0, 255) for p in parts]
    flat = torch.cat([p.reshape(-1) for p in parts]).round_().clamp_(0, 255)
    views, at = [], 0
    for p in parts:
        views.append(flat[at : at + p.numel()].view(p.shape))
        at += p.numel()
    return views


def _cut(image: Any, box: PixelBox) -> Any:
    """The box of a (H, W, 3) image tensor as a view, kept inside the image and at least 1x1."""
    height, width = int(image.shape[0]), int(image.shape[1])
    x1, y1 = min(max(box[0], 0), width - 1), min(max(box[1], 0), height - 1)
    x2, y2 = max(min(box[2], width), x1 + 1), max(min(box[3], height), y1 + 1)
    return image[y1:y2, x1:x2]


def _split_preprocess(preprocess: Any) -> tuple[Any, list[Any]] | None:
    """(PIL part, Normalize steps) of a torchvision ``Compose`` ending in ToTensor + Normalize;
    None for any other preprocess (then it runs whole in the worker threads)."""
    if isinstance(preprocess, EvalTransform):
        return preprocess.pil_part, preprocess.norms
    try:
        from torchvision.transforms import Compose, Normalize, ToTensor
    except ImportError:  # pragma: no cover - open_clip needs torchvision
        return None
    steps = list(getattr(preprocess, "transforms", []) or [])
    at = [k for k, t in enumerate(steps) if isinstance(t, ToTensor)]
    if len(at) != 1 or not all(isinstance(t, Normalize) for t in steps[at[0] + 1 :]):
        return None
    return Compose(steps[: at[0]]), steps[at[0] + 1 :]
