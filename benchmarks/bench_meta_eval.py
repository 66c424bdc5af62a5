"""Time a meta-evaluation on a synthetic set: scores of five metrics and four human aspects
rated by three raters, grouped in sequences of five stories. Prints a JSON summary.

    python benchmarks/bench_meta_eval.py [--stories 2000] [--resamples 1000] [--baselines]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import pandas as pd

from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.metrics.clipscore import ClipScoreScores
from vst_core.metrics.groovist import GroundingScores
from vst_core.metrics.rovist_c import CoherenceScores
from vst_core.metrics.rovist_nr import RedundancyScores
from vst_core.metrics.rovist_vg import RovistVGScores
from vst_core.records import MetricScores, StoryScores

WORDS = "the a dog cat beach wave family party cake car tree house sun rain friend park ball city".split()


def synthetic(stories: int, seed: int = 0) -> tuple[list[StoryScores], bytes]:
    """Score records and a long judgements CSV whose ratings follow the first metric plus noise."""
    rng = np.random.default_rng(seed)
    records: list[StoryScores] = []
    rows = ["story_id,rater,aspect,value"]
    for k in range(stories):
        quality = rng.normal()
        sid, seq = f"s{k}", f"q{k // 5}"
        system = "reference" if k % 5 == 0 else f"model-{k % 5}"
        metrics: dict[str, MetricScores] = {
            "grounding": GroundingScores(
                float(np.tanh(quality + rng.normal())),
                None,
                0.6,
                float(rng.uniform(0, 1.6)),
                (),
                float(np.round(rng.uniform(0.1, 0.4), 3)),
                (),
            ),
            "clipscore": ClipScoreScores(float(rng.normal()), ()),
            "rovist_vg": RovistVGScores(float(rng.normal()), None, ()),
            "coherence": CoherenceScores(float(1 / (1 + np.exp(-quality - rng.normal()))), (), None, "synthetic"),
            "redundancy": RedundancyScores(float(1 - abs(rng.normal(0, 0.1))), None, None, "paper", 4),
        }
        sentences = tuple(" ".join(rng.choice(WORDS, 8)) + "." for _ in range(5))
        records.append(StoryScores(sid, seq, system, sentences, metrics=metrics, signature={"id": "synthetic"}))
        for rater in ("r1", "r2", "r3"):
            for aspect in ("grounding", "coherence", "non_redundancy", "overall"):
                rows.append(f"{sid},{rater},{aspect},{int(np.clip(np.round(3 + quality + rng.normal()), 1, 5))}")
    return records, ("\n".join(rows) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baselines", action="store_true", help="also BLEU/ROUGE-L/CIDEr/METEOR")
    args = parser.parse_args()
    records, csv = synthetic(args.stories)
    t0 = time.perf_counter()
    judgements = read_judgements(csv)
    t1 = time.perf_counter()
    report = run_meta_eval(records, judgements, MetaSettings(resamples=args.resamples, baselines=args.baselines))
    t2 = time.perf_counter()
    print(
        json.dumps(
            {
                "stories": args.stories,
                "ratings": len(judgements.ratings),
                "resamples": args.resamples,
                "metrics": len(report.metrics),
                "aspects": len(report.aspects),
                "pairs": len(report.pairs),
                "read_s": round(t1 - t0, 2),
                "report_s": round(t2 - t1, 2),
                "correlation_cells": int(len(report.correlations) + len(report.system_correlations)),
                "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                "python": platform.python_version(),
                "pandas": pd.__version__,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
