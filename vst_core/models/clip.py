"""CLIP encoder on open_clip: batched, L2-normalised text and image embeddings.

Loaded by architecture + pretrained tag (default ``ViT-B-32`` / ``openai``, the model GROOVIST
uses) or by a local checkpoint file; an extra architecture can be registered from an open_clip
model-config JSON. Weights are taken from the local cache first; when they are absent and
cannot be downloaded, loading fails at once with a message saying how to get them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vst_core.config import DEVICE_BATCH
from vst_core.models.clip_build import build_clip, download_clip
from vst_core.models.clip_preprocess import (
    PixelBox,
    TensorTransform,
    _split_preprocess,
    resize_crops,
    resize_gathered,
    resized_size,
    tensor_transform,
)
from vst_core.models.clip_torch import plain_config
from vst_core.models.clip_weights import (
    DEFAULT_ARCH,
    DEFAULT_PRETRAINED,
    Activation,
    ClipWeights,
    cached_pretrained_file,
    checkpoint_signature,
    clip_cache_dirs,
    clip_cache_hint,
    clip_signature,
    resolve_clip_weights,
    short_error,
)
from vst_core.models.crop_plan import CropQueue, GroupIndex, Spread, batch_indices, canvas_bytes, crop_table, pack
from vst_core.models.device import resolve_device
from vst_core.models.forward_graph import ForwardGraph, graph_forward, graphs_wanted
from vst_core.models.hub import ModelLoadError, SettingValueError, option

__all__ = [
    "DEFAULT_ARCH",
    "DEFAULT_PRETRAINED",
    "ClipEncoder",
    "LazyClipEncoder",
    "PixelBox",
    "TensorTransform",
    "ClipWeights",
    "cached_pretrained_file",
    "checkpoint_signature",
    "clip_cache_dirs",
    "clip_cache_hint",
    "clip_signature",
    "default_workers",
    "load_clip",
    "resize_crops",
    "resized_size",
    "resolve_clip_weights",
    "tensor_transform",
]

log = logging.getLogger(__name__)
E = TypeVar("E", bound="ClipEncoder")


#: The smallest batch of texts the text tower is given (see :attr:`ClipEncoder.text_batch_size`).
TEXT_BATCH_MIN = 64

#: Fewest decoded images the ``device`` preprocessing keeps queued ahead of the model: about two
#: full batches of 256 crops at ten regions an image, 64 images of 500x375 being about 36 MB.
AHEAD_IMAGES = 64

#: Batches of crops a window of decoded images holds on the device before its crops are sorted by
#: shape and cut into batches (``device`` preprocessing): more makes fewer shape groups a batch
#: when photos vary in size, at the cost of the window's canvas in device memory (about 190 images
#: of crops at ten regions an image and batches of 256).
WINDOW_BATCHES = 8

#: Bytes of decoded images a window holds at most (uint8; the device keeps it as float32, four times
#: as much), whatever :data:`WINDOW_BATCHES` says: large photos make smaller windows.
WINDOW_BYTES = 256 << 20

#: The window on CUDA: four times as many batches (a batch's crops then come in fewer shape groups,
#: each costing seven kernel launches: 76 launches a batch against 169 on photos of 24 sizes in the
#: host-op ledger), within a sixty-fourth of the GPU's memory and at most 1 GiB of photos (4 GiB as
#: float32 on the device).
WINDOW_BATCHES_CUDA = 32
WINDOW_BYTES_CUDA = 1 << 30


class CanvasBlocks:
    """The host blocks of the ``device`` path's window canvases, reused from window to window where
    the device is the CPU: a new block of a few hundred MB is mapped fresh by the kernel and filled
    at a page fault a page, about seven times the cost of filling one already mapped (140 against
    20 ms for 110 MB of photos on the 2-core build machine). On CUDA the pinned blocks come from
    torch's caching host allocator, which reuses them once their copies are done (``reuse`` False).

    >>> blocks = CanvasBlocks(reuse=True)
    >>> first = blocks.take(0, 1000)
    >>> blocks.give_back(0)
    >>> blocks.take(1, 900) is first, blocks.take(2, 10).numel() >= 10
    (True, True)
    """

    #: Free blocks kept (a window is packed while at most one other's crops wait).
    KEPT = 2
    #: Blocks are made a multiple of this, so the next window's canvas, a little larger, still fits.
    GRAIN = 16 << 20

    def __init__(self, *, reuse: bool) -> None:
        self.reuse = reuse
        self._free: list[Any] = []
        self._held: dict[int, Any] = {}

    def take(self, window: int, size: int) -> Any:
        """A flat uint8 host tensor of at least ``size`` bytes for ``window``: a free one that fits,
        else a new one."""
        import torch

        fits = [b for b in self._free if b.numel() >= size]
        if fits:
            block = min(fits, key=lambda b: b.numel())
            self._free = [b for b in self._free if b is not block]
        else:
            block = torch.empty(-(-size // self.GRAIN) * self.GRAIN, dtype=torch.uint8)
        self._held[window] = block
        return block

    def give_back(self, window: int) -> None:
        """``window``'s canvas is no longer read: its block may be packed again."""
        block = self._held.pop(window, None)
        if block is not None:
            self._free = [*self._free, block][-self.KEPT :]


