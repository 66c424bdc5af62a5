"""How long the Agreement page takes to read Vrank's margins of every judged story of a large set.

Writes a scores file of ``--sequences`` image sequences × 2 systems under shared story ids (the
released layout), each story with a Vrank record, indexes it as the dashboard does, and times
reading the margins in one pass (:meth:`ScoresIndex.metric_records`) against reading and merging
each record on its own; both must give the same margins. Prints the figures; writes only to a
temporary folder.

    python benchmarks/bench_vrank_margins.py --sequences 5000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from vst_core.analysis.meta_eval.scored import pair_margins, record_margins
from vst_core.config import Settings
from vst_core.data.index_build import build_index
from vst_core.metrics.rovist_nr import RedundancyScores
from vst_core.metrics.vrank import Preference, VrankScores
from vst_core.records import StoryScores
from vst_core.signature import signature


def write_scores(path: Path, sequences: int) -> None:
    sig = signature(Settings(metrics=("redundancy", "vrank")))
    nr = RedundancyScores(score=0.9, inter=0.1, intra=0.1, variant="paper", n=4)
    with path.open("w") as fh:
        for q in range(sequences):
            for system, other, m in (("human", "llava", 0.3), ("llava", "human", -0.3)):
                vr = VrankScores(m, (Preference(other, str(q), m),), (), "vrank:bench@0")
                record = StoryScores(
                    str(q),
                    str(q),
                    system,
                    ("A sentence.", "Another one."),
                    metrics={"redundancy": nr, "vrank": vr},
                    signature=sig,
                )
                fh.write(json.dumps(record.to_json()) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=5000, help="image sequences (two stories each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "scores.jsonl"
        write_scores(path, args.sequences)
        start = time.perf_counter()
        index = build_index([path])
        indexed = time.perf_counter() - start
        rows = list(range(len(index.table)))
        start = time.perf_counter()
        found = index.metric_records(rows, "vrank")
        bulk = record_margins(
            "Vrank",
            [(str(index.table["system"].iat[r]), str(index.table["story"].iat[r]), v) for r, v in found.items()],
            shared=True,
        )
        one_pass = time.perf_counter() - start
        start = time.perf_counter()
        each = pair_margins([r for r in (index.record(row)[0] for row in rows) if r is not None], shared=True)
        record_by_record = time.perf_counter() - start
        assert bulk == each, "the two ways gave different margins"
        print(
            f"{len(rows):,} stories: index {indexed:.1f} s; Vrank margins in one pass {one_pass:.2f} s; "
            f"record by record {record_by_record:.1f} s; {len(bulk['Vrank']):,} margins, equal"
        )


if __name__ == "__main__":
    main()
