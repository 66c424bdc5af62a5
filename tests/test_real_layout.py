"""The default models, loaded by their real names from random-weight replicas in the real cache
layouts (see ``real_layout.py``): CLI, dashboard pages, fetch-models, signatures, bad files.

Run alone with ``python -m pytest -m real_layout``; skip with ``-m "not real_layout"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, SAMPLE, point_at
from PIL import Image
from real_layout import ALBERT_REPO, BERT_REPO, CLIP_REPO, RealLayout, put_hub_repo

pytestmark = [pytest.mark.real_layout, pytest.mark.slow]

ALL_METRICS = "grounding,clipscore,rovist_vg_clip,coherence,redundancy"


@pytest.fixture
def real_env(layout: RealLayout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[RealLayout]:
    """This process sees only the replicas (and a private embedding cache)."""
    point_at(monkeypatch, layout.env())
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "vst-cache"))
    yield layout


def run_vst(
    layout: RealLayout, *args: str, cwd: Path = ROOT, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **layout.env(), "VST_CACHE_DIR": str(layout.root / "vst-cache"), **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "vst_core", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------ CLIP


def test_clip_default_loads_from_the_hub_cache_with_quickgelu(real_env: RealLayout) -> None:
    from open_clip.transformer import QuickGELU

    from vst_core.models.clip import load_clip, resolve_clip_weights

    weights = resolve_clip_weights()
    assert weights.path is not None and CLIP_REPO.replace("/", "--") in str(weights.path)
    assert weights.path.name == "open_clip_model.safetensors" and weights.path.is_symlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # open_clip's "QuickGELU mismatch" would fail here
        encoder = load_clip(device="cpu")
    assert isinstance(encoder.model.visual.transformer.resblocks[0].mlp.gelu, QuickGELU)
    assert encoder.signature.startswith("ViT-B-32/openai/quickgelu/sha:")
    normalize = encoder.preprocess.transforms[-1]
    assert np.allclose(normalize.mean, (0.48145466, 0.4578275, 0.40821073))
    emb = encoder.encode_images([Image.open(ROOT / "assets/sample/images/home_2_chelsea.jpg")])
    assert emb.shape == (1, 512) and np.isclose(np.linalg.norm(emb), 1.0, atol=1e-5)


def test_openai_torchscript_file_is_the_same_model(real_env: RealLayout) -> None:
    """OpenAI's clip.load file (fp16 TorchScript of the same random weights) gives the hub model's
    embeddings: same architecture, same activation, same preprocessing."""
    from vst_core.models.clip import load_clip, resolve_clip_weights

    path = real_env.xdg_cache / "clip" / "ViT-B-32.pt"
    assert resolve_clip_weights(checkpoint=path).kind == "openai"
    hub = load_clip(device="cpu")
    jit = load_clip(checkpoint=path, device="cpu")
    assert jit.signature.startswith("openai-clip/file/quickgelu/sha:") and jit.signature != hub.signature
    images = [Image.open(ROOT / "assets/sample/images" / n) for n in ("home_2_chelsea.jpg", "space_1_rocket.jpg")]
    texts = ["a cat on a sofa", "a rocket on the launch pad"]
    assert np.abs(hub.encode_images(images) - jit.encode_images(images)).max() < 5e-3
    assert np.abs(hub.encode_text(texts) - jit.encode_text(texts)).max() < 5e-3


def test_the_openai_tag_finds_the_clip_load_file_when_the_hub_cache_is_empty(
    real_env: RealLayout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from huggingface_hub import constants

    from vst_core.models.clip import resolve_clip_weights

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    weights = resolve_clip_weights()
    assert weights.kind == "openai" and weights.quick_gelu
    assert weights.path == real_env.xdg_cache / "clip" / "ViT-B-32.pt"  # honours XDG_CACHE_HOME


def test_an_openai_state_dict_loads_with_quickgelu(real_env: RealLayout, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from vst_core.models.clip import load_clip

    blob = next((real_env.hf_home / "hub").glob("models--timm--*/snapshots/*/open_clip_model.safetensors"))
    state = dict(load_file(str(blob)))
    state.update(input_resolution=torch.tensor(224), context_length=torch.tensor(77), vocab_size=torch.tensor(49408))
    torch.save(state, tmp_path / "ViT-B-32-state.pt")
    loaded = load_clip(checkpoint=tmp_path / "ViT-B-32-state.pt", device="cpu")
    reference = load_clip(device="cpu")
    assert "/quickgelu/" in loaded.signature
    texts = ["a dog on the beach"]
    assert np.allclose(loaded.encode_text(texts), reference.encode_text(texts), atol=1e-5)


def test_first_run_after_a_download_equals_later_runs(
    real_env: RealLayout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Empty cache + reachable hub: the run downloads, then loads the file exactly as later runs do."""
    import open_clip.pretrained
    from huggingface_hub import constants

    import vst_core.models.clip_build as clip_module
    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    settings = Settings(metrics=("grounding", "clipscore"), device="cpu")
    story_set = read_story_set(SAMPLE)
    later = score_story_set(
        story_set, settings, tmp_path / "later.jsonl", models=Models(settings, cache_dir=tmp_path / "c1"), progress=None
    )

    snapshot = next((real_env.hf_home / "hub").glob("models--timm--*/snapshots/*"))
    files = {p.name: p.read_bytes() for p in snapshot.iterdir()}
    empty = tmp_path / "fresh-hf"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(empty / "hub"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(empty))  # no OpenAI file either
    from vst_core.signature import weights_missing

    assert weights_missing(settings)
    downloads: list[str] = []

    def fake_download(cfg: dict, **_: object) -> str:
        downloads.append(cfg["hf_hub"])
        return str(put_hub_repo(empty, CLIP_REPO, files) / "open_clip_model.safetensors")

    monkeypatch.setattr(open_clip.pretrained, "download_pretrained", fake_download)
    monkeypatch.setattr(clip_module, "hub_reachable", lambda: True)
    first = score_story_set(
        story_set, settings, tmp_path / "first.jsonl", models=Models(settings, cache_dir=tmp_path / "c2"), progress=None
    )
    assert downloads == [f"{CLIP_REPO}/"]
    assert first.signature_id == later.signature_id
    a, b = read_records(tmp_path / "first.jsonl"), read_records(tmp_path / "later.jsonl")
    for x, y in zip(a, b):
        assert x["metrics"]["grounding"]["score"] == y["metrics"]["grounding"]["score"]
        assert x["metrics"]["clipscore"]["score"] == y["metrics"]["clipscore"]["score"]


