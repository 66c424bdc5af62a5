"""The stand-in accelerator's timeline (:mod:`vst_core.bench.standin`): a forward is queued and the
host goes on, as CUDA queues kernels, until it runs :data:`QUEUED_FORWARDS` ahead or copies back."""

from __future__ import annotations

import time

from vst_core.bench.standin import QUEUED_FORWARDS, _Device


def test_forwards_queue_until_the_queue_is_full_and_a_copy_waits_for_all() -> None:
    device = _Device()
    step = 0.05
    start = time.perf_counter()
    for _ in range(QUEUED_FORWARDS + 1):
        device.queue(step)  # the first forward runs now, the next ones wait on the device, not here
    queued = time.perf_counter() - start
    assert queued < step / 2, queued
    device.queue(step)  # one more than the queue holds: the host waits for the first to end
    blocked = time.perf_counter() - start
    assert step * 0.9 <= blocked < step * 1.9, blocked
    device.sync()  # the copy back waits for every forward queued
    done = time.perf_counter() - start
    assert (QUEUED_FORWARDS + 2) * step * 0.95 <= done < (QUEUED_FORWARDS + 2) * step + 0.1, done
