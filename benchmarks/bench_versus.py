"""Time the metric-vs-metric tests (Williams' test, PERM-BOTH, paired bootstrap) on generated
ratings: four metrics (six pairs) against one human aspect. Prints one JSON line per size and method.

    python -m benchmarks.bench_versus [--sizes 2000 10000] [--permutations 1000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval.versus import VersusSettings, versus_correlations

METRICS = ["NR", "CLIPScore", "GROOVIST", "coherence"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--methods", nargs="+", default=["pearson", "spearman"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for size in args.sizes:
        human = rng.normal(size=size)
        data = pd.DataFrame({m: human + (k + 1) * rng.normal(size=size) for k, m in enumerate(METRICS)}).assign(overall=human)
        for method in args.methods:
            start = time.perf_counter()
            table = versus_correlations(data, METRICS, ["overall"], VersusSettings(method, args.permutations))
            seconds = time.perf_counter() - start
            print(
                json.dumps(
                    {
                        "stories": size,
                        "method": method,
                        "metric_pairs": len(table),
                        "permutations": args.permutations,
                        "seconds": round(seconds, 2),
                        "machine": f"{platform.machine()} {platform.python_version()}",
                    }
                )
            )


if __name__ == "__main__":
    main()
