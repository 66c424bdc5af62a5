"""Random-weight replicas of the default model files, in the real names and folder layouts.

Each artifact has the real architecture, the real file names and key names, and sits where a real
download leaves it:

* ``$HF_HOME/hub/models--ORG--NAME/{blobs,snapshots/<commit>,refs/main}`` as ``huggingface_hub``
  writes it (blobs named by sha256 for weight files, by git blob sha1 for small files; snapshot
  entries are relative symlinks into ``blobs``): open_clip's ``ViT-B-32``/``openai`` repo
  (``timm/vit_base_patch32_clip_224.openai``, ``open_clip_model.safetensors``),
  ``bert-base-uncased`` (``model.safetensors`` with the legacy ``LayerNorm.gamma/beta`` names, a
  30,522-entry WordPiece vocabulary with the real special-token ids) and ``albert-large-v1``'s
  tokenizer (a sentencepiece ``spiece.model``);
* ``$XDG_CACHE_HOME/clip/ViT-B-32.pt``: an OpenAI-style TorchScript CLIP archive;
* ``$TORCH_HOME/hub/checkpoints/fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth``: the detector;
* ``sop_model_epoch3.pth.tar``: a RoViST-C checkpoint saved as the authors' training script saves
  it (``numpy.float64`` accuracies and an ``argparse.Namespace`` beside the state dict, pickled
  under numpy 1.x's module names, ALBERT's persistent ``position_ids`` buffer included);
* ``google/vit-base-patch16-224-in21k`` in the hub cache (its real ``config.json`` and
  ``preprocessor_config.json``, narrowed to a 64-wide, 2-layer ViT so that tests run on a CPU, with
  weights under transformers 4.x's layer names), ``r2p_model_epoch2.pth.tar``, a RoViST-VG
  checkpoint as the authors' ``rovist_vg.py`` saves it (``{"epoch", "model", "valid_loss",
  "train_loss"}``, the ViT's keys under transformers 4.x's names), and ``glove.6B.300d.txt``, a GloVe
  text file of 300-d vectors for a small vocabulary (``unk`` included).

Token ids are not the real ones; the formats are.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

CLIP_REPO = "timm/vit_base_patch32_clip_224.openai"
BERT_REPO = "bert-base-uncased"
SIMCSE_REPO = "princeton-nlp/sup-simcse-bert-base-uncased"
ALBERT_REPO = "albert-large-v1"
DETECTOR_FILE = "fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth"
ROVIST_C_FILE = "sop_model_epoch3.pth.tar"
VIT_REPO = "google/vit-base-patch16-224-in21k"
ROVIST_VG_FILE = "r2p_model_epoch2.pth.tar"
GLOVE_FILE = "glove.6B.300d.txt"

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt", ".model", ".h5", ".msgpack")


@dataclass(frozen=True)
class RealLayout:
    """Where the replicas are: set these as HF_HOME, TORCH_HOME and XDG_CACHE_HOME."""

    root: Path
    hf_home: Path
    torch_home: Path
    xdg_cache: Path
    rovist_c: Path
    rovist_vg: Path
    glove: Path

    def env(self) -> dict[str, str]:
        return {
            "HF_HOME": str(self.hf_home),
            "HF_HUB_CACHE": str(self.hf_home / "hub"),
            "TORCH_HOME": str(self.torch_home),
            "XDG_CACHE_HOME": str(self.xdg_cache),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }


def put_hub_repo(hf_home: Path, repo_id: str, files: dict[str, bytes], commit: str | None = None) -> Path:
    """Write ``files`` as ``huggingface_hub`` caches a download of ``repo_id``; returns the snapshot folder."""
    folder = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    commit = commit or hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = folder / "snapshots" / commit
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    for name, content in files.items():
        if name.endswith(_WEIGHT_SUFFIXES):
            etag = hashlib.sha256(content).hexdigest()  # LFS files: the blob is named by sha256
        else:
            etag = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # git blob id
        blob = folder / "blobs" / etag
        blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def _safetensors_bytes(state: dict[str, torch.Tensor]) -> bytes:
    from safetensors.torch import save

    return save({k: v.contiguous() for k, v in state.items()}, metadata={"format": "pt"})


# --------------------------------------------------------------------------- CLIP


def clip_model() -> torch.nn.Module:
    """ViT-B-32 with QuickGELU (as the openai tag's config says), random weights, fixed seed."""
    import open_clip

    torch.manual_seed(0)
    return open_clip.create_model("ViT-B-32", force_quick_gelu=True).eval()


def build_clip_hub(hf_home: Path, model: torch.nn.Module) -> None:
    config = {
        "model_cfg": {
            "embed_dim": 512,
            "quick_gelu": True,
            "vision_cfg": {"image_size": 224, "layers": 12, "width": 768, "patch_size": 32},
            "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 512, "heads": 8, "layers": 12},
        },
        "preprocess_cfg": {
            "mean": [0.48145466, 0.4578275, 0.40821073],
            "std": [0.26862954, 0.26130258, 0.27577711],
            "interpolation": "bicubic",
            "resize_mode": "shortest",
        },
    }
    put_hub_repo(
        hf_home,
        CLIP_REPO,
        {
            "open_clip_model.safetensors": _safetensors_bytes(model.state_dict()),
            "open_clip_config.json": json.dumps(config, indent=2).encode(),
        },
    )


class _OpenAIArchive(torch.nn.Module):
    """A module whose state dict has OpenAI CLIP's key names, for a TorchScript archive."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.visual = model.visual
        self.transformer = model.transformer
        self.token_embedding = model.token_embedding
        self.ln_final = model.ln_final
        self.positional_embedding = model.positional_embedding
        self.text_projection = model.text_projection
        self.logit_scale = model.logit_scale
        self.register_buffer("input_resolution", torch.tensor(224))
        self.register_buffer("context_length", torch.tensor(77))
        self.register_buffer("vocab_size", torch.tensor(49408))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.visual(image) @ self.text_projection.T * self.logit_scale.exp()


def build_openai_torchscript(path: Path, model: torch.nn.Module) -> None:
    """OpenAI's ``clip.load`` file format: a TorchScript archive of the whole model (fp16 weights)."""
    archive = _OpenAIArchive(model).eval()
    with torch.no_grad():
        traced = torch.jit.trace(archive, torch.zeros(1, 3, 224, 224), check_trace=False)
    traced = traced.half()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.save(traced, str(path))


# --------------------------------------------------------------------------- BERT

_SAMPLE_WORDS = (
    "we got to the launch site before dawn when rocket stood lit up on pad later an astronaut in orange suit posed "
    "next flag for photos visitor center a giant screen showed thousands of faraway galaxies outside photographer "
    "set his camera and tripod lawn clock wall said it was time go home morning coffee cat sat window horse field "
    "coins table grass garden went beach park then first finally after that dog ran saw big small red water waves "
    "sun ate cake played ball were was interest rates rose monday central bank raised related drove early arrived "
    "already huge family day trip fun great good had lot people friends our my his her they them this there is are"
).split()


def bert_vocab() -> list[str]:
    """30,522 WordPiece entries with BERT's special-token ids ([PAD] 0, [UNK] 100, [CLS] 101,
    [SEP] 102, [MASK] 103), then characters, sample words and filler pieces."""
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = [chr(c) for c in range(33, 127) if not chr(c).isupper()]
    vocab += chars + ["##" + c for c in chars if c.isalnum()]
    vocab += [w for w in dict.fromkeys(_SAMPLE_WORDS) if w not in vocab]
    filler = 0
    while len(vocab) < 30522:
        vocab.append(f"##x{filler}")
        filler += 1
    return vocab


def _bert_tokenizer_files(vocab: list[str]) -> dict[str, bytes]:
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    tok = Tokenizer(WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 101), ("[SEP]", 102)]
    )
    tok.decoder = decoders.WordPiece()
    return {
        "vocab.txt": ("\n".join(vocab) + "\n").encode(),
        "tokenizer.json": tok.to_str().encode(),
        "tokenizer_config.json": json.dumps({"do_lower_case": True, "model_max_length": 512}).encode(),
    }


