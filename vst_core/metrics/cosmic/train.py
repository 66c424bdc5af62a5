"""COSMic's recipe (Inan et al., 2021): a learned, reference-based, coherence-aware caption rater,
trained here on RaCCoon-layout ratings and applied to stories sentence by sentence.

The rater is an MLP over five parts: BERT's [CLS] vector of the candidate caption and of the
reference caption, a one-hot coherence label for each (:data:`LABELS`) and an image vector, reduced
to one rating in [0, 1], trained with MSE. A logistic label head on the candidate's [CLS] is trained
alongside, so that stories (which carry no coherence labels) get predicted ones.

Stated deviations from the paper (also in every card and in ``docs/metrics/cosmic.md``): the image
vector is the run's CLIP image embedding (not ResNet/ViLBERT features); labels at scoring time are
predicted (``labels_from="predicted"``); RaCCoon has no reference column, so a row's reference is
another caption of the same image (:func:`cosmic_examples`); the output goes through a sigmoid; the
optimizer is Adam, not SGD.

The training data (the RaCCoon/COIN TSV layout, the rows' images, the examples and their split)
is read by :mod:`.examples`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vst_core.data.csv_out import write_csv
from vst_core.hashing import folder_signature
from vst_core.learned.card import CARD_FILE, PREDICTIONS_FILE
from vst_core.metrics.cosmic.rater import (
    FORMAT,
    LABELS,
    WEIGHTS_FILE,
    CosmicModel,
    _cls_vectors,
    _one_hot,
    _rater_module,
)
from vst_core.problems import Problem

if TYPE_CHECKING:
    from vst_core.models.protocols import ImageTextEncoder
from vst_core.metrics.cosmic.examples import (
    CosmicDataError,
    CosmicExample,
    ExampleCounts,
    ImageLookup,
    cosmic_examples,
    find_images,
    read_cosmic_tsv,
    split_by_image,
)

DEVIATIONS: tuple[str, ...] = (
    "image vector: the CLIP image embedding of the run's CLIP model, not the paper's ResNet/ViLBERT features",
    "coherence labels at scoring time are predicted by a logistic head on the candidate's BERT [CLS] (labels_from=predicted)",
    "RaCCoon has no reference caption: a row's reference is another caption of the same image (a written one first, "
    "else the best-rated other caption); its label is that caption's best-rated label",
    "one training example per (row, rated label); ratings mapped to [0, 1]; sigmoid output; Adam instead of SGD",
    "BERT is frozen (the paper's vanilla COSMic reads precomputed [CLS] features)",
    "stories: sentence i with image i is rated against the reference story's sentence i; the story's score is the mean",
)


# ---------------------------------------------------------------- training


@dataclass(frozen=True)
class CosmicConfig:
    """Trainer settings. ``base``: a BERT (hub id or folder), kept frozen; ``held_out``: the fraction
    of images held out when no test TSV is given."""

    base: str = "bert-base-uncased"
    epochs: int = 30
    batch_size: int = 32
    learning_rate: float = 1e-3
    hidden_size: int = 256
    held_out: float = 0.1
    max_length: int = 64
    seed: int = 13
    device: str = "auto"


@dataclass
class CosmicReport:
    out: str
    train_examples: int
    held_out_examples: int
    held_out_from: str  # "test TSV", "split by image" or "none"
    figures: dict[str, float | int | None]
    images: dict[str, int]
    train_loss: float | None = None


def _data_entry(path: Path, problems: list[Problem], counts: ExampleCounts) -> dict[str, Any]:
    from vst_core.hashing import file_digest

    return {"file": path.name, "sha256": file_digest(path), "problems": len(problems), **asdict(counts)}


def _read_examples(
    tsv: Path, images_dir: Path, log: Callable[[str], None]
) -> tuple[list[CosmicExample], dict[str, Any], ImageLookup]:
    rows, problems = read_cosmic_tsv(tsv)
    for problem in problems[:5]:
        log(f"{tsv.name}: {problem}")
    if len(problems) > 5:
        log(f"{tsv.name}: {len(problems) - 5} more row problems")
    lookup = find_images(rows, images_dir)
    examples, counts = cosmic_examples(rows, lookup.paths)
    log(
        f"{tsv.name}: {len(rows)} rows, {counts.rated_rows} rated; images found for {lookup.found} URLs, "
        f"missing {lookup.missing}, unreadable {lookup.unreadable}; skipped rows: {counts.broken_image} broken image, "
        f"{counts.no_image} no image, {counts.no_reference} no reference; {counts.examples} examples"
    )
    return examples, _data_entry(tsv, problems, counts), lookup


def _correlations(gold: Sequence[float], predicted: Sequence[float]) -> tuple[float | None, float | None]:
    """(Pearson r, Kendall τ-b); None where undefined (fewer than two values, or a constant side)."""
    from scipy import stats

    if len(gold) < 2 or len(set(gold)) < 2 or float(np.ptp(np.asarray(predicted))) == 0.0:
        return None, None
    r = float(stats.pearsonr(gold, predicted)[0])
    tau = float(stats.kendalltau(gold, predicted)[0])
    return (r if math.isfinite(r) else None), (tau if math.isfinite(tau) else None)


def _base_digest(base: str) -> str:
    from vst_core.hashing import weights_digest
    from vst_core.models.hub import HF_WEIGHT_FILES, hub_file

    found = hub_file(base, HF_WEIGHT_FILES)
    return weights_digest(found) if found is not None else "unknown"


def _fit(
    torch: Any,
    rater: Any,
    head: Any,
    optimizer: Any,
    train_t: Sequence[Any],
    label_data: tuple[Any, Any, Any, Any],
    config: CosmicConfig,
    generator: Any,
    bar: Any,
) -> float | None:
    """``config.epochs`` passes of Adam on MSE(rating) + cross-entropy(label head); the last epoch's mean loss."""
    head_x, head_y, head_mean, head_std = label_data
    n = len(train_t[0])
    loss_value: float | None = None
    for _ in range(config.epochs):
        rater.train()
        order = torch.randperm(n, generator=generator)
        total = 0.0
        for start in range(0, n, config.batch_size):
            idx = order[start : start + config.batch_size].to(train_t[0].device)
            *inputs, rating = (t[idx] for t in train_t)
            loss = torch.nn.functional.mse_loss(rater(*inputs), rating)
            if len(head_x):
                pick = torch.randint(len(head_x), (min(len(head_x), config.batch_size),), generator=generator)
                pick = pick.to(head_x.device)
                loss = loss + torch.nn.functional.cross_entropy(head((head_x[pick] - head_mean) / head_std), head_y[pick])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        loss_value = total / n
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_value:.4f}")
    if bar is not None:
        bar.close()
    return loss_value


