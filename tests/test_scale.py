"""The index and the table-level tools on a released-size set: 100,000 stories of five systems
sharing story ids, with full evidence, plus an imported coherence file for part of them.
Correctness only; timings belong to ``benchmarks/bench_scale.py``."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import orjson
import pytest

from vst_core.analysis.meta_eval.scored import score_frame
from vst_core.analysis.slices import Slice, apply_slice
from vst_core.analysis.systems import paired_sequences
from vst_core.config import Settings
from vst_core.data.importing import imported_records
from vst_core.data.index import ScoresIndex
from vst_core.data.index_store import load_index
from vst_core.scoring.synthetic import SYSTEMS, synthetic_record
from vst_core.viz.tables import RunView

pytestmark = pytest.mark.slow

N = 100_000
IDS = N // len(SYSTEMS)
IMPORTED = 2_000  # llava stories with an imported coherence value (the first IMPORTED ids)


def nr_of(k: int) -> float:
    """The NR written for the k-th story (a function of k, so the test can check any row)."""
    return 0.5 + (k * 7919 % 10_000) / 20_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], ScoresIndex]:
    """The files (written once: evidence from a pool of synthetic stories, ids and NR per story) and their index."""
    folder = tmp_path_factory.mktemp("scale")
    rng = random.Random(0)
    signature = {"id": "synthetic000", "settings": {"metrics": ["redundancy", "coherence", "grounding"]}}
    pool = [synthetic_record("0", "x", rng, signature).to_json() for _ in range(64)]
    path = folder / "scores.jsonl"
    with path.open("wb") as fh:
        for k in range(N):
            sid, system = str(40000 + k // len(SYSTEMS)), SYSTEMS[k % len(SYSTEMS)]
            base = pool[k % len(pool)]
            redundancy = {**base["metrics"]["redundancy"], "score": nr_of(k)}
            line = {
                **base,
                "story_id": sid,
                "sequence_id": sid,
                "system": system,
                "metrics": {**base["metrics"], "redundancy": redundancy},
            }
            fh.write(orjson.dumps(line) + b"\n")
    source = folder / "released.csv"
    source.write_text("released\n")
    values = {("llava", str(40000 + i)): {"coherence": 0.25} for i in range(IMPORTED)}
    imported = folder / "imported.jsonl"
    imported.write_bytes(
        b"".join(orjson.dumps(r.to_json()) + b"\n" for r in imported_records(values, source, {"coherence": "released"}))
    )
    paths = [path, imported]
    return paths, load_index(paths, folder=folder / "index")


def test_the_index_has_one_row_per_story_and_the_numbers_written(big: tuple[list[Path], ScoresIndex]) -> None:
    _, index = big
    assert len(index) == N and index.problems == []
    assert index.table.groupby("system").size().to_dict() == dict.fromkeys(SYSTEMS, IDS)
    ks = np.arange(N)
    assert np.allclose(index.table["NR"].to_numpy(), 0.5 + (ks * 7919 % 10_000) / 20_000)
    assert (index.table["system"].to_numpy() == np.array(SYSTEMS * IDS, dtype=object)).all()
    # the imported coherence conflicts with the computed one; the computed value stays, each reported
    assert len(index.conflicts) == IMPORTED and {c.used_source for c in index.conflicts} == {"scores.jsonl"}
    assert index.table["coherence"].notna().all() and not (index.table["coherence"] == 0.25).any()


def test_a_story_is_read_lazily_with_its_evidence(big: tuple[list[Path], ScoresIndex]) -> None:
    _, index = big
    k = 77_777
    sid, system = str(40000 + k // len(SYSTEMS)), SYSTEMS[k % len(SYSTEMS)]
    row = index.row_of(system, sid)
    assert row == k
    record, problems = index.record(row)
    assert problems == [] and record is not None and (record.system, record.story_id) == (system, sid)
    assert record.metrics.get("redundancy") is not None and record.metrics["redundancy"].score == pytest.approx(nr_of(k))
    assert record.metrics.get("grounding") is not None and len(record.metrics["grounding"].phrases) >= 6
    llava = index.row_of("llava", "40000")
    merged, _ = index.record(llava or 0)
    assert (
        merged is not None and merged.metrics.get("coherence") is not None and merged.metrics["coherence"].model == "bert-nsp"
    )  # computed kept


def test_a_second_load_reads_the_stored_index(big: tuple[list[Path], ScoresIndex]) -> None:
    paths, index = big
    again = load_index(paths, folder=Path(index.files[0].path).parent / "index")
    assert again.digest == index.digest and len(again) == N
    assert again.table["NR"].equals(index.table["NR"]) and len(again.conflicts) == IMPORTED


def test_the_view_and_the_table_tools_work_on_the_index(big: tuple[list[Path], ScoresIndex], tmp_path: Path) -> None:
    _, index = big
    view = RunView.of_index(index, tmp_path, Settings())
    sequences = view.sequences()
    assert len(sequences) == IDS and all(len(rows) == len(SYSTEMS) for rows in sequences.values())
    assert sequences["40001"].tolist() == list(range(5, 10))
    assert view.find("40001", "glac") == 8 and view.find("40001") is None  # a shared id needs its system
    record = view.record(8)
    assert record is not None and (record.system, record.story_id) == ("glac", "40001")

    cut = apply_slice(view.table, Slice(metric="NR", low=0.9, high=1.0))
    expected = sum(1 for k in range(N) if 0.9 <= nr_of(k) <= 1.0)
    assert len(cut) == expected and cut["NR"].between(0.9, 1.0).all()
    assert len(apply_slice(view.table, Slice(problem="none"))) == N

    paired = paired_sequences(view.table, "human", "llava", ["NR"])
    assert len(paired) == IDS and (paired["story_a"] == paired["story_b"]).all()
    k = 5 * 123
    assert paired["NR"].iat[123] == pytest.approx(nr_of(k) - nr_of(k + 1))

    frame = score_frame(view.table)
    assert len(frame) == N and frame.index[:2].tolist() == ["40000 (human)", "40000 (llava)"]
    assert frame.loc["40010 (gpt)", "NR"] == pytest.approx(nr_of(50 + 4))
    assert not math.isnan(frame["GROOVIST"].iat[0])