BERT_CONFIG = {
    "architectures": ["BertForMaskedLM"],
    "attention_probs_dropout_prob": 0.1,
    "gradient_checkpointing": False,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "transformers_version": "4.6.0.dev0",
    "type_vocab_size": 2,
    "use_cache": True,
    "vocab_size": 30522,
}


def build_bert_hub(hf_home: Path) -> None:
    """bert-base-uncased: BertForPreTraining weights under the original file's key names
    (``LayerNorm.gamma``/``beta``, the MLM and next-sentence heads, ``position_ids``)."""
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(1)
    model = BertForPreTraining(BertConfig(**{k: v for k, v in BERT_CONFIG.items() if k != "architectures"}))
    state = {}
    for key, value in model.state_dict().items():
        if key in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"):
            continue  # tied to the embeddings and to cls.predictions.bias; not stored
        if ".LayerNorm." in key:
            key = key.replace(".LayerNorm.weight", ".LayerNorm.gamma").replace(".LayerNorm.bias", ".LayerNorm.beta")
        state[key] = value
    state["bert.embeddings.position_ids"] = torch.arange(512).unsqueeze(0)
    files = {
        "config.json": json.dumps(BERT_CONFIG, indent=2).encode(),
        "model.safetensors": _safetensors_bytes(state),
        **_bert_tokenizer_files(bert_vocab()),
    }
    put_hub_repo(hf_home, BERT_REPO, files)


