"""The record store: a rerun reads the records of the stories it scored before from the cache folder
(:mod:`vst_core.scoring.record_store`) and writes the same bytes a recomputation writes; any change
of what a record depends on (a sentence, a photo, a setting, the set's idf, the length limits)
computes that story again, and only the stories it touches."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE, clip_args

from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import Story, read_story_set
from vst_core.data.scores_io import record_line
from vst_core.scoring import runs
from vst_core.scoring.record_store import FILE_NAME
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_records


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The (system, story_id) of every story the engine computes (not read from the store)."""
    found: list[tuple[str, str]] = []
    real = runs.score_batch

    def counting(stories: Sequence[Story], *args: Any, **kwargs: Any) -> Any:
        found.extend(s.key for s in stories)
        return real(stories, *args, **kwargs)

    monkeypatch.setattr(runs, "score_batch", counting)
    return found


def _copy_sample(tmp_path: Path) -> Path:
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE.parent, folder)
    return folder / SAMPLE.name


def _edit_sentence(stories: Path, story_id: str) -> None:
    lines = [json.loads(line) for line in stories.read_text(encoding="utf-8").splitlines() if line.strip()]
    for record in lines:
        if record["story_id"] == story_id:
            record["sentences"][1] = "Then a red dog ran and ran and ran on the beach."
    stories.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


def _score(stories: Path, out: Path, cache: Path, *extra: str, metrics: str = "redundancy") -> bytes:
    code = main(
        ["score", str(stories), "--out", str(out), "--metrics", metrics, "--cache-dir", str(cache), "--no-progress", *extra]
    )
    assert code == 0
    return out.read_bytes()


def _recomputed(stories: Path, out: Path, cache: Path, *extra: str, metrics: str = "redundancy") -> bytes:
    """What a run with the same vectors cached but no stored record writes (a cold run's vectors may
    differ from a warm run's in their last digits: batches of other sizes)."""
    again = out.with_suffix(".cache")
    shutil.copytree(cache, again, ignore=shutil.ignore_patterns(FILE_NAME))
    return _score(stories, out, again, *extra, metrics=metrics)


