"""Vrank (Hsu et al., ACL 2022): a reference-free story ranker learned from human rankings.

The recipe as the paper states it (§4 and its appendix): a sentence encoder (SimCSE on BERT,
``princeton-nlp/sup-simcse-bert-base-uncased``; optionally first further pre-trained with the
masked-LM objective on reference stories) reads two stories of one image sequence joined with
``[SEP]``; a regression layer on its sentence embedding predicts the ranking gap f(a, b) (> 0: a is
better); mean squared error; the pairs balanced by swapping (b, a, −gap); Adam, lr 2e-5, 30 epochs,
batch 32, seed 7777, mixed precision on a GPU. The better story of a pair is the sign of the gap.

Here the model is also asked in both orders when it is used, m(a, b) = (f(a, b) − f(b, a)) / 2
(:mod:`vst_core.metrics.ranking`), so a prediction never depends on which story came first.

A trained folder holds ``encoder/`` (the fine-tuned encoder and its tokenizer, ``save_pretrained``),
``head.safetensors`` (the regression layer), ``vrank.json`` (how to read it), the card
(:mod:`vst_core.learned.card`) with ``predictions.csv``, and ``checkpoint/`` while training runs
(removed at the end; a rerun with the same arguments resumes from it).
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from vst_core.hashing import json_digest
from vst_core.learned import folder_signature
from vst_core.learned.card import PREDICTION_COLUMNS, write_card
from vst_core.learned.pairs import RankedPair, examples, stories_of
from vst_core.models.device import resolve_device
from vst_core.models.hub import WeightsUnavailableError, load_hf

META_FILE = "vrank.json"
HEAD_FILE = "head.safetensors"
ENCODER_DIR = "encoder"
CHECKPOINT_DIR = "checkpoint"
DEFAULT_BASE = "princeton-nlp/sup-simcse-bert-base-uncased"

Precision = Literal["auto", "fp32", "fp16", "bf16"]
Pooling = Literal["auto", "cls", "mean"]


@dataclass(frozen=True)
class VrankConfig:
    """The training recipe; defaults are the paper's (Hsu et al., 2022, appendix)."""

    base: str = DEFAULT_BASE
    epochs: int = 30
    batch_size: int = 32
    learning_rate: float = 2e-5
    seed: int = 7777
    max_length: int = 256
    pooling: Pooling = "auto"  # cls for BERT/SimCSE; mean when the base is a sentence-transformers folder saying so
    precision: Precision = "auto"  # auto: fp16 on CUDA, fp32 on the CPU
    device: str = "auto"
    swap: bool = True
    mlm_epochs: int = 0  # masked-LM pre-training epochs on the MLM stories before ranking
    mlm_probability: float = 0.15


@dataclass
class VrankReport:
    out: str
    train_pairs: int
    held_out_pairs: int
    epochs: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: int = 0


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