def build_simcse_hub(hf_home: Path) -> None:
    """princeton-nlp/sup-simcse-bert-base-uncased: a ``BertModel`` (no heads) saved as
    ``pytorch_model.bin`` with its pooler, BERT-base's config and uncased WordPiece vocabulary."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(3)
    config = {**BERT_CONFIG, "architectures": ["BertModel"], "transformers_version": "4.2.1"}
    model = BertModel(BertConfig(**{k: v for k, v in config.items() if k != "architectures"}))
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    tokenizer = _bert_tokenizer_files(bert_vocab())
    files = {
        "config.json": json.dumps(config, indent=2).encode(),
        "pytorch_model.bin": buffer.getvalue(),
        "vocab.txt": tokenizer["vocab.txt"],
        "tokenizer_config.json": tokenizer["tokenizer_config.json"],
        "special_tokens_map.json": json.dumps(
            {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}
        ).encode(),
    }
    put_hub_repo(hf_home, SIMCSE_REPO, files)


# --------------------------------------------------------------------------- ALBERT tokenizer + RoViST-C

ALBERT_LARGE_CONFIG = {
    "architectures": ["AlbertForMaskedLM"],
    "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 2,
    "classifier_dropout_prob": 0.1,
    "down_scale_factor": 1,
    "embedding_size": 128,
    "eos_token_id": 3,
    "gap_size": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 1024,
    "initializer_range": 0.02,
    "inner_group_num": 1,
    "intermediate_size": 4096,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "albert",
    "net_structure_type": 0,
    "num_attention_heads": 16,
    "num_hidden_groups": 1,
    "num_hidden_layers": 24,
    "num_memory_blocks": 0,
    "pad_token_id": 0,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}


def _spiece_model(folder: Path) -> bytes:
    """A sentencepiece unigram model in ALBERT's format (<pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4)."""
    import sentencepiece as spm

    text = folder / "corpus.txt"
    lines = [" ".join(_SAMPLE_WORDS[i : i + 12]) for i in range(0, len(_SAMPLE_WORDS), 6)]
    text.write_text("\n".join(lines * 20) + "\n")
    prefix = folder / "spiece"
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(prefix),
        vocab_size=400,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return (folder / "spiece.model").read_bytes()


def build_albert_tokenizer_hub(hf_home: Path, work: Path) -> None:
    tokenizer_config = {
        "do_lower_case": True,
        "remove_space": True,
        "keep_accents": False,
        "bos_token": "[CLS]",
        "eos_token": "[SEP]",
        "unk_token": "<unk>",
        "sep_token": "[SEP]",
        "pad_token": "<pad>",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "model_max_length": 512,
    }
    put_hub_repo(
        hf_home,
        ALBERT_REPO,
        {
            "config.json": json.dumps(ALBERT_LARGE_CONFIG, indent=2).encode(),
            "spiece.model": _spiece_model(work),
            "tokenizer_config.json": json.dumps(tokenizer_config).encode(),
        },
    )