def test_a_rerun_reads_every_record_back_and_writes_the_same_bytes(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    cache = tmp_path / "cache"
    first = _score(SAMPLE, tmp_path / "a.jsonl", cache)
    assert len(computed) == 8 and (cache / FILE_NAME).is_file()
    computed.clear()
    second = _score(SAMPLE, tmp_path / "b.jsonl", cache)
    assert computed == []  # every record from the store
    assert second == first
    fresh = _score(SAMPLE, tmp_path / "c.jsonl", tmp_path / "other-cache")  # a recomputation
    assert fresh == first
    settings = Settings(metrics=("redundancy",))
    unstored = Models(settings, cache_dir=tmp_path / "off", coherence=object())  # the store off: a model it cannot name
    records = list(score_records(read_story_set(SAMPLE), settings, models=unstored))
    assert "".join(record_line(r) + "\n" for r in records).encode("utf-8") == first


def test_an_edited_sentence_computes_that_story_only(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    stories, cache = _copy_sample(tmp_path), tmp_path / "cache"
    _score(stories, tmp_path / "a.jsonl", cache)
    _edit_sentence(stories, "home-generic")
    computed.clear()
    rerun = _score(stories, tmp_path / "b.jsonl", cache)
    assert computed == [("model-b", "home-generic")]
    assert rerun == _score(stories, tmp_path / "c.jsonl", tmp_path / "fresh")  # the signature names the new file too


def test_another_setting_computes_every_story(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    cache = tmp_path / "cache"
    _score(SAMPLE, tmp_path / "a.jsonl", cache)
    computed.clear()
    _score(SAMPLE, tmp_path / "b.jsonl", cache, "--nr-n", "3")
    assert len(computed) == 8
    computed.clear()
    _score(SAMPLE, tmp_path / "c.jsonl", cache, "--no-spans")  # another record for the same numbers
    assert len(computed) == 8


def test_a_story_refused_by_the_limits_is_refused_again_not_served(
    tmp_path: Path, computed: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    _score(SAMPLE, tmp_path / "a.jsonl", cache)
    monkeypatch.setenv("VST_MAX_STORY_SENTENCES", "3")  # every sample story has 5
    computed.clear()
    code = main(
        [
            "score",
            str(SAMPLE),
            "--out",
            str(tmp_path / "b.jsonl"),
            "--metrics",
            "redundancy",
            "--cache-dir",
            str(cache),
            "--no-progress",
        ]
    )
    assert code == 3  # no story got a value
    assert len(computed) == 8
    records = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all("story not scored" in r["errors"]["redundancy"] for r in records)
    monkeypatch.delenv("VST_MAX_STORY_SENTENCES")
    computed.clear()
    _score(SAMPLE, tmp_path / "c.jsonl", cache)  # refused records were not stored: the scored ones are read back
    assert computed == []


def test_the_api_gets_the_records_a_recomputation_gives(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    story_set = read_story_set(SAMPLE)
    settings = Settings(metrics=("redundancy",))
    first = list(score_records(story_set, settings, models=Models(settings, cache_dir=tmp_path / "cache")))
    computed.clear()
    second = list(score_records(story_set, settings, models=Models(settings, cache_dir=tmp_path / "cache")))
    assert computed == []
    assert second == first
    assert [r.to_json() for r in second] == [r.to_json() for r in first]


def test_a_damaged_row_is_computed_again(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    cache = tmp_path / "cache"
    first = _score(SAMPLE, tmp_path / "a.jsonl", cache)
    with sqlite3.connect(cache / FILE_NAME) as db:
        (key,) = db.execute("SELECT key FROM records LIMIT 1").fetchone()
        db.execute("UPDATE records SET line = replace(line, '0.', '9.') WHERE key = ?", (key,))
    computed.clear()
    assert _score(SAMPLE, tmp_path / "b.jsonl", cache) == first
    assert len(computed) == 1


def test_a_model_the_signature_does_not_name_is_never_served_nor_stored(tmp_path: Path, computed: list[tuple[str, str]]) -> None:
    story_set = read_story_set(SAMPLE)
    settings = Settings(metrics=("redundancy",))
    given = Models(settings, cache_dir=tmp_path / "cache", coherence=object())  # a caller's own model
    list(score_records(story_set, settings, models=given))
    assert not (tmp_path / "cache" / FILE_NAME).exists()
    list(score_records(story_set, settings, models=Models(settings, cache_dir=tmp_path / "cache")))
    computed.clear()
    list(score_records(story_set, settings, models=Models(settings, cache_dir=tmp_path / "cache", coherence=object())))
    assert len(computed) == 8


# ------------------------------------------------------------------ image metrics (a tiny CLIP)


@pytest.mark.slow  # builds a tiny CLIP (torch, open_clip) and scores the sample five times
def test_image_records_are_read_back_and_a_changed_photo_recomputes_its_stories(
    tiny_clip: tuple[Path, Path], tmp_path: Path, computed: list[tuple[str, str]]
) -> None:
    stories, cache = _copy_sample(tmp_path), tmp_path / "cache"
    metrics = "redundancy,grounding,clipscore"
    extra = clip_args(tiny_clip)
    first = _score(stories, tmp_path / "a.jsonl", cache, *extra, metrics=metrics)
    computed.clear()
    assert _score(stories, tmp_path / "b.jsonl", cache, *extra, metrics=metrics) == first
    assert computed == []
    assert _recomputed(stories, tmp_path / "b2.jsonl", cache, *extra, metrics=metrics) == first

    photo = stories.parent / "images" / "home_3_horse.jpg"
    shutil.copyfile(stories.parent / "images" / "space_1_rocket.jpg", photo)  # other bytes under the same name
    computed.clear()
    changed = _score(stories, tmp_path / "c.jsonl", cache, *extra, metrics=metrics)
    assert sorted(computed) == sorted(s.key for s in read_story_set(stories) if s.sequence_id.startswith("home"))
    assert changed != first
    assert changed == _recomputed(stories, tmp_path / "d.jsonl", cache, *extra, metrics=metrics)

    computed.clear()
    _score(stories, tmp_path / "e.jsonl", cache, *extra, "--top-b", "3", metrics=metrics)
    assert len(computed) == 8


@pytest.mark.slow  # builds a tiny CLIP (torch, open_clip)
def test_a_sentence_that_changes_the_sets_idf_computes_every_story_of_an_idf_run(
    tiny_clip: tuple[Path, Path], tmp_path: Path, computed: list[tuple[str, str]]
) -> None:
    stories, cache = _copy_sample(tmp_path), tmp_path / "cache"
    metrics = "rovist_vg_clip"  # idf fitted over the whole set
    extra = clip_args(tiny_clip)
    _score(stories, tmp_path / "a.jsonl", cache, *extra, metrics=metrics)
    _edit_sentence(stories, "home-generic")
    computed.clear()
    rerun = _score(stories, tmp_path / "b.jsonl", cache, *extra, metrics=metrics)
    assert len(computed) == 8
    assert rerun == _recomputed(stories, tmp_path / "c.jsonl", cache, *extra, metrics=metrics)


@pytest.mark.slow  # builds a tiny CLIP (torch, open_clip)
def test_a_story_whose_photo_is_missing_is_computed_on_every_run(
    tiny_clip: tuple[Path, Path], tmp_path: Path, computed: list[tuple[str, str]]
) -> None:
    stories, cache = _copy_sample(tmp_path), tmp_path / "cache"
    (stories.parent / "images" / "home_3_horse.jpg").unlink()
    extra = [*clip_args(tiny_clip), "--no-check-images"]
    home = sorted(s.key for s in read_story_set(stories, check_images=False) if s.sequence_id.startswith("home"))
    for out in ("a.jsonl", "b.jsonl"):
        computed.clear()
        code = main(
            [
                "score",
                str(stories),
                "--out",
                str(tmp_path / out),
                "--metrics",
                "grounding",
                "--cache-dir",
                str(cache),
                "--no-progress",
                *extra,
            ]
        )
        assert code == 0
        assert sorted(computed) == (
            home if out == "b.jsonl" else sorted(s.key for s in read_story_set(stories, check_images=False))
        )


def test_many_image_paths_resolve_as_one_at_a_time(tmp_path: Path) -> None:
    """The batch resolution the reader and the keys use gives :func:`resolve_image`'s path, or
    refuses what it refuses, through folder and file links inside and outside the set."""
    from vst_core.data.paths import resolve_image, resolve_images

    root, outside = tmp_path / "set", tmp_path / "outside"
    (root / "images" / "deep").mkdir(parents=True)
    outside.mkdir()
    for name in ("a.jpg", "deep/b.jpg"):
        (root / "images" / name).write_bytes(b"x")
    (outside / "c.jpg").write_bytes(b"x")
    (root / "inner").symlink_to(root / "images")  # a folder link inside the set
    (root / "away").symlink_to(outside)  # a folder link leaving it
    (root / "images" / "link.jpg").symlink_to(root / "images" / "a.jpg")
    (root / "images" / "escape.jpg").symlink_to(outside / "c.jpg")
    refs = [
        "images/a.jpg", "images/deep/b.jpg", "inner/a.jpg", "inner/deep/b.jpg", "away/c.jpg", "images/link.jpg",
        "images/escape.jpg", "images/missing.jpg", "missing/a.jpg", "images/../images/a.jpg", "./images/a.jpg",
        "images//a.jpg", "images/", "", "  ", "/etc/passwd", "http://x/a.jpg", "images/a\x00.jpg", "o" * 300 + ".jpg",
        "../outside/c.jpg", "a.jpg", "images\\a.jpg",
    ]  # fmt: skip

    def one(ref: str) -> str | None:
        try:
            return str(resolve_image(root, ref))
        except ValueError:
            return None

    assert resolve_images(root, refs) == {ref: one(ref) for ref in refs}
    assert resolve_images(root, ["inner/a.jpg"])["inner/a.jpg"] == str((root / "images" / "a.jpg").resolve())


def test_the_models_a_run_built_are_known_by_its_signature_and_a_callers_are_not() -> None:
    """A run rebuilt from another's models (``vst score`` leaving out a metric whose model does not
    load) is still served; a model a caller gives is not, but a CLIP encoder whose weights are the
    ones the signature names is."""

    class Scorer:
        pass

    class Clip:
        signature = "ViT-B-32/openai@abc"

    settings = Settings(metrics=("redundancy",))
    first = Models(settings)
    first.own("coherence", lambda models: Scorer())
    assert Models(settings, **first.loaded()).known_models(None)
    assert not Models(settings, coherence=Scorer()).known_models(None)
    assert Models(settings, clip=Clip()).known_models("ViT-B-32/openai@abc")  # type: ignore[arg-type]
    assert not Models(settings, clip=Clip()).known_models("ViT-B-32/openai@other")  # type: ignore[arg-type]


def test_the_stories_to_compute_go_in_whole_chunks_and_every_record_in_input_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[list[str]] = []
    real = runs.score_batch

    def recording(stories: Sequence[Story], *args: Any, **kwargs: Any) -> Any:
        batches.append([s.story_id for s in stories])
        return real(stories, *args, **kwargs)

    monkeypatch.setattr(runs, "score_batch", recording)
    stories, settings = _copy_sample(tmp_path), Settings(metrics=("redundancy",))
    first = list(
        score_records(read_story_set(stories), settings, models=Models(settings, cache_dir=tmp_path / "c"), chunk_size=3)
    )
    assert [len(b) for b in batches] == [3, 3, 2]  # the chunks a run without the store makes
    ids = [r.story_id for r in first]
    for story_id in (ids[0], ids[4], ids[7]):
        _edit_sentence(stories, story_id)
    batches.clear()
    again = list(
        score_records(read_story_set(stories), settings, models=Models(settings, cache_dir=tmp_path / "c"), chunk_size=2)
    )
    assert batches == [[ids[0], ids[4]], [ids[7]]]
    assert [r.story_id for r in again] == ids
