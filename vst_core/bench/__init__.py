"""The benchmark behind ``vst bench``: scoring throughput against the bare model forward, on a
synthetic story set with full-size random-weight models (:mod:`.inputs`), the rates measured
(:mod:`.throughput`) and one function per phase (:mod:`.harness`)."""

from vst_core.bench.harness import PHASES, RSS_TARGET_MB, TARGETS, BenchConfig, run_bench

__all__ = ["PHASES", "RSS_TARGET_MB", "TARGETS", "BenchConfig", "run_bench"]