def _numpy1_names(path: Path) -> None:
    """Rewrite a torch zip checkpoint so its pickle names numpy 1.x's modules (``numpy.core``), as a
    file saved in 2021 does."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for info, data in members:
            if info.filename.endswith("/data.pkl"):
                data = data.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
            archive.writestr(info, data)
    path.write_bytes(buffer.getvalue())


def build_rovist_c(path: Path) -> None:
    """ALBERT-large + linear(1024, 2) saved as the authors' ``rovist_c.py`` saves its best epoch."""
    from transformers import AlbertConfig, AlbertModel

    torch.manual_seed(2)
    config = AlbertConfig(**{k: v for k, v in ALBERT_LARGE_CONFIG.items() if k != "architectures"})
    albert = AlbertModel(config)
    state = {f"albert_model.{k}": v for k, v in albert.state_dict().items()}
    state["albert_model.embeddings.position_ids"] = torch.arange(512).unsqueeze(0)  # persistent in transformers 4.x
    head = torch.nn.Linear(1024, 2)
    state["linear.weight"], state["linear.bias"] = head.weight.detach(), head.bias.detach()
    opt = argparse.Namespace(
        data_path="/content",
        batch_size=32,
        learning_rate=1e-05,
        dropout_prob=0.4,
        lr_decay=0.95,
        weight_decay=1e-05,
        num_epochs=50,
        hidden_dim=1024,
        early_stop=5,
        save_path="/content",
        resume="",
    )
    checkpoint = {
        "epoch": 3,
        "model": state,
        "valid_loss": 0.4187,
        "valid_acc": np.float64(0.8125),
        "train_loss": 0.3551,
        "train_acc": np.float64(0.8467),
        "opt": opt,
    }
    torch.save(checkpoint, path)
    _numpy1_names(path)


# --------------------------------------------------------------------------- RoViST-VG

#: google/vit-base-patch16-224-in21k's config.json with the widths narrowed (768 -> 64, 12 -> 2 layers).
VIT_CONFIG = {
    "architectures": ["ViTModel"],
    "attention_probs_dropout_prob": 0.0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "hidden_size": 64,
    "image_size": 224,
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "layer_norm_eps": 1e-12,
    "model_type": "vit",
    "num_attention_heads": 2,
    "num_channels": 3,
    "num_hidden_layers": 2,
    "patch_size": 16,
    "qkv_bias": True,
    "transformers_version": "4.13.0.dev0",
}
#: Its preprocessor_config.json as published (the ViTFeatureExtractor the authors called).
VIT_PREPROCESSOR = {
    "do_normalize": True,
    "do_resize": True,
    "feature_extractor_type": "ViTFeatureExtractor",
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "resample": 2,
    "size": 224,
}
#: transformers 5 ViT names -> the 4.x names the authors' checkpoint and the hub file use.
_VIT_OLD_NAMES = (
    ("layers.", "encoder.layer."),
    ("attention.q_proj", "attention.attention.query"),
    ("attention.k_proj", "attention.attention.key"),
    ("attention.v_proj", "attention.attention.value"),
    ("attention.o_proj", "attention.output.dense"),
    ("mlp.fc1", "intermediate.dense"),
    ("mlp.fc2", "output.dense"),
)


def vit_old_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A ViT state dict under transformers 4.x's key names (a 4.x state dict is returned unchanged)."""
    out = {}
    for key, value in state.items():
        for new, old in _VIT_OLD_NAMES:
            if old not in key:
                key = key.replace(new, old)
        out[key] = value
    return out


def vit_model(seed: int) -> torch.nn.Module:
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(seed)
    return ViTModel(ViTConfig(**{k: v for k, v in VIT_CONFIG.items() if k != "architectures"}))