def test_other_weights_or_activation_change_the_signature_and_the_cache_key(real_env: RealLayout) -> None:
    from vst_core.config import Settings
    from vst_core.models.clip import load_clip
    from vst_core.signature import signature

    tag = signature(Settings(metrics=("grounding",)))
    jit = signature(Settings(metrics=("grounding",), clip_checkpoint=str(real_env.xdg_cache / "clip" / "ViT-B-32.pt")))
    assert tag["id"] != jit["id"] and tag["settings"]["clip_weights"] != jit["settings"]["clip_weights"]
    blob = str(next((real_env.hf_home / "hub").glob("models--timm--*/snapshots/*/open_clip_model.safetensors")))
    # the snapshot's open_clip_config.json says QuickGELU; GELU only when asked for by name
    said = signature(Settings(metrics=("grounding",), clip_checkpoint=blob))
    gelu = signature(Settings(metrics=("grounding",), clip_checkpoint=blob, clip_activation="gelu"))
    quick = signature(Settings(metrics=("grounding",), clip_model="ViT-B-32-quickgelu", clip_checkpoint=blob))
    assert "/gelu/" in gelu["settings"]["clip_weights"] and "/quickgelu/" in quick["settings"]["clip_weights"]
    assert "/quickgelu/" in said["settings"]["clip_weights"]
    assert gelu["id"] != quick["id"]
    # the embedding cache is keyed by the encoder's signature: the two activations never share vectors
    assert (
        load_clip("ViT-B-32", checkpoint=blob, device="cpu", activation="gelu").signature
        != load_clip("ViT-B-32-quickgelu", checkpoint=blob, device="cpu").signature
    )


# ------------------------------------------------------------------------ sentence pairs


