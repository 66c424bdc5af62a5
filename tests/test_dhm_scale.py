"""dHM at scale: the story-table path gives the records path's report, a plain per-story loop agrees
with the vectorised pairing, and 100,000 stories run in seconds (slow tier)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.bench_dhm import generated_table, records_of
from vst_core.analysis.dhm import dhm_report
from vst_core.analysis.dhm_aspects import ASPECTS, available_aspects, columns, dhm_table


@pytest.mark.parametrize("pairing", ["story", "sequence"])
def test_the_same_report_from_records_and_from_the_table(pairing: str) -> None:
    table = generated_table(600, systems=3, humans_per_sequence=3 if pairing == "sequence" else 1)
    records = records_of(table)
    from_records = dhm_report(records, pairing=pairing, resamples=200)  # type: ignore[arg-type]
    from_table = dhm_report(dhm_table(records), pairing=pairing, resamples=200)  # type: ignore[arg-type]
    from_raw = dhm_report(table, pairing=pairing, resamples=200)  # type: ignore[arg-type]
    assert from_records.table() == from_table.table() == from_raw.table()
    assert from_records.signature == from_table.signature
    pd.testing.assert_frame_equal(from_records.frame, from_raw.frame)
    assert from_records.distances == from_raw.distances
    assert from_records.systems[0].interval["dHM"] is not None
    assert available_aspects(records) == available_aspects(table) == ("G", "C", "R")


def test_the_vectorised_pairing_equals_a_plain_loop_over_stories() -> None:
    table = generated_table(400, systems=2, seed=3, humans_per_sequence=4)
    report = dhm_report(table, resamples=0)
    values = {(row.system, row.story): (math.tanh(row[3]), row[4], row[5]) for row in table.itertuples(index=False)}
    humans: dict[str, list[tuple[float, float, float]]] = {}
    for row in table[table.system == "reference"].itertuples(index=False):
        v = values[("reference", row.story)]
        if not any(math.isnan(x) for x in v):
            humans.setdefault(row.sequence, []).append(v)
    want = []
    for row in table[table.system == "model-1"].itertuples(index=False):
        s = values[("model-1", row.story)]
        partners = humans.get(row.sequence, [])
        if any(math.isnan(x) for x in s) or not partners:
            continue
        d = [sum(abs(h[i] - s[i]) for h in partners) / len(partners) for i in range(3)]
        want.append((*d, sum(d) / 3))
    got = report.frame[["d_G", "d_C", "d_R", "dHM"]].to_numpy()
    np.testing.assert_allclose(got, np.array(want), rtol=0, atol=1e-12)
    assert report.systems[0].mean["dHM"] == pytest.approx(float(np.mean([w[3] for w in want])), abs=1e-12)
    assert len(report.distances[0].humans) == 4


def test_a_missing_column_means_the_metric_was_not_run() -> None:
    table = generated_table(200, systems=2).drop(columns=[columns()["C"]])
    assert available_aspects(table) == ("G", "R")
    (row,) = dhm_report(table, resamples=0, aspects=("G", "R")).table()
    assert row["d_C"] is None and row["d_G"] is not None and row["N"] > 90
    default = dhm_report(table, resamples=0)  # the one rule: the distances the scores have, said in the note
    assert default.aspects == ("G", "R") and "coherence (RoViST-C) not in these scores" in default.note
    assert default.table()[0]["N"] == row["N"]
    (row,) = dhm_report(table, resamples=0, aspects=ASPECTS).table()  # the paper's three, asked for
    assert row["N"] == 0 and row["left out"] == {"system story without all three scores": 100}
    with pytest.raises(ValueError, match="sequence"):
        dhm_report(table.drop(columns=["sequence"]))


@pytest.mark.slow  # 100,000 stories, 1000 resamples for each of 4 systems
def test_100k_stories_in_seconds(tmp_path: Path) -> None:
    table = generated_table(100_000, systems=5)
    start = time.perf_counter()
    report = dhm_report(table, pairing="sequence", resamples=1000)
    took = time.perf_counter() - start
    assert [s.system for s in report.systems] == [f"model-{k}" for k in range(1, 5)]
    assert all(s.n > 18_000 and s.interval["dHM"] is not None for s in report.systems)
    assert len(report.frame) == sum(s.n for s in report.systems)
    assert took < 60, f"dhm_report on 100,000 stories took {took:.1f} s"
