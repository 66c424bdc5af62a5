"""A stand-in accelerator and a traced ``vst`` process: what the CPU leaves of a GPU, measured on a CPU.

``python -m vst_core.bench.standin [--stand-in CROPS_PER_S[,TEXTS_PER_S]] [--trace FILE] -- score ...``
runs the ``vst`` command given after ``--`` in this process, exactly as ``vst`` would, with two
changes that a user never sees:

- with ``--stand-in``, CLIP's image and text forwards become waits of ``batch / rate`` seconds
  (``time.sleep`` releases the GIL, as a process waiting on a GPU does) returning random unit
  vectors of the model's width, and the device-side steps (upload, cut, resize, normalise) are
  left to the wait, as a GPU does them beside the host. What the host itself spends launching
  them is charged as busy time that holds the GIL, as the host-op ledger predicts it on the
  16-core H100 host (:func:`host_charge`: 30 µs a kernel-launching torch call, 2.5 µs any other;
  the eager forward's ~350 launches, 7 launches and ~12 calls a crop shape group). Every other
  step takes the path a CUDA run takes: decoding overlaps the forwards, images go through
  pinned-memory's host side, embeddings are collected once per chunk.
- with ``--trace FILE``, the wall-clock time of the first forward, and the CPU seconds of each stage
  (decode, crop/resize, text, forwards' host side, aggregation, writing) as the threads that ran
  them spent them, are written to FILE as JSON when the command exits.

>>> parse_rates("20000")
(20000.0, 80000.0)
>>> parse_rates("20000,50000")
(20000.0, 50000.0)
"""

from __future__ import annotations

import argparse
import atexit
import json
import runpy
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.bench.ledger import predicted_host_ms
from vst_core.models.clip import ClipEncoder, CropBatch

#: Texts per second of the stand-in's text tower when only the image rate is given: CLIP's text
#: tower on phrases (about 8 tokens) runs about four times as many texts as crops on a GPU.
TEXT_RATE_FACTOR = 4.0

#: The stages of :func:`trace_stages`, in the order they are reported.
STAGES: tuple[str, ...] = ("decode", "crop_resize", "text", "forward_host", "aggregate", "write")


def parse_rates(text: str) -> tuple[float, float]:
    """``"CROPS[,TEXTS]"`` per second; texts default to :data:`TEXT_RATE_FACTOR` times the crops."""
    parts = [float(v) for v in text.split(",") if v.strip()]
    if not parts or len(parts) > 2 or min(parts) <= 0:
        raise ValueError(f"--stand-in takes CROPS_PER_S[,TEXTS_PER_S], both > 0; got {text!r}")
    return parts[0], parts[1] if len(parts) == 2 else parts[0] * TEXT_RATE_FACTOR


