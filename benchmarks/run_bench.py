"""Run the throughput benchmark: ``python benchmarks/run_bench.py [vst bench options]``.

The same as ``vst bench`` (the harness is :mod:`vst_core.bench`), runnable from this folder of a
checkout whether or not the package is installed, so the figures in the README can be reproduced.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's vst_core, installed or not

from vst_core.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