def train_cosmic(
    train_tsv: str | Path,
    images_dir: str | Path,
    out: str | Path,
    config: CosmicConfig = CosmicConfig(),
    *,
    clip: ImageTextEncoder | Callable[[], ImageTextEncoder],
    test_tsv: str | Path | None = None,
    progress: Callable[[int, str], Any] | None = None,
    log: Callable[[str], None] = print,
) -> CosmicReport:
    """Train COSMic's rater and label head on a RaCCoon-layout TSV and write the folder ``out``.

    BERT stays frozen: the paper's vanilla COSMic feeds the MLP precomputed [CLS] features, and a
    frozen encoder lets every caption be encoded once, so training is minutes on a CPU and the
    folder's BERT is exactly the base. ``clip`` (or a callable returning it, called only once the
    data has been read) gives the image vectors. Held-out figures come from ``test_tsv`` when it
    has rated rows, else from a split by image. Writes BERT and its tokenizer (save_pretrained),
    ``config.json`` (BERT's, with the trainer's settings under ``cosmic``), ``cosmic.safetensors``,
    ``card.json`` and ``predictions.csv``. Raises :class:`CosmicDataError` (a ValueError) for
    unreadable data or no usable example, :class:`WeightsUnavailableError` for a missing base.
    """
    train_tsv, images_dir, out = Path(train_tsv), Path(images_dir), Path(out)
    examples, train_entry, lookup = _read_examples(train_tsv, images_dir, log)
    test_entry: dict[str, Any] | None = None
    held: list[CosmicExample] = []
    if test_tsv is not None:
        held, test_entry, _ = _read_examples(Path(test_tsv), images_dir, log)
        if not held:
            log(f"warning: {Path(test_tsv).name} has no rated rows with images and references; holding out images instead")
    if held:
        train, held_from = examples, "test TSV"
    else:
        train, held = split_by_image(examples, config.held_out, config.seed)
        held_from = "split by image" if held else "none"
    if not train:
        raise CosmicDataError(
            f"{train_tsv.name}: no training example (rated rows whose image is in {images_dir} and whose image has another caption)"
        )
    import torch

    from vst_core.models.device import resolve_device
    from vst_core.models.folders import load_hf

    torch.manual_seed(config.seed)
    device = resolve_device(config.device)
    encoder = clip() if callable(clip) else clip
    from transformers import AutoModel, AutoTokenizer

    tokenizer = load_hf(config.base, AutoTokenizer.from_pretrained, "COSMic base model tokenizer", " with --base PATH")
    bert = load_hf(config.base, AutoModel.from_pretrained, "COSMic base model", " with --base PATH").to(device).eval()
    every = train + held
    texts = sorted({t for e in every for t in (e.candidate, e.reference)})
    n_batches = -(-len(texts) // config.batch_size)
    bar = progress(n_batches, "BERT [CLS]") if progress else None
    vectors = _cls_vectors(bert, tokenizer, texts, device, batch_size=config.batch_size, max_length=config.max_length, bar=bar)
    row = {t: k for k, t in enumerate(texts)}
    paths = sorted({e.image for e in every}, key=str)
    from vst_core.data.images import open_image

    pictures = encoder.encode_images(paths, load=open_image)
    picture_row = {p: k for k, p in enumerate(paths)}

    def tensors(part: Sequence[CosmicExample]) -> list[Any]:
        arrays = (
            vectors[[row[e.candidate] for e in part]],
            _one_hot([e.label for e in part]),
            vectors[[row[e.reference] for e in part]],
            _one_hot([e.reference_label for e in part]),
            pictures[[picture_row[e.image] for e in part]],
            np.asarray([e.rating for e in part], np.float32),
        )
        return [torch.from_numpy(np.ascontiguousarray(a, np.float32)).to(device) for a in arrays]

    rater = _rater_module(vectors.shape[1], pictures.shape[1], config.hidden_size).to(device)
    train_t = tensors(train)
    with torch.no_grad():
        feats = torch.cat([train_t[0], train_t[2]])
        rater.caption_mean.copy_(feats.mean(0))
        rater.caption_std.copy_(feats.std(0, unbiased=False).clamp_min(1e-6))
        rater.image_mean.copy_(train_t[4].mean(0))
        rater.image_std.copy_(train_t[4].std(0, unbiased=False).clamp_min(1e-6))
    # the label head's data: each distinct candidate with its row's labels as a distribution
    targets: dict[str, np.ndarray] = {}
    for e in train:
        if e.labels:
            targets[e.candidate] = _one_hot(e.labels).sum(0) / len(e.labels)
    head_x = torch.from_numpy(vectors[[row[t] for t in targets]]).to(device)
    head_y = torch.from_numpy(np.stack(list(targets.values())) if targets else np.zeros((0, len(LABELS)), np.float32)).to(device)
    head_mean = head_x.mean(0) if len(head_x) else torch.zeros(vectors.shape[1], device=device)
    head_std = head_x.std(0, unbiased=False).clamp_min(1e-6) if len(head_x) > 1 else torch.ones(vectors.shape[1], device=device)
    head = torch.nn.Linear(vectors.shape[1], len(LABELS)).to(device)
    optimizer = torch.optim.Adam([*rater.parameters(), *head.parameters()], lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    bar = progress(config.epochs, "epochs") if progress else None
    loss_value: float | None = None
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)  # steps this small only wait on each other across threads
    try:
        loss_value = _fit(torch, rater, head, optimizer, train_t, (head_x, head_y, head_mean, head_std), config, generator, bar)
    finally:
        torch.set_num_threads(threads)
    rater.eval()
    # fold the label head's standardisation into its weights, so the saved head reads raw [CLS] vectors
    classifier = torch.nn.Linear(vectors.shape[1], len(LABELS)).to(device)
    with torch.no_grad():
        classifier.weight.copy_(head.weight / head_std)
        classifier.bias.copy_(head.bias - (head.weight * head_mean / head_std).sum(1))
    clip_signature = str(encoder.signature)
    model = CosmicModel("", bert, tokenizer, rater, classifier, device, clip=clip_signature, max_length=config.max_length)
    figures: dict[str, float | int | None] = {"n": len(held), "images": len({e.url for e in held})}
    predictions: list[dict[str, Any]] = []
    if held:
        c, lab, r, rl, v, gold_t = tensors(held)
        with torch.inference_mode():
            given = rater(c, lab, r, rl, v).float().cpu().numpy()
        cand_labels = model.labels(vectors[[row[e.candidate] for e in held]])
        ref_labels = model.labels(vectors[[row[e.reference] for e in held]])
        with_predicted = model.rate(
            vectors[[row[e.candidate] for e in held]],
            cand_labels,
            vectors[[row[e.reference] for e in held]],
            ref_labels,
            pictures[[picture_row[e.image] for e in held]],
        )
        gold = [e.rating for e in held]
        figures["pearson"], figures["kendall"] = _correlations(gold, given.tolist())
        figures["pearson_predicted_labels"], figures["kendall_predicted_labels"] = _correlations(gold, with_predicted.tolist())
        figures["mse"] = float(np.mean((given - np.asarray(gold)) ** 2))
        labelled = [(p, e.labels) for p, e in zip(cand_labels, held, strict=True) if e.labels]
        figures["label_accuracy"] = sum(p in ls for p, ls in labelled) / len(labelled) if labelled else None
        for e, g, p, cl in zip(held, given.tolist(), with_predicted.tolist(), cand_labels, strict=True):
            predictions.append(
                {
                    "url": e.url,
                    "candidate": e.candidate,
                    "label": e.label,
                    "reference": e.reference,
                    "reference_label": e.reference_label,
                    "rating": e.rating,
                    "predicted": g,
                    "predicted_label": cl,
                    "predicted_with_predicted_labels": p,
                }
            )
    shown = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
    log(f"held out ({held_from}): {shown}")
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": FORMAT,
        "labels": list(LABELS),
        "caption_dim": int(vectors.shape[1]),
        "image_dim": int(pictures.shape[1]),
        "hidden_size": config.hidden_size,
        "max_length": config.max_length,
        "clip": clip_signature,
        "trainer": asdict(config),
    }
    bert.config.cosmic = meta
    bert.save_pretrained(out)
    tokenizer.save_pretrained(out)
    from safetensors.torch import save_file

    state = {f"rater.{k}": v.detach().cpu().contiguous() for k, v in rater.state_dict().items()}
    state.update({f"labels.{k}": v.detach().cpu().contiguous() for k, v in classifier.state_dict().items()})
    save_file(state, str(out / WEIGHTS_FILE))
    columns = list(predictions[0]) if predictions else ["url"]
    write_csv(out / PREDICTIONS_FILE, pd.DataFrame(predictions, columns=columns, dtype=object))  # captions safe in a spreadsheet
    images = {
        "found": lookup.found,
        "missing": lookup.missing,
        "unreadable": lookup.unreadable,
        "ambiguous_names": lookup.ambiguous,
    }
    card = {
        "metric": "COSMic recipe (Inan et al., 2021)",
        "model": folder_signature(out, "cosmic"),
        "base": {"name": config.base, "weights_digest": _base_digest(config.base), "frozen": True},
        "clip": clip_signature,
        "data": {"train": train_entry, "test": test_entry},
        "images": images,
        "split": {"held_out_from": held_from, "train_examples": len(train), "held_out_examples": len(held)},
        "held_out": figures,
        "train_loss": loss_value,
        "config": asdict(config),
        "labels": list(LABELS),
        "deviations": list(DEVIATIONS),
    }
    (out / CARD_FILE).write_text(json.dumps(card, indent=2), encoding="utf-8")
    return CosmicReport(str(out), len(train), len(held), held_from, figures, images, loss_value)
