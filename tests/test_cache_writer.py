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


def test_the_caller_never_writes_and_reads_what_is_queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers: list[str] = []
    gate = threading.Event()
    real = embeddings.write_many

    def slow_write(*args: object) -> None:
        writers.append(threading.current_thread().name)
        gate.wait(10)  # the writer is held: what was queued is still only in memory
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings, "write_many", slow_write)
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
    gate = threading.Event()
    real = embeddings.write_many

    def held(*args: object) -> None:
        gate.wait(10)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings, "write_many", held)
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