def _autocast(device: str, precision: Precision) -> tuple[Any, bool]:
    """(autocast context, whether a gradient scaler is needed) for the precision on the device."""
    import contextlib

    import torch

    chosen = ("fp16" if device.startswith("cuda") else "fp32") if precision == "auto" else precision
    if chosen == "fp32":
        return contextlib.nullcontext(), False
    dtype = torch.float16 if chosen == "fp16" else torch.bfloat16
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype), chosen == "fp16"


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
    :class:`WeightsUnavailableError` that says how to make one."""
    if not folder or not Path(folder).is_dir():
        where = f" ({folder} is not a folder)" if folder else ""
        raise WeightsUnavailableError(
            f"Vrank needs a trained model folder{where}: train one with `vst train-vrank JUDGEMENTS --out DIR` "
            "(VHED's CSV, a pairwise file or ratings) and pass --vrank-model DIR"
        )
    path = Path(folder)
    meta_path = path / META_FILE
    if not meta_path.is_file() or not (path / HEAD_FILE).is_file() or not (path / ENCODER_DIR).is_dir():
        raise WeightsUnavailableError(
            f"{path} is not a Vrank folder (no {META_FILE}, {HEAD_FILE} or {ENCODER_DIR}/); write one with vst train-vrank"
        )
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    meta = json.loads(meta_path.read_text())
    encoder = AutoModel.from_pretrained(path / ENCODER_DIR)
    tokenizer = AutoTokenizer.from_pretrained(path / ENCODER_DIR)
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    head.load_state_dict(load_file(str(path / HEAD_FILE)))
    ranker = _Ranker(encoder, tokenizer, meta.get("pooling", "cls"), resolve_device(device), head)
    return VrankModel(ranker, int(meta.get("max_length", 256)), batch_size, folder_signature(path, "vrank"), path)


def _load_base(config: VrankConfig, device: str) -> _Ranker:
    from transformers import AutoModel, AutoTokenizer

    hint = " with --base NAME|PATH"
    tokenizer = load_hf(config.base, AutoTokenizer.from_pretrained, "Vrank base tokenizer", hint)
    encoder = load_hf(config.base, AutoModel.from_pretrained, "Vrank base encoder", hint)
    return _Ranker(encoder, tokenizer, _pooling_of(config.base, config.pooling), device)


def pretrain_mlm(
    ranker: _Ranker,
    stories: Sequence[str],
    config: VrankConfig,
    *,
    progress: Callable[[int, str], Any] | None = None,
    log: Callable[[str], None] = print,
) -> None:
    """Further pre-train the encoder with the masked-LM objective on ``stories`` (the paper: SIND
    reference stories) for ``config.mlm_epochs``; the encoder's weights are updated in place (the
    MLM head is built from the base when it has one, else freshly, and dropped after)."""
    import torch
    from transformers import AutoConfig, AutoModelForMaskedLM, DataCollatorForLanguageModeling

    if not stories or config.mlm_epochs < 1:
        return
    cfg = AutoConfig.for_model(**ranker.encoder.config.to_dict())
    mlm = AutoModelForMaskedLM.from_config(cfg)
    base_prefix = getattr(mlm, "base_model_prefix", "bert")
    getattr(mlm, base_prefix).load_state_dict(ranker.encoder.state_dict(), strict=False)
    mlm.to(ranker.device)
    collator = DataCollatorForLanguageModeling(ranker.tokenizer, mlm_probability=config.mlm_probability)
    optimizer = torch.optim.Adam(mlm.parameters(), lr=config.learning_rate)
    rng = random.Random(config.seed)
    mlm.train()
    for epoch in range(1, config.mlm_epochs + 1):
        order = list(stories)
        rng.shuffle(order)
        n_batches = (len(order) + config.batch_size - 1) // config.batch_size
        bar = progress(n_batches, f"MLM epoch {epoch}/{config.mlm_epochs}") if progress else None
        total, seen = 0.0, 0
        for start in range(0, len(order), config.batch_size):
            texts = order[start : start + config.batch_size]
            enc = ranker.tokenizer(texts, truncation=True, max_length=config.max_length)
            batch = collator([{k: enc[k][i] for k in enc} for i in range(len(texts))])
            loss = mlm(**{k: v.to(ranker.device) for k, v in batch.items()}).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total, seen = total + float(loss) * len(texts), seen + len(texts)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        log(f"MLM epoch {epoch}: loss {total / max(seen, 1):.4f}")
    ranker.encoder.load_state_dict(getattr(mlm, base_prefix).state_dict(), strict=False)
    del mlm


def _predictions(ranker: _Ranker, pairs: Sequence[RankedPair], config: VrankConfig) -> pd.DataFrame:
    """One row per pair: f(better, worse), f(worse, better) and the margin (> 0: correct)."""
    both = [(p.better_text, p.worse_text) for p in pairs] + [(p.worse_text, p.better_text) for p in pairs]
    f = predict(ranker, both, config.max_length, config.batch_size)
    forward, backward = f[: len(pairs)], f[len(pairs) :]
    return pd.DataFrame(
        {
            "sequence_id": [p.sequence_id for p in pairs],
            "better": [p.better for p in pairs],
            "worse": [p.worse for p in pairs],
            "gap": [p.gap for p in pairs],
            "agreement": [p.agreement for p in pairs],
            "forward": forward.astype(float),
            "backward": backward.astype(float),
            "margin": (forward.astype(float) - backward.astype(float)) / 2.0,
        },
        columns=PREDICTION_COLUMNS,
    )


def _run_id(config: VrankConfig, train: Sequence[RankedPair], held: Sequence[RankedPair]) -> str:
    """What a checkpoint must match to be resumed: the recipe (not the device) and the pairs."""
    recipe = {k: v for k, v in asdict(config).items() if k != "device"}
    data = [(p.better, p.worse, p.gap) for p in train], [(p.better, p.worse, p.gap) for p in held]
    return json_digest({"recipe": recipe, "data": data}, 16)


def train_vrank(
    train: Sequence[RankedPair],
    held_out: Sequence[RankedPair],
    out: str | Path,
    config: VrankConfig = VrankConfig(),
    *,
    card: dict[str, Any] | None = None,
    mlm_stories: Sequence[str] = (),
    progress: Callable[[int, str], Any] | None = None,
    log: Callable[[str], None] = print,
) -> VrankReport:
    """Train the ranker on ``train`` (swapped pairs added when ``config.swap``), report held-out
    accuracy after each epoch, save the last epoch to ``out`` with its card (``card`` adds what the
    caller knows: data digests, the split). A checkpoint is written after every epoch; a rerun with
    the same recipe and pairs resumes from it."""
    import torch

    if not train:
        raise ValueError("no training pairs")
    overlap = stories_of(train) & stories_of(held_out)
    if overlap:
        log(f"warning: {len(overlap)} stor(ies) are in both the training and the held-out pairs (e.g. {sorted(overlap)[0]!r})")
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ranker = _load_base(config, device)
    run_id = _run_id(config, train, held_out)
    checkpoint = out / CHECKPOINT_DIR
    state_file = checkpoint / "state.pt"
    report = VrankReport(str(out), len(train), len(held_out))
    optimizer = torch.optim.Adam(ranker.parameters(), lr=config.learning_rate)
    autocast, scaled = _autocast(device, config.precision)
    scaler = torch.amp.GradScaler("cuda") if scaled else None
    start = 1
    if state_file.is_file():
        state = torch.load(state_file, map_location=device, weights_only=True)
        if state.get("run_id") == run_id:
            ranker.encoder.load_state_dict(state["encoder"])
            ranker.head.load_state_dict(state["head"])
            optimizer.load_state_dict(state["optimizer"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
            report.epochs = state["epochs"]
            start = report.resumed_from = int(state["epoch"]) + 1
            log(f"resuming after epoch {state['epoch']} from {checkpoint}")
        else:
            log(f"{checkpoint} belongs to another recipe or other pairs; starting afresh")
    if start == 1 and config.mlm_epochs and mlm_stories:
        pretrain_mlm(ranker, mlm_stories, config, progress=progress, log=log)
    data = examples(train, swap=config.swap)
    loss_fn = torch.nn.MSELoss()
    n_batches = (len(data) + config.batch_size - 1) // config.batch_size
    for epoch in range(start, config.epochs + 1):
        ranker.encoder.train()
        order = data[:]
        random.Random(config.seed + epoch).shuffle(order)
        bar = progress(n_batches, f"epoch {epoch}/{config.epochs}") if progress else None
        total, seen = 0.0, 0
        for begin in range(0, len(order), config.batch_size):
            chunk = order[begin : begin + config.batch_size]
            batch = ranker.encode([(a, b) for a, b, _ in chunk], config.max_length)
            target = torch.tensor([y for _, _, y in chunk], dtype=torch.float32, device=device)
            with autocast:
                loss = loss_fn(ranker.forward(batch).float(), target)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            optimizer.zero_grad()
            total, seen = total + loss.item() * len(chunk), seen + len(chunk)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{total / seen:.4f}")
        if bar is not None:
            bar.close()
        entry: dict[str, Any] = {"epoch": epoch, "train_loss": total / seen}
        if held_out:
            frame = _predictions(ranker, held_out, config)
            entry["held_out_accuracy"] = float((frame["margin"] > 0).mean())
        report.epochs.append(entry)
        shown = f" · held-out accuracy {entry['held_out_accuracy']:.3f}" if "held_out_accuracy" in entry else ""
        log(f"epoch {epoch}: train loss {entry['train_loss']:.4f}{shown}")
        checkpoint.mkdir(exist_ok=True)
        torch.save(
            {
                "run_id": run_id,
                "epoch": epoch,
                "encoder": ranker.encoder.state_dict(),
                "head": ranker.head.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict() if scaler is not None else None,
                "epochs": report.epochs,
            },
            state_file.with_suffix(".tmp"),
        )
        state_file.with_suffix(".tmp").replace(state_file)
    _save(ranker, out, config)
    predictions = _predictions(ranker, held_out, config) if held_out else None
    write_card(
        out,
        {
            "kind": "vrank",
            "model": folder_signature(out, "vrank"),
            "recipe": asdict(config),
            "pooling": ranker.pooling,
            "train_pairs": len(train),
            "train_examples": len(data),
            "held_out_pairs": len(held_out),
            "train_stories": sorted(stories_of(train)),
            "epochs_run": report.epochs,
            "device": device,
            **(card or {}),
        },
        predictions,
    )
    shutil.rmtree(checkpoint, ignore_errors=True)
    return report


def _save(ranker: _Ranker, out: Path, config: VrankConfig) -> None:
    from safetensors.torch import save_file

    ranker.encoder.save_pretrained(out / ENCODER_DIR)
    ranker.tokenizer.save_pretrained(out / ENCODER_DIR)
    save_file({k: v.detach().cpu().contiguous() for k, v in ranker.head.state_dict().items()}, str(out / HEAD_FILE))
    meta = {"format": 1, "pooling": ranker.pooling, "max_length": config.max_length, "base": config.base}
    (out / META_FILE).write_text(json.dumps(meta, indent=2))
