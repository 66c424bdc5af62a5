"""Shared fixtures. Nothing here downloads anything: hubs are forced offline."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch
from PIL import Image

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# tests never write into the user's own embedding cache
os.environ["VST_CACHE_DIR"] = tempfile.mkdtemp(prefix="vst-test-cache-")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"
ARTIFACTS = ROOT / "tests" / "_artifacts"


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    """A folder with three small real images a.png, b.png, c.png."""
    for name, colour in (("a", "red"), ("b", "green"), ("c", "blue")):
        Image.new("RGB", (16, 12), colour).save(tmp_path / f"{name}.png")
    return tmp_path


WORDS = (
    "we went to the beach park then first finally later after that a dog cat ran sat saw big small red "
    "water waves sun home ate cake played ball were was it and on in of . , ! ?"
).split()


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertTokenizerFast

    folder = tmp_path_factory.mktemp("tok")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertConfig, BertForNextSentencePrediction, BertTokenizerFast

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("bert")
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=48,
    )
    BertForNextSentencePrediction(config).save_pretrained(folder)
    BertTokenizerFast.from_pretrained(tokenizer_dir).save_pretrained(folder)
    return folder


TINY_CLIP_CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(model-config JSON, checkpoint) of a tiny random open_clip model named vst-tiny-clip."""
    import open_clip

    folder = tmp_path_factory.mktemp("clip")
    config = folder / "vst-tiny-clip.json"
    config.write_text(json.dumps(TINY_CLIP_CONFIG))
    open_clip.add_model_config(str(config))
    torch.manual_seed(0)
    model = open_clip.create_model("vst-tiny-clip")
    checkpoint = folder / "tiny-clip.pt"
    torch.save(model.state_dict(), checkpoint)
    return config, checkpoint


def clip_args(tiny_clip: tuple[Path, Path]) -> list[str]:
    """The ``vst score`` options that select the tiny CLIP of :func:`tiny_clip`."""
    config, checkpoint = tiny_clip
    return ["--clip-model", "vst-tiny-clip", "--clip-checkpoint", str(checkpoint), "--clip-config", str(config)]


@pytest.fixture(scope="session")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Random-weight replicas of every default model in the real cache layouts (built once)."""
    from real_layout import build_real_layout

    return build_real_layout(tmp_path_factory.mktemp("real-layout"))


def point_at(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Make this process look for weights only where ``env`` says (hub constants are read at import)."""
    from huggingface_hub import constants

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(constants, "HF_HOME", env["HF_HOME"])
    monkeypatch.setattr(constants, "HF_HUB_CACHE", env["HF_HUB_CACHE"])
