"""Character alignment: a named character's mentions against the images that show it (its crop's
CLIP vector against each image's regions), by hand on small cases and end to end on a VWP-layout
file whose crops are cut from known shots."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_grounding_pipeline import settings_for
from test_vwp import COLUMNS, vwp_row

from vst_core.data import read_scores, read_story_set
from vst_core.formulas.characters import mention_alignment
from vst_core.images.embeddings import EmbeddingCache
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_story_set


def test_a_mention_ranks_its_image_among_the_others_ties_counting_half() -> None:
    score, found = mention_alignment({"Ann": [0.2, 0.9, 0.5, 0.9]}, {"Ann": [1, 0]})
    by_frame = {m.frame: m for m in found}
    assert by_frame[1].rank == pytest.approx((2 + 0.5) / 3)  # above 0.2 and 0.5, tied with 0.9
    assert by_frame[0].rank == 0.0 and by_frame[0].best_frame == 1
    assert score == pytest.approx(((2.5 / 3) + 0.0) / 2)


def test_no_value_without_a_mention_another_image_or_a_crop() -> None:
    assert mention_alignment({"Ann": [0.4]}, {"Ann": [0]}) == (None, [])  # one image: nothing to rank against
    assert mention_alignment({"Ann": [0.4, 0.1]}, {"Ann": []}) == (None, [])
    assert mention_alignment({}, {"Ann": [0, 1]}) == (None, [])  # no crop
    assert mention_alignment({"Ann": [0.4, 0.1]}, {"Ann": [5]}) == (None, [])  # a group past the images
    score, found = mention_alignment({"Ann": [0.4, 0.1], "Bob": [0.1, 0.4]}, {"Ann": [0], "Bob": [0]})
    assert score == 0.5 and [(m.name, m.rank) for m in found] == [("Ann", 1.0), ("Bob", 0.0)]


def _vwp_with_crops(folder: Path) -> Path:
    """Two scenes of three shots (distinct noise); Ann's crop is shot 2 of its scene itself, so
    that image shows her best. Story A1 names her beside shot 2, A2 beside shot 1; A3's crop is
    missing from the folder."""
    rng = np.random.default_rng(3)
    rows = [
        vwp_row("tt001_0001", "A1", ["A quiet street.", "Ann walks in. Ann smiles.", "The end."], ["Ann"]),
        vwp_row("tt001_0001", "A2", ["Ann is outside.", "Someone walks in.", "The end."], ["Ann"]),
        vwp_row("tt002_0002", "A3", ["Ann waits.", "Ann leaves.", "Rain."], ["Ann"]),
    ]
    images = folder / "images"
    images.mkdir(parents=True)
    for row in rows:
        row["char0_url"] = row["char0_url"].replace("char_0", f"{row['scene_full_id']}_char_0")
        for k in range(3):
            name = row[f"link{k}"].rsplit("/", 1)[1]
            if not (images / name).exists():
                Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(images / name)
    crop = rows[0]["char0_url"].rsplit("/", 1)[1]
    (images / crop).write_bytes((images / rows[0]["link1"].rsplit("/", 1)[1]).read_bytes())  # Ann = shot 2
    path = folder / "vwp.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.slow  # tiny CLIP end to end
def test_a_character_named_beside_the_shot_it_was_cut_from_ranks_first(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    path = _vwp_with_crops(tmp_path)
    stories = read_story_set(path)
    settings = settings_for(tiny_clip, metrics=("grounding", "char_alignment"))
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    score_story_set(stories, settings, tmp_path / "out.jsonl", models=Models(settings, cache=cache))
    records = {r["story_id"]: r for r in read_scores(tmp_path / "out.jsonl")[0]}
    first = records["A1"]["metrics"]["char_alignment"]
    assert first["score"] == 1.0 and first["crops"] == 1 and first["named"] == 1
    assert [(m["frame"], m["best_frame"]) for m in first["mentions"]] == [(1, 1)]  # two mentions, one group
    assert first["mentions"][0]["cosine"] == pytest.approx(1.0, abs=1e-5)  # the crop is the shot itself
    second = records["A2"]["metrics"]["char_alignment"]
    assert [(m["frame"], m["best_frame"]) for m in second["mentions"]] == [(0, 1)] and second["score"] < 1.0
    third = records["A3"]["metrics"]["char_alignment"]
    assert third["score"] is None and third["crops"] == 0
    assert any("crop" in note and "cannot read" in note for note in third["notes"])
    assert records["A1"]["metrics"]["grounding"]["score"] is not None  # the shots keep their regions
    # a rerun reads every vector, the crop's too, from the cache: the same records
    again = EmbeddingCache(tmp_path / "emb.sqlite")
    score_story_set(stories, settings, tmp_path / "again.jsonl", models=Models(settings, cache=again))
    assert again.misses == 0
    assert [json.dumps(r["metrics"], sort_keys=True) for r in read_scores(tmp_path / "again.jsonl")[0]] == [
        json.dumps(r["metrics"], sort_keys=True) for r in read_scores(tmp_path / "out.jsonl")[0]
    ]


def test_a_scores_record_keeps_its_characters_and_refuses_broken_ones_alone() -> None:
    """The story's named characters travel in its scores record (Inspect shows their crops from a
    scores file); a malformed ``characters`` is a warning on that record, not a refused file."""
    from vst_core.records.reader import read_record
    from vst_core.records.story import StoryScores

    record = StoryScores("A1", "q", "human", ("Ann waves.",), ("1.jpg",), characters=(("Ann", "c0.jpg"), ("Bob", "")))
    back, problems = read_record(record.to_json())
    assert back is not None and back.characters == record.characters and not problems
    broken = {**record.to_json(), "characters": [{"name": "Ann"}]}
    back, problems = read_record(broken)
    assert back is not None and back.characters == () and any("characters" in str(p) for p in problems)


def _noise(folder: Path, names: list[str]) -> None:
    rng = np.random.default_rng(0)
    for name in names:
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(folder / name)


def _score(
    tiny_clip: tuple[Path, Path], folder: Path, stories: list[dict[str, object]], chunk: int
) -> dict[str, dict[str, object]]:
    path = folder / "set.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in stories), encoding="utf-8")
    settings = settings_for(tiny_clip, metrics=("grounding", "clipscore", "char_alignment"))
    out = folder / f"out-{chunk}.jsonl"
    out.unlink(missing_ok=True)
    score_story_set(read_story_set(path), settings, out, models=Models(settings, cache=EmbeddingCache(None)), chunk_size=chunk)
    return {str(r["story_id"]): r for r in read_scores(out)[0]}


@pytest.mark.slow  # tiny CLIP end to end
def test_a_file_that_is_a_crop_then_a_frame_keeps_its_regions_in_every_chunk(
    tiny_clip: tuple[Path, Path], tmp_path: Path
) -> None:
    """A character's crop is its own entry: the same file as a later story's image still gets its
    regions there (a crop used to make the file whole-only for the rest of the run, changing that
    story's GROOVIST and T with the chunk size, and a frame without regions gave a cosine of -inf
    that stopped the run)."""
    _noise(tmp_path, ["a1.png", "a2.png", "b2.png", "x.png"])
    a = {"story_id": "A", "system": "s", "sequence_id": "qa", "sentences": ["Ann is here.", "Ann left."], "images": ["a1.png", "a2.png"], "characters": [["Ann", "x.png"]]}  # fmt: skip
    b = {"story_id": "B", "system": "s", "sequence_id": "qb", "sentences": ["A dog runs.", "A cat sits."], "images": ["x.png", "b2.png"]}  # fmt: skip
    c = {"story_id": "C", "system": "s", "sequence_id": "qc", "sentences": ["Ann runs.", "A cat sits."], "images": ["x.png", "b2.png"], "characters": [["Ann", "x.png"]]}  # fmt: skip
    together, apart = _score(tiny_clip, tmp_path, [a, b, c], 10), _score(tiny_clip, tmp_path, [a, b, c], 1)
    for story in ("B", "C"):  # the same regions matched, the same numbers (to float noise from other batches)
        one, two = together[story]["metrics"]["grounding"], apart[story]["metrics"]["grounding"]
        assert [(p["box"], p["image"]) for p in one["phrases"]] == [(p["box"], p["image"]) for p in two["phrases"]], story
        assert (
            one["score"] == pytest.approx(two["score"], abs=1e-6) and one["temporal_misalignment"] == two["temporal_misalignment"]
        ), story
    third = apart["C"]["metrics"]["char_alignment"]
    assert third["score"] == 1.0 and third["mentions"][0]["cosine"] == pytest.approx(1.0, abs=1e-5)  # its crop is its image 1


@pytest.mark.slow  # tiny CLIP end to end
def test_a_mention_is_ranked_among_every_image_and_names_are_read_trimmed(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    """Three images and two texts: Ann, named beside image 2, is shown best by image 3 (her crop):
    ranked among all three (0.5, best image 3), not among the first two; a name given with spaces
    around it is the same name."""
    _noise(tmp_path, ["a1.png", "a2.png", "a3.png"])
    story = {"story_id": "A", "system": "s", "sequence_id": "q", "sentences": ["A street.", "Ann waves."], "images": ["a1.png", "a2.png", "a3.png"], "characters": [[" Ann ", "a3.png"]]}  # fmt: skip
    found = _score(tiny_clip, tmp_path, [story], 10)["A"]["metrics"]["char_alignment"]
    assert [(m["name"], m["frame"], m["best_frame"]) for m in found["mentions"]] == [("Ann", 1, 2)]
    assert found["score"] == 0.5 and found["named"] == 1
