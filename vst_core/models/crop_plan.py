"""The host's plan of the ``device`` preprocessing, in numpy only: decoded photos packed into one
canvas a window (:func:`pack`), their crops as rows of a table (:func:`crop_table`), sorted by
shape and cut into model batches (:class:`CropQueue`), and each batch's gather indices as one block
(:func:`batch_indices`). The device then makes one copy of a window's photos, one copy of a batch's
indices and one gather per shape group: no torch call per photo or per crop.

A crop is kept inside its photo and at least 1x1, as :func:`vst_core.models.clip_preprocess._cut`
cuts it, so the gathered pixels are the slices the per-crop path took.

>>> import numpy as np
>>> photos = [np.zeros((4, 6, 3), np.uint8), np.ones((3, 2, 3), np.uint8)]
>>> canvas, row0 = pack(photos)
>>> canvas.shape, row0.tolist()
((7, 6, 3), [0, 4])
>>> t = crop_table([(0, 0, 3, 2), (0, 0, 9, 9)], [0, 1], row0, [p.shape for p in photos], start=0, canvas=0)
>>> t["r0"].tolist(), t["h"].tolist(), t["w"].tolist()
([0, 4], [2, 3], [3, 2])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: One crop: the canvas it is cut from, its first row there, its first column, its height and width,
#: and its place among the encoder call's crops.
CROP = np.dtype([("canvas", np.int64), ("r0", np.int64), ("x1", np.int64), ("h", np.int64), ("w", np.int64), ("idx", np.int64)])


#: Runs a copy over parts of the photos, e.g. ``lambda f, parts: list(pool.map(f, parts))``.
Spread = Callable[[Callable[[list[int]], None], list[list[int]]], object]


def pack(
    photos: Sequence[np.ndarray], out: np.ndarray | None = None, spread: Spread | None = None, parts: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """(canvas, first row of each photo): uint8 (H, W, 3) photos stacked by rows into one
    (sum H, max W, 3) block (``out`` when given: a pinned buffer of at least that size, of which the
    used part is returned); columns right of a narrower photo are left as they were (never read).
    With ``spread``, the copies are made in ``parts`` runs of photos of about equal bytes, handed to
    ``spread`` (worker threads: numpy copies without holding the GIL), not by the caller."""
    rows = np.cumsum([0, *(int(p.shape[0]) for p in photos)])
    width = max((int(p.shape[1]) for p in photos), default=1)
    shape = (int(rows[-1]) or 1, width, 3)
    canvas = np.empty(shape, np.uint8) if out is None else out.reshape(-1)[: shape[0] * shape[1] * 3].reshape(shape)

    def copy(part: list[int]) -> None:
        for k in part:
            photo = photos[k]
            canvas[rows[k] : rows[k] + photo.shape[0], : photo.shape[1]] = photo

    if spread is None or parts < 2 or len(photos) < 2:
        copy(list(range(len(photos))))
    else:
        spread(copy, split_even([int(p.nbytes) for p in photos], parts))
    return canvas, rows[:-1]


def split_even(sizes: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``sizes`` in at most ``parts`` consecutive runs of about equal total size.

    >>> split_even([4, 4, 4, 4], 2), split_even([9, 1, 1, 1], 2), split_even([], 3)
    ([[0, 1], [2, 3]], [[0], [1, 2, 3]], [])
    """
    total = sum(sizes)
    runs: list[list[int]] = []
    done = 0
    for k, size in enumerate(sizes):
        if not runs or (done >= total * len(runs) / parts and len(runs) < parts):
            runs.append([])
        runs[-1].append(k)
        done += size
    return runs


def canvas_bytes(shapes: Sequence[tuple[int, ...]]) -> int:
    """Bytes of the canvas :func:`pack` makes of photos of these (H, W, 3) shapes."""
    return max(1, sum(int(s[0]) for s in shapes)) * max((int(s[1]) for s in shapes), default=1) * 3


def crop_table(
    boxes: Sequence[tuple[int, int, int, int]],
    photo_of: Sequence[int],
    row0: np.ndarray,
    shapes: Sequence[tuple[int, ...]],
    *,
    start: int,
    canvas: int,
) -> np.ndarray:
    """The :data:`CROP` rows of ``boxes`` ``(x1, y1, x2, y2)``, box ``k`` cut from photo
    ``photo_of[k]`` (its first canvas row ``row0[...]``, its (H, W, 3) ``shapes[...]``), kept inside
    the photo and at least 1x1; ``idx`` counts from ``start``."""
    b = np.asarray(boxes, np.int64).reshape(-1, 4)
    p = np.asarray(photo_of, np.int64)
    height = np.asarray([int(s[0]) for s in shapes], np.int64)[p]
    width = np.asarray([int(s[1]) for s in shapes], np.int64)[p]
    x1 = np.minimum(np.maximum(b[:, 0], 0), width - 1)
    y1 = np.minimum(np.maximum(b[:, 1], 0), height - 1)
    x2 = np.maximum(np.minimum(b[:, 2], width), x1 + 1)
    y2 = np.maximum(np.minimum(b[:, 3], height), y1 + 1)
    table = np.empty(len(b), CROP)
    table["canvas"] = canvas
    table["r0"] = np.asarray(row0, np.int64)[p] + y1
    table["x1"] = x1
    table["h"] = y2 - y1
    table["w"] = x2 - x1
    table["idx"] = np.arange(start, start + len(b))
    return table