class _Clock:
    """CPU seconds per stage, summed over threads (``time.thread_time`` around each call), and the
    wall-clock time of the first forward."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.first_forward: float | None = None
        self.marks: dict[str, float] = {}
        self.crops = 0
        self.texts = 0
        self._lock = threading.Lock()
        self._depth = threading.local()

    def timed(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its calling thread's CPU time added to ``stage`` (outermost traced call only)."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self._depth, "n", 0)
            self._depth.n = depth + 1
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth.n = depth
                if depth == 0:
                    spent = time.thread_time() - start
                    with self._lock:
                        self.cpu[stage] += spent

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    def forward_started(self) -> None:
        if self.first_forward is None:
            self.first_forward = time.time()

    def as_dict(self) -> dict[str, Any]:
        return {
            "first_forward_epoch": self.first_forward,
            **self.marks,
            "exit_epoch": time.time(),
            "crops": self.crops,
            "texts": self.texts,
            "cpu_seconds": {k: round(v, 4) for k, v in self.cpu.items()},
        }


#: Forwards a CUDA stream holds queued before the host blocks at the next launch (ViT-B/32 is a
#: few hundred kernels a forward; CUDA queues about a thousand launches).
QUEUED_FORWARDS = 2


class _Device:
    """A GPU's timeline as the host sees it: a forward is queued and the host goes on (blocking
    only when :data:`QUEUED_FORWARDS` are already ahead of it, as a full launch queue does); a copy
    to the host waits for everything queued."""

    def __init__(self) -> None:
        self.busy_until = 0.0
        self.lock = threading.Lock()

    def queue(self, seconds: float) -> None:
        with self.lock:
            now = time.perf_counter()
            start = max(now, self.busy_until)
            self.busy_until = start + seconds
            blocked = start - now - QUEUED_FORWARDS * seconds
        if blocked > 0:
            time.sleep(blocked)

    def sync(self) -> None:
        left = self.busy_until - time.perf_counter()
        if left > 0:
            time.sleep(left)


_DEVICE = _Device()
_REAL_COLLECT = ClipEncoder._collect


#: Kernel-launching torch calls of one eager forward of ViT-B/32 under CUDA autocast (the ledger's
#: 348 Python-level calls, 195 compute ops and ~150 casts), of each crop shape group of the device
#: path (gather, two resizes) and of a batch besides (index upload, the two passes' joins,
#: roundings and clamps, normalisation), and the other torch calls of a group and of a batch
#: (views, slices): the ledger's counts (``ledger_run``, 800 photos of 24 sizes: 41.0 kernels and
#: 163 torch calls a batch of 9.9 groups).
FORWARD_LAUNCHES = 350
GROUP_LAUNCHES, GROUP_CALLS = 3, 12
BATCH_LAUNCHES, BATCH_CALLS = 11, 6


def host_charge(seconds: float) -> None:
    """Busy ``seconds`` holding the GIL (released only at the interpreter's switch interval), as
    the Python that launches GPU work holds it."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class StandInEncoder(ClipEncoder):
    """The product's encoder with the accelerator replaced by a timeline of waits: each image
    forward takes ``batch / crops_per_s`` seconds of the device and each text forward
    ``batch / texts_per_s``, and returns random unit vectors of the model's width. As on CUDA, a
    forward is queued and the host goes on until it copies embeddings back (once per
    :meth:`encode_crops` call; at once for texts) or runs :data:`QUEUED_FORWARDS` ahead; a waiting
    host sleeps, releasing the GIL. The upload and the device-side cut, resize and normalisation
    are part of the forward's time, as a GPU does them beside the host. Everything else takes the
    path of a CUDA run: decoding overlaps the forwards (:attr:`overlaps`)."""

    crops_per_s: float = 20000.0
    texts_per_s: float = 80000.0
    clock: _Clock | None = None

    @property
    def overlaps(self) -> bool:
        return True

    def _canvas_on_device(self, host: Any) -> Any:
        return host

    def _upload(self, host: Any) -> Any:
        return host

    def _on_device(self, host: Any) -> Any:
        return host

    def _device_batch(self, crops: CropBatch, transform: Any) -> Any:
        groups = len(crops.groups)
        launching, other = BATCH_LAUNCHES + GROUP_LAUNCHES * groups, BATCH_CALLS + GROUP_CALLS * groups
        host_charge(predicted_host_ms(launching, other) / 1000)
        return np.zeros(len(crops)), list(range(len(crops)))

    def _forward_device(self, batch: Any) -> Any:
        host_charge(predicted_host_ms(FORWARD_LAUNCHES, 0) / 1000)
        seconds = len(batch) / self.crops_per_s
        _queue(seconds, self.clock)
        self.image_seconds += seconds
        return _unit_rows(len(batch), self.embed_dim)

    def _collect(self, parts: Sequence[Any]) -> np.ndarray:
        _DEVICE.sync()
        return _REAL_COLLECT(self, parts)

    def text_tower(self, tokens: Any) -> Any:
        seconds = len(tokens) / self.texts_per_s
        _queue(seconds, self.clock)
        _DEVICE.sync()  # the text vectors are read at once
        self.text_seconds += seconds
        return self._torch.from_numpy(_unit_rows(len(tokens), self.embed_dim))


def stand_in_encoder(source: ClipEncoder, crops_per_s: float, texts_per_s: float) -> StandInEncoder:
    """A :class:`StandInEncoder` sharing ``source``'s model, preprocessing and signature."""
    encoder = StandInEncoder.like(source)
    encoder.crops_per_s, encoder.texts_per_s = crops_per_s, texts_per_s
    return encoder


def _queue(seconds: float, clock: _Clock | None) -> None:
    if clock is not None:
        clock.forward_started()
    _DEVICE.queue(seconds)


_UNIT: dict[int, np.ndarray] = {}


def _unit_rows(n: int, width: int) -> np.ndarray:
    """``n`` random unit rows of ``width``, copied out of one block drawn once (cheap: the wait
    stands for the model's time, the copy for the device-to-host one)."""
    block = _UNIT.get(width)
    if block is None:
        v = np.random.default_rng(0).standard_normal((8192, width)).astype(np.float32)
        block = _UNIT[width] = v / np.linalg.norm(v, axis=1, keepdims=True)
    start = int(np.random.default_rng(n).integers(len(block)))
    return np.take(block, np.arange(start, start + n) % len(block), axis=0)


def install_stand_in(crops_per_s: float, texts_per_s: float, clock: _Clock | None = None) -> None:
    """Give every :class:`ClipEncoder` of this process :class:`StandInEncoder`'s waits (the rates
    and ``clock`` too): the models a ``vst`` command loads stand in for a GPU."""
    for name in (
        *("overlaps", "_upload", "_canvas_on_device", "_on_device", "_device_batch", "_forward_device", "_collect"),
        "text_tower",
    ):
        setattr(ClipEncoder, name, StandInEncoder.__dict__[name])
    ClipEncoder.crops_per_s, ClipEncoder.texts_per_s = crops_per_s, texts_per_s  # type: ignore[attr-defined]
    ClipEncoder.clock = clock  # type: ignore[attr-defined]


def trace_stages(clock: _Clock) -> None:
    """Wrap the functions of each stage of a ``vst score`` run with ``clock``."""
    import vst_core.images.grounder as grounder_module
    import vst_core.images.image_regions as regions_module
    import vst_core.models.clip as clip_module
    import vst_core.scoring.registry as registry_module
    from vst_core.contract import registry
    from vst_core.data.scores_io import ScoresWriter
    from vst_core.scoring import runs as runs_module

    regions_module.open_image = clock.timed("decode", regions_module.open_image)
    encoder = clip_module.ClipEncoder
    encoder._device_batch = clock.timed("crop_resize", encoder._device_batch)  # type: ignore[method-assign]
    encoder._prepare = clock.timed("crop_resize", encoder._prepare)  # type: ignore[method-assign]
    grounder_module.noun_phrases_many = clock.timed("text", grounder_module.noun_phrases_many)
    encode_text = encoder.encode_text

    def counted_text(self: Any, texts: Any) -> Any:
        clock.texts += len(texts)
        return encode_text(self, texts)

    encoder.encode_text = clock.timed("text", counted_text)  # type: ignore[method-assign]
    forward = encoder._forward_device

    def counted_forward(self: Any, batch: Any) -> Any:
        clock.forward_started()
        clock.crops += len(batch)
        return forward(self, batch)

    encoder._forward_device = clock.timed("forward_host", counted_forward)  # type: ignore[method-assign]
    for spec in registry().specs.values():  # each image metric's record of a story from its prepared images
        build = getattr(spec.computing.score, "build", None)
        if build is not None:
            object.__setattr__(spec.computing.score, "build", clock.timed("aggregate", build))
    load = registry_module.load_clip

    def traced_load(*args: Any, **kwargs: Any) -> Any:
        clock.marks["clip_load_start_epoch"] = time.time()
        try:
            return load(*args, **kwargs)
        finally:
            clock.marks["clip_load_end_epoch"] = time.time()

    registry_module.load_clip = traced_load
    # writing: a record made into its line (for the record store and --out alike) and the line written
    runs_module.stored_line = clock.timed("write", runs_module.stored_line)
    ScoresWriter.write = clock.timed("write", ScoresWriter.write)  # type: ignore[method-assign]
    ScoresWriter.write_line = clock.timed("write", ScoresWriter.write_line)  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("usage: python -m vst_core.bench.standin [--stand-in CROPS[,TEXTS]] [--trace FILE] -- COMMAND ...", file=sys.stderr)
        return 2
    at = args.index("--")
    parser = argparse.ArgumentParser(prog="python -m vst_core.bench.standin")
    parser.add_argument("--stand-in", default=None)
    parser.add_argument("--trace", type=Path, default=None)
    own = parser.parse_args(args[:at])
    clock = _Clock()
    if own.stand_in:
        install_stand_in(*parse_rates(own.stand_in), clock)
    if own.trace is not None:
        trace_stages(clock)
        path: Path = own.trace
        atexit.register(lambda: path.write_text(json.dumps(clock.as_dict()), encoding="utf-8"))
    # the command exactly as ``python -m vst_core`` runs it (its exit status is the process's)
    sys.argv = ["vst", *args[at + 1 :]]
    runpy.run_module("vst_core", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
