"""Time ``vst compare`` (the leaderboard and the paired tests) on the bundled sample and on generated
scores files: 2 systems × 5,000 image sequences by default (NR, inter, intra, coherence, GROOVIST and
the grounding descriptors), 1000 bootstrap resamples, 10,000 sign-flip permutations per test. Prints
one JSON line per case: the whole command in a fresh process (reading and indexing the file
included; the index is built in a temporary cache) and ``leaderboard()`` alone on the loaded table.

    python benchmarks/bench_compare.py [--sequences 5000] [--systems 2] [--permutations 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command_seconds(files: list[Path], cache: Path, permutations: int) -> float:
    """Wall time of ``python -m vst_core compare FILES`` in a fresh process (a cold index cache)."""
    env = {**os.environ, "VST_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "vst_core", "compare", *map(str, files), "--permutations", str(permutations)],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def in_process(path: Path, permutations: int) -> dict[str, float | int]:
    from vst_core.analysis.leaderboard import leaderboard
    from vst_core.data.index_store import load_index

    table = load_index([path]).table
    start = time.perf_counter()
    board = leaderboard(table, permutations=permutations)
    return {"leaderboard_s": round(time.perf_counter() - start, 2), "tests": len(board.pairs), "n": board.standings[0].n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=5000)
    parser.add_argument("--systems", type=int, default=2)
    parser.add_argument("--permutations", type=int, default=10_000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # this checkout's vst_core, as the commands run
    from vst_core.scoring.synthetic import SYSTEMS, write_scores_file

    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    with tempfile.TemporaryDirectory(prefix="vst-bench-compare-") as folder:
        root = Path(folder)
        sample = root / "sample_scores.jsonl"
        env = {**os.environ, "VST_CACHE_DIR": str(root / "cache0")}
        subprocess.run(
            [sys.executable, "-m", "vst_core", "score", "assets/sample/stories.jsonl", "--out", str(sample)]
            + ["--metrics", "redundancy", "--no-progress"],
            check=True,
            cwd=ROOT,
            env=env,
            stderr=subprocess.DEVNULL,
        )
        seconds = command_seconds([sample], root / "cache1", args.permutations)
        print(json.dumps({"case": "sample (4 systems x 2 sequences, NR)", "command_s": round(seconds, 2), **machine}))
        generated = root / "generated.jsonl"
        write_scores_file(generated, args.sequences * args.systems, systems=SYSTEMS[: args.systems])
        seconds = command_seconds([generated], root / "cache2", args.permutations)
        figures = in_process(generated, args.permutations)
        case = f"generated ({args.systems} systems x {args.sequences} sequences)"
        print(json.dumps({"case": case, "command_s": round(seconds, 2), **figures, **machine}))


if __name__ == "__main__":
    main()