def by_shape(table: np.ndarray) -> np.ndarray:
    """The rows sorted by (height, width, canvas), ties in their order: crops of one shape and canvas
    become neighbours, so a batch holds few shape groups."""
    return table[np.lexsort((table["idx"], table["canvas"], table["w"], table["h"]))]


def groups(batch: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of one (canvas, height, width) in a batch of :func:`by_shape` rows."""
    if not len(batch):
        return []
    key = np.stack([batch["canvas"], batch["h"], batch["w"]], axis=1)
    cuts = np.flatnonzero(np.any(key[1:] != key[:-1], axis=1)) + 1
    edges = [0, *cuts.tolist(), len(batch)]
    return list(zip(edges[:-1], edges[1:]))


@dataclass(frozen=True)
class GroupIndex:
    """Where one shape group's gather indices sit in a batch's index block: rows ``(n, h)`` at
    ``rows``, columns ``(n, w)`` at ``cols`` (offsets into the block), from canvas ``canvas``."""

    canvas: int
    n: int
    h: int
    w: int
    rows: int
    cols: int


def batch_indices(batch: np.ndarray, out: np.ndarray | None = None) -> tuple[np.ndarray, list[GroupIndex]]:
    """(block, groups): every group's canvas row indices ``r0 + arange(h)`` and column indices
    ``x1 + arange(w)`` as one int64 block (``out``'s first part when given), so the device gets
    them in one copy."""
    spans = groups(batch)
    size = sum((stop - start) * (int(batch["h"][start]) + int(batch["w"][start])) for start, stop in spans)
    block = np.empty(size, np.int64) if out is None else out[:size]
    found: list[GroupIndex] = []
    at = 0
    for start, stop in spans:
        part = batch[start:stop]
        n, h, w = stop - start, int(part["h"][0]), int(part["w"][0])
        block[at : at + n * h].reshape(n, h)[:] = part["r0"][:, None] + np.arange(h)
        block[at + n * h : at + n * (h + w)].reshape(n, w)[:] = part["x1"][:, None] + np.arange(w)
        found.append(GroupIndex(int(part["canvas"][0]), n, h, w, at, at + n * h))
        at += n * (h + w)
    return block, found


class CropQueue:
    """Crops waiting for a model batch. :meth:`add` puts a window's crops in; :meth:`batches` gives
    the full batches of everything waiting, sorted by shape, and keeps at most ``batch_size - 1``
    crops back, all of the newest window (so an older canvas is never held past the next window);
    :meth:`rest` gives what is left at the end.

    >>> q = CropQueue(2)
    >>> q.add(crop_table([(0, 0, 1, 1)] * 3, [0, 0, 0], np.zeros(1, np.int64), [(4, 4, 3)], start=0, canvas=0))
    >>> [b["idx"].tolist() for b in q.batches()], q.rest()["idx"].tolist()
    ([[0, 1]], [2])
    """

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self._old = np.empty(0, CROP)
        self._new = np.empty(0, CROP)

    def add(self, table: np.ndarray) -> None:
        self._old = np.concatenate([self._old, self._new])
        self._new = table

    def batches(self) -> list[np.ndarray]:
        waiting = len(self._old) + len(self._new)
        keep = waiting % self.batch_size
        if keep > len(self._new):  # the old crops alone do not fill a batch: wait for more
            return []
        new = by_shape(self._new)
        held = np.zeros(len(new), bool)
        if keep:
            held[len(new) - keep :] = True  # the newest window's last crops by shape wait
        out = by_shape(np.concatenate([self._old, new[~held]]))
        self._old, self._new = np.empty(0, CROP), new[held]
        return [out[k : k + self.batch_size] for k in range(0, len(out), self.batch_size)]

    def rest(self) -> np.ndarray:
        out = by_shape(np.concatenate([self._old, self._new]))
        self._old = self._new = np.empty(0, CROP)
        return out

    @property
    def canvases(self) -> set[int]:
        """The canvases the waiting crops are cut from."""
        return {int(c) for c in np.concatenate([self._old["canvas"], self._new["canvas"]])}
