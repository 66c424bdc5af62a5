"""The next chunk's photos are hashed and measured in a background thread while the current chunk
is scored (``ImageRegions.probe_after``): a chunk after the first hashes nothing itself, and the
records, a missing photo's error included, are those of a run that probes nothing ahead."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_jsonl
from PIL import Image
from test_speed import tiny_settings

from vst_core.data import read_scores, read_story_set
from vst_core.images.embeddings import EmbeddingCache
from vst_core.images.image_regions import ImageRegions
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_story_set

pytestmark = pytest.mark.slow  # a tiny CLIP end to end


def _story_set(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    stories = []
    for n in range(6):
        names = []
        for k in range(2):
            name = f"p{n}_{k}.jpg"
            Image.fromarray(rng.integers(0, 255, (40 + 7 * n, 50 + 3 * k, 3), dtype=np.uint8)).save(folder / name)
            names.append(name)
        if n == 4:
            names.append("gone.jpg")  # never written: the story's error names it
        stories.append({"story_id": f"s{n}", "images": names, "sentences": ["A red dog runs.", "The dog sleeps."]})
    return write_jsonl(folder / "stories.jsonl", stories)


def _scores(tiny_clip: tuple[Path, Path], folder: Path, out: Path) -> list[dict[str, Any]]:
    settings = tiny_settings(tiny_clip, metrics=("grounding", "clipscore"))
    story_set = read_story_set(folder / "stories.jsonl", check_images=False)
    score_story_set(story_set, settings, out, models=Models(settings, cache=EmbeddingCache(None)), chunk_size=2)
    return [{k: v for k, v in r.items() if k not in ("signature", "seconds")} for r in read_scores(out)[0]]


def test_later_chunks_find_their_photos_hashed_ahead(
    tiny_clip: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _story_set(tmp_path)
    hashed: list[tuple[str, list[str]]] = []
    real = ImageRegions._hashed

    def recorded(self: ImageRegions, pending: list[Any], pool: Any) -> dict[int, str]:
        hashed.append((threading.current_thread().name, sorted(e.path.name for e in pending)))
        return real(self, pending, pool)

    monkeypatch.setattr(ImageRegions, "_hashed", recorded)
    ahead = _scores(tiny_clip, tmp_path, tmp_path / "ahead.jsonl")
    on_main = [names for thread, names in hashed if thread == "MainThread"]
    in_background = [names for thread, names in hashed if thread.startswith("vst-ahead")]
    assert on_main[0] == ["p0_0.jpg", "p0_1.jpg", "p1_0.jpg", "p1_1.jpg"]  # the first chunk hashes its own
    assert all(names == [] for names in on_main[1:]), on_main  # every later chunk's were hashed ahead
    assert in_background == [
        ["p2_0.jpg", "p2_1.jpg", "p3_0.jpg", "p3_1.jpg"],
        ["gone.jpg", *(f"p{n}_{k}.jpg" for n in (4, 5) for k in (0, 1))],
    ]

    monkeypatch.setattr(ImageRegions, "probe_after", lambda self, refs: None)
    alone = _scores(tiny_clip, tmp_path, tmp_path / "alone.jsonl")
    assert ahead == alone
    failed = next(r for r in ahead if r["story_id"] == "s4")
    assert any("gone.jpg" in str(v) for v in failed["errors"].values()), failed["errors"]
