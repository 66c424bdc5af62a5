"""Vrank's ranker (Hsu et al., 2022) as a model: a sentence encoder reads two stories joined with
``[SEP]`` and a regression layer predicts the ranking gap f(a, b) (> 0: a is better). This module
loads a folder written by ``vst train-vrank`` (:mod:`.train`) and predicts in
batches; the training recipe lives there.

A folder holds ``encoder/`` (the fine-tuned encoder and its tokenizer, ``save_pretrained``),
``head.safetensors`` (the regression layer), ``vrank.json`` (pooling, maximum length, base), and
the card with the held-out predictions (:mod:`vst_core.learned.card`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vst_core.hashing import folder_signature
from vst_core.metrics.vrank.defaults import BASE_ENCODER
from vst_core.models.device import resolve_device
from vst_core.models.folders import check_transformers_folder, load_state, loading, model_folder, read_safetensors, read_settings
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError, option

#: The encoder Vrank's recipe starts from: SimCSE (supervised) on BERT-base, as the paper describes.
DEFAULT_BASE = BASE_ENCODER
META_FILE = "vrank.json"
HEAD_FILE = "head.safetensors"
ENCODER_DIR = "encoder"

Pooling = Literal["auto", "cls", "mean"]
#: Two stories every loaded folder must predict a finite gap for (odd characters included).
PROBE_PAIR = ("A dog ran to the sea, and it was fun!", "Zyx qwv ✓ 42 … «unknown» words.")


def _pooling_of(base: str, wanted: Pooling) -> Literal["cls", "mean"]:
    """The base's pooling: ``wanted``, else mean when a sentence-transformers ``1_Pooling`` config says
    mean tokens, else [CLS] (SimCSE's ``cls``)."""
    if wanted != "auto":
        return wanted
    pooling = Path(base) / "1_Pooling" / "config.json"
    if pooling.is_file():
        try:
            if json.loads(pooling.read_text()).get("pooling_mode_mean_tokens"):
                return "mean"
        except (OSError, ValueError):
            pass
    return "cls"


class _Ranker:
    """Encoder + regression layer: f(a, b) = w · pool(encoder([CLS] a [SEP] b [SEP])) + c."""

    def __init__(self, encoder: Any, tokenizer: Any, pooling: Literal["cls", "mean"], device: str, head: Any = None) -> None:
        import torch

        self.torch = torch
        self.encoder = encoder.to(device)
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.device = device
        self.head = head if head is not None else torch.nn.Linear(encoder.config.hidden_size, 1)
        self.head.to(device)

    def parameters(self) -> list[Any]:
        return [*self.encoder.parameters(), *self.head.parameters()]

    def encode(self, pairs: Sequence[tuple[str, str]], max_length: int) -> Any:
        enc = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            padding=True,
            truncation="longest_first",
            max_length=max_length,
            return_tensors="pt",
        )
        return {k: v.to(self.device) for k, v in enc.items()}

    def forward(self, batch: Any) -> Any:
        hidden = self.encoder(**batch).last_hidden_state
        if self.pooling == "mean":
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        else:
            pooled = hidden[:, 0]
        return self.head(pooled).squeeze(-1)


class VrankModel:
    """A trained Vrank folder, ready to predict f(a, b) for story pairs (batched, no gradients)."""

    def __init__(self, ranker: _Ranker, max_length: int, batch_size: int, name: str, folder: Path) -> None:
        self.ranker, self.max_length, self.batch_size, self.name, self.folder = ranker, max_length, batch_size, name, folder

    @property
    def device(self) -> str:
        return self.ranker.device

    def predict(self, pairs: Sequence[tuple[str, str]], progress: Callable[[int], Any] | None = None) -> np.ndarray:
        """f(a, b) for each (a, b): the predicted ranking gap of a over b (> 0: a better)."""
        out = predict(self.ranker, pairs, self.max_length, self.batch_size, progress)
        return out


def predict(
    ranker: _Ranker,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    batch_size: int,
    progress: Callable[[int], Any] | None = None,
) -> np.ndarray:
    torch = ranker.torch
    ranker.encoder.eval()
    values: list[np.ndarray] = []
    bar = progress(len(pairs)) if progress else None
    with torch.inference_mode():
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start : start + batch_size]
            values.append(ranker.forward(ranker.encode(chunk, max_length)).float().cpu().numpy())
            if bar is not None:
                bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return np.concatenate(values) if values else np.zeros(0)


def load_vrank(folder: str | Path | None, *, device: str = "auto", batch_size: int = 32) -> VrankModel:
    """A folder written by :func:`train_vrank`. A missing folder is a
    :class:`WeightsUnavailableError` that says how to make one; a folder with a file that is
    missing, damaged, of the wrong type or shape, or not safetensors is a :class:`ModelLoadError`
    naming that file (:mod:`vst_core.models.folders`)."""
    if not folder or not Path(folder).is_dir():
        where = f" ({folder} is not a folder)" if folder else ""
        raise WeightsUnavailableError(
            f"Vrank needs a trained model folder{where}: train one with `vst train-vrank JUDGEMENTS --out DIR` "
            f"(VHED's CSV, a pairwise file or ratings) and pass {option('vrank_model', 'DIR')}"
        )
    path = model_folder(folder, "Vrank")
    what, fix = f"Vrank folder {path.name}", "write the folder again with vst train-vrank"
    if not (path / META_FILE).exists() or not (path / HEAD_FILE).exists() or not (path / ENCODER_DIR).is_dir():
        raise WeightsUnavailableError(
            f"{path} is not a Vrank folder (no {META_FILE}, {HEAD_FILE} or {ENCODER_DIR}/); write one with vst train-vrank"
        )
    meta = read_settings(path / META_FILE, what, {}, {"pooling": str, "max_length": int, "base": str}, fix)
    pooling, max_length = meta.get("pooling", "cls"), int(meta.get("max_length", 256))
    if pooling not in ("cls", "mean") or not 8 <= max_length <= 8192:
        raise ModelLoadError(
            f"{what}: {META_FILE} has pooling {pooling!r} and max_length {max_length}, not cls/mean and 8-8192; {fix}"
        )
    head_state = read_safetensors(path / HEAD_FILE, what, fix)
    check_transformers_folder(path / ENCODER_DIR, what, fix)
    import torch
    from transformers import AutoModel, AutoTokenizer

    with loading(f"{what}: {ENCODER_DIR}/", fix):
        encoder = AutoModel.from_pretrained(path / ENCODER_DIR, local_files_only=True, use_safetensors=True)
        tokenizer = AutoTokenizer.from_pretrained(path / ENCODER_DIR, local_files_only=True)
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    load_state(head, head_state, f"{what}: {HEAD_FILE}", fix)
    ranker = _Ranker(encoder, tokenizer, pooling, resolve_device(device), head)
    with loading(f"{what}: a first prediction", fix):  # what loads but cannot predict (e.g. a damaged vocabulary)
        probe = predict(ranker, [PROBE_PAIR], max_length, 1)
    if not np.isfinite(probe).all():
        raise ModelLoadError(f"{what}: predicts {probe[0]} for a probe pair, not a finite number; {fix}")
    return VrankModel(ranker, max_length, batch_size, folder_signature(path, "vrank"), path)
