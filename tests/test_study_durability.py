"""No acknowledged answer is ever lost or written twice: answers, revisions, writers killed with
SIGKILL mid-stream, connections dropped without being closed, and many raters writing at once."""

from __future__ import annotations

import gc
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.data import Story
from vst_core.study import Answer, AnswerStore, Sample, Study, load_study, new_study, plan_for, save_study

ASPECTS = ("focused", "coherent", "share", "human", "grounded", "detailed")


def study(raters: int = 3, sequences: int = 4) -> Study:
    stories = [Story(f"{q}-{m}", f"seq{q}", m, ("One.", "Two.")) for q in range(sequences) for m in ("a", "b")]
    return new_study(stories, sample=Sample(), raters=raters, raters_per_item=raters, seed=1)


def check_store(found: list[Answer], acknowledged: list[tuple[str, str, int, dict[str, Any]]], sent: int) -> None:
    """Every acknowledged answer is stored as acknowledged, each (rater, item) holds revisions
    1..n with none twice, and nothing was stored that was never sent."""
    stored = {(a.rater, a.item_id, a.revision): a.value for a in found}
    assert len(stored) == len(found), "an answer stored twice"
    for rater, item, revision, value in acknowledged:
        assert stored.get((rater, item, revision)) == value, f"acknowledged answer lost: {rater} {item} r{revision}"
    by_cell: dict[tuple[str, str], list[int]] = {}
    for rater, item, revision in stored:
        by_cell.setdefault((rater, item), []).append(revision)
    for revisions in by_cell.values():
        assert sorted(revisions) == list(range(1, len(revisions) + 1)), "a gap or repeat in the revisions"
    assert len(stored) <= sent


