"""CLIP encoder, regions, cache and the grounding metrics end to end, with a tiny open_clip model."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, clip_args, write_jsonl
from PIL import Image

from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import read_scores, read_story_set
from vst_core.data.regions import grid_proposals, read_regions_csv, select_regions
from vst_core.formulas.grounding import groovist_score
from vst_core.images.embeddings import EmbeddingCache
from vst_core.models.clip import load_clip
from vst_core.models.hub import WeightsUnavailableError
from vst_core.scoring.record_store import FILE_NAME as RECORDS_FILE
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_story_set

pytestmark = pytest.mark.slow  # tiny CLIP models end to end


def settings_for(tiny_clip: tuple[Path, Path], **kw: object) -> Settings:
    config, checkpoint = tiny_clip
    base = dict(
        metrics=("grounding", "clipscore", "rovist_vg_clip"),
        clip_model="vst-tiny-clip",
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        device="cpu",
    )
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


def test_encoder_shapes_normalisation_and_batching(tiny_clip: tuple[Path, Path]) -> None:
    config, checkpoint = tiny_clip
    one = load_clip("vst-tiny-clip", checkpoint=checkpoint, model_config=config, device="cpu", batch_size=1)
    many = load_clip("vst-tiny-clip", checkpoint=checkpoint, model_config=config, device="cpu", batch_size=32)
    texts = [f"a photo of {k} dogs" for k in range(40)]
    a, b = one.encode_text(texts), many.encode_text(texts)
    assert a.shape == (40, 16) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(a, b, atol=1e-5)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (20 + k, 30, 3), dtype=np.uint8)) for k in range(33)]
    x, y = one.encode_images(images), many.encode_images(images)
    assert x.shape == (33, 16)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(x, y, atol=1e-5)
    modes = [Image.new(m, (24, 24)) for m in ("L", "RGBA", "CMYK", "P")]
    assert one.encode_images(modes).shape == (4, 16)
    assert one.signature.startswith("vst-tiny-clip/file/gelu/sha:")


def test_long_text_truncated_with_a_warning(tiny_clip: tuple[Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    config, checkpoint = tiny_clip
    enc = load_clip("vst-tiny-clip", checkpoint=checkpoint, model_config=config, device="cpu")
    with caplog.at_level(logging.WARNING):
        enc.encode_text(["word " * 40])
    assert "truncated to CLIP's context length 16" in caplog.text


def test_missing_clip_weights_fail_fast() -> None:
    with pytest.raises(WeightsUnavailableError, match=r"ViT-B-32/openai.*fetch-models.*--clip-checkpoint"):
        load_clip("ViT-B-32", "openai", device="cpu")


def test_regions_grid_csv_and_selection(tmp_path: Path) -> None:
    boxes = grid_proposals(100, 80)
    assert len(boxes) == 10 and all(0 <= b.x1 < b.x2 <= 100 and 0 <= b.y1 < b.y2 <= 80 for b in boxes)
    chosen = select_regions(boxes, 100, 80, top_b=3, include_whole=True)
    assert [b.label for b in chosen] == ["whole image", "top-left", "top-right", "bottom-left"]
    path = tmp_path / "regions.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_name", "image_id", "bbox", "object", "score"])
        w.writerow(["a.png", "1", "[1, 2, 10, 12]", "dog", "0.9"])
        w.writerow(["a.png", "1", "[oops]", "cat", "0.8"])
        w.writerow(["a.png", "1", "[1, 2, 3]", "cat", "0.7"])
    table, problems = read_regions_csv(path)
    assert [b.label for b in table.by_path["a.png"]] == ["dog"]
    assert [p.line for p in problems] == [3, 4]


def test_sample_end_to_end_records(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    settings = settings_for(tiny_clip)
    out = tmp_path / "scores.jsonl"
    summary = score_story_set(read_story_set(SAMPLE), settings, out, models=Models(settings, cache_dir=tmp_path / "cache"))
    assert summary.failed == [] and summary.scored == 8
    records, _ = read_scores(out)
    for record in records:
        g = record["metrics"]["grounding"]
        assert -1 <= g["score"] <= 1 and g["theta"] == pytest.approx(0.6159241924121119)
        assert 0 <= g["temporal_misalignment"] <= 1 and 0 < g["np_proportion"] < 1
        for p in g["phrases"]:
            start, end = p["span"]
            assert record["sentences"][p["sentence"]][start:end] == p["surface"]
            assert 0 <= p["image"] < 5 and len(p["box"]) == 4
        recomputed = groovist_score([p["best_cosine"] for p in g["phrases"]], [p["weight"] for p in g["phrases"]], g["theta"])
        assert recomputed.score == pytest.approx(g["score"])
        assert len(record["metrics"]["clipscore"]["pairs"]) == 5
        assert record["metrics"]["rovist_vg_clip"]["nouns"]


def test_cache_hits_and_model_signature_invalidation(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    settings = settings_for(tiny_clip, metrics=("grounding",))
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    stories = read_story_set(SAMPLE)
    score_story_set(stories, settings, tmp_path / "a.jsonl", models=Models(settings, cache=cache))
    first_misses = cache.misses
    assert first_misses > 0
    served = EmbeddingCache(tmp_path / "emb.sqlite")  # every record stored: nothing is looked up
    score_story_set(stories, settings, tmp_path / "served.jsonl", models=Models(settings, cache=served))
    assert served.misses == served.hits == 0
    (tmp_path / RECORDS_FILE).unlink()  # without the stored records every vector comes from the cache
    cache2 = EmbeddingCache(tmp_path / "emb.sqlite")
    score_story_set(stories, settings, tmp_path / "b.jsonl", models=Models(settings, cache=cache2))
    assert cache2.misses == 0 and cache2.hits == first_misses
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "served.jsonl").read_bytes()
    a, b = read_scores(tmp_path / "a.jsonl")[0], read_scores(tmp_path / "b.jsonl")[0]
    assert [r["metrics"] for r in a] == [r["metrics"] for r in b]
    # another model (other weights -> other signature) must not reuse the vectors
    import open_clip
    import torch

    config, _ = tiny_clip
    torch.manual_seed(5)
    other = tmp_path / "other.pt"
    torch.save(open_clip.create_model("vst-tiny-clip").state_dict(), other)
    s2 = settings.with_(clip_checkpoint=str(other))
    cache3 = EmbeddingCache(tmp_path / "emb.sqlite")
    score_story_set(stories, s2, tmp_path / "c.jsonl", models=Models(s2, cache=cache3))
    assert cache3.hits == 0 and cache3.misses == first_misses
    count, size = cache3.size()
    by_dim = cache3.report()["by_dim"]
    assert isinstance(by_dim, dict) and by_dim[16] == 2 * first_misses and size > 0  # 16: the tiny model's vectors
    assert count == sum(by_dim.values()) and set(by_dim) == {2, 16}  # 2: each text's [tokens, context length]


def test_bad_images_are_reported_per_story(tiny_clip: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, mode in (("gray.png", "L"), ("rgba.png", "RGBA"), ("cmyk.jpg", "CMYK"), ("ok.png", "RGB")):
        Image.new(mode, (40, 30)).save(tmp_path / name)
    Image.new("RGB", (60, 60), "red").save(tmp_path / "big.png")
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    Image.new("RGB", (200, 200), "blue").save(tmp_path / "trunc.jpg")
    data = (tmp_path / "trunc.jpg").read_bytes()
    (tmp_path / "trunc.jpg").write_bytes(data[: len(data) // 2])
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # big.png (3600 px) is now a "bomb" (> 2x)
    stories = [
        {"story_id": "modes", "images": ["gray.png", "rgba.png", "cmyk.jpg"], "sentences": ["A gray sky.", "A dog."]},
        {"story_id": "corrupt", "images": ["ok.png", "corrupt.png"], "sentences": ["A cat.", "A hat."]},
        {"story_id": "truncated", "images": ["trunc.jpg"], "sentences": ["A blue wall."]},
        {"story_id": "bomb", "images": ["big.png"], "sentences": ["A red wall."]},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", stories)
    settings = settings_for(tiny_clip, metrics=("grounding", "redundancy"))
    ss = read_story_set(src, check_images=False)
    score_story_set(ss, settings, tmp_path / "o.jsonl", models=Models(settings, cache=EmbeddingCache(None)))
    records = {r["story_id"]: r for r in read_scores(tmp_path / "o.jsonl")[0]}
    assert "grounding" in records["modes"]["metrics"]  # more images than sentences is fine
    assert records["modes"]["metrics"]["grounding"]["temporal_misalignment"] is not None
    assert "image 2: cannot read corrupt.png" in records["corrupt"]["errors"]["grounding"]
    assert "cannot read trunc.jpg" in records["truncated"]["errors"]["grounding"]
    assert "DecompressionBomb" in records["bomb"]["errors"]["grounding"]
    for r in records.values():
        assert "redundancy" in r["metrics"]  # the rest is still scored


def test_regions_csv_unknown_images_fall_back_with_a_note(
    tiny_clip: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Image.new("RGB", (40, 30), "green").save(tmp_path / "a.png")
    Image.new("RGB", (40, 30), "white").save(tmp_path / "b.png")
    regions = tmp_path / "regions.csv"
    regions.write_text(
        'image_name,image_id,bbox,object,score\na.png,1,"[0, 0, 20, 15]",tree,0.9\nzzz.png,9,"[0, 0, 5, 5]",x,0.5\na.png,1,"[5, 5]",bad,0.1\n'
    )
    src = write_jsonl(
        tmp_path / "s.jsonl", [{"story_id": "x", "images": ["a.png", "b.png"], "sentences": ["A green tree.", "Snow."]}]
    )
    out = tmp_path / "o.jsonl"
    code = main(
        [
            "score",
            str(src),
            "--out",
            str(out),
            "--metrics",
            "grounding",
            *clip_args(tiny_clip),
            "--regions",
            str(regions),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-progress",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "names 1 image(s) not in the story set (zzz.png)" in err and "line 4" in err
    (record,) = read_scores(out)[0]
    g = record["metrics"]["grounding"]
    assert any("no regions for b.png" in n for n in g["notes"])
    assert record["signature"]["settings"]["regions"] == "csv"
    boxes = {tuple(p["box"]) for p in g["phrases"] if p["image"] == 0}
    assert boxes <= {(0.0, 0.0, 20.0, 15.0)}


def test_theta_from_dataset_and_cache_command(
    tiny_clip: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "--metrics",
        "grounding",
        *clip_args(tiny_clip),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-progress",
        "--device",
        "cpu",
    ]
    out = tmp_path / "o.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(out), "--theta", "dataset", *args]) == 0
    records = read_scores(out)[0]
    phrases = [p for r in records for p in r["metrics"]["grounding"]["phrases"]]
    theta = records[0]["metrics"]["grounding"]["theta"]
    assert theta == pytest.approx(2.5 * np.mean([p["best_cosine"] for p in phrases]))
    assert records[0]["signature"]["settings"]["theta"] == pytest.approx(theta)
    assert main(["score", str(SAMPLE), "--out", str(out), "--theta", "dataset", *args]) == 0  # resumes: same θ
    assert len(read_scores(out)[0]) == 8
    capsys.readouterr()
    assert main(["cache", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "embeddings" in capsys.readouterr().out  # the command's result, on stdout
    assert main(["cache", "--cache-dir", str(tmp_path / "cache"), "--clear"]) == 0
    assert EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite").size()[0] == 0


def test_rescore_equals_scoring_with_other_settings(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    from vst_core.data import load_records
    from vst_core.metrics.groovist.rescore import rescore_grounding
    from vst_core.scoring.reaggregate import reaggregate

    cache = EmbeddingCache(None)
    stories = read_story_set(SAMPLE)
    base = settings_for(tiny_clip, metrics=("grounding",))
    other = base.with_(theta="0.9", penalize=False, weighting="none")
    score_story_set(stories, base, tmp_path / "a.jsonl", models=Models(base, cache=cache))
    score_story_set(stories, other, tmp_path / "b.jsonl", models=Models(other, cache=cache))
    a_records, b_records = load_records(tmp_path / "a.jsonl")[0], load_records(tmp_path / "b.jsonl")[0]
    for a, b, whole in zip(a_records, b_records, reaggregate(a_records, base, other), strict=True):
        assert a.metrics.get("grounding") is not None and b.metrics.get("grounding") is not None
        re = rescore_grounding(a.metrics["grounding"], 0.9, penalize=False, weight=False)
        assert re.score == pytest.approx(b.metrics["grounding"].score)
        assert [p.contribution for p in re.phrases] == pytest.approx([p.contribution for p in b.metrics["grounding"].phrases])
        assert whole.metrics.get("grounding") == re and whole.signature_id == b.signature_id  # the whole record, re-signed


def test_reference_profile_weights_phrases_as_the_groovist_code(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    from vst_core.text.concreteness import phrase_concreteness
    from vst_core.text.wordnet import noun_lemma

    stories = read_story_set(SAMPLE)
    settings = settings_for(tiny_clip, metrics=("grounding",), grounding_profile="reference")
    score_story_set(stories, settings, tmp_path / "r.jsonl", models=Models(settings, cache=EmbeddingCache(None)))
    records, _ = read_scores(tmp_path / "r.jsonl")
    phrases = [p for r in records for p in r["metrics"]["grounding"]["phrases"]]
    assert phrases
    for p in phrases:
        words = p["text"].split(" ")
        assert p["weight"] == pytest.approx(phrase_concreteness(words, [noun_lemma(w) for w in words]))
    assert records[0]["signature"]["settings"]["grounding_profile"] == "reference"


def test_regions_are_found_by_path_never_by_base_name_alone(tmp_path: Path) -> None:
    from vst_core.data.regions import read_regions_csv

    path = tmp_path / "regions.csv"
    rows = [["image_name", "image_id", "bbox", "object", "score"]]
    for story in ("s1", "s2", "s3"):  # the AESOP layout: every story has panel_0/1/2.jpg
        for panel in range(3):
            rows.append([f"{story}/panel_{panel}.jpg", "", f"[0, 0, {panel + 1}, 9]", story, "0.9"])
    rows.append(["other/123.jpg", "123", "[1, 1, 5, 5]", "vist", "0.8"])
    rows.append(["x/dup.jpg", "", "[0, 0, 1, 1]", "a", "0.5"])
    rows.append(["y/dup.jpg", "", "[0, 0, 2, 2]", "b", "0.5"])
    rows.append(["nan.jpg", "", "[0, NaN, 1, 1]", "c", "0.5"])
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    table, problems = read_regions_csv(path)
    key, boxes, _ = table.lookup("images/s2/panel_1.jpg")  # the story's path, relative to its folder
    assert key == "s2/panel_1.jpg" and boxes is not None and boxes[0].label == "s2" and boxes[0].x2 == 2
    assert table.lookup("panel_1.jpg")[0] is None  # a base name alone matches three entries
    assert "ambiguous" in str(table.lookup("panel_1.jpg")[2])
    assert table.lookup("photos/123.png")[0] == "id:123"  # a VIST photo id
    assert table.lookup("z/dup.jpg") == (None, None, None)
    assert "ambiguous" in str(table.lookup("dup.jpg")[2])
    assert any("not finite" in p.message for p in problems) and "nan.jpg" not in table.by_path


def test_a_regions_file_that_is_not_utf8_names_itself(tmp_path: Path) -> None:
    from vst_core.data.regions import read_regions_csv

    path = tmp_path / "regions.csv"
    path.write_bytes(b"image_name,bbox\n\xff\xfe.jpg,[0,0,1,1]\n")
    with pytest.raises(ValueError, match="regions.csv: regions CSV is not UTF-8"):
        read_regions_csv(path)


def test_a_bad_regions_file_is_bad_input_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "regions.csv"
    path.write_bytes(b"image_name,bbox\n\xff.jpg,[0,0,1,1]\n")
    code = main(["score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "grounding", "--regions", str(path)])
    assert code == 3 and "regions.csv" in capsys.readouterr().err
