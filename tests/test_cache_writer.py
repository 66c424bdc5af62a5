"""The embedding cache on disk writes in a thread of its own: the caller (the thread that launches
the model's work) never runs a SQLite write; vectors queued are read back at once; a flush, the
end of a run and the end of the process put them on disk."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from vst_core.images import embeddings
from vst_core.images.embeddings import EmbeddingCache


def _vectors(n: int, start: int = 0) -> dict[str, np.ndarray]:
    return {f"k{k}": np.full(4, k, np.float32) for k in range(start, start + n)}


def _hold_writes(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Every SQLite write of the cache waits for the event (at most 10 s); the list gets the name
    of each thread that wrote."""
    gate = threading.Event()
    writers: list[str] = []
    real = embeddings.write_many

    def held(*args: object) -> None:
        writers.append(threading.current_thread().name)
        gate.wait(10)  # the writer is held: what was queued is still only in memory
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings, "write_many", held)
    return gate, writers


def test_the_caller_never_writes_and_reads_what_is_queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, writers = _hold_writes(monkeypatch)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    cache.put_many(_vectors(3))
    cache.put_many(_vectors(2, start=3))
    assert sorted(cache.get_many(["k0", "k4"])) == ["k0", "k4"]  # queued, read back without waiting
    assert EmbeddingCache(tmp_path / "emb.sqlite").get_many(["k0"]) == {}  # not on disk yet
    gate.set()
    cache.flush()
    assert cache.get_many(["absent"]) == {}
    on_disk = EmbeddingCache(tmp_path / "emb.sqlite").get_many([f"k{k}" for k in range(5)])
    assert sorted(on_disk) == [f"k{k}" for k in range(5)] and float(on_disk["k4"][0]) == 4.0
    assert writers and all(name == "vst-cache-writer" for name in writers), writers
    assert cache.size()[0] == 5


def test_in_memory_writes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = EmbeddingCache(None)
    cache.put_many(_vectors(2))
    assert cache._writer is None and sorted(cache.get_many(["k0", "k1"])) == ["k0", "k1"]


def test_the_process_flushes_at_exit(tmp_path: Path) -> None:
    """A script that queues vectors and exits at once leaves them on disk."""
    code = (
        "import numpy as np\n"
        "from vst_core.images.embeddings import EmbeddingCache\n"
        f"c = EmbeddingCache({str(tmp_path / 'emb.sqlite')!r})\n"
        "c.put_many({f'k{k}': np.ones(512, np.float32) for k in range(2000)})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert EmbeddingCache(tmp_path / "emb.sqlite").size()[0] == 2000


def test_a_slow_disk_holds_the_caller_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_QUEUED vectors waiting, put_many waits for the writer instead of memory growing."""
    monkeypatch.setattr(embeddings, "MAX_QUEUED", 4)
    gate, _ = _hold_writes(monkeypatch)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    cache.put_many(_vectors(5))  # queued: the writer holds them
    second = threading.Thread(target=cache.put_many, args=(_vectors(2, start=5),))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # over the bound: waiting for the writer
    gate.set()
    second.join(10)
    assert not second.is_alive()
    cache.flush()
    assert cache.size()[0] == 7


def test_a_cache_kept_in_memory_keeps_what_its_writer_wrote(tmp_path: Path) -> None:
    """A cache folder that cannot be made (a file stands there) keeps the run's vectors in memory:
    the writer writes them there, not into a connection of its own that nobody reads."""
    (tmp_path / "taken").write_text("a file, not a folder")
    cache = EmbeddingCache(tmp_path / "taken" / "emb.sqlite")
    cache.put_many(_vectors(3))
    cache.flush()
    assert sorted(cache.get_many(["k0", "k1", "k2"])) == ["k0", "k1", "k2"] and not cache._queued


def test_a_file_set_aside_by_the_run_keeps_the_writer_and_the_reader_on_one_file(tmp_path: Path) -> None:
    """When the run's connection finds the file damaged and starts a new one, the writer (whose
    connection still has the old file open) writes into the new file too: the same instance reads
    back what it wrote after, and the file set aside keeps its rows for the user to look at."""
    import sqlite3

    path = tmp_path / "emb.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many(_vectors(50))
    cache.flush()

    def damaged(db: object) -> None:
        exc = sqlite3.DatabaseError("database disk image is malformed")
        exc.sqlite_errorcode = 11  # type: ignore[attr-defined]
        raise exc

    cache._store.run(damaged, default=None)  # the run's connection sets the file aside, starts anew
    cache.put_many({"after": np.full(4, 9.0, np.float32)})
    cache.flush()
    assert sorted(cache.get_many(["after"])) == ["after"]
    aside = sqlite3.connect(tmp_path / "emb.sqlite.damaged")
    assert aside.execute("SELECT COUNT(*) FROM emb").fetchone()[0] == 50
    assert cache._store.set_aside and len(cache._store.set_aside) == 1


def test_no_thread_to_be_had_writes_on_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread that cannot start (a limit, the interpreter ending) leaves nothing queued for ever."""

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    cache.put_many(_vectors(3))
    cache.flush()  # returns: nothing waits
    assert not cache._queued and cache._writer is None
    assert sorted(EmbeddingCache(tmp_path / "emb.sqlite").get_many(["k0", "k1", "k2"])) == ["k0", "k1", "k2"]


def test_a_child_forked_while_the_writer_works_has_a_queue_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's writer thread does not exist in a forked child: the child's writes start their
    own, and its flush returns."""
    import os
    import time

    gate, _ = _hold_writes(monkeypatch)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    cache.put_many(_vectors(2))  # the parent's writer holds these
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            gate.set()  # the child's own writer is not held
            cache.put_many(_vectors(1, start=10))
            cache.flush()
            code = 0 if "k10" in cache.get_many(["k10"]) and not cache._queued else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail("the forked child's flush hung")
    gate.set()
    cache.flush()
    assert os.waitstatus_to_exitcode(status) == 0
    assert sorted(cache.get_many(["k0", "k1", "k10"])) == ["k0", "k1", "k10"]
