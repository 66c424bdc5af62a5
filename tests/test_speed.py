"""Scoring at dataset scale: batching, resume, cache keys, shards and the benchmark, with tiny models."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLE, clip_args, write_jsonl

from benchmarks.reference_code import reference_nr
from vst_core.bench.harness import BenchConfig, run_bench
from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import read_scores, read_story_set
from vst_core.formulas.redundancy import non_redundancy
from vst_core.hashing import file_digest
from vst_core.images.embeddings import EmbeddingCache, region_key
from vst_core.models.clip import ClipEncoder, load_clip
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import chunk_size_for, parse_shard, score_story_set, shard_stories
from vst_core.signature import signature_id

pytestmark = pytest.mark.slow  # benchmarks, shards and batching on tiny models


def tiny_settings(tiny_clip: tuple[Path, Path], **kw: Any) -> Settings:
    config, checkpoint = tiny_clip
    base: dict[str, Any] = dict(
        metrics=("grounding", "clipscore", "rovist_vg_clip", "redundancy"),
        clip_model="vst-tiny-clip",
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        device="cpu",
    )
    base.update(kw)
    return Settings(**base)


def assert_close(a: Any, b: Any, path: str = "") -> None:
    """Equal structures, floats equal within 1e-5."""
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), path
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys differ"
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: lengths differ"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{k}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def by_id(path: Path) -> dict[str, dict[str, Any]]:
    return {r["story_id"]: r for r in read_scores(path)[0]}


def test_batch_size_and_chunk_size_do_not_change_scores(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    stories = read_story_set(SAMPLE)
    runs = {}
    for name, batch, chunk, workers in (("one", 1, 1, 1), ("many", 64, None, 0), ("odd", 3, 5, 2)):
        settings = tiny_settings(tiny_clip, batch_size=batch, workers=workers)
        models = Models(settings, cache=EmbeddingCache(None))  # no cache: every run encodes
        score_story_set(stories, settings, tmp_path / f"{name}.jsonl", models=models, chunk_size=chunk)
        assert models.clip.batch_size == batch and models.clip.images_encoded > 0
        runs[name] = by_id(tmp_path / f"{name}.jsonl")
    assert runs["one"].keys() == runs["many"].keys() == runs["odd"].keys() and len(runs["one"]) == 8
    for sid in runs["one"]:
        assert_close(runs["one"][sid], runs["many"][sid], sid)
        assert_close(runs["one"][sid], runs["odd"][sid], sid)
    # speed knobs leave the signature alone
    assert signature_id(tiny_settings(tiny_clip, batch_size=1, workers=1)) == signature_id(tiny_settings(tiny_clip))


def test_trimmed_text_batches_equal_the_full_forward(tiny_clip: tuple[Path, Path]) -> None:
    config, checkpoint = tiny_clip
    enc = load_clip("vst-tiny-clip", checkpoint=checkpoint, model_config=config, device="cpu", batch_size=4)
    assert enc._trim  # open_clip's causal text tower pooled at the end token
    texts = ["a dog", "the big red ball on the sunny beach", "cake", "", "we went to the park and saw a cat"]
    trimmed = enc.encode_text(texts)
    import torch

    tokens = enc.tokenizer(texts, context_length=enc.context_length)
    with torch.inference_mode():
        full = torch.nn.functional.normalize(enc.model.encode_text(tokens).float(), dim=-1).numpy()
    np.testing.assert_allclose(trimmed, full, atol=1e-5)


class Interrupt(Exception):
    pass


class StopAfter:
    """A progress bar that interrupts the run once ``limit`` stories are written."""

    def __init__(self, limit: int) -> None:
        self.limit, self.done = limit, 0

    def __call__(self, total: int) -> StopAfter:
        return self

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.done >= self.limit:
            raise Interrupt

    def close(self) -> None:
        pass


def test_interrupted_run_resumes_to_the_uninterrupted_result(
    tiny_clip: tuple[Path, Path], tiny_bert: Path, tmp_path: Path
) -> None:
    settings = tiny_settings(
        tiny_clip,
        metrics=("redundancy", "coherence", "grounding", "clipscore"),
        coherence_model=f"bert-nsp:{tiny_bert}",
        batch_size=4,
    )
    stories = read_story_set(SAMPLE)
    full = tmp_path / "full.jsonl"
    score_story_set(stories, settings, full, models=Models(settings, cache=EmbeddingCache(None)), chunk_size=2)
    part = tmp_path / "part.jsonl"
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    with pytest.raises(Interrupt):
        score_story_set(stories, settings, part, models=Models(settings, cache=cache), chunk_size=2, progress=StopAfter(3))
    assert len(read_scores(part)[0]) == 4  # two whole chunks were written before the interruption
    summary = score_story_set(stories, settings, part, models=Models(settings, cache=EmbeddingCache(cache.path)), chunk_size=2)
    assert summary.skipped == 4 and summary.scored == 4
    a, b = by_id(full), by_id(part)
    assert a.keys() == b.keys() and len(a) == 8
    for sid in a:
        assert_close(a[sid], b[sid], sid)


def test_cache_gives_identical_vectors_and_is_keyed_by_model(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    settings = tiny_settings(tiny_clip, metrics=("grounding",))
    stories = read_story_set(SAMPLE)
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    models = Models(settings, cache=cache)
    score_story_set(stories, settings, tmp_path / "a.jsonl", models=models)
    enc = models.clip
    grounder = models.grounder(stories.root)
    assert not grounder.images and not grounder.phrases  # memory released after each chunk
    # a cached region vector is a fresh encoding of that crop (up to batch-size float noise)
    from PIL import Image

    from vst_core.data.regions import grid_proposals, select_regions

    path = stories.root / stories.stories[0].images[0]
    with Image.open(path) as im:
        image = im.convert("RGB")
    box = select_regions(grid_proposals(*image.size), *image.size, top_b=10, include_whole=False)[0]
    cached = cache.get_many([region_key(enc.signature, file_digest(path), box.key())])
    assert len(cached) == 1
    fresh = enc.encode_images([image.crop((int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2))))])[0]
    np.testing.assert_allclose(next(iter(cached.values())), fresh, atol=1e-5)
    # and a warm run reads back exactly what the cold run used (its records not stored: from the vectors)
    (Path(cache.path).parent / "records.sqlite").unlink(missing_ok=True)
    cache_b = EmbeddingCache(cache.path)
    score_story_set(stories, settings, tmp_path / "a2.jsonl", models=Models(settings, cache=cache_b))
    assert cache_b.misses == 0 and cache_b.hits > 0
    assert read_scores(tmp_path / "a.jsonl")[0] == read_scores(tmp_path / "a2.jsonl")[0]
    # the same weights under another model signature (another checkpoint or architecture) miss
    misses = cache.misses
    other = ClipEncoder(enc.model, enc.preprocess, enc.tokenizer, "another-arch/file:0123", device="cpu")
    cache2 = EmbeddingCache(cache.path)
    score_story_set(stories, settings, tmp_path / "b.jsonl", models=Models(settings, clip=other, cache=cache2))
    assert cache2.hits == 0 and cache2.misses == misses
    by_dim = cache2.report()["by_dim"]  # 16: the tiny model's vectors; 2: each text's [tokens, context length]
    assert isinstance(by_dim, dict) and by_dim[16] == 2 * misses and cache2.size()[0] == sum(by_dim.values())


def test_shards_cover_every_story_once_and_keep_sequences_together() -> None:
    stories = read_story_set(SAMPLE)
    for n in (1, 2, 3, 5):
        shards = [shard_stories(stories, i, n) for i in range(1, n + 1)]
        ids = [s.story_id for shard in shards for s in shard]
        assert sorted(ids) == sorted(s.story_id for s in stories) and len(ids) == len(set(ids))
        for shard in shards:
            seqs = {s.sequence_id for s in shard}
            assert all(s.sequence_id not in seqs for other in shards if other is not shard for s in other)
    assert parse_shard("2/4") == (2, 4) and parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/2", "3/2", "1/0", "a/b", "1", "-1/2", "1/2/3"):
        with pytest.raises(ValueError):
            parse_shard(bad)
    with pytest.raises(ValueError):
        shard_stories(stories, 0, 2)


def test_cli_shards_join_to_the_full_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [
        {
            "story_id": f"s{k}",
            "sequence_id": f"q{k // 2}",
            "system": "m",
            "images": [],
            "sentences": [f"We saw dog {k}.", "The dog ran.", "The dog ran home."],
        }
        for k in range(30)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", records)
    assert main(["score", str(src), "--out", str(tmp_path / "all.jsonl"), "--no-progress"]) == 0
    lines: list[str] = []
    for i in (1, 2, 3):
        out = tmp_path / f"part{i}.jsonl"
        assert main(["score", str(src), "--out", str(out), "--no-progress", "--shard", f"{i}/3"]) == 0
        lines.extend(out.read_text().splitlines())
    assert sorted(lines) == sorted((tmp_path / "all.jsonl").read_text().splitlines())
    for bad in ("0/3", "4/3", "x", "1/0"):
        capsys.readouterr()
        assert main(["score", str(src), "--out", str(tmp_path / "bad.jsonl"), "--shard", bad]) == 2
        assert "--shard" in capsys.readouterr().err
    assert not (tmp_path / "bad.jsonl").exists()


def test_dataset_theta_is_the_same_in_every_shard(
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
        "--theta",
        "dataset",
    ]
    assert main(["score", str(SAMPLE), "--out", str(tmp_path / "all.jsonl"), *args]) == 0
    full = by_id(tmp_path / "all.jsonl")
    theta = {r["metrics"]["grounding"]["theta"] for r in full.values()}
    assert len(theta) == 1
    stories = read_story_set(SAMPLE)  # two image sequences: take n shards that separate them
    n = next(n for n in range(2, 20) if sum(1 for i in range(1, n + 1) if shard_stories(stories, i, n)) == 2)
    joined: dict[str, dict[str, Any]] = {}
    for i in range(1, n + 1):
        out = tmp_path / f"p{i}.jsonl"
        assert main(["score", str(SAMPLE), "--out", str(out), "--shard", f"{i}/{n}", *args]) == 0
        part = by_id(out)
        assert {r["metrics"]["grounding"]["theta"] for r in part.values()} <= theta
        assert len(part) < len(full)
        joined.update(part)
    assert joined.keys() == full.keys()
    for sid in full:
        assert_close(full[sid], joined[sid], sid)
    capsys.readouterr()
    assert main(["cache", "--cache-dir", str(tmp_path / "cache")]) == 0
    said = capsys.readouterr().out  # the command's result, on stdout
    assert "embeddings.sqlite" in said and "of dim 16" in said and "bytes" in said


def test_chunk_size_fills_encoder_batches() -> None:
    assert chunk_size_for(Settings(batch_size=1)) == 16
    for settings in (Settings(), Settings(batch_size=512)):
        assert chunk_size_for(settings) * 5 * settings.option("top_b") >= 32 * settings.batch_size


def test_reference_baseline_agrees_with_the_reference_variant() -> None:
    rng = np.random.default_rng(1)
    vocab = ["a", "b", "c", "A", ",", "d"]
    for _ in range(30):
        story = [[str(rng.choice(vocab)) for _ in range(rng.integers(1, 12))] for _ in range(rng.integers(1, 6))]
        ours, ref = non_redundancy(story, variant="reference").score, reference_nr(story)
        assert (ours is None) == (ref is None)
        if ref is not None:
            assert ours == pytest.approx(ref)


def test_bench_smoke(tiny_clip: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = tiny_clip
    out = tmp_path / "bench.json"
    args = [
        "bench",
        "--arch",
        "vst-tiny-clip",
        "--clip-config",
        str(config),
        "--coherence-size",
        "tiny",
        "--stories",
        "3",
        "--images-per-story",
        "2",
        "--regions",
        "2",
        "--image-size",
        "64x48",
        "--batch-sizes",
        "2,4",
        "--seconds",
        "0.05",
        "--pipeline-runs",
        "2",
        "--nr-stories",
        "20",
        "--text-stories",
        "20",
        "--rss-stories",
        "4",
        "--prep-images",
        "4",
        "--prep-workers",
        "1,2",
        "--warm-stories",
        "10",
        "--judge-server-stories",
        "2",
        "--judge-server-latency-ms",
        "2",
        "--judge-server-concurrency",
        "1,4",
        "--e2e-sequences",
        "6",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    for key in (
        "raw_crops_per_s",
        "pipeline_crops_per_s",
        "pipeline_vs_raw",
        "raw_text_per_s",
        "pipeline_vs_forwards",
        "pipeline_image_forward_seconds",
        "pipeline_text_forward_seconds",
        "warm_speedup",
        "nr_stories_per_s",
        "nr_speedup_vs_reference",
        "nr_with_spans_stories_per_s",
        "nr_tokenized_speedup_vs_reference",
        "nr_long_sentences_speedup_vs_reference",
        "coherence_pairs_per_s",
        "peak_rss_mb",
        "torch_threads",
        "batch_size",
        "prep_crops_per_s",
        "prep_crops_per_s_pil",
        "device_prep_crops_per_s_pil",
        "device_prep_crops_per_s_device",
        "warm_stories_per_s",
        "warm_stories_per_s_no_spans",
    ):
        assert isinstance(printed[key], (int, float)) and printed[key] > 0, key
    assert printed["crops_encoded"] == 3 * 2 * 2 and printed["rss_stories"] == 4 and printed["rss_failed"] == 0
    # the host-op ledger, counted on 4 and 8 photos: no per-photo upload, one copy back
    assert printed["ledger_uploads_per_batch"] <= 2 and printed["ledger_d2h_per_chunk"] == 1
    assert printed["ledger_torch_calls_per_photo_workers"] == 0
    # every text of the cold run went through the tower once; the forwards' share adds both towers
    assert printed["texts_encoded"] > 0
    forwards = printed["crops_encoded"] / printed["raw_crops_per_s"] + printed["texts_encoded"] / printed["raw_text_per_s"]
    assert printed["pipeline_forwards_seconds"] == pytest.approx(forwards, abs=2e-3)
    assert printed["pipeline_vs_forwards"] == pytest.approx(forwards / printed["pipeline_seconds"], rel=0.01, abs=2e-3)
    assert printed["pipeline_vs_forwards"] >= printed["pipeline_vs_raw"] - 1e-3  # the text tower counted as model work
    # two cold runs, each on its own cache; the slower of the two is reported
    assert printed["pipeline_runs"] == 2 and printed["pipeline_vs_raw"] == min(printed["pipeline_vs_raw_runs"])
    assert len(printed["pipeline_seconds_runs"]) == 2 and printed["pipeline_seconds"] in printed["pipeline_seconds_runs"]
    assert printed["crops_encoded_runs"] == [3 * 2 * 2] * 2  # each run cold: every crop encoded again
    assert printed["warm_speedup"] == pytest.approx(printed["pipeline_seconds"] / printed["warm_seconds"], rel=0.1)
    assert printed["device"] == "cpu" and len(printed["signature_id"]) == 12 and printed["cpu_model"]
    assert set(printed["met"]) == {
        "pipeline_vs_raw",
        "pipeline_vs_forwards",
        "warm_speedup",
        "warm_stories_per_s",
        "prep_crops_per_s",
        "nr_speedup_vs_reference",
        "peak_rss_mb",
        "e2e_crops_per_s",
        "e2e_warm_seconds",
    }
    # vst score end to end in new processes with the stand-in: 6 sequences x 2 photos x (2 regions + the whole image)
    assert printed["e2e_sequences"] == 6 and printed["e2e_crops"] == 6 * 2 * 3
    assert printed["e2e_cold_seconds"] > printed["e2e_warm_seconds"] > 0 and printed["startup_seconds"] > 0
    assert printed["e2e_warm_forwards"] == 0 and printed["e2e_vs_standin"] > 0
    assert printed["standin_crops_per_s"] > 0 and 0 < printed["standin_vs_rate"] < 1
    assert set(printed["prep_crops_per_s_device_by_workers"]) == {"1", "2"} and printed["preprocess"] == "pil"
    assert 0 <= printed["preprocess_max_abs_pixel"] <= 2  # the bound tests/test_preprocess.py holds
    assert set(printed["judge_server_stories_per_s"]) == {"1", "4"} and printed["judge_server_requests_per_story"] == 12
    assert all(v > 0 for v in printed["judge_server_stories_per_s"].values()) and "not measured" in printed["judge_server_vllm"]
    assert printed["coherence_arch"] == "BertForNextSentencePrediction(tiny)"  # the metric's phase names its replica
    assert printed["rss_metrics"] == ["redundancy", "coherence", "grounding", "clipscore"]  # each metric's Bench.runs
    assert main(["bench", "--skip", "nothing"]) == 2
    assert main(["bench", "--judge-server-concurrency", "1,0"]) == 2  # a metric's size is checked as the shared ones
    assert "--judge-server-concurrency must be at least 1" in capsys.readouterr().err


def test_bench_phases_can_be_skipped(tiny_clip: tuple[Path, Path]) -> None:
    config, _ = tiny_clip
    result = run_bench(
        BenchConfig(
            stories=2,
            images_per_story=1,
            regions=1,
            image_size=(40, 30),
            arch="vst-tiny-clip",
            clip_config=str(config),
            batch_sizes=(2,),
            raw_seconds=0.05,
            text_stories=8,
            sizes={"nr_stories": 8},
            skip=("raw", "coherence", "judge", "judge_server", "rss", "e2e"),
        ),
        log=lambda line: None,
    )
    assert "e2e_crops_per_s" not in result and "standin_crops_per_s" in result
    assert result["coherence_arch"] == "BertForNextSentencePrediction(BertConfig())"  # the head says it, phase or not
    assert "judge_stories_per_s" not in result and "judge_server_stories_per_s" not in result
    assert "raw_crops_per_s" not in result and "peak_rss_mb" not in result and "pipeline_vs_raw" not in result
    assert result["crops_encoded"] == 2 and result["warm_speedup"] > 0


def test_trimmed_text_batches_match_the_full_forward_of_vit_b_32(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real default architecture (random weights): cutting padded text batches changes nothing,
    in one batch (at least TEXT_BATCH_MIN texts a forward) or in batches of 3 of different lengths."""
    import torch

    from vst_core.bench.inputs import random_clip

    clip = random_clip("ViT-B-32", device="cpu", batch_size=3)
    assert clip._trim  # open_clip's causal text tower pooled at the end token
    texts = ["a dog", "the big red balloon over the old city at night", "x", "a cat on a long wooden fence", "[male]"]
    with torch.inference_mode():
        tokens = clip.tokenizer(texts, context_length=clip.context_length)
        full = torch.nn.functional.normalize(clip.model.encode_text(tokens).float(), dim=-1).numpy()
    assert [len(i) for i, _ in clip.text_batches(texts)] == [5]
    np.testing.assert_allclose(clip.encode_text(texts), full, atol=1e-5)
    monkeypatch.setattr("vst_core.models.clip.TEXT_BATCH_MIN", 1)
    assert [len(i) for i, _ in clip.text_batches(texts)] == [3, 2]
    np.testing.assert_allclose(clip.encode_text(texts), full, atol=1e-5)


