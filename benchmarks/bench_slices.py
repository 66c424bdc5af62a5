"""Time slice discovery on generated story tables: every descriptor (sentences, words, T, P, the
judge's overall rating, system, two problem kinds) alone and in pairs, quantile bins of 4, the top
20 slices with 1000 bootstrap resamples each. Prints one JSON line per size and question.

    python -m benchmarks.bench_slices [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import pandas as pd

from vst_core.analysis.slice_finder import metric_slices, paired_differences, story_descriptors, system_slices


def generated_table(stories: int, systems: int = 5, seed: int = 0) -> pd.DataFrame:
    """``stories`` rows of the scores table: ``systems`` systems sharing sequences, NR, T, P, the
    judge's overall rating, a human rating, sentences, text and problems."""
    rng = np.random.default_rng(seed)
    human = rng.normal(size=stories)
    words = rng.integers(20, 80, size=stories)
    vocabulary = np.array(["the", "dog", "ran", "to", "a", "park", "we", "saw", "it"])
    text = [" ".join(vocabulary[: 1 + k % 9]) + " x" * int(w) for k, w in enumerate(words)]
    return pd.DataFrame(
        {
            "story": [f"s{k // systems}" for k in range(stories)],
            "sequence": [f"q{k // systems}" for k in range(stories)],
            "system": [f"system-{k % systems}" for k in range(stories)],
            "NR": human + rng.normal(size=stories),
            "overall": human,
            "T": rng.gamma(2.0, 0.5, size=stories),
            "P": rng.random(stories),
            "judge overall": rng.integers(1, 6, size=stories) + rng.random(stories),
            "sentences": rng.integers(3, 8, size=stories),
            "text": text,
            "problems": rng.choice(["", "", "", "missing-image", "short-sentence"], size=stories),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    for size in args.sizes:
        table = generated_table(size)
        start = time.perf_counter()
        descriptors = story_descriptors(table)
        found = metric_slices(table, "NR", "overall", descriptors, resamples=args.resamples)
        people = time.perf_counter() - start
        start = time.perf_counter()
        paired = paired_differences(table, "NR", "system-0", "system-1")
        versus = system_slices(paired, resamples=args.resamples)
        systems = time.perf_counter() - start
        for question, seconds, frame, items in (
            ("metric vs people", people, found, len(table)),
            ("system A vs B", systems, versus, len(paired)),
        ):
            print(
                json.dumps(
                    {
                        "stories": size,
                        "question": question,
                        "items": items,
                        "descriptors": len(descriptors),
                        "candidates": frame.attrs.get("candidates", 0),
                        "seconds": round(seconds, 3),
                        "resamples": args.resamples,
                        "machine": f"{platform.machine()} {platform.python_version()}",
                    }
                )
            )


if __name__ == "__main__":
    main()
