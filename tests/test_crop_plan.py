"""The host's plan of the ``device`` preprocessing (numpy only, fast tier): every crop is cut once,
where :func:`_cut` would cut it; batches are full but the last; a batch's shape groups and index
block say exactly the slices; an older window's canvas is never held past the next window."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.models.crop_plan import CROP, CropQueue, batch_indices, by_shape, crop_table, groups, pack

photo_shapes = st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=8)


def _boxes(draw: st.DrawFn, h: int, w: int) -> list[tuple[int, int, int, int]]:
    coord = st.integers(-5, 45)
    return draw(st.lists(st.tuples(coord, coord, coord, coord), min_size=0, max_size=6))


@st.composite
def windows(draw: st.DrawFn) -> list[tuple[list[np.ndarray], list[list[tuple[int, int, int, int]]]]]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        shapes = draw(photo_shapes)
        rng = np.random.default_rng(draw(st.integers(0, 99)))
        photos = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in shapes]
        out.append((photos, [_boxes(draw, h, w) for h, w in shapes]))
    return out


def _slice(photo: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """What ``clip_preprocess._cut`` cuts (the same rule, on numpy)."""
    height, width = photo.shape[:2]
    x1, y1 = min(max(box[0], 0), width - 1), min(max(box[1], 0), height - 1)
    x2, y2 = max(min(box[2], width), x1 + 1), max(min(box[3], height), y1 + 1)
    return photo[y1:y2, x1:x2]


@settings(max_examples=60, deadline=None)
@given(windows(), st.integers(1, 7))
def test_every_crop_is_cut_once_as_the_slice_and_batches_are_full(plan: list, batch_size: int) -> None:
    queue = CropQueue(batch_size)
    canvases: dict[int, np.ndarray] = {}
    expected: dict[int, np.ndarray] = {}
    seen: list[int] = []
    start = 0
    batches: list[np.ndarray] = []
    for n, (photos, boxes) in enumerate(plan):
        canvas, row0 = pack(photos)
        canvases[n] = canvas
        flat = [b for bs in boxes for b in bs]
        photo_of = [k for k, bs in enumerate(boxes) for _ in bs]
        for k, (p, b) in enumerate(zip(photo_of, flat, strict=True)):
            expected[start + k] = _slice(photos[p], b)
        queue.add(crop_table(flat, photo_of, row0, [p.shape for p in photos], start=start, canvas=n))
        start += len(flat)
        made = queue.batches()
        assert all(len(b) == batch_size for b in made)
        if len(flat) >= batch_size:
            assert queue.canvases <= {n}, "only the newest window's crops wait"
        batches += made
    rest = queue.rest()
    assert len(rest) < batch_size or not batches
    batches += [rest[k : k + batch_size] for k in range(0, len(rest), batch_size)]
    for batch in batches:
        block, found = batch_indices(batch)
        at = 0
        for g, (a, b) in zip(found, groups(batch), strict=True):
            assert b - a == g.n
            rows = block[g.rows : g.rows + g.n * g.h].reshape(g.n, g.h)
            cols = block[g.cols : g.cols + g.n * g.w].reshape(g.n, g.w)
            cut = canvases[g.canvas][rows[:, :, None], cols[:, None, :]]
            for k in range(g.n):
                idx = int(batch["idx"][at + k])
                np.testing.assert_array_equal(cut[k], expected[idx])
                seen.append(idx)
            at += g.n
    assert sorted(seen) == list(range(start))


def test_a_batch_holds_one_group_a_shape_when_photos_repeat_sizes() -> None:
    """24 photos of two sizes, their crops sorted: a batch of 64 has a handful of shape groups, not
    one a crop or one a photo."""
    photos = [np.zeros((30, 40, 3), np.uint8), np.zeros((40, 30, 3), np.uint8)] * 12
    canvas, row0 = pack(photos)
    boxes = [(0, 0, 20, 15), (20, 0, 40, 15), (0, 0, 40, 30)] * 24
    photo_of = [k for k in range(24) for _ in range(3)]
    queue = CropQueue(64)
    queue.add(crop_table(boxes, photo_of, row0, [p.shape for p in photos], start=0, canvas=0))
    (batch,) = queue.batches()
    assert len(groups(batch)) <= 5
    assert len(queue.rest()) == 72 - 64


def test_sorting_keeps_ties_in_order() -> None:
    table = np.zeros(4, CROP)
    table["h"], table["w"], table["idx"] = [2, 1, 2, 1], [1, 1, 1, 1], [0, 1, 2, 3]
    assert by_shape(table)["idx"].tolist() == [1, 3, 0, 2]