def build_vit_hub(hf_home: Path) -> None:
    state = vit_old_names(vit_model(4).state_dict())
    put_hub_repo(
        hf_home,
        VIT_REPO,
        {
            "config.json": json.dumps(VIT_CONFIG, indent=2).encode(),
            "preprocessor_config.json": json.dumps(VIT_PREPROCESSOR, indent=2).encode(),
            "model.safetensors": _safetensors_bytes(state),
        },
    )


def build_rovist_vg(path: Path, joint: int = 1024, word_dim: int = 300) -> None:
    """Region2PhraseModel(1024, "vision transformer", static GloVe, Tanh) saved as ``train_model`` does."""
    vit = vit_model(5)
    state = {f"image_encoder.image_model.{k}": v for k, v in vit_old_names(vit.state_dict()).items()}
    torch.manual_seed(6)
    image_head, text_head = torch.nn.Linear(VIT_CONFIG["hidden_size"], joint), torch.nn.Linear(word_dim, joint)  # type: ignore[arg-type]
    state["image_encoder.linear.weight"], state["image_encoder.linear.bias"] = (
        image_head.weight.detach(),
        image_head.bias.detach(),
    )
    state["text_encoder.linear.weight"], state["text_encoder.linear.bias"] = text_head.weight.detach(), text_head.bias.detach()
    ordered = dict(sorted(state.items(), key=lambda kv: not kv[0].startswith("image_encoder.")))
    torch.save({"epoch": 2, "model": ordered, "valid_loss": 2.8431, "train_loss": 2.6172}, path)


def glove_words() -> list[str]:
    """The replica's vocabulary: every lower-case word of the sample stories and a few more, ``unk``
    included; capitalised words are absent, as in glove.6B (the authors' lookup falls back to unk)."""
    import re

    from conftest import SAMPLE

    words: dict[str, None] = {}
    for line in SAMPLE.read_text().splitlines():
        for sentence in json.loads(line).get("sentences", []):
            for word in re.findall(r"[a-z]+", sentence):
                words.setdefault(word)
    for extra in ("the", ",", ".", "unk", "galaxy", "photograph"):
        words.setdefault(extra)
    words.pop("tripod", None)  # one noun of the sample GloVe lacks: unk stands in
    return list(words)


def build_glove(path: Path, dim: int = 300) -> None:
    """A GloVe text file: ``word v1 ... vD`` per line, values as Stanford prints them."""
    rng = np.random.default_rng(7)
    lines = [" ".join([w, *(f"{v:.6f}".rstrip("0").rstrip(".") for v in rng.normal(0, 0.4, dim))]) for w in glove_words()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- detector


def build_detector(torch_home: Path) -> Path:
    from torchvision.models.detection import fasterrcnn_resnet50_fpn_v2

    torch.manual_seed(3)
    model = fasterrcnn_resnet50_fpn_v2(weights=None, weights_backbone=None)
    path = torch_home / "hub" / "checkpoints" / DETECTOR_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return path


def build_real_layout(root: Path) -> RealLayout:
    """Every replica under ``root`` (about 2 GB, half a minute on two cores)."""
    layout = RealLayout(
        root=root,
        hf_home=root / "hf",
        torch_home=root / "torch",
        xdg_cache=root / "xdg",
        rovist_c=root / "rovist" / ROVIST_C_FILE,
        rovist_vg=root / "rovist" / ROVIST_VG_FILE,
        glove=root / "glove" / GLOVE_FILE,
    )
    clip = clip_model()
    build_clip_hub(layout.hf_home, clip)
    build_openai_torchscript(layout.xdg_cache / "clip" / "ViT-B-32.pt", clip)
    del clip
    build_bert_hub(layout.hf_home)
    build_simcse_hub(layout.hf_home)
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    build_albert_tokenizer_hub(layout.hf_home, work)
    layout.rovist_c.parent.mkdir(parents=True, exist_ok=True)
    build_rovist_c(layout.rovist_c)
    build_vit_hub(layout.hf_home)
    build_rovist_vg(layout.rovist_vg)
    layout.glove.parent.mkdir(parents=True, exist_ok=True)
    build_glove(layout.glove)
    build_detector(layout.torch_home)
    return layout
