"""Time ``dhm_report`` on generated story sets, from score records and from a story table (the
dashboard's path): five systems (``reference`` and four models) sharing story ids, about 1% of each
score missing, 1000 bootstrap resamples. Prints one JSON line per size.

    python benchmarks/bench_dhm.py [--sizes 1000 10000 100000] [--resamples 1000] [--pairing sequence]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time

import numpy as np
import pandas as pd

from vst_core.analysis.dhm import Pairing, dhm_report
from vst_core.data.importing import metric_record
from vst_core.records import StoryScores

METRICS = {"GROOVIST raw": "grounding", "coherence": "coherence", "NR": "redundancy"}


def generated_table(stories: int, systems: int = 5, seed: int = 0, humans_per_sequence: int = 1) -> pd.DataFrame:
    """``stories`` rows (``stories // systems`` per system) of the story table ``dhm_report`` reads:
    ``systems`` systems, the first ``reference``, sharing the ids ``s0, s1, ...``; sequences of
    ``humans_per_sequence`` consecutive ids; about 1% of each score missing (NaN)."""
    rng = np.random.default_rng(seed)
    per = stories // systems
    ids = np.array([f"s{k}" for k in range(per)], dtype=object)
    sequences = np.array([f"q{k // humans_per_sequence}" for k in range(per)], dtype=object)
    tables = []
    for name in ["reference", *(f"model-{k}" for k in range(1, systems))]:
        table = pd.DataFrame(
            {
                "story": ids,
                "sequence": sequences,
                "system": name,
                "GROOVIST raw": rng.normal(0.5, 0.6, per),
                "coherence": rng.uniform(0.3, 1.0, per),
                "NR": rng.uniform(0.6, 1.0, per),
            }
        )
        for column in METRICS:
            table.loc[rng.random(per) < 0.01, column] = np.nan
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def records_of(table: pd.DataFrame) -> list[StoryScores]:
    """The table as imported score records (the score only), one per row."""
    out = []
    columns = list(METRICS)
    for story, sequence, system, *values in table[["story", "sequence", "system", *columns]].itertuples(index=False):
        metrics = {
            METRICS[c]: metric_record(METRICS[c], float(v), "generated")
            for c, v in zip(columns, values, strict=True)
            if not math.isnan(v)
        }
        out.append(StoryScores(story, sequence, system, (), metrics=metrics, signature={"id": "generated"}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--pairing", choices=("sequence", "story"), default="sequence")
    args = parser.parse_args()
    pairing: Pairing = "story" if args.pairing == "story" else "sequence"
    for size in args.sizes:
        table = generated_table(size)
        records = records_of(table)
        start = time.perf_counter()
        from_table = dhm_report(table, pairing=pairing, resamples=args.resamples)
        table_s = time.perf_counter() - start
        start = time.perf_counter()
        from_records = dhm_report(records, pairing=pairing, resamples=args.resamples)
        records_s = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "stories": size,
                    "systems": 5,
                    "resamples": args.resamples,
                    "pairing": pairing,
                    "table_s": round(table_s, 3),
                    "records_s": round(records_s, 3),
                    "same_numbers": from_table.table() == from_records.table(),
                    "python": platform.python_version(),
                    "cpu": platform.processor() or platform.machine(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