def test_texts_are_tokenised_once_into_the_tokens_the_tokenizer_gives() -> None:
    """open_clip's tokenizer is asked once a text (its ids give the count and the tokens), and the
    tokens built from them are the tokenizer's own, cut after the batch's longest text on the host
    (so the tower never asks the device how long they are)."""
    import torch

    from vst_core.bench.inputs import random_clip

    clip = random_clip("ViT-B-32", device="cpu", batch_size=64)
    texts = ["a dog", "the big red balloon over the old city at night", "x", "!! wow !!", "", "word " * 100, "[male] met"]
    full = clip.tokenizer(texts, context_length=clip.context_length)
    calls = {"encode": 0}
    encode = clip.tokenizer.encode

    def counted(text: str) -> list[int]:
        calls["encode"] += 1
        return encode(text)

    clip.tokenizer.encode = counted  # type: ignore[method-assign]
    ((idx, tokens),) = clip.text_batches(texts)
    assert calls["encode"] == len(texts)
    assert tokens.shape[1] == clip.context_length  # the 100-word text fills the context
    assert torch.equal(tokens, full[idx])
    ((idx, short),) = clip.text_batches(texts[:3])
    width = int(full[:3].any(dim=0).nonzero().max()) + 1  # the longest of the three, end token included
    assert short.shape[1] == width < clip.context_length and torch.equal(short, full[:3][idx][:, :width])
    assert clip.token_counts["word " * 100] == 102


