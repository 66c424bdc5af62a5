"""The benchmark behind ``vst bench``: scoring throughput against the bare model forward, on a
synthetic story set with full-size random-weight models (:mod:`.inputs`), the rates measured
(:mod:`.throughput`) and one function per phase (:mod:`.harness`).

The names below load :mod:`.harness` on first use, so ``python -m vst_core.bench.standin -- score
...`` starts as fast as the ``vst score`` it wraps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vst_core.bench.harness import PHASES, RSS_TARGET_MB, TARGETS, BenchConfig, run_bench

__all__ = ["PHASES", "RSS_TARGET_MB", "TARGETS", "BenchConfig", "run_bench"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from vst_core.bench import harness

        return getattr(harness, name)
    raise AttributeError(f"module 'vst_core.bench' has no attribute {name!r}")
