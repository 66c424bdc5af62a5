"""``vst bench``: a thin entry to the benchmark harness in the checkout's ``benchmarks/`` folder
(the harness is a developer tool and is not installed with the package)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from vst_core.cli.common import EXIT_USAGE, error

CHECKOUT = Path(__file__).resolve().parents[2]


def harness() -> ModuleType | None:
    """``benchmarks.harness`` of the checkout this package runs from, or None outside a checkout."""
    if not (CHECKOUT / "benchmarks" / "harness.py").is_file():
        return None
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    return importlib.import_module("benchmarks.harness")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="measure scoring throughput against the bare model forward (random-weight full-size models)",
        description="Benchmark on a synthetic story set with random-weight models: prints a JSON summary. "
        "Runs from a source checkout (benchmarks/harness.py).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    module = harness()
    if module is not None:
        module.add_bench_arguments(p)


def run(args: argparse.Namespace) -> int:
    module = harness()
    if module is None:
        error(f"vst bench runs from a source checkout: no benchmarks/harness.py under {CHECKOUT}")
        return EXIT_USAGE
    return int(module.cmd_bench(args))