def test_a_cold_run_encodes_each_text_of_its_stories_once(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    """What the benchmark's raw text forward runs over is what a cold run sends through the tower,
    each distinct text once across chunks; a rerun over the cache sends none."""
    from vst_core.images.grounder import Grounder

    settings = tiny_settings(tiny_clip, batch_size=3)
    stories = read_story_set(SAMPLE)
    models = Models(settings, cache=EmbeddingCache(tmp_path / "emb.sqlite"))
    texts = Grounder(settings, models.clip, root=stories.root).texts_of(list(stories))
    assert len(texts) == len(set(texts)) and any(t.startswith(settings.option("clipscore_prompt")) for t in texts)
    score_story_set(stories, settings, tmp_path / "a.jsonl", models=models, chunk_size=2)
    assert models.clip.texts_encoded == len(texts) and models.clip.text_seconds > 0 and models.clip.image_seconds > 0
    again = Models(settings, clip=models.clip, cache=EmbeddingCache(tmp_path / "emb.sqlite"))
    score_story_set(stories, settings, tmp_path / "b.jsonl", models=again, chunk_size=2)
    assert models.clip.texts_encoded == len(texts)


def test_the_e2e_cold_run_is_cold_in_a_folder_used_before(tmp_path: Path) -> None:
    """``python -m vst_core.bench.e2e --folder F`` run twice: the second cold run encodes every crop
    again (its scores file of the first time once made it a resume that encoded nothing)."""
    from vst_core.bench.e2e import E2EConfig, end_to_end

    config = E2EConfig(sequences=2, images_per_story=2, regions=2, image_size=(64, 48), stand_in="20000")
    first = end_to_end(config, tmp_path, lambda text: None)
    again = end_to_end(config, tmp_path, lambda text: None)
    assert first["e2e_crops"] == again["e2e_crops"] > 0
    assert again["startup_seconds"] is not None and again["e2e_warm_forwards"] == 0
