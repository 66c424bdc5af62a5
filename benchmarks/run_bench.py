"""Run the throughput benchmark: ``python benchmarks/run_bench.py [vst bench options]``.

A thin wrapper around ``python -m vst_core bench`` (see ``benchmarks/harness.py``) so the figures
in the README can be reproduced from this folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vst_core.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
