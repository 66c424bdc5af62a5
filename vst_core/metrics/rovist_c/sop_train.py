"""Fine-tune a sentence-order classifier (RoViST §3.2) on any story set the product reads.

Positives are adjacent sentence pairs in their order (label 1, ``in_order``), negatives the same
pairs swapped (label 0, ``swapped``). The held-out split is made by image sequence, so no
sequence has pairs on both sides. The best epoch (held-out loss) is saved as a
sequence-classification checkpoint directory that ``score --coherence-model DIR`` accepts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vst_core.data import StorySet
from vst_core.metrics.rovist_c.scorers import SOP_META_FILE, pairs_of
from vst_core.models.device import resolve_device
from vst_core.models.folders import load_hf

LABELS = {0: "swapped", 1: "in_order"}


@dataclass(frozen=True)
class SOPConfig:
    base: str = "bert-base-uncased"
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    held_out: float = 0.1
    patience: int = 2
    max_length: int = 128
    seed: int = 13
    device: str = "auto"


@dataclass
class EpochReport:
    epoch: int
    train_loss: float
    held_out_loss: float
    held_out_accuracy: float | None  # None without a held-out split


@dataclass
class SOPReport:
    out: str
    train_pairs: int
    held_out_pairs: int
    epochs: list[EpochReport] = field(default_factory=list)
    best_epoch: int | None = None
    stopped_early: bool = False


def sop_examples(
    story_set: StorySet, *, held_out: float, seed: int
) -> tuple[list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """(A, B, label) examples split by sequence: every adjacent pair in order (1) and swapped (0)."""
    sequences = sorted(story_set.sequences())
    rng = random.Random(seed)
    rng.shuffle(sequences)
    n_held = max(1, round(len(sequences) * held_out)) if len(sequences) > 1 and held_out > 0 else 0
    held = set(sequences[:n_held])
    train: list[tuple[str, str, int]] = []
    test: list[tuple[str, str, int]] = []
    for story in story_set:
        target = test if story.sequence_id in held else train
        for a, b in pairs_of(story.sentences):
            if a.strip() and b.strip() and a.strip() != b.strip():
                target.append((a, b, 1))
                target.append((b, a, 0))
    rng.shuffle(train)
    return train, test


class _Trainer:
    """A sequence classifier, its tokenizer and optimizer, trained one epoch at a time."""

    def __init__(self, config: SOPConfig, device: str) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.config, self.device, self.torch = config, device, torch
        self.tokenizer = load_hf(config.base, AutoTokenizer.from_pretrained, "base model tokenizer", " with --base PATH")
        self.model = load_hf(
            config.base,
            lambda name, **kw: AutoModelForSequenceClassification.from_pretrained(
                name, num_labels=2, id2label=LABELS, label2id={v: k for k, v in LABELS.items()}, **kw
            ),
            "base model",
            " with --base PATH",
        ).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)

    def batches(self, examples: list[tuple[str, str, int]]) -> Any:
        """(tokenised batch with labels on the device, its size)."""
        size = self.config.batch_size
        for start in range(0, len(examples), size):
            chunk = examples[start : start + size]
            enc = self.tokenizer(
                [a for a, _, _ in chunk],
                [b for _, b, _ in chunk],
                padding=True,
                truncation="longest_first",
                max_length=self.config.max_length,
                return_tensors="pt",
            )
            enc["labels"] = self.torch.tensor([y for _, _, y in chunk])
            yield {k: v.to(self.device) for k, v in enc.items()}, len(chunk)

    def evaluate(self, examples: list[tuple[str, str, int]]) -> tuple[float, float]:
        """(mean loss, accuracy) on ``examples``."""
        self.model.eval()
        total_loss, correct = 0.0, 0
        with self.torch.inference_mode():
            for batch, size in self.batches(examples):
                output = self.model(**batch)
                total_loss += float(output.loss) * size
                correct += int((output.logits.argmax(-1) == batch["labels"]).sum())
        return total_loss / len(examples), correct / len(examples)

    def epoch(self, train: list[tuple[str, str, int]], number: int, bar: Any) -> float:
        """One pass over ``train`` shuffled by (seed + epoch); the mean training loss."""
        self.model.train()
        running, seen = 0.0, 0
        order = train[:]
        random.Random(self.config.seed + number).shuffle(order)
        for batch, size in self.batches(order):
            output = self.model(**batch)
            output.loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            running += output.loss.item() * size
            seen += size
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{running / seen:.4f}")
        if bar is not None:
            bar.close()
        return running / seen

    def save(self, out: Path) -> None:
        self.model.save_pretrained(out)
        self.tokenizer.save_pretrained(out)


def train_sop(
    story_set: StorySet,
    out: str | Path,
    config: SOPConfig = SOPConfig(),
    *,
    progress: Callable[[int, str], Any] | None = None,
    log: Callable[[str], None] = print,
) -> SOPReport:
    """Fine-tune ``config.base`` for sentence order; write the best epoch (lowest held-out loss) to
    ``out``; stop after ``config.patience`` epochs without improvement."""
    import torch

    torch.manual_seed(config.seed)
    train, test = sop_examples(story_set, held_out=config.held_out, seed=config.seed)
    if not train:
        raise ValueError("no training pairs: the story set needs stories with at least two distinct sentences")
    if not test:
        log("warning: no held-out pairs (fewer than two sequences); early stopping uses the training loss")
    trainer = _Trainer(config, resolve_device(config.device))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = SOPReport(out=str(out), train_pairs=len(train), held_out_pairs=len(test))
    best, stale = float("inf"), 0
    n_batches = (len(train) + config.batch_size - 1) // config.batch_size
    for epoch in range(1, config.epochs + 1):
        bar = progress(n_batches, f"epoch {epoch}/{config.epochs}") if progress else None
        train_loss = trainer.epoch(train, epoch, bar)
        held_loss, held_acc = trainer.evaluate(test) if test else (train_loss, None)
        report.epochs.append(EpochReport(epoch, train_loss, held_loss, held_acc))
        accuracy = "n/a" if held_acc is None else f"{held_acc:.3f}"
        log(f"epoch {epoch}: train loss {train_loss:.4f} · held-out loss {held_loss:.4f} · held-out accuracy {accuracy}")
        if held_loss < best:
            best, stale = held_loss, 0
            report.best_epoch = epoch
            trainer.save(out)
            continue
        stale += 1
        if stale >= config.patience:
            report.stopped_early = True
            log(f"early stop: no held-out improvement for {config.patience} epochs")
            break
    meta = {"config": asdict(config), "report": asdict(report), "labels": LABELS, "source": story_set.source}
    (out / SOP_META_FILE).write_text(json.dumps(meta, indent=2))
    return report
