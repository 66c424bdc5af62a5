"""The warm path: a rerun takes image digests and noun phrases from ``inputs.sqlite`` instead of hashing
and parsing again, notices any change to a file (ctime included), and survives a damaged memo."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE

from vst_core.config import Settings
from vst_core.data import read_scores, read_story_set
from vst_core.images import grounder as grounder_module
from vst_core.images import image_regions
from vst_core.images.memo import FILE_NAME, InputMemo, file_stamp
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_story_set
from vst_core.text.phrases import NounPhrase

pytestmark = pytest.mark.slow  # tiny CLIP and spaCy end to end


def _settings(tiny_clip: tuple[Path, Path]) -> Settings:
    config, checkpoint = tiny_clip
    return Settings(
        metrics=("grounding", "clipscore"),
        clip_model="vst-tiny-clip",
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        device="cpu",
    )


def _run(folder: Path, settings: Settings, cache: Path, out: Path) -> dict[tuple[str, str], float | None]:
    story_set = read_story_set(folder / "stories.jsonl")
    score_story_set(story_set, settings, out, overwrite=True, models=Models(settings, cache_dir=cache))
    records, _ = read_scores(out)
    return {(r["system"], r["story_id"]): r["metrics"]["grounding"]["score"] for r in records}


def test_rerun_neither_hashes_nor_parses_and_gives_the_same_scores(
    tiny_clip: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "set"
    shutil.copytree(SAMPLE.parent, folder)
    settings, cache = _settings(tiny_clip), tmp_path / "cache"
    first = _run(folder, settings, cache, tmp_path / "a.jsonl")
    assert (cache / FILE_NAME).is_file()

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("the warm path read or parsed again")

    monkeypatch.setattr(image_regions, "file_digest", refuse)  # the images' digests
    monkeypatch.setattr(grounder_module, "noun_phrases_many", refuse)
    assert _run(folder, settings, cache, tmp_path / "b.jsonl") == first


def test_a_rewritten_image_with_its_mtime_restored_is_hashed_again(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    folder = tmp_path / "set"
    shutil.copytree(SAMPLE.parent, folder)
    settings, cache = _settings(tiny_clip), tmp_path / "cache"
    _run(folder, settings, cache, tmp_path / "a.jsonl")
    images = sorted((folder / "images").iterdir())
    a, b = images[0], images[1]
    info = a.stat()
    data_b = b.read_bytes()
    a.write_bytes(data_b)  # another picture under a's name
    os.utime(a, ns=(info.st_atime_ns, info.st_mtime_ns))  # as cp -p or rsync -t would leave it
    memo = InputMemo(cache / FILE_NAME)
    stored = memo.images({str(a.resolve()): file_stamp(a.stat())})
    assert stored == {}  # the stamp changed with the ctime: the old digest is not offered
    fresh = _run(folder, settings, cache, tmp_path / "b.jsonl")
    cold = _run(folder, settings, tmp_path / "cold-cache", tmp_path / "c.jsonl")
    assert fresh == cold


def test_a_damaged_memo_is_set_aside_and_bad_entries_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(b"not a database" * 100)
    memo = InputMemo(path)
    assert (tmp_path / (FILE_NAME + ".damaged")).is_file()
    phrase = NounPhrase("the dog", 0, 0, 7, "The dog", "dog", ("the", "dog"), ("the", "dog"))
    memo.put_phrases({"good": [phrase]})
    memo._store.db.execute("INSERT INTO phrases VALUES ('bad', ?)", (b'[["x", "not a number", 0, 1, "x", "x", [], []]]',))
    memo._store.db.execute("INSERT INTO phrases VALUES ('worse', ?)", (b"\xff\x00",))
    assert memo.phrases(["good", "bad", "worse", "absent"]) == {"good": [phrase]}
    memo._store.db.execute("INSERT INTO images VALUES ('/x.jpg', 'stamp', 'short', 1, 1, 'JPEG')")
    assert memo.images({"/x.jpg": "stamp"}) == {}  # a digest that is not one is never used


def test_a_memo_path_that_is_not_a_file_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).mkdir()
    memo = InputMemo(tmp_path / FILE_NAME)
    assert memo._store.set_aside == ["not a regular file"] and (tmp_path / (FILE_NAME + ".damaged")).is_dir()
    assert (tmp_path / FILE_NAME).is_file() and memo.phrases(["x"]) == {}


def test_a_full_disk_or_an_unusable_folder_is_not_damage(tmp_path: Path) -> None:
    """A refused write keeps the file (and what it holds) instead of setting it aside as damaged;
    a cache folder that cannot be made gives a store in memory, not an error."""
    import sqlite3

    from vst_core.images.embeddings import EmbeddingCache
    from vst_core.stores import DAMAGED_SUFFIX

    path = tmp_path / "cache" / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many({"a": np.ones(4, np.float32)})

    def full(db: sqlite3.Connection) -> None:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise exc

    assert cache._store.run(full, default=None) is None
    assert path.is_file() and not path.with_name(path.name + DAMAGED_SUFFIX).exists()
    assert set(cache.get_many(["a"])) == {"a"}  # what it held is still read
    (tmp_path / "blocker").write_text("a file where the folder should be")
    elsewhere = EmbeddingCache(tmp_path / "blocker" / "embeddings.sqlite")
    elsewhere.put_many({"b": np.ones(4, np.float32)})
    assert set(elsewhere.get_many(["b"])) == {"b"}  # kept in memory for this run