def test_bert_nsp_by_its_real_name(real_env: RealLayout) -> None:
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer, pair_weights_id

    scorer = load_pair_scorer("bert-nsp", device="cpu")
    a, b = "we went to the beach .", "the waves were huge ."
    enc = scorer.encode([(a, b)])
    len_a, len_b = len(scorer.tokenizer.tokenize(a)), len(scorer.tokenizer.tokenize(b))
    assert enc["input_ids"][0, 0].item() == 101 and enc["token_type_ids"][0].tolist() == [0] * (len_a + 2) + [1] * (len_b + 1)
    probs = scorer.score_pairs([("we went to the beach .", "the waves were huge ."), ("a dog ran .", "we ate cake .")])
    assert ((probs > 0) & (probs < 1)).all()
    assert pair_weights_id("bert-nsp").startswith(f"bert-nsp:{BERT_REPO}@") and "not-downloaded" not in pair_weights_id(
        "bert-nsp"
    )


def test_rovist_c_checkpoint_as_the_authors_save_it(real_env: RealLayout) -> None:
    """numpy 1.x scalars and an argparse.Namespace beside the weights; segment ids as the authors'
    scorer builds them: (len(A)+2) zeros for [CLS] A [SEP], (len(B)+1) ones for B [SEP]."""
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer

    path = real_env.rovist_c
    assert "numpy.core.multiarray.scalar" in torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    scorer = load_pair_scorer(f"rovist-c:{path}", device="cpu")
    a, b = "We went to the beach early in the morning.", "The waves were huge when we arrived."
    enc = scorer.encode([(a, b)])
    tok = scorer.tokenizer
    len_a, len_b = len(tok.tokenize(a)), len(tok.tokenize(b))
    assert enc["token_type_ids"][0].tolist() == (len_a + 2) * [0] + (len_b + 1) * [1]
    # the authors' recipe: tokenize "[CLS] A [SEP] B [SEP]" as one text, their segment and attention ids
    ids = tok.convert_tokens_to_ids(tok.tokenize(" ".join(["[CLS]", a, "[SEP]", b, "[SEP]"])))
    assert enc["input_ids"][0].tolist() == ids
    with torch.no_grad():
        logits = scorer.model(
            torch.tensor([ids]),
            torch.ones(1, len(ids), dtype=torch.long),
            torch.tensor([(len_a + 2) * [0] + (len_b + 1) * [1]]),
        )
    expected = torch.softmax(logits, dim=1)[0, 1].item()
    assert scorer.score_pairs([(a, b)])[0] == pytest.approx(expected, abs=1e-6)
    segment_zero = scorer.model(enc["input_ids"], enc["attention_mask"], torch.zeros_like(enc["token_type_ids"]))
    assert torch.softmax(segment_zero, dim=1)[0, 1].item() != pytest.approx(expected, abs=1e-6)


def test_a_checkpoint_with_other_objects_is_refused_unread(real_env: RealLayout, tmp_path: Path) -> None:
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer
    from vst_core.models.hub import ModelLoadError

    checkpoint = torch.load(real_env.rovist_c, weights_only=False)
    checkpoint["opt"] = Path("/etc")  # a class the RoViST-C file never holds
    torch.save(checkpoint, tmp_path / "odd.pth.tar")
    with pytest.raises(ModelLoadError, match="holds objects a RoViST-C checkpoint does not"):
        load_pair_scorer(f"rovist-c:{tmp_path / 'odd.pth.tar'}", device="cpu")


# ------------------------------------------------------------------------ detector


def test_detector_from_the_torch_hub_folder_in_fixed_batches(real_env: RealLayout) -> None:
    from vst_core.models.detector import Detector

    detector = Detector("cpu", batch_size=2)
    assert detector.path.parent == real_env.torch_home / "hub" / "checkpoints"
    sizes: list[int] = []
    model = detector.model

    def forward(images: list[torch.Tensor]) -> object:
        sizes.append(len(images))
        return model(images)

    detector.model = forward  # type: ignore[assignment]
    boxes = detector.boxes([Image.new("RGB", (64, 48), c) for c in ("red", "green", "blue")], top_b=10)
    assert sizes == [2, 1] and len(boxes) == 3 and all(len(b) <= 10 for b in boxes)


# ------------------------------------------------------------------------ CLI