@dataclass(frozen=True)
class CropBatch:
    """One model batch of the ``device`` path, as the host planned it: its :data:`CROP` rows, their
    gather indices (one host block) and shape groups, and the device canvases they are cut from."""

    rows: np.ndarray
    block: Any  # int64 host tensor
    groups: list[GroupIndex]
    canvases: dict[int, Any]

    def __len__(self) -> int:
        return len(self.rows)


def default_workers() -> int:
    """Preprocessing threads: one per core, at most 8 (decode and resize release the GIL)."""
    return max(1, min(8, os.cpu_count() or 1))


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
        self._tensor = tensor_transform(preprocess)
        self._ring: dict[int, Any] = {}
        # the host blocks of the device path's window canvases, kept from call to call (a chunk's
        # encode_crops reuses the blocks the chunk before it filled)
        self._blocks = CanvasBlocks(reuse=device != "cuda")
        #: tokens (start and end included) of each text :meth:`text_batches` saw since last cleared
        self.token_counts: dict[str, int] = {}
        self._norm_tensors: list[tuple[Any, Any]] | None = None
        self._channels: Any = None
        self._graphs: list[ForwardGraph | None] = []  # the captured image forward (CUDA), once captured
        # for throughput reports: crops and texts through each tower, and the seconds of their forwards
        self.images_encoded = 0
        self.texts_encoded = 0
        self.image_seconds = 0.0
        self.text_seconds = 0.0

    @classmethod
    def like(cls: type[E], source: ClipEncoder, *, workers: int = 0) -> E:
        """An encoder of this class sharing ``source``'s model, preprocessing, tokenizer, signature,
        device and batch size (``workers``: its own count, else ``source``'s): the benchmark's
        encoders whose forwards or device steps are replaced."""
        return cls(
            source.model,
            source.preprocess,
            source.tokenizer,
            source.signature,
            device=source.device,
            batch_size=source.batch_size,
            workers=workers or source.workers,
        )

    def token_count(self, text: str) -> int | None:
        """Tokens of ``text``, start and end included (None when the tokenizer cannot say)."""
        return self._text_length(text)

    def _text_length(self, text: str) -> int | None:
        inner = getattr(self.tokenizer, "tokenizer", self.tokenizer)
        encode = getattr(inner, "encode", None)
        if encode is None:
            return None
        try:  # a Hugging Face tokenizer adds its start and end tokens itself when asked to
            return len(encode(text, add_special_tokens=False)) + 2
        except TypeError:
            pass
        except Exception:
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
        out = np.zeros((len(texts), self.embed_dim), np.float32)
        order: list[int] = []
        parts = []
        batches = self.text_batches(texts)
        start = time.perf_counter()
        for idx, tokens in batches:
            parts.append(torch.nn.functional.normalize(self.text_tower(tokens).float(), dim=-1))
            order.extend(idx)
        if parts:  # one copy back for every batch: the only point where the host waits
            out[order] = (parts[0] if len(parts) == 1 else torch.cat(parts)).cpu().numpy()
        self.text_seconds += time.perf_counter() - start
        self.texts_encoded += len(texts)
        return out

    @property
    def text_batch_size(self) -> int:
        """Texts per text-tower forward: the batch size, at least :data:`TEXT_BATCH_MIN` (texts are
        short, and a batch of a few makes many small forwards: on 2 CPU cores ViT-B-32's tower runs
        phrases about 1.4x faster at 64 than at 16)."""
        return max(self.batch_size, TEXT_BATCH_MIN)

    def text_batches(self, texts: Sequence[str]) -> list[tuple[list[int], Any]]:
        """(indices into ``texts``, their tokens on the device) per model batch of
        :attr:`text_batch_size`, shortest texts first. Each text is tokenised once (open_clip's
        tokenizer: its ids give the count and the tokens), and for a causal tower pooled at the end
        token a batch's tokens are cut after its longest text on the host, so the device is never
        asked how long they are."""
        ids = self._token_ids(texts)
        lengths = []
        for k, text in enumerate(texts):
            length = len(ids[k]) if ids is not None else self._text_length(text)
            lengths.append(length or self.context_length)
            if length is not None and length > self.context_length:
                log.warning("text of %d tokens truncated to CLIP's context length %d: %.60r", length, self.context_length, text)
        self.token_counts.update(zip(texts, lengths))  # read (and cleared) by whoever records truncation
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        batches = []
        size = self.text_batch_size
        for start in range(0, len(texts), size):
            idx = order[start : start + size]
            if ids is not None:
                tokens = self._tokens_of([ids[i] for i in idx])
            else:
                tokens = self._trimmed(self.tokenizer([texts[i] for i in idx], context_length=self.context_length))
            batches.append((idx, tokens.to(self.device, non_blocking=True)))
        return batches

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]] | None:
        """Each text's ids with its start and end tokens, for open_clip's own tokenizer (None for
        any other: it is called as it is)."""
        tok = self.tokenizer
        if type(tok).__name__ != "SimpleTokenizer" or getattr(tok, "reduction_fn", None) is not None:
            return None
        sot, eot = getattr(tok, "sot_token_id", None), getattr(tok, "eot_token_id", None)
        if sot is None or eot is None:
            return None
        return [[sot, *tok.encode(text), eot] for text in texts]

    def _tokens_of(self, ids: Sequence[list[int]]) -> Any:
        """The (N, L) token tensor open_clip's tokenizer makes of these ids: each cut at the context
        length with its last token the end token, zeros after; L the longest where the tower can be
        cut there (:func:`_trimmable`), else the context length."""
        context = self.context_length
        eot = self.tokenizer.eot_token_id
        rows = [row if len(row) <= context else [*row[: context - 1], eot] for row in ids]
        width = max((len(r) for r in rows), default=1) if self._trim else context
        block = np.zeros((len(rows), width), np.int64)
        for k, row in enumerate(rows):
            block[k, : len(row)] = row
        return self._torch.from_numpy(block)

    def _trimmed(self, tokens: Any) -> Any:
        """Host tokens cut after the batch's last non-padding position (where the tower allows it)."""
        if not self._trim:
            return tokens
        used = np.flatnonzero(tokens.numpy().any(axis=0))
        return tokens[:, : int(used[-1]) + 1 if len(used) else 1]

    def text_tower(self, tokens: Any) -> Any:
        """The text tower's forward on a batch of tokens (trimmed after the batch's longest text
        where that cannot change the vectors): the model's raw text embeddings."""
        torch = self._torch
        with torch.inference_mode(), torch.autocast("cuda", enabled=self.device == "cuda"):
            if self._trim:  # tokens cut on the host (text_batches): their width is the length
                return _encode_text_trimmed(self.model, tokens, int(tokens.shape[1]))
            return self.model.encode_text(tokens)

    def _prepare(self, item: Any, load: Callable[[Any], Any] | None) -> Any:
        """One image through the Pillow part of the preprocessing (a worker thread): uint8 (H, W, 3)
        with a split preprocess, else the whole preprocess's tensor."""
        image = load(item) if load is not None else item
        if self._split is None:
            return self.preprocess(image.convert("RGB"))
        return np.asarray(self._split[0](image.convert("RGB")), dtype=np.uint8)

    def _host(self, slot: int, shape: tuple[int, ...]) -> Any:
        """Ring buffer ``slot`` of uint8 batches on the host, pinned on CUDA so the copy is asynchronous.
        A slot is reused two batches later, after the forward that read it has synchronised."""
        torch = self._torch
        buf = self._ring.get(slot)
        if buf is None or tuple(buf.shape[1:]) != shape[1:] or buf.shape[0] < shape[0]:
            buf = torch.empty(shape, dtype=torch.uint8, pin_memory=self.device == "cuda")
            self._ring[slot] = buf
        return buf[: shape[0]]

    def _to_batch(self, prepared: list[Any], slot: int = 0) -> Any:
        """The model's input on the device. With a split preprocess the uint8 crops are stacked into
        a (pinned) host buffer, sent as uint8 (a quarter of float32's bytes) and converted and
        normalised there (:meth:`_normalise`: ToTensor's and Normalize's float operations, so the
        same values as the Pillow transform)."""
        torch = self._torch
        if self._split is None:
            return torch.stack(prepared).to(self.device, non_blocking=True)
        host = self._host(slot, (len(prepared), *prepared[0].shape))
        np.stack(prepared, out=host.numpy())
        return self._on_device(host)

    def _on_device(self, host: Any) -> Any:
        """A uint8 (N, H, W, 3) host batch sent to the device, converted and normalised there."""
        batch = self._upload(host).permute(0, 3, 1, 2).contiguous().to(self._torch.float32)
        return self._normalise(batch)

    def _normalise(self, batch: Any) -> Any:
        """(N, 3, H, W) float32 pixel values 0-255 -> ToTensor's x / 255, then every Normalize step."""
        batch = batch.div_(255)
        for mean, std in self._norms():
            batch = batch.sub_(mean).div_(std)
        return batch

    def _norms(self) -> list[tuple[Any, Any]]:
        """(mean, std) of each Normalize step as (1, C, 1, 1) tensors on the device, built once."""
        if self._norm_tensors is None:
            torch = self._torch
            steps = self._split[1] if self._split is not None else []
            self._norm_tensors = [
                (
                    torch.as_tensor(n.mean, dtype=torch.float32).view(1, -1, 1, 1).to(self.device),
                    torch.as_tensor(n.std, dtype=torch.float32).view(1, -1, 1, 1).to(self.device),
                )
                for n in steps
            ]
        return self._norm_tensors

    @property
    def overlaps(self) -> bool:
        """Whether the worker threads prepare images beside the forward: on an accelerator, where the
        host only waits; on a CPU the forward itself uses every core (see :meth:`encode_images`)."""
        return self.device != "cpu"

    def _forward_device(self, batch: Any) -> Any:
        """Unit image embeddings of a device batch, left where the model ran (fp16 autocast on CUDA):
        on a GPU the call returns once the work is queued. On CUDA the forward is one captured graph
        replayed for batches of :attr:`batch_size` rows, the last one padded
        (:mod:`vst_core.models.forward_graph`; ``VST_CUDA_GRAPH=0`` keeps it eager)."""
        torch = self._torch
        start = time.perf_counter()
        cuda = self.device == "cuda"

        def forward(x: Any) -> Any:
            # autocast without its weight cache: a captured graph must not hold casts made outside it
            with torch.inference_mode(), torch.autocast("cuda", enabled=cuda, cache_enabled=False if cuda else None):
                return torch.nn.functional.normalize(self.model.encode_image(x).float(), dim=-1)

        if cuda and graphs_wanted():
            emb = graph_forward(forward, batch, self._graphs, self.batch_size)
        else:
            emb = forward(batch)
        self.image_seconds += time.perf_counter() - start
        return emb

    def _collect(self, parts: Sequence[Any]) -> np.ndarray:
        """(N, D) float32 on the host from the device embeddings of :meth:`_forward_device`, in one
        copy: the only point where the host waits for the device."""
        if not parts:
            return np.zeros((0, self.embed_dim), np.float32)
        if all(isinstance(p, np.ndarray) for p in parts):
            return np.concatenate(parts).astype(np.float32, copy=False)
        torch = self._torch
        joined = torch.cat([p if isinstance(p, torch.Tensor) else torch.from_numpy(p) for p in parts])
        out: np.ndarray = joined.float().cpu().numpy()
        return out

    def _forward(self, batch: Any) -> np.ndarray:
        """Unit image embeddings of a device batch on the host (fp16 autocast on CUDA)."""
        return self._collect([self._forward_device(batch)])

    def encode_images(self, images: Sequence[Any], *, load: Callable[[Any], Any] | None = None) -> np.ndarray:
        """(N, D) float32, unit rows, for PIL images (any mode; converted to RGB).

        With ``load``, ``images`` are items (e.g. an image and a box) that ``load`` turns into PIL
        images in the worker threads, so cropping runs in parallel too. The resize runs in Pillow
        (the ``pil`` preprocessing); see :meth:`encode_crops` for the device's.
        """
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
            overlap = self.overlaps
            submit(0)
            if overlap:
                submit(1)
            for k in range(len(starts)):
                prepared = [f.result() for f in queued.popleft()]
                if overlap:
                    submit(k + 2)
                batch = self._to_batch(prepared, k % 3)
                chunks.append(self._forward(batch))
                if not overlap:
                    submit(k + 1)
        return np.concatenate(chunks)

    def encode_crops(self, sources: Sequence[Any], load: Callable[[Any], tuple[np.ndarray, list[PixelBox]]]) -> np.ndarray:
        """(N, D) float32, unit rows: the ``device`` preprocessing. ``load(source)`` runs in the worker
        threads and gives the decoded image, uint8 (H, W, 3), and its crops' pixel boxes
        ``(x1, y1, x2, y2)``. Rows follow the sources and, within one, its boxes.

        The host only plans, in numpy (:mod:`vst_core.models.crop_plan`): the images of a window
        (about :data:`WINDOW_BATCHES` batches of crops, more on CUDA) are packed into one canvas sent to the
        device in one copy; the window's crops are sorted by shape and cut into batches, each batch's
        gather indices sent in one copy; the device cuts each shape group with one gather and
        resizes it (:func:`resize_gathered`: the pixels of :func:`resize_crops`). So no torch call
        is made per image or per crop, and photos of many sizes cost launches per shape group only.

        Raises ValueError when the model's preprocessing is not a resize + centre crop that
        :func:`tensor_transform` can reproduce.
        """
        transform = self._tensor
        if transform is None:
            raise SettingValueError(
                "this CLIP model's image preprocessing is not a resize and centre crop that can run on the device; "
                f"use {option('preprocess', 'pil')}"
            )
        chunks: list[Any] = []  # embeddings left on the device, copied once at the end
        order: list[int] = []  # row r of the chunks is crop order[r] (batches are sorted by shape)
        overlap = self.overlaps
        batches, window_bytes = self._window()
        window_crops = batches * self.batch_size
        # images decoded ahead: a window's worth (a GPU runs one window while the workers decode the
        # next), at least four a worker
        ahead = max(4 * self.workers, AHEAD_IMAGES, -(-window_crops // 10))
        queue = CropQueue(self.batch_size)
        canvases: dict[int, Any] = {}  # each window's canvas on the device, while crops of it wait
        blocks = self._blocks  # the host blocks the windows are packed into
        window: list[tuple[np.ndarray, list[PixelBox]]] = []
        counted = {"crops": 0, "windows": 0}
        with (
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clip-decode") as pool,
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clip-pack") as packers,
        ):

            def spread(copy: Callable[[list[int]], None], parts: list[list[int]]) -> None:
                list(packers.map(copy, parts))  # a window's photos copied into its canvas by the threads

            items = iter(sources)
            queued: deque[Future[tuple[np.ndarray, list[PixelBox]]]] = deque()

            def top_up() -> None:
                while len(queued) < ahead:
                    item = next(items, _END)
                    if item is _END:
                        return
                    queued.append(pool.submit(self._host_image, load, item))

            def run(rows: np.ndarray) -> None:
                if not overlap:  # on a CPU nothing decodes beside the forward (see encode_images)
                    for f in queued:
                        f.exception()
                batch, _ = self._device_batch(self._plan_batch(rows, canvases), transform)
                chunks.append(self._forward_device(batch))
                order.extend(rows["idx"].tolist())
                self.images_encoded += len(rows)

            def close_window() -> None:
                shapes = [pixels.shape for pixels, _ in window]
                n = counted["windows"]
                canvases[n], row0 = self._upload_canvas([pixels for pixels, _ in window], blocks, n, spread)
                boxes = [box for _, bs in window for box in bs]
                photo_of = [k for k, (_, bs) in enumerate(window) for _ in bs]
                queue.add(crop_table(boxes, photo_of, row0, shapes, start=counted["crops"], canvas=n))
                counted["crops"] += len(boxes)
                counted["windows"] += 1
                window.clear()
                for rows in queue.batches():
                    run(rows)
                for k in set(canvases) - queue.canvases:  # the device frees it once its gathers ran
                    del canvases[k]
                    blocks.give_back(k)

            top_up()
            in_window = in_bytes = 0
            while queued:
                pixels, boxes = queued.popleft().result()
                if overlap:
                    top_up()
                if boxes:
                    window.append((pixels, boxes))
                    in_window += len(boxes)
                    in_bytes += pixels.nbytes
                if in_window >= window_crops or in_bytes >= window_bytes:
                    close_window()
                    in_window = in_bytes = 0
                if not overlap:
                    top_up()
            if window:
                close_window()
            rest = queue.rest()
            for k in range(0, len(rest), self.batch_size):
                run(rest[k : k + self.batch_size])
        vectors = self._collect(chunks)
        if order != list(range(len(order))):
            out = np.empty_like(vectors)
            out[order] = vectors
            return out
        return vectors

    def _host_image(
        self, load: Callable[[Any], tuple[np.ndarray, list[PixelBox]]], item: Any
    ) -> tuple[np.ndarray, list[PixelBox]]:
        """A worker's part of :meth:`encode_crops`: decode (no torch call)."""
        pixels, boxes = load(item)
        return np.ascontiguousarray(pixels, dtype=np.uint8), boxes

    def _host_block(self, size: int, dtype: Any) -> Any:
        """A flat host tensor of ``size`` items (fill it through ``.numpy()``), pinned on CUDA so its
        copy is asynchronous; the copy is made from this tensor, so the caching host allocator keeps
        the block until the copy is done."""
        torch = self._torch
        return torch.empty(size, dtype=torch.from_numpy(np.empty(0, dtype)).dtype, pin_memory=self.device == "cuda")

    def _window(self) -> tuple[int, int]:
        """(batches, bytes of photos) a window of :meth:`encode_crops` holds at most: larger on
        CUDA (:data:`WINDOW_BATCHES_CUDA`, within a sixty-fourth of the GPU's memory)."""
        if self.device != "cuda":
            return WINDOW_BATCHES, WINDOW_BYTES
        total = int(self._torch.cuda.get_device_properties(self._torch.cuda.current_device()).total_memory)
        return WINDOW_BATCHES_CUDA, max(WINDOW_BYTES, min(WINDOW_BYTES_CUDA, total // 64))

    def _upload(self, host: Any) -> Any:
        """A host tensor on the device, in one copy (asynchronous from pinned memory)."""
        return host.to(self.device, non_blocking=True)

    def _upload_canvas(
        self, photos: list[np.ndarray], blocks: CanvasBlocks | None = None, window: int = 0, spread: Spread | None = None
    ) -> tuple[Any, np.ndarray]:
        """(the photos packed into one canvas on the device as float32, each photo's first row):
        one copy and one conversion a window. With ``blocks``, the host block is window ``window``'s
        of those (reused once given back) rather than a new one; with ``spread``, the photos are
        copied into it by worker threads (:func:`~vst_core.models.crop_plan.pack`)."""
        shapes = [p.shape for p in photos]
        size = canvas_bytes(shapes)
        host = blocks.take(window, size) if blocks is not None and blocks.reuse else None
        if host is None:
            host = self._host_block(size, np.uint8)
        canvas, row0 = pack(photos, host.numpy(), spread, self.workers)
        return self._canvas_on_device(host[: canvas.size].view(canvas.shape)), row0

    def _canvas_on_device(self, host: Any) -> Any:
        """A packed host canvas on the device as float32."""
        return self._upload(host).to(self._torch.float32)

    def _plan_batch(self, rows: np.ndarray, canvases: dict[int, Any]) -> CropBatch:
        """The host's part of a batch: its gather indices in one (pinned) block."""
        host = self._host_block(int((rows["h"] + rows["w"]).sum()), np.int64)
        _, found = batch_indices(rows, host.numpy())
        return CropBatch(rows, host, found, canvases)

    def _device_batch(self, crops: CropBatch, transform: TensorTransform) -> tuple[Any, list[int]]:
        """Cut, resize and normalise a batch of crops on the device: (rows, order), row ``r`` being
        the batch's crop ``order[r]`` (:func:`resize_gathered`; nothing waits for the device)."""
        torch = self._torch
        if self._channels is None:
            self._channels = torch.arange(3, device=self.device).view(1, 3, 1, 1)
        block = self._upload(crops.block)
        batch = resize_gathered(crops.canvases, block, crops.groups, transform, self._channels)
        return self._normalise(batch), list(range(len(crops)))

    @property
    def embed_dim(self) -> int:
        proj = getattr(self.model, "text_projection", None)
        if proj is None:
            return 512
        return int(proj.out_features if hasattr(proj, "out_features") else proj.shape[-1])


_END = object()


def _trimmable(model: Any) -> bool:
    """Whether the text tower is open_clip's causal transformer pooled at the end token."""
    needed = ("token_embedding", "positional_embedding", "transformer", "ln_final", "attn_mask", "text_pool_type")
    if not all(hasattr(model, a) for a in needed) or model.attn_mask is None:
        return False
    mask = model.attn_mask
    causal = bool(mask.ndim == 2 and mask.shape[0] > 1 and float(mask[0, 1]) == float("-inf") and float(mask[1, 0]) == 0.0)
    return causal and model.text_pool_type == "argmax" and bool(getattr(model.transformer, "batch_first", False))


def _encode_text_trimmed(model: Any, tokens: Any, length: int | None = None) -> Any:
    """open_clip's ``encode_text`` on the tokens up to the batch's last non-padding position
    (``length`` when the host knows it, else found on the device, which waits for it)."""
    import torch

    if length is None:
        used = (tokens != 0).any(dim=0).nonzero()
        length = int(used.max()) + 1 if len(used) else 1
    tokens = tokens[:, :length]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast_dtype) + model.positional_embedding[:length].to(cast_dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = x[torch.arange(x.shape[0], device=x.device), tokens.argmax(dim=-1)]  # open_clip's argmax pooling (the end token)
    proj = model.text_projection
    if proj is not None:
        x = proj(x) if isinstance(proj, torch.nn.Linear) else x @ proj
    return x


def _config_path(path: str | Path) -> None:
    """Refuse a CLIP model configuration that is not there, or is neither a JSON file nor a folder of
    them (open_clip passes over such a path in silence, and the model's name is then unknown).

    >>> _config_path("/dev/null")
    Traceback (most recent call last):
    ...
    vst_core.models.hub.ModelLoadError: CLIP model config /dev/null is not a regular file (a device); it was not opened
    """
    import os
    import stat

    from vst_core.models.checkpoints import file_kind

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        raise ModelLoadError(f"CLIP model config not found: {path} (give an open_clip model-configuration JSON)") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ModelLoadError(f"CLIP model config {path} is not a regular file ({file_kind(mode)}); it was not opened")


def load_clip(
    arch: str = DEFAULT_ARCH,
    pretrained: str | None = DEFAULT_PRETRAINED,
    *,
    checkpoint: str | Path | None = None,
    model_config: str | Path | None = None,
    device: str = "auto",
    batch_size: int = 0,
    workers: int = 0,
    activation: Activation = "auto",
) -> ClipEncoder:
    """Load CLIP by (arch, pretrained tag) or from a local checkpoint file, for what it is.

    A tag is always loaded from its local file (downloaded first when missing and reachable), with
    the tag's activation (QuickGELU for OpenAI's weights) and preprocessing, so a first run and a
    later one build the same model. OpenAI's TorchScript archives and state dicts define their own
    architecture and always get QuickGELU; a checkpoint that does not say which activation it needs
    must be told (``activation``, see :func:`resolve_clip_weights`). ``batch_size`` 0 is the
    device's (:data:`vst_core.config.DEVICE_BATCH`). Every failure is a :class:`ModelLoadError` naming the model, the path and the fix.
    """
    if model_config is not None:
        import open_clip

        _config_path(model_config)
        try:
            open_clip.add_model_config(str(model_config))
        except Exception as exc:
            raise ModelLoadError(f"CLIP model config {model_config} cannot be read: {short_error(exc)}") from None
    weights = resolve_clip_weights(arch, pretrained, checkpoint, activation)
    if weights.kind == "open_clip" and not known_arch(arch):
        raise ModelLoadError(
            f"unknown CLIP architecture {arch!r} (see open_clip.list_models(), or pass {option('clip_config', 'JSON')})"
        )
    device = resolve_device(device)
    batch_size = batch_size or DEVICE_BATCH[device]
    if weights.path is None:
        weights = download_clip(weights)
    assert weights.path is not None
    try:
        model, preprocess, tokenizer = build_clip(weights, arch, registered=model_config is not None)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(
            f"CLIP weights {weights.path} do not load as {arch if weights.kind == 'open_clip' else 'an OpenAI CLIP model'}: "
            f"{short_error(exc)}. Check {option('clip_model')} / {option('clip_checkpoint')}."
        ) from None
    return ClipEncoder(model, preprocess, tokenizer, weights.signature, device=device, batch_size=batch_size, workers=workers)


def known_arch(arch: str) -> bool:
    """Whether open_clip knows ``arch``: a plain built-in configuration is read as a file
    (:func:`vst_core.models.clip_torch.plain_config`), any other name is asked of open_clip."""
    if plain_config(arch) is not None:
        return True
    import open_clip

    return arch in open_clip.list_models()


class LazyClipEncoder:
    """CLIP known by its weights' signature and built on first use: a run whose vectors are all
    cached never imports torch or open_clip. ``build()`` gives the :class:`ClipEncoder` (a
    :class:`ModelLoadError` says why not); ``on_built`` is told once it has.

    >>> lazy = LazyClipEncoder("ViT-B-32/file:0123", lambda: None, device="cpu", batch_size=8, workers=2)  # type: ignore[arg-type,return-value]
    >>> lazy.signature, lazy.workers, lazy.loaded
    ('ViT-B-32/file:0123', 2, False)
    """

    def __init__(
        self,
        signature: str,
        build: Callable[[], ClipEncoder],
        *,
        device: str,
        batch_size: int,
        workers: int = 0,
        on_built: Callable[[ClipEncoder], None] | None = None,
    ) -> None:
        self.signature = signature
        self._build = build
        self._device = device
        self._batch_size = batch_size
        self.workers = workers or default_workers()
        self._on_built = on_built
        self._encoder: ClipEncoder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    @property
    def encoder(self) -> ClipEncoder:
        """The built encoder (built now, once, if it was not)."""
        with self._lock:
            if self._encoder is None:
                encoder = self._build()
                if encoder.signature != self.signature:
                    raise ModelLoadError(
                        f"CLIP weights changed while loading: expected {self.signature}, built {encoder.signature}"
                    )
                if self._batch_size:
                    encoder.batch_size = self._batch_size
                self._encoder = encoder
                if self._on_built is not None:
                    self._on_built(encoder)
            return self._encoder

    @property
    def device(self) -> str:
        return self._encoder.device if self._encoder is not None else resolve_device(self._device)

    @property
    def batch_size(self) -> int:
        if self._encoder is not None:
            return self._encoder.batch_size
        return self._batch_size or DEVICE_BATCH.get(self.device, DEVICE_BATCH["cpu"])

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self._batch_size = value
        if self._encoder is not None:
            self._encoder.batch_size = value

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.encode_text(texts)

    @property
    def token_counts(self) -> dict[str, int]:
        """The built encoder's (empty while nothing was built: no text was encoded)."""
        return self._encoder.token_counts if self._encoder is not None else {}

    def encode_images(self, images: Sequence[Any], *, load: Callable[[Any], Any] | None = None) -> np.ndarray:
        return self.encoder.encode_images(images, load=load)

    def encode_crops(self, sources: Sequence[Any], load: Callable[[Any], tuple[np.ndarray, list[PixelBox]]]) -> np.ndarray:
        return self.encoder.encode_crops(sources, load)

    def __getattr__(self, name: str) -> Any:  # model, tokenizer, embed_dim, text_tower ...: the built encoder's
        if name.startswith("__") or name in {"_encoder", "_build", "_lock"}:
            raise AttributeError(name)
        return getattr(self.encoder, name)
