"""Vrank (Hsu et al., ACL 2022): a reference-free story ranker learned from human rankings.

The recipe as the paper states it (§4 and its appendix): a sentence encoder (SimCSE on BERT,
``princeton-nlp/sup-simcse-bert-base-uncased``; optionally first further pre-trained with the
masked-LM objective on reference stories) reads two stories of one image sequence joined with
``[SEP]``; a regression layer on its sentence embedding predicts the ranking gap f(a, b) (> 0: a is
better); mean squared error; the pairs balanced by swapping (b, a, −gap); Adam, lr 2e-5, 30 epochs,
batch 32, seed 7777, mixed precision on a GPU. The better story of a pair is the sign of the gap.

Here the model is also asked in both orders when it is used, m(a, b) = (f(a, b) − f(b, a)) / 2
(:mod:`.ranking`), so a prediction never depends on which story came first.

A trained folder holds ``encoder/`` (the fine-tuned encoder and its tokenizer, ``save_pretrained``),
``head.safetensors`` (the regression layer), ``vrank.json`` (how to read it), the card
(:mod:`vst_core.learned.card`) with ``predictions.csv``, and ``checkpoint/`` while training runs
(removed at the end; a rerun with the same arguments resumes from it).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from vst_core.hashing import folder_signature, json_digest
from vst_core.learned.card import PREDICTION_COLUMNS, write_card
from vst_core.learned.pairs import RankedPair, examples, stories_of
from vst_core.metrics.vrank.ranker import (
    DEFAULT_BASE,
    ENCODER_DIR,
    HEAD_FILE,
    META_FILE,
    Pooling,
    _pooling_of,
    _Ranker,
    predict,
)
from vst_core.models.device import resolve_device, torch_threads
from vst_core.models.folders import load_hf

CHECKPOINT_DIR = "checkpoint"

Precision = Literal["auto", "fp32", "fp16", "bf16"]


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
    # CPU threads while training: 0 = one on a CPU (small steps stall on a busy machine, see
    # models.device.torch_threads), torch's default on a GPU; N = N
    threads: int = 0


@dataclass
class VrankReport:
    out: str
    train_pairs: int
    held_out_pairs: int
    epochs: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: int = 0


def _autocast(device: str, precision: Precision) -> tuple[Any, bool]:
    """(autocast context, whether a gradient scaler is needed) for the precision on the device."""
    import contextlib

    import torch

    chosen = ("fp16" if device.startswith("cuda") else "fp32") if precision == "auto" else precision
    if chosen == "fp32":
        return contextlib.nullcontext(), False
    dtype = torch.float16 if chosen == "fp16" else torch.bfloat16
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype), chosen == "fp16"


def _load_base(config: VrankConfig, device: str) -> _Ranker:
    from transformers import AutoModel, AutoTokenizer

    hint = " with --base NAME|PATH"
    tokenizer = load_hf(config.base, AutoTokenizer.from_pretrained, "Vrank base tokenizer", hint)
    encoder = load_hf(config.base, AutoModel.from_pretrained, "Vrank base encoder", hint, weights=True)
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


class NonFiniteLossError(ArithmeticError):
    """Training met a loss that is not a finite number; nothing was written."""


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

    if not train:
        raise ValueError("no training pairs")
    bad = [p for p in (*train, *held_out) if not math.isfinite(p.gap) or p.gap <= 0]
    if bad:
        raise ValueError(
            f"{len(bad)} pair(s) have a ranking gap that is not a positive finite number (e.g. {bad[0].better!r} over "
            f"{bad[0].worse!r}: {bad[0].gap!r}); the readers leave such pairs out, so these came from elsewhere"
        )
    overlap = stories_of(train) & stories_of(held_out)
    if overlap:
        log(f"warning: {len(overlap)} stor(ies) are in both the training and the held-out pairs (e.g. {sorted(overlap)[0]!r})")
    device = resolve_device(config.device)
    threads = config.threads or (1 if device == "cpu" else 0)
    with torch_threads(threads) as used:
        log(f"training on {device} with {used} CPU thread(s)")
        return _train(train, held_out, Path(out), config, device, card, mlm_stories, progress, log)


def _train(
    train: Sequence[RankedPair],
    held_out: Sequence[RankedPair],
    out: Path,
    config: VrankConfig,
    device: str,
    card: dict[str, Any] | None,
    mlm_stories: Sequence[str],
    progress: Callable[[int, str], Any] | None,
    log: Callable[[str], None],
) -> VrankReport:
    """:func:`train_vrank` once the device and threads are set."""
    import torch

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
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
    state = _read_checkpoint(state_file, device, log)
    if state is not None:
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
            if not bool(torch.isfinite(loss)):
                raise NonFiniteLossError(
                    f"epoch {epoch}, batch {begin // config.batch_size + 1}: the training loss is {loss.item()}; "
                    f"stopped, and no model was written to {out} (try a lower --lr, or --precision fp32)"
                )
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


def _read_checkpoint(state_file: Path, device: str, log: Callable[[str], None]) -> dict[str, Any] | None:
    """The last epoch's checkpoint, or None (absent, or unreadable: then said, and training starts afresh)."""
    from vst_core.models.checkpoints import read_checkpoint

    if not state_file.is_file():
        return None
    try:
        state = read_checkpoint(state_file, "a Vrank training checkpoint", map_location=device)
        if not isinstance(state, dict):
            raise ValueError(f"a {type(state).__name__}, not a dict")
        return state
    except Exception as exc:
        log(f"{state_file} cannot be read ({type(exc).__name__}); starting afresh")
        return None


def _save(ranker: _Ranker, out: Path, config: VrankConfig) -> None:
    from safetensors.torch import save_file

    ranker.encoder.save_pretrained(out / ENCODER_DIR)
    ranker.tokenizer.save_pretrained(out / ENCODER_DIR)
    save_file({k: v.detach().cpu().contiguous() for k, v in ranker.head.state_dict().items()}, str(out / HEAD_FILE))
    meta = {"format": 1, "pooling": ranker.pooling, "max_length": config.max_length, "base": config.base}
    (out / META_FILE).write_text(json.dumps(meta, indent=2))
