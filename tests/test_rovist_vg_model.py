"""RoViST-VG with the authors' model: the checkpoint as their script saves it, the ViT by its hub name,
GloVe from its text file; parity with a transcription of their ``visual_grounding_scorer.py``; old
CLIP-based ``rovist_vg`` records read as ``rovist_vg_clip``; the Inspect card's evidence."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import APP, PAGES, ROOT, SAMPLE, ParityLog

from vst_core.hashing import weights_digest
from vst_core.metrics.rovist_vg.record import RovistVGScores
from vst_core.metrics.rovist_vg_clip import RovistVGClipScores
from vst_core.records import StoryScores, read_record

REGIONS_PER_IMAGE = 12  # more than top_b (10): the first ten of each image are used, as their [:num_bbox]


# --------------------------------------------------------------------------- records (fast)


def test_an_old_clip_based_rovist_vg_record_reads_as_rovist_vg_clip() -> None:
    old = {
        "format": 1,
        "story_id": "s",
        "sentences": ["A dog ran."],
        "metrics": {
            "rovist_vg": {
                "score": 0.33,
                "lse": 1.37,
                "nouns": [{"noun": "dog", "best_cosine": 0.5, "idf": 2.0}],
                "notes": ["CLIP similarities with RoViST's aggregation, not the RoViST-VG model"],
            }
        },
    }
    record, problems = read_record(old)
    assert record is not None and not [p for p in problems if p.severity == "error"]
    assert "rovist_vg" not in record.metrics and isinstance(record.metrics.get("rovist_vg_clip"), RovistVGClipScores)
    assert record.metrics["rovist_vg_clip"].nouns[0].noun == "dog" and record.metrics["rovist_vg_clip"].score == 0.33


def test_the_scores_index_reads_an_old_clip_based_record_as_the_reader_does(tmp_path: Path) -> None:
    """The index's table columns and its one-metric reads take an old ``rovist_vg`` CLIP record as
    ``rovist_vg_clip`` (its module's ``formerly``), as :func:`read_record` does; an old record with an
    extra key is still the CLIP one, and the authors' record (with its tagger) stays ``rovist_vg``."""
    from vst_core.data.index_build import build_index

    clip = {"score": 0.33, "lse": 1.37, "nouns": [{"noun": "dog", "best_cosine": 0.5, "idf": 2.0}], "notes": []}
    authors = RovistVGScores(0.5, 1.1, (), (), model="rovist-vg:r2p@abc", tagger="spacy/en")
    lines = [
        {"format": 1, "story_id": "old", "system": "m", "sentences": ["A dog ran."], "metrics": {"rovist_vg": clip}},
        {
            "format": 1,
            "story_id": "extra",
            "system": "m",
            "sentences": ["A dog."],
            "metrics": {"rovist_vg": {**clip, "later": 1}},
        },
        StoryScores("new", "new", "m", ("A dog ran.",), metrics={"rovist_vg": authors}).to_json(),
    ]
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    index = build_index([path])
    table = index.table.set_index("story")
    assert table.loc["old", "RoViST-VG (CLIP)"] == 0.33 and math.isnan(table.loc["old", "RoViST-VG"])
    assert table.loc["extra", "RoViST-VG (CLIP)"] == 0.33
    assert table.loc["new", "RoViST-VG"] == 0.5 and math.isnan(table.loc["new", "RoViST-VG (CLIP)"])
    rows = list(range(len(index.table)))
    by_story = dict(zip(index.table["story"], rows, strict=True))
    clip_records = index.metric_records(rows, "rovist_vg_clip")
    assert set(clip_records) == {by_story["old"], by_story["extra"]}
    assert all(isinstance(r, RovistVGClipScores) for r in clip_records.values())
    assert index.metric_records(rows, "rovist_vg") == {by_story["new"]: authors}
    for row in rows:
        record, _ = index.record(row)
        assert record is not None and ("rovist_vg_clip" in record.metrics) == (record.story_id != "new")


def test_a_model_record_round_trips() -> None:
    from vst_core.metrics.rovist_vg.record import NounRegion

    vg = RovistVGScores(
        0.5,
        1.1,
        (NounRegion("dog", 0, 0.2, 1.5, 1, (1.0, 2.0, 30.0, 40.0), None, False),),
        (),
        model="rovist-vg:r2p@abc",
        tagger="spacy/en",
    )
    record = StoryScores("s", "s", "sys", ("A dog ran.",), metrics={"rovist_vg": vg})
    back, _ = read_record(json.loads(json.dumps(record.to_json())))
    assert back is not None and back.metrics.get("rovist_vg") == vg and back.metrics.get("rovist_vg_clip") is None


# --------------------------------------------------------------------------- the replicas


def write_regions(path: Path) -> None:
    """A regions CSV for the sample images: twelve boxes per image, in float pixels, file order."""
    from PIL import Image

    rng = np.random.default_rng(11)
    lines = ["image_name,image_id,bbox,object,score"]
    for image in sorted((SAMPLE.parent / "images").glob("*.jpg")):
        width, height = Image.open(image).size
        for k in range(REGIONS_PER_IMAGE):
            x1, y1 = rng.uniform(0, width * 0.6), rng.uniform(0, height * 0.6)
            x2, y2 = rng.uniform(x1 + 16, width), rng.uniform(y1 + 16, height)
            box = f"[{x1:.4f}, {y1:.4f}, {x2:.4f}, {y2:.4f}]"
            lines.append(f'images/{image.name},{image.stem},"{box}",thing,{1 - k / 20:.2f}')
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def vg_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The ViT in its hub cache layout, the authors' checkpoint, GloVe and a regions CSV."""
    from real_layout import build_glove, build_rovist_vg, build_vit_hub

    root = tmp_path_factory.mktemp("rovist-vg")
    build_vit_hub(root / "hf")
    build_rovist_vg(root / "r2p_model_epoch2.pth.tar")
    build_glove(root / "glove.6B.300d.txt")
    write_regions(root / "regions.csv")
    return {
        "root": root,
        "hf": root / "hf",
        "checkpoint": root / "r2p_model_epoch2.pth.tar",
        "glove": root / "glove.6B.300d.txt",
        "regions": root / "regions.csv",
    }


def hub_env(files: dict[str, Path]) -> dict[str, str]:
    return {
        "HF_HOME": str(files["hf"]),
        "HF_HUB_CACHE": str(files["hf"] / "hub"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VST_CACHE_DIR": str(files["root"] / "vst-cache"),
    }


def run_vst(files: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **hub_env(files)}
    return subprocess.run(
        [sys.executable, "-m", "vst_core", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def score_sample(files: dict[str, Path], out: Path, metrics: str) -> None:
    """``vst score`` of the bundled sample with the replica checkpoint, GloVe and regions."""
    done = run_vst(
        files, "score", str(SAMPLE), "--out", str(out), "--metrics", metrics, "--rovist-vg-model", str(files["checkpoint"]),
        "--glove", str(files["glove"]), "--regions", str(files["regions"]), "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- the transcription


def vit_feature_extractor(config: dict[str, Any]) -> Any:
    """``ViTFeatureExtractor.__call__`` of transformers 4.x as the authors ran it, transcribed: each
    image resized by Pillow to ``size`` with the configured filter, ``to_numpy_array`` (uint8 -> float32
    / 255, channels first), then ``(x - mean) / std`` per channel."""
    import torch
    from PIL import Image

    size = config["size"]
    mean = np.array(config["image_mean"], dtype=np.float32)[:, None, None]
    std = np.array(config["image_std"], dtype=np.float32)[:, None, None]

    def extract(images: list[Image.Image]) -> torch.Tensor:
        arrays = []
        for image in images:
            resized = image.resize((size, size), resample=config["resample"])
            array = np.array(resized).astype(np.float32) / 255.0
            arrays.append((array.transpose(2, 0, 1) - mean) / std)
        return torch.from_numpy(np.stack(arrays))

    return extract


def transcribed(files: dict[str, Path], idf_file: Path | None = None) -> dict[str, dict[str, Any]]:
    """``visual_grounding_scorer.py`` (with ``extract_nouns.py`` and ``rovist_vg.py``'s encoders)
    transcribed: per story id, S as ``vg_score`` returns it, Eq. 3 of S, and each noun's recall;
    with ``idf_file`` (a pickled dict, their ``idf_dict.pkl``) its weights, else idf fitted over the
    sample as their table would be over their stories.

    Where it cannot run their code as is: GloVe is read as ``KeyedVectors`` holds it (a dict of
    float32 vectors) without gensim; the crops are cut in memory by Pillow from the regions CSV
    (theirs are JPEG files cut beforehand); the sentence split and the POS tagger are the product's
    (NLTK's Punkt, NLTK's perceptron model when installed, else spaCy's tags), since the tagger data
    cannot be downloaded here; the ViT's 4.x key names are mapped by hand to transformers 5's."""
    import torch
    import torch.nn.functional as F
    from PIL import Image
    from real_layout import _VIT_OLD_NAMES
    from transformers import ViTConfig, ViTModel

    from vst_core.text.nouns import _tag
    from vst_core.text.public import punkt_sentences, word_tokens

    snapshot = next((files["hf"] / "hub" / "models--google--vit-base-patch16-224-in21k" / "snapshots").iterdir())

    # init_glove_model: KeyedVectors.load_word2vec_format(...)
    word_emb_model: dict[str, np.ndarray] = {}
    for line in files["glove"].read_text(encoding="utf-8").splitlines():
        parts = line.rstrip().split(" ")
        word_emb_model.setdefault(parts[0], np.array([np.float32(x) for x in parts[1:]], dtype=np.float32))

    # Region2PhraseModel(1024, "vision transformer", static, Tanh) + load_state_dict(checkpoint["model"])
    checkpoint = torch.load(files["checkpoint"], map_location="cpu", weights_only=True)
    state = checkpoint["model"]
    feature_extractor = vit_feature_extractor(json.loads((snapshot / "preprocessor_config.json").read_text()))
    image_model = ViTModel(ViTConfig.from_pretrained(snapshot))
    vit_state = {}
    for key, value in state.items():
        if key.startswith("image_encoder.image_model."):
            key = key[len("image_encoder.image_model.") :]
            for new, old in _VIT_OLD_NAMES:
                key = key.replace(old, new)
            vit_state[key] = value
    image_model.load_state_dict(vit_state, strict=True)
    image_model.eval()
    image_linear = torch.nn.Linear(state["image_encoder.linear.weight"].shape[1], 1024)
    image_linear.load_state_dict({"weight": state["image_encoder.linear.weight"], "bias": state["image_encoder.linear.bias"]})
    text_linear = torch.nn.Linear(300, 1024)
    text_linear.load_state_dict({"weight": state["text_encoder.linear.weight"], "bias": state["text_encoder.linear.bias"]})

    def image_encoder(images: list[Image.Image]) -> torch.Tensor:
        img_inputs = feature_extractor(images)
        vit_feats = image_model(img_inputs)[1]
        return torch.tanh(image_linear(vit_feats))

    def text_encoder(phrase_embeddings: torch.Tensor) -> torch.Tensor:
        return torch.tanh(text_linear(phrase_embeddings))

    # extract_nouns
    stories = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    output_nouns: dict[str, list[str]] = {}
    for story in stories:
        nouns_in_story: list[str] = []
        for sent in punkt_sentences(" ".join(s.strip() for s in story["sentences"] if s.strip())):
            nouns_in_image: dict[str, None] = {}
            for placeholder in ("male", "female", "location", "organization"):
                sent = sent.replace(f"[{placeholder}]", placeholder)
            tokens = word_tokens(sent)
            for token, tag in zip(tokens, _tag([tokens], None)[0], strict=True):
                if token == "i":
                    continue
                if tag in {"NN", "NNS", "NNP", "NNPS"}:
                    nouns_in_image[token] = None
            nouns_in_story += list(nouns_in_image)
        output_nouns[story["story_id"]] = nouns_in_story

    # idf_dict: idf over the scored stories' noun lists, log(N / (1 + df))
    n = len(output_nouns)
    df: dict[str, int] = {}
    for nouns in output_nouns.values():
        for noun in set(nouns):
            df[noun] = df.get(noun, 0) + 1
    idf_dict = {noun: math.log(n / (1 + d)) for noun, d in df.items()}
    if idf_file is not None:  # pickle.load(open(opt.path_to_idf_dict + '/idf_dict.pkl', 'rb'))
        import pickle

        idf_dict = pickle.loads(idf_file.read_bytes())

    # vist_entities_df: the boxes of each image, file order
    import csv

    with files["regions"].open() as fh:
        boxes: dict[str, list[list[float]]] = {}
        for row in csv.DictReader(fh):
            boxes.setdefault(row["image_name"], []).append(json.loads(row["bbox"]))

    out: dict[str, dict[str, Any]] = {}
    for story in stories:
        nouns = output_nouns[story["story_id"]]
        weights = torch.tensor([idf_dict[x] for x in nouns])
        # get_text_embs
        embs_list = [torch.tensor(word_emb_model.get(word, word_emb_model["unk"])) for word in nouns]
        with torch.no_grad():
            text_embs = F.normalize(text_encoder(torch.stack(embs_list)), p=2, dim=-1)
        # compute_sim
        final_sims = torch.zeros((len(story["images"]), text_embs.shape[0]))
        for i, image_id in enumerate(story["images"]):
            picture = Image.open(SAMPLE.parent / image_id).convert("RGB")
            img_list = [picture.crop(tuple(b)) for b in boxes[image_id]]
            with torch.no_grad():
                img_embs = image_encoder(img_list)[:10]
            img_embs = F.normalize(img_embs, p=2, dim=-1)
            sim_matrix = text_embs @ img_embs.T
            final_sims[i] = torch.max(sim_matrix, dim=1)[0]
        recall = torch.max(final_sims, dim=0)[0]
        # vg_score, aggregate="log_sum_exp"
        x = recall * weights
        score = torch.log(torch.exp(x).sum()).item()
        out[story["story_id"]] = {
            "S": score,
            "eq3": 2 / (1 + math.exp(-score / 2)) - 1,
            "nouns": nouns,
            "recall": [float(r) for r in recall],
        }
    return out


# --------------------------------------------------------------------------- slow: the model


@pytest.mark.slow  # loads torch and transformers, and runs the CLI
@pytest.mark.parity
def test_cli_scores_every_sample_story_as_the_authors_code(vg_files: dict[str, Path], tmp_path: Path, parity: ParityLog) -> None:
    out = tmp_path / "scores.jsonl"
    score_sample(vg_files, out, "rovist_vg")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    reference = transcribed(vg_files)
    assert len(records) == len(reference) == 8
    worst = 0.0
    for record in records:
        assert not record["errors"], record["errors"]
        vg = record["metrics"]["rovist_vg"]
        want = reference[record["story_id"]]
        assert [n["noun"] for n in vg["nouns"]] == want["nouns"]
        for got, recall in zip(vg["nouns"], want["recall"], strict=True):
            assert got["best_cosine"] == pytest.approx(recall, abs=1e-6)
        assert vg["lse"] == pytest.approx(want["S"], abs=1e-6) and vg["score"] == pytest.approx(want["eq3"], abs=1e-6)
        assert -1 < vg["score"] < 1
        worst = max(worst, abs(vg["lse"] - want["S"]), abs(vg["score"] - want["eq3"]))
    unknown = {n["noun"] for r in records for n in r["metrics"]["rovist_vg"]["nouns"] if not n["known"]}
    assert "tripod" in unknown  # GloVe lacks it: unk's vector, as their except branch
    settings = records[0]["signature"]["settings"]
    assert settings["rovist_vg_weights"].startswith("rovist-vg:r2p_model_epoch2.pth.tar@")
    assert "|vit:google/vit-base-patch16-224-in21k@" in settings["rovist_vg_weights"]
    assert "|glove:glove.6B.300d.txt@" in settings["rovist_vg_weights"]
    assert settings["rovist_vg_tagger"] and "clip_weights" not in settings and "clip_arch" not in settings
    parity.record(
        metric="RoViST-VG (`--metrics rovist_vg`, the authors' model)",
        reference="usydnlp/rovist visual_grounding_scorer.py (compute_sim, vg_score, Eq. 3), transcribed",
        compared=(
            f"the 8 sample stories through `vst score`, random weights in the authors' checkpoint format, a 64-wide "
            f"ViT under its hub name, a random GloVe file, {REGIONS_PER_IMAGE} boxes per image (first 10 used)"
        ),
        figure=f"S and Eq. 3 of every story, every noun's best cosine, within 1e-6 (largest difference {worst:.1e})",
    )


def write_idf_dict(path: Path, *, leave_out: str | None = None) -> dict[str, float]:
    """An ``idf_dict.pkl`` as the authors' release ships it: a pickled dict of every sample noun ->
    idf (numpy float64 and Python floats mixed, as numpy's log and ``math.log`` give them)."""
    import pickle

    from vst_core.text.nouns import nouns_many

    stories = [json.loads(line)["sentences"] for line in SAMPLE.read_text().splitlines()]
    nouns = sorted({n.text for found in nouns_many(stories) for n in found} - {leave_out})
    rng = np.random.default_rng(5)
    table: dict[str, float] = {
        noun: (np.float64(v) if k % 2 else float(v)) for k, (noun, v) in enumerate(zip(nouns, rng.uniform(0.5, 9.0, len(nouns))))
    }
    path.write_bytes(pickle.dumps(table))
    return table


@pytest.mark.slow  # loads torch and transformers, and runs the CLI
@pytest.mark.parity
def test_with_the_released_idf_dict_every_story_equals_the_authors_scorer(
    vg_files: dict[str, Path], tmp_path: Path, parity: ParityLog
) -> None:
    idf_file = tmp_path / "idf_dict.pkl"
    table = write_idf_dict(idf_file)
    out = tmp_path / "scores.jsonl"
    done = run_vst(
        vg_files, "score", str(SAMPLE), "--out", str(out), "--metrics", "rovist_vg", "--rovist-vg-model",
        str(vg_files["checkpoint"]), "--glove", str(vg_files["glove"]), "--regions", str(vg_files["regions"]),
        "--rovist-vg-idf", str(idf_file), "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    reference = transcribed(vg_files, idf_file)
    fitted = transcribed(vg_files)
    worst, moved = 0.0, 0
    for record in records:
        vg = record["metrics"]["rovist_vg"]
        want = reference[record["story_id"]]
        assert [n["idf"] for n in vg["nouns"]] == [pytest.approx(float(table[n]), abs=1e-12) for n in want["nouns"]]
        assert vg["lse"] == pytest.approx(want["S"], abs=1e-6) and vg["score"] == pytest.approx(want["eq3"], abs=1e-6)
        worst = max(worst, abs(vg["lse"] - want["S"]))
        moved += abs(fitted[record["story_id"]]["S"] - want["S"]) > 1e-3
        assert not any("not in idf_dict.pkl" in note for note in vg["notes"])
    assert moved >= 6  # the released table gives other numbers than a fitted one: the test can tell them apart
    weights = records[0]["signature"]["settings"]["rovist_vg_weights"]
    assert weights.endswith(f"|idf:idf_dict.pkl@{weights_digest(idf_file)}")
    from vst_core.metrics.rovist_vg.html import rovist_vg_html
    from vst_core.records import read_record

    card = rovist_vg_html(read_record(records[0])[0].metrics["rovist_vg"])  # type: ignore[union-attr,arg-type]
    assert "idf from idf_dict.pkl@" in card
    parity.record(
        metric="RoViST-VG with the authors' idf table (`--rovist-vg-idf idf_dict.pkl`)",
        reference="usydnlp/rovist visual_grounding_scorer.py with --use_idf 1 and ViTFeatureExtractor's Pillow preprocessing, transcribed",
        compared="the 8 sample stories, a pickled noun -> idf dict in the released format, the replica model",
        figure=f"S and Eq. 3 of every story within 1e-6 (largest difference {worst:.1e}); {moved}/8 stories differ from fitted idf",
    )


@pytest.mark.slow  # runs the CLI
def test_an_idf_pickle_that_would_run_code_is_refused_unread(vg_files: dict[str, Path], tmp_path: Path) -> None:
    import pickle

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[Any, tuple[str, str]]:
            return (open, (str(marker), "w"))

    bad = tmp_path / "idf_dict.pkl"
    bad.write_bytes(pickle.dumps({"dog": 1.0, "cat": Payload()}))
    done = run_vst(
        vg_files, "score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "rovist_vg", "--rovist-vg-model",
        str(vg_files["checkpoint"]), "--glove", str(vg_files["glove"]), "--rovist-vg-idf", str(bad), "--no-progress",
    )  # fmt: skip
    assert done.returncode == 4 and "idf_dict.pkl was not loaded" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()


@pytest.mark.slow  # loads torch and transformers
def test_a_noun_the_table_lacks_takes_its_largest_idf_and_says_so(
    vg_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import point_at

    from vst_core.api import score_stories
    from vst_core.config import Settings
    from vst_core.data import read_story_set

    idf_file = tmp_path / "idf_dict.pkl"
    table = write_idf_dict(idf_file, leave_out="dog")
    settings = Settings(
        metrics=("rovist_vg",), rovist_vg_checkpoint=str(vg_files["checkpoint"]), glove_file=str(vg_files["glove"]),
        rovist_vg_idf=str(idf_file), regions="csv", regions_file=str(vg_files["regions"]), device="cpu",
    )  # fmt: skip
    point_at(monkeypatch, hub_env(vg_files))
    records = score_stories(read_story_set(SAMPLE), settings=settings)
    with_dog = [
        r
        for r in records
        if r.metrics.get("rovist_vg") is not None and any(n.noun == "dog" for n in r.metrics["rovist_vg"].nouns)
    ]
    assert with_dog
    for record in with_dog:
        vg = record.metrics.get("rovist_vg")
        assert vg is not None
        assert next(n.idf for n in vg.nouns if n.noun == "dog") == pytest.approx(max(table.values()))
        assert any("not in idf_dict.pkl (dog" in note for note in vg.notes)


@pytest.mark.slow  # loads torch
def test_a_checkpoint_with_other_objects_is_refused_unread(vg_files: dict[str, Path], tmp_path: Path) -> None:
    import argparse

    import torch

    from vst_core.metrics.rovist_vg.region2phrase import read_vg_checkpoint
    from vst_core.models.hub import ModelLoadError

    bad = tmp_path / "bad.pth.tar"
    torch.save({"model": {}, "opt": argparse.Namespace(lr=1.0)}, bad)
    with pytest.raises(ModelLoadError, match="not loaded, since unpickling"):
        read_vg_checkpoint(bad)
    other = tmp_path / "other.pth.tar"
    torch.save({"model": {"linear.weight": torch.zeros(2, 2)}}, other)
    with pytest.raises(ModelLoadError, match="not a RoViST-VG checkpoint"):
        read_vg_checkpoint(other)


@pytest.mark.slow  # runs the CLI
def test_missing_files_exit_4_naming_what_to_download(vg_files: dict[str, Path], tmp_path: Path) -> None:
    args = ["score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "rovist_vg", "--no-progress"]
    done = run_vst(vg_files, *args)
    assert done.returncode == 4 and "RoViST_VG_Demo" in done.stderr and "--rovist-vg-model" in done.stderr
    done = run_vst(vg_files, *args, "--rovist-vg-model", str(vg_files["checkpoint"]), "--glove", str(tmp_path / "no.txt"))
    assert done.returncode == 4 and "GloVe file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow  # spaCy's tagger when NLTK's model is not installed
def test_nouns_follow_the_authors_rules() -> None:
    from vst_core.text.nouns import story_nouns

    found = story_nouns(["[female] took the dog to the park .", "the dog and the dog slept , i think ."])
    assert [(n.text, n.sentence) for n in found] == [("female", 0), ("dog", 0), ("park", 0), ("dog", 1)]


@pytest.fixture
def vg_scores_file(vg_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vg-scores") / "scores.jsonl"
    score_sample(vg_files, out, "redundancy,rovist_vg")
    return out


@pytest.fixture
def data_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))
    yield


@pytest.mark.slow  # AppTest
def test_inspect_page_shows_each_nouns_region(vg_scores_file: Path, data_dirs: None) -> None:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["inspect"])
    app.session_state["source"] = "Scores JSONL (no model needed)"
    app.session_state["scores_path"] = str(vg_scores_file)
    app.session_state["scores_images"] = str(ROOT / "assets/sample")
    app.run()
    assert not app.exception, app.exception
    html = "".join(m.value for m in app.markdown)
    first = json.loads(vg_scores_file.read_text().splitlines()[0])["metrics"]["rovist_vg"]["nouns"][0]
    assert "RoViST-VG" in html and f"{first['noun']} → image {first['image'] + 1} [" in html
    assert f"cos {first['best_cosine']:.3f} · idf {first['idf']:.2f}" in html
    # the evidence table in the card's expander, and a picked noun's region drawn on its image
    assert 'class="vst-rovist-vg"' in html
    picker = next(s for s in app.selectbox if s.label == "Show the region a noun matched")
    images_before = len(app.get("image"))
    picker.set_value(picker.options[0]).run()
    assert not app.exception, app.exception
    assert len(app.get("image")) == images_before + 1  # the noun's region drawn on its image


@pytest.mark.slow  # AppTest, the ViT replica
def test_the_dashboard_scores_rovist_vg_from_the_sidebars_files(
    vg_files: dict[str, Path],
    vg_scores_file: Path,
    data_dirs: None,
    monkeypatch: pytest.MonkeyPatch,
    tiny_clip: tuple[Path, Path],
) -> None:
    """The bundled sample scored in the dashboard with the authors' checkpoint and GloVe typed into
    the sidebar (beside GROOVIST with a tiny CLIP): RoViST-VG's numbers equal the CLI's."""
    from conftest import point_at
    from streamlit.testing.v1 import AppTest

    point_at(monkeypatch, hub_env(vg_files))
    app = AppTest.from_file(APP, default_timeout=300).switch_page(PAGES["dataset"])
    app.session_state["rovist_vg_checkpoint"] = str(vg_files["checkpoint"])
    app.session_state["glove_file"] = str(vg_files["glove"])
    app.session_state["regions"] = str(vg_files["regions"])
    config, checkpoint = tiny_clip
    app.session_state["clip_arch"] = "vst-tiny-clip"
    app.session_state["clip_config"] = str(config)
    app.session_state["clip_checkpoint"] = str(checkpoint)
    app.run()
    assert not app.exception, app.exception
    notices = " ".join(str(w.value) for w in app.warning)
    assert "Grounding is off" not in notices and "RoViST-VG is off" not in notices
    frame = app.dataframe[0].value
    want = {r["story_id"]: r["metrics"]["rovist_vg"]["score"] for r in map(json.loads, vg_scores_file.read_text().splitlines())}
    got = dict(zip(frame["story"], frame["RoViST-VG"], strict=True))
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-9 for k in want), (got, want)

    # a wrong checkpoint: one notice naming the sidebar field, the page keeps working
    app.session_state["rovist_vg_checkpoint"] = str(vg_files["glove"])
    app.run()
    assert not app.exception, app.exception
    assert "RoViST-VG is off" in " ".join(str(w.value) for w in app.warning)
