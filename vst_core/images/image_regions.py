"""The images of a batch of stories, shared by every image metric of a run: each distinct image hashed
and measured once (header only), its regions chosen (grid proposals, a regions table or a detector),
decoded only when a region's vector is missing from the cache, and encoded in model batches: by
CLIP (Pillow or device preprocessing) and by the RoViST-VG model when it is loaded. The texts and
the per-story scoring are :class:`vst_core.images.grounder.Grounder`'s, built on this class.
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from PIL import Image

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.contract.protocols import RegionModelLike
from vst_core.data import resolve_image
from vst_core.data.images import check_bytes, image_header, open_image, reduction, scale_of
from vst_core.data.regions import Box, RegionsTable, grid_proposals, select_regions, whole_image
from vst_core.hashing import file_digest
from vst_core.images.embeddings import EmbeddingCache, region_key
from vst_core.images.memo import InputMemo, file_stamp
from vst_core.images.options import image_preprocess, image_settings
from vst_core.models.clip import PixelBox
from vst_core.models.detector import Detector
from vst_core.models.protocols import CropEncoder, EmbeddingStore, ImageTextEncoder

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")
#: Entries kept from one chunk to the next in each look-up by content (text vectors, region vectors
#: by cache key, phrase weights, the proposals of an image size, box keys): 8,192 vectors are
#: 16 MiB at ViT-B-32's width (512 float32 values).
KEEP_BETWEEN_CHUNKS = 8192


@dataclass
class ImageEntry:
    """One decoded image: its regions and their embeddings, or why it failed."""

    path: Path
    ref: str = ""  # the path as the story names it, relative to the dataset folder
    error: str | None = None
    size: tuple[int, int] = (0, 0)
    boxes: list[Box] = field(default_factory=list)
    region_emb: np.ndarray | None = None  # (R, D)
    whole_emb: np.ndarray | None = None  # (D,)
    vg_emb: np.ndarray | None = None  # (R, 1024): the RoViST-VG model's unit vectors of the same regions
    note: str | None = None
    whole_only: bool = False  # encoded whole, without regions (a character's crop; never a story's image)


def _probe(entry: ImageEntry) -> tuple[str, str | None]:
    """Content hash and format of an image file; sets its size from the header (no decode) or its error."""
    try:
        entry.size, fmt = image_header(entry.path)  # regular file, format and pixel budget, from the header
        return file_digest(entry.path), fmt
    except Exception as exc:  # missing, not an image, over the budget
        entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
        return "", None


def _done(value: Image.Image) -> Future[Image.Image]:
    future: Future[Image.Image] = Future()
    future.set_result(value)
    return future


class ImageRegions:
    """The image work of a batch; models and region tables are injected: ``encoder`` (CLIP) when a
    CLIP metric is asked for, ``vg`` (the RoViST-VG model) when its metric is."""

    def __init__(
        self,
        settings: Settings,
        encoder: ImageTextEncoder | None,
        *,
        root: Path,
        cache: EmbeddingStore | None = None,
        regions_table: RegionsTable | None = None,
        detector: Detector | None = None,
        vg: RegionModelLike | None = None,
        memo: InputMemo | None = None,
    ) -> None:
        self.settings = settings
        self.image = image_settings(settings)
        self.profile: str = settings.option("grounding_profile")
        self.memo = memo  # image digests (and the grounder's noun phrases) of earlier runs
        self.encoder = encoder
        self.vg = vg
        self.root = root
        self.cache: EmbeddingStore = cache or EmbeddingCache(None)
        self.regions_table = regions_table
        self.detector = detector
        self.images: dict[str, ImageEntry] = {}
        self._base: Path | None = None  # the set's folder resolved, once
        # region vectors by cache key (model, image content, box), kept from chunk to chunk (the
        # newest KEEP_BETWEEN_CHUNKS), as the proposals of an image size and the keys of boxes
        self._region_vectors: dict[str, np.ndarray] = {}
        self._grid: dict[tuple[int, int], list[Box]] = {}
        self._box_key: dict[Box, str] = {}
        self.crops: dict[str, ImageEntry] = {}  # images encoded whole, without regions (characters' crops), by ref
        # the next chunk's images hashed and measured in the background (:meth:`probe_ahead`), by path
        self._probing: Future[dict[str, tuple[str, tuple[int, int], str | None]]] | None = None
        self._probe_pool: ThreadPoolExecutor | None = None
        self._then: list[str] = []  # the next chunk's images, probed once this chunk's digests are taken

    def forget_images(self) -> None:
        """Drop the batch's images (vectors stay in the cache; the newest look-ups by content stay)."""
        self.images.clear()
        _keep_newest(self._region_vectors, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._grid, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._box_key, KEEP_BETWEEN_CHUNKS)

    def probe_ahead(self, refs: list[str]) -> None:
        """Hash and measure (header only) the images of ``refs``, the next chunk's, in a background
        thread while this chunk is encoded: the chunk that names them finds their digests ready
        (the memo's rule applies: a file whose stamp the memo knows is not read again).

        Only the newest call's images are kept; a probe's failure is the image's error, as it
        would be when probed in its chunk."""
        entries: dict[str, ImageEntry] = {}
        for ref in refs:
            if ref not in self.images:
                entry = self._entry(ref)
                if entry.error is None:
                    entries.setdefault(str(entry.path), entry)
        if not entries:
            return
        if self._probe_pool is None:
            self._probe_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vst-ahead")
        workers = (self.encoder.workers if self.encoder is not None else 0) or 1
        todo = list(entries.values())

        def probe() -> dict[str, tuple[str, tuple[int, int], str | None]]:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vst-ahead-hash") as pool:
                digests = self._hashed(todo, pool)
            return {str(e.path): (digests.get(id(e), ""), e.size, e.error) for e in todo}

        self._probing = self._probe_pool.submit(probe)

    def probe_after(self, refs: list[str]) -> None:
        """Probe ``refs`` (the next chunk's images) ahead once this chunk's images are hashed
        (:meth:`probe_ahead`), so the two never wait on each other."""
        self._then = list(refs)

    def _probe_then(self) -> None:
        refs, self._then = self._then, []
        if refs:
            self.probe_ahead(refs)

    def _probed_ahead(self) -> dict[str, tuple[str, tuple[int, int], str | None]]:
        """What the last :meth:`probe_ahead` found (waiting for it), once; {} when none ran."""
        ahead, self._probing = self._probing, None
        if ahead is None:
            return {}
        try:
            return ahead.result()
        except Exception:  # probed again in the chunk, where its failure is recorded
            log.debug("probing the next chunk's images failed", exc_info=True)
            return {}

    def close(self) -> None:
        """Stop the background probe thread (a later :meth:`probe_ahead` starts another) and wait
        for the cache's writer (the vectors of the run are on disk once its engine returns)."""
        pool, self._probe_pool, self._probing = self._probe_pool, None, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        flush = getattr(self.cache, "flush", None)
        if flush is not None:
            flush()

    def pending(self, refs: list[str]) -> list[ImageEntry]:
        """The distinct images of ``refs`` not read yet (no error, no vectors)."""
        found: dict[int, ImageEntry] = {}
        for ref in refs:
            entry = self._image(ref)
            if entry.error is None and entry.region_emb is None:
                found.setdefault(id(entry), entry)
        return list(found.values())

    def crop(self, ref: str) -> ImageEntry:
        """The entry of an image encoded whole, without regions (a character's crop): its own entry,
        apart from a story's image of the same file, which keeps its regions."""
        if ref not in self.crops:
            self.crops[ref] = self._entry(ref, whole_only=True)
        return self.crops[ref]

    def _image(self, ref: str) -> ImageEntry:
        if ref not in self.images:
            self.images[ref] = self._entry(ref)
        return self.images[ref]

    def _entry(self, ref: str, *, whole_only: bool = False) -> ImageEntry:
        """A new entry for ``ref``, its path resolved inside the set's folder, or why it cannot be."""
        try:
            if self._base is None:
                self._base = self.root.resolve()
            return ImageEntry(resolve_image(self.root, ref, base=self._base), ref, whole_only=whole_only)
        except ValueError as exc:
            return ImageEntry(Path(ref), ref, error=str(exc), whole_only=whole_only)

    def _encode_regions(self, pending: list[ImageEntry], model: str) -> None:
        s = self.image
        workers = (self.encoder.workers if self.encoder is not None else 0) or 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vst-images") as pool:
            digests = self._digests(pending, pool)
            pending = [e for e in pending if e.error is None]
            decoded: dict[int, Future[Image.Image]] = {}
            whole_only = [e for e in pending if e.whole_only]  # encoded whole, no regions
            pending = [e for e in pending if not e.whole_only]
            if s.regions == "detector" and self.detector is not None:
                pending = self._detect(pending, decoded)
            else:
                self._regions(pending, {})
            for entry in whole_only:
                entry.boxes = []
            if self.vg is not None:
                self._encode_vg(pending, digests, decoded)
            if self.encoder is None:  # no CLIP metric: the regions are chosen, nothing else to encode
                for entry in pending:
                    entry.region_emb = np.zeros((len(entry.boxes), 0), np.float32)
                return
            whole = bool(registry().with_need("image_vector") & set(self.settings.metrics))  # encoded only when asked for
            pending += whole_only if whole else []
            keys, found, unique = self._lookup(pending, digests, model, whole)
            if not unique:
                vectors = np.zeros((0, 0), np.float32)
            elif image_preprocess(self.settings) == "device":
                vectors = self._encode_on_device(unique, decoded)
            else:
                vectors = self._encode_with_pillow(unique, decoded, pool)
            decoded.clear()
        fresh = {k: vectors[n] for n, (e, _, k) in enumerate(unique) if e.error is None}
        if fresh:
            self.cache.put_many(fresh)
        found.update(fresh)
        self._attach(pending, keys, found, whole)
        self._region_vectors.update(found)

    def _digests(self, pending: list[ImageEntry], pool: ThreadPoolExecutor) -> dict[int, str]:
        """Content digest of each image (sizes set, failures recorded as the entry's error): from the
        memo where the file is the one it saw (same size, mtime, ctime and inode), else read and
        hashed in ``pool``."""
        digests: dict[int, str] = {}
        ahead = self._probed_ahead()
        for entry in pending:
            found = ahead.get(str(entry.path))
            if found is not None:
                digest, entry.size, entry.error = found
                digests[id(entry)] = digest if entry.error is None else ""
        digests.update(self._hashed([e for e in pending if id(e) not in digests], pool))
        self._probe_then()
        return digests

    def _hashed(self, pending: list[ImageEntry], pool: ThreadPoolExecutor) -> dict[int, str]:
        """:meth:`_digests` of images not probed ahead: the memo's, else read and hashed in ``pool``."""
        digests: dict[int, str] = {}
        infos: dict[int, os.stat_result] = {}
        if self.memo is not None:
            for entry in pending:
                try:
                    info = entry.path.stat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    infos[id(entry)] = info
            known = self.memo.images({str(e.path): file_stamp(infos[id(e)]) for e in pending if id(e) in infos})
            for entry in pending:
                facts = known.get(str(entry.path))
                if facts is None:
                    continue
                digest, size, fmt = facts
                try:  # the budget may have changed since: checked again on the stored header
                    check_bytes(infos[id(entry)].st_size, entry.path.name)
                    reduction(size, fmt)
                except Exception as exc:
                    entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
                    digests[id(entry)] = ""
                    continue
                entry.size = size
                digests[id(entry)] = digest
        todo = [e for e in pending if id(e) not in digests]
        probed = dict(zip(map(id, todo), pool.map(_probe, todo)))
        digests.update((k, digest) for k, (digest, _) in probed.items())
        if self.memo is not None:
            self.memo.put_images(
                {
                    str(e.path): (file_stamp(infos[id(e)]), (probed[id(e)][0], e.size, probed[id(e)][1]))
                    for e in todo
                    if e.error is None and id(e) in infos
                }
            )
        return digests

    def _encode_with_pillow(
        self, unique: list[tuple[ImageEntry, Box, str]], decoded: dict[int, Future[Image.Image]], pool: ThreadPoolExecutor
    ) -> np.ndarray:
        """The ``pil`` preprocessing: each crop cut and resized by Pillow in the encoder's worker threads."""
        assert self.encoder is not None
        if self.encoder.device != "cpu":
            for entry, _, _ in unique:
                if id(entry) not in decoded:  # submitted in encoding order, decoded ahead of the model
                    decoded[id(entry)] = pool.submit(open_image, entry.path)
        lock = threading.Lock()

        def image_of(entry: ImageEntry) -> Image.Image:
            # on a CPU an image is decoded by the first crop that needs it, between forwards
            # (see ClipEncoder.encode_images), so decoding never competes with the model's threads
            with lock:
                future = decoded.get(id(entry))
                owner = future is None
                if future is None:
                    future = decoded[id(entry)] = Future()
            if owner:
                try:
                    future.set_result(open_image(entry.path))
                except Exception as exc:
                    future.set_exception(exc)
            return future.result()

        def crop(item: tuple[ImageEntry, Box, str]) -> Image.Image:
            entry, box, _ = item
            try:
                image = image_of(entry)  # a large JPEG is decoded reduced: boxes follow
                return _crop(image, box.scaled(*scale_of(image, entry.size)), self.profile)
            except Exception as exc:  # truncated data shows only when decoded
                _failed(entry, exc)
                return Image.new("RGB", (1, 1))

        return self.encoder.encode_images(unique, load=crop)

    def _encode_on_device(self, unique: list[tuple[ImageEntry, Box, str]], decoded: dict[int, Future[Image.Image]]) -> np.ndarray:
        """The ``device`` preprocessing: each image decoded once in the worker threads and sent as
        uint8; its crops are cut, resized and normalised on the model's device (``encode_crops``).
        Returns the vectors in the order of ``unique``."""
        encoder = self.encoder
        if not isinstance(encoder, CropEncoder):
            raise ValueError("preprocess 'device' needs an encoder with encode_crops (the CLIP encoder has it)")
        by_entry: dict[int, tuple[ImageEntry, list[int]]] = {}
        for n, (entry, _, _) in enumerate(unique):
            by_entry.setdefault(id(entry), (entry, []))[1].append(n)
        sources = list(by_entry.values())

        def load(source: tuple[ImageEntry, list[int]]) -> tuple[np.ndarray, list[PixelBox]]:
            entry, rows = source
            try:
                future = decoded.get(id(entry))
                image = future.result() if future is not None else open_image(entry.path)
                scale = scale_of(image, entry.size)
                # a view of Pillow's bytes, not a second copy: the canvas is the one copy made of it
                return np.asarray(image), [_pixel_box(unique[n][1].scaled(*scale)) for n in rows]
            except Exception as exc:
                _failed(entry, exc)
                return np.zeros((1, 1, 3), np.uint8), [(0, 0, 1, 1)] * len(rows)

        vectors = encoder.encode_crops(sources, load)
        order = [n for _, rows in sources for n in rows]
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _encode_vg(self, pending: list[ImageEntry], digests: dict[int, str], decoded: dict[int, Future[Image.Image]]) -> None:
        """The RoViST-VG model's vectors of every chosen region, from the cache or encoded (crops cut
        by Pillow from the decoded image, boxes rounded as Pillow rounds them)."""
        assert self.vg is not None
        model = self.vg.region_signature
        keys = {id(e): [region_key(model, digests[id(e)], b.key() + "|vg") for b in e.boxes] for e in pending}
        found = self.cache.get_many([k for e in pending for k in keys[id(e)]])
        todo = [e for e in pending if any(k not in found for k in keys[id(e)])]
        crops: dict[str, Image.Image] = {}
        for entry in todo:
            future = decoded.get(id(entry))
            try:
                image = future.result() if future is not None else open_image(entry.path)
            except Exception as exc:
                entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
                continue
            scale = scale_of(image, entry.size)
            for box, key in zip(entry.boxes, keys[id(entry)], strict=True):
                if key not in found and key not in crops:
                    crops[key] = _crop(image, box.scaled(*scale), "reference")
        self.cache.hits += sum(len(keys[id(e)]) for e in pending) - len(crops)
        self.cache.misses += len(crops)
        if crops:
            vectors = self.vg.encode_crops(list(crops.values()))
            fresh = dict(zip(crops, vectors, strict=True))
            self.cache.put_many(fresh)
            found.update(fresh)
        for entry in pending:
            if entry.error is None:
                entry.vg_emb = np.stack([found[k] for k in keys[id(entry)]])
                entry.vg_emb.setflags(write=False)

    def _detect(self, pending: list[ImageEntry], decoded: dict[int, Future[Image.Image]]) -> list[ImageEntry]:
        """Decode every image for the detector (kept for cropping) and take its boxes; the images
        that decoded."""
        images = []
        for entry in pending:
            try:
                images.append(open_image(entry.path))
            except Exception as exc:
                entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
        ok = [e for e in pending if e.error is None]
        assert self.detector is not None
        detected = self.detector.boxes(images, self.image.top_b)
        for entry, image in zip(ok, images, strict=True):
            decoded[id(entry)] = _done(image)
        back = [
            [b.scaled(*(1 / f for f in scale_of(im, e.size))) for b in boxes]
            for e, im, boxes in zip(ok, images, detected, strict=True)
        ]
        self._regions(ok, dict(zip(map(id, ok), back, strict=True)))
        return ok

    def _lookup(
        self, pending: list[ImageEntry], digests: dict[int, str], model: str, whole: bool
    ) -> tuple[dict[int, list[str]], dict[str, np.ndarray], list[tuple[ImageEntry, Box, str]]]:
        """Cache keys of every region (and the whole image when ``whole``), the vectors found, and
        the (image, box, key) crops still to encode, each distinct content once."""
        boxes = {id(e): [*e.boxes, *([whole_image(*e.size)] if whole else [])] for e in pending}
        # another crop or resize gives other vectors: the reference profile's rounding, the device's resize
        crop = {"paper": "", "reference": "|pil-round"}[self.profile]
        if image_preprocess(self.settings) == "device":
            crop += "|device-resize"
        keys = {id(e): [region_key(model, digests[id(e)], self._key_of(b) + crop) for b in boxes[id(e)]] for e in pending}
        known = self._region_vectors  # an image of the last chunk's stories again
        found = {k: known[k] for entry in pending for k in keys[id(entry)] if k in known}
        found.update(self.cache.get_many([k for entry in pending for k in keys[id(entry)] if k not in found]))
        todo: list[tuple[ImageEntry, Box, str]] = []
        for entry in pending:
            todo.extend((entry, b, k) for b, k in zip(boxes[id(entry)], keys[id(entry)], strict=True) if k not in found)
        unique = list({k: (e, b, k) for e, b, k in todo}.values())
        self.cache.hits += len({k for e in pending for k in keys[id(e)]}) - len(unique)
        self.cache.misses += len(unique)
        return keys, found, unique

    @staticmethod
    def _attach(pending: list[ImageEntry], keys: dict[int, list[str]], found: dict[str, np.ndarray], whole: bool) -> None:
        """Give each image its region vectors (and whole-image vector), or the reason it has none."""
        for entry in pending:
            if entry.error is None and not all(k in found for k in keys[id(entry)]):
                entry.error = f"cannot read {entry.path.name}: the same content failed to decode under another name"
            if entry.error is None:
                stacked = np.array([found[k] for k in keys[id(entry)]])  # rows of one width: np.stack, faster
                stacked.setflags(write=False)  # shared by every image metric of the run: read only
                entry.region_emb = stacked[: len(entry.boxes)]
                entry.whole_emb = stacked[-1] if whole else None

    def _key_of(self, box: Box) -> str:
        """``box.key()``, formatted once per box (the proposals of one image size recur)."""
        key = self._box_key.get(box)
        if key is None:
            key = self._box_key[box] = box.key()
        return key

    def _grid_regions(self, width: int, height: int) -> list[Box]:
        """The weight-free proposals chosen for an image of this size (computed once per size)."""
        chosen = self._grid.get((width, height))
        if chosen is None:
            s = self.image
            boxes = grid_proposals(width, height)
            chosen = self._grid[(width, height)] = select_regions(
                boxes, width, height, top_b=s.top_b, include_whole=s.whole_image
            )
        return list(chosen)

    def _regions(self, pending: list[ImageEntry], detected: dict[int, list[Box]]) -> None:
        s = self.image
        for entry in pending:
            width, height = entry.size
            found: list[Box] | None = None
            if s.regions == "csv":
                _, found, why = self.regions_table.lookup(entry.ref) if self.regions_table else (None, None, None)
                if not found:
                    entry.note = f"{why or f'no regions for {entry.ref} in the regions file'}: weight-free proposals used"
            elif id(entry) in detected:
                found = detected[id(entry)]
            if found:
                entry.boxes = select_regions(found, width, height, top_b=s.top_b, include_whole=s.whole_image)
            else:
                entry.boxes = self._grid_regions(width, height)
            if not entry.boxes:
                entry.note = f"no usable box in {entry.path.name}: whole image used"
                entry.boxes = [whole_image(width, height)]


def _keep_newest(items: dict[K, V], keep: int) -> None:
    """Drop the oldest entries of ``items`` (insertion order) beyond the newest ``keep``.

    >>> d = {"a": 1, "b": 2, "c": 3}; _keep_newest(d, 2); d
    {'b': 2, 'c': 3}
    """
    for key in list(itertools.islice(items, max(len(items) - keep, 0))):
        del items[key]


def _failed(entry: ImageEntry, exc: Exception) -> None:
    """Record the first decoding failure of an image (truncated data shows only when decoded)."""
    if entry.error is None:
        entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"


def _pixel_box(box: Box) -> PixelBox:
    """The crop :func:`_crop` cuts in the ``paper`` profile, as pixel bounds."""
    return (int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2)))


def _crop(image: Image.Image, box: Box, profile: str = "paper") -> Image.Image:
    """The region's pixels: ``paper`` truncates the top-left corner and rounds the bottom-right one;
    ``reference`` passes the box to Pillow, which rounds every coordinate (as the region files of the
    GROOVIST code were cut)."""
    if profile == "reference":
        return image.crop((box.x1, box.y1, box.x2, box.y2))
    return image.crop((int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2))))