# An operation: answer (rater, step, rating), drop a connection mid-transaction, or reopen the store.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("answer"), st.integers(0, 2), st.integers(0, 7), st.integers(1, 5)),
        st.tuples(st.just("drop"), st.just(0), st.just(0), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_answers_revisions_and_dropped_connections_lose_nothing(tmp_path_factory: pytest.TempPathFactory, ops: list) -> None:
    folder = tmp_path_factory.mktemp("store")
    s = study()
    path = folder / "a.answers.sqlite"
    store = AnswerStore(path)
    acknowledged, sent, latest = [], 0, {}
    for op, rater_n, step_n, rating in ops:
        if op == "answer":
            rater = s.raters[rater_n]
            step = plan_for(s, rater)[step_n]
            value = {k: rating for k in ASPECTS}
            answer = store.record(s, rater, step, value, 1.0)
            sent += 1
            acknowledged.append((answer.rater, answer.item_id, answer.revision, answer.value))
            latest[(answer.rater, answer.item_id)] = answer
        elif op == "drop":  # a writer that began a transaction and vanished without commit or close
            db = sqlite3.connect(path, isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT INTO answers (study_signature, rater, item_id, presented, value, seconds, answered_at, revision) "
                "VALUES (?, 'r1', 'item-0001', '[0]', '{}', 0, '', 999)",
                (s.signature,),
            )
            del db
            gc.collect()
        else:
            store = AnswerStore(path)
    found = store.answers(s, latest_only=False)
    check_store(found, acknowledged, sent)
    assert {(a.rater, a.item_id): a for a in store.answers(s)} == latest  # the latest revision wins


WORKER = """
import json, sys
from vst_core.study import AnswerStore, Presented, load_study
study = load_study(sys.argv[1])
store = AnswerStore(sys.argv[2])
raters = {r.name: r for r in study.raters}
print("ready", flush=True)
for line in sys.stdin:
    op = json.loads(line)
    a = store.record(study, raters[op["rater"]], Presented(op["item"], tuple(op["order"]), 0), op["value"], 1.0)
    print(json.dumps([a.rater, a.item_id, a.revision, a.value]), flush=True)
"""


def _worker(study_path: Path, answers: Path) -> subprocess.Popen[str]:
    """A writer process, once it is ready to write (so a kill lands among its answers)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(study_path), str(answers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _acks(proc: subprocess.Popen[str]) -> list[tuple[str, str, int, dict[str, Any]]]:
    assert proc.stdout is not None
    return [(r, i, n, v) for r, i, n, v in (json.loads(line) for line in proc.stdout.read().splitlines() if line.strip())]


@pytest.mark.slow  # starts a writer process per kill
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("answer"), st.integers(0, 2), st.integers(0, 7), st.integers(1, 5)),
            st.tuples(st.just("kill"), st.just(0), st.just(0), st.floats(0, 0.03)),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_a_writer_killed_mid_stream_loses_no_acknowledged_answer(tmp_path_factory: pytest.TempPathFactory, ops: list) -> None:
    folder = tmp_path_factory.mktemp("killed")
    s = study()
    study_path = save_study(s, folder / "k.study.json")
    answers = folder / "k.answers.sqlite"
    AnswerStore(answers)
    plans = {r.name: plan_for(s, r) for r in s.raters}
    acknowledged, sent = [], 0
    proc = _worker(study_path, answers)
    for op, rater_n, step_n, extra in ops:
        assert proc.stdin is not None
        if op == "answer":
            rater = s.raters[rater_n]
            step = plans[rater.name][step_n]
            line = {"rater": rater.name, "item": step.item_id, "order": list(step.order), "value": {k: extra for k in ASPECTS}}
            proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
            sent += 1
        else:  # SIGKILL while answers are in flight
            time.sleep(extra)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            acknowledged += _acks(proc)
            proc = _worker(study_path, answers)
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=60)
    acknowledged += _acks(proc)
    check_store(AnswerStore(answers).answers(load_study(study_path), latest_only=False), acknowledged, sent)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def test_twenty_four_raters_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    s = study(raters=24, sequences=5)
    store = AnswerStore(tmp_path / "a.answers.sqlite")
    start = threading.Barrier(24)
    latencies: list[float] = []
    acknowledged: list[tuple[str, str, int, dict[str, Any]]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def rate(index: int) -> None:
        rater = s.raters[index]
        try:
            start.wait()
            for round_ in range(2):  # every item, then every item again: its second revision
                for step in plan_for(s, rater):
                    began = time.perf_counter()
                    answer = store.record(s, rater, step, {k: 1 + (index + round_) % 5 for k in ASPECTS}, 2.0)
                    took = time.perf_counter() - began
                    with lock:
                        latencies.append(took)
                        acknowledged.append((answer.rater, answer.item_id, answer.revision, answer.value))
        except BaseException as exc:  # pragma: no cover - said by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=rate, args=(n,)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(acknowledged) == 24 * 10 * 2
    check_store(store.answers(s, latest_only=False), acknowledged, len(acknowledged))
    assert len(store.answers(s)) == 24 * 10 and {a.revision for a in store.answers(s)} == {2}
    print(
        f"answer latency with 24 writers: p50 {_percentile(latencies, 0.5) * 1000:.1f} ms, p95 {_percentile(latencies, 0.95) * 1000:.1f} ms"
    )


@pytest.mark.slow  # 20 processes, each importing the package
def test_twenty_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    s = study(raters=20, sequences=5)
    study_path = save_study(s, tmp_path / "p.study.json")
    answers = tmp_path / "p.answers.sqlite"
    AnswerStore(answers)
    go = tmp_path / "go"
    script = """
import json, sys, time
from pathlib import Path
from vst_core.study import AnswerStore, load_study, plan_for
study = load_study(sys.argv[1]); store = AnswerStore(sys.argv[2]); rater = study.raters[int(sys.argv[3])]
while not Path(sys.argv[4]).exists():
    time.sleep(0.005)
for step in plan_for(study, rater):
    began = time.perf_counter()
    a = store.record(study, rater, step, {k: 3 for k in ASPECTS}, 1.0)
    print(json.dumps([a.rater, a.item_id, a.revision, a.value, time.perf_counter() - began]), flush=True)
""".replace("ASPECTS", repr(ASPECTS))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(study_path), str(answers), str(n), str(go)], stdout=subprocess.PIPE, text=True
        )
        for n in range(20)
    ]
    time.sleep(0.5)
    go.write_text("")
    rows = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        rows += [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 20 * 10
    check_store(AnswerStore(answers).answers(s, latest_only=False), [tuple(r[:4]) for r in rows], len(rows))
    took = [r[4] for r in rows]
    print(
        f"answer latency with 20 writer processes: p50 {_percentile(took, 0.5) * 1000:.1f} ms, p95 {_percentile(took, 0.95) * 1000:.1f} ms"
    )