def test_score_every_metric_by_real_names(layout: RealLayout, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    done = run_vst(layout, "score", str(SAMPLE), "--out", str(out), "--metrics", ALL_METRICS, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "QuickGELU mismatch" not in done.stderr
    records = read_records(out)
    assert len(records) == 8
    for record in records:
        assert not record.get("errors") and not record.get("error"), record
        for metric in ALL_METRICS.split(","):
            assert isinstance(record["metrics"][metric]["score"], float), (record["story_id"], metric)
    settings = records[0]["signature"]["settings"]
    assert settings["clip_weights"].startswith("ViT-B-32/openai/quickgelu/sha:")
    assert settings["coherence_weights"].startswith("bert-nsp:bert-base-uncased@")
    # a rerun into a fresh file gives the same numbers under the same signature
    again = tmp_path / "again.jsonl"
    assert run_vst(layout, "score", str(SAMPLE), "--out", str(again), "--metrics", ALL_METRICS, "--no-progress").returncode == 0
    assert [r["metrics"] for r in read_records(again)] == [r["metrics"] for r in records]
    assert {r["signature"]["id"] for r in read_records(again)} == {records[0]["signature"]["id"]}


def test_score_with_the_authors_rovist_c_checkpoint(layout: RealLayout, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    done = run_vst(
        layout,
        "score",
        str(SAMPLE),
        "--out",
        str(out),
        "--metrics",
        "coherence,redundancy",
        "--coherence-model",
        f"rovist-c:{layout.rovist_c}",
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    records = read_records(out)
    assert all(0 < r["metrics"]["coherence"]["score"] < 1 for r in records)
    assert records[0]["signature"]["settings"]["coherence_weights"].startswith("rovist-c:sop_model_epoch3.pth.tar@")


@pytest.mark.parametrize(
    "flag, content, expected",
    [
        ("--clip-checkpoint", b"root:x:0:0:root:/root:/bin/bash\n", "is not a model checkpoint"),
        ("--clip-checkpoint", b"PK\x03\x04truncated", "cannot be read as a checkpoint"),
        ("--clip-checkpoint", (64).to_bytes(8, "little") + b'{"a": 1', "is not a model checkpoint"),
        ("--coherence-model", b"\x89PNG\r\n\x1a\n" + bytes(64), "is not a model checkpoint"),
        ("--coherence-model", "torchscript", "torchscript file, not a RoViST-C checkpoint"),
        ("--coherence-model", "state-dict", "not a RoViST-C checkpoint: missing"),
    ],
)
def test_a_wrong_file_is_a_clear_message_and_exit_4(
    layout: RealLayout, tmp_path: Path, flag: str, content: bytes | str, expected: str
) -> None:
    if content == "torchscript":
        path = layout.xdg_cache / "clip" / "ViT-B-32.pt"
    elif content == "state-dict":
        path = tmp_path / "weights.pt"
        torch.save({"model": {"w": torch.zeros(2)}, "opt": None}, path)
    else:
        assert isinstance(content, bytes)
        path = tmp_path / "weights.pt"
        path.write_bytes(content)
    metric = "grounding" if flag == "--clip-checkpoint" else "coherence"
    value = str(path) if flag == "--clip-checkpoint" else f"rovist-c:{path}"
    done = run_vst(
        layout, "score", str(SAMPLE), "--out", str(tmp_path / "s.jsonl"), "--metrics", metric, flag, value, "--no-progress"
    )
    assert done.returncode == 4, done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr


def test_fetch_models_offline_reports_what_is_cached(layout: RealLayout, tmp_path: Path) -> None:
    done = run_vst(layout, "fetch-models", "--rovist-c", str(layout.rovist_c), "--detector")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr  # the summary on stdout, the progress on stderr
    lines = done.stdout.splitlines()
    for name in ("CLIP ViT-B-32/openai", "next-sentence model bert-base-uncased", "RoViST-C", "detector"):
        assert any(line.strip().startswith("cached") and name in line for line in lines), name
    assert str(layout.hf_home / "hub") in said and str(layout.torch_home / "hub" / "checkpoints") in said
    empty = tmp_path / "empty"
    missing = run_vst(
        layout,
        "fetch-models",
        extra_env={"HF_HOME": str(empty), "HF_HUB_CACHE": str(empty / "hub"), "XDG_CACHE_HOME": str(empty)},
    )
    assert missing.returncode == 4
    told = missing.stdout + missing.stderr
    assert "missing  CLIP ViT-B-32/openai" in told and "missing  next-sentence model" in told
    assert "Traceback" not in missing.stderr


# ------------------------------------------------------------------------ dashboard


def test_dashboard_pages_with_the_default_models(real_env: RealLayout) -> None:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    app.run()
    assert not app.exception, app.exception
    assert not [w.value for w in app.warning if "is off" in w.value]
    html = "".join(m.value for m in app.markdown)
    assert 'class="vst-np"' in html and 'class="vst-coh' in html
    footer = app.main.caption[-1].value.replace("\u2060", "")  # word joiners keep "sha:..." from rendering as an icon
    assert "ViT-B-32/openai/quickgelu/sha:" in footer and "bert-nsp:bert-base-uncased@" in footer

    dataset = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).switch_page("app_pages/dataset.py")
    dataset.run()
    assert not dataset.exception, dataset.exception
    df = dataset.dataframe[0].value
    assert len(df) == 8 and df["GROOVIST"].notna().all() and df["coherence"].notna().all()

    meta = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).switch_page("app_pages/agreement.py")
    meta.session_state["resamples"] = 50
    meta.run()
    assert not meta.exception, meta.exception
    assert "grounding" in list(meta.dataframe[0].value.columns)


def test_dashboard_with_a_broken_checkpoint_shows_one_notice(
    real_env: RealLayout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))  # the operator allowed this folder
    bad = tmp_path / "not-a-checkpoint.pt"
    bad.write_text("hello")
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    app.session_state["clip_checkpoint"] = str(bad)
    app.session_state["coherence_model"] = f"rovist-c:{bad}"
    app.run()
    assert not app.exception, app.exception
    shown = " ".join(w.value for w in app.main.warning)  # each notice by its first sentence
    details = " ".join(m.value for m in app.main.markdown)  # and in full under "Details"
    assert shown.count("Grounding is off") == 1 and shown.count("Coherence is off") == 1
    assert "not a model checkpoint" in details
    assert 'class="vst-card"' in "".join(m.value for m in app.markdown)  # NR still shown


def test_replica_layout_matches_the_hub_cache_format(layout: RealLayout) -> None:
    """The replicas are what huggingface_hub itself reads: scan_cache_dir sees each repo and revision."""
    from huggingface_hub import scan_cache_dir

    info = scan_cache_dir(layout.hf_home / "hub")
    repos = {r.repo_id: r for r in info.repos}
    assert {CLIP_REPO, BERT_REPO, ALBERT_REPO} <= set(repos)
    for repo in repos.values():
        assert {rev.refs for rev in repo.revisions} == {frozenset({"main"})}
    assert not info.warnings


# ------------------------------------------------------------------------ Vrank


def test_train_vrank_from_the_simcse_checkpoint_by_its_real_name(layout: RealLayout, tmp_path: Path) -> None:
    """The paper's base encoder found in the hub cache by name (no --base), trained for one epoch
    on a VHED-layout file, then used to score the sample; fetch-models reports it as cached."""
    from test_vrank import write_vhed

    data = write_vhed(tmp_path / "VHED.csv", sequences=8)
    out = tmp_path / "vrank"
    done = run_vst(layout, "train-vrank", str(data), "--out", str(out), "--epochs", "1", "--max-length", "64", "--no-progress")
    assert done.returncode == 0, done.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["base"] == "princeton-nlp/sup-simcse-bert-base-uncased"
    assert (
        card["base_weights"].startswith("princeton-nlp/sup-simcse-bert-base-uncased@")
        and "not-downloaded" not in card["base_weights"]
    )
    assert card["pooling"] == "cls" and card["recipe"]["learning_rate"] == 2e-5 and card["recipe"]["batch_size"] == 32
    scores = tmp_path / "scores.jsonl"
    done = run_vst(
        layout, "score", str(SAMPLE), "--metrics", "vrank", "--vrank-model", str(out), "--out", str(scores), "--no-progress"
    )
    assert done.returncode == 0, done.stderr
    assert all(r["metrics"]["vrank"]["score"] is not None for r in read_records(scores))
    fetched = run_vst(layout, "fetch-models", "--vrank-base")
    assert any(
        line.strip().startswith("cached") and "Vrank base encoder princeton-nlp/sup-simcse-bert-base-uncased" in line
        for line in fetched.stdout.splitlines()
    ), fetched.stderr
