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

Layout of the TSV files (``data/RaCCoon.tsv`` and ``data/COIN.tsv`` of the authors' repository,
header :data:`TSV_COLUMNS`): one row per (caption, annotator). ``cb0``/``cb1``/``cb3``/``cb4`` are
the Meta/Visible/Subjective/Story boxes (the other ``cb`` boxes are relations COSMic does not use);
``cbVisible1..5`` and ``cbStory1..5`` rate the caption under that label on 1..5, mapped to
(k - 1) / 4; ``cbMetaGood/Bad`` and ``cbSubjectiveGood/Bad`` rate it good (1) or bad (0);
``cbBrokenImg`` marks an image the annotator could not see. A row whose caption is the prompt
``Please write the caption.`` (COIN) holds a caption written by the annotator in ``other``.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import numpy as np

from vst_core.data.paths import IMAGE_SUFFIXES, check_image
from vst_core.hashing import folder_signature
from vst_core.learned.card import CARD_FILE, PREDICTIONS_FILE
from vst_core.models.cosmic import (
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

#: The header of RaCCoon.tsv and COIN.tsv.
TSV_COLUMNS: tuple[str, ...] = tuple(
    "id_annotation id_annotator caption url cb0 cb1 cb2 cb3 cb4 cb5 cb6 other cbWhen cbHow cbWhere Identification "
    "source cbBrokenImg cbMetaGood cbMetaBad cbVisible1 cbVisible2 cbVisible3 cbVisible4 cbVisible5 cbSubjectiveBad "
    "cbSubjectiveGood cbStory1 cbStory2 cbStory3 cbStory4 cbStory5".split()
)
#: The label boxes of the annotation form.
LABEL_COLUMNS: dict[str, str] = {"Meta": "cb0", "Visible": "cb1", "Subjective": "cb3", "Story": "cb4"}
#: Rating boxes per label and the rating each stands for, in [0, 1].
RATING_COLUMNS: dict[str, tuple[tuple[str, float], ...]] = {
    "Visible": tuple((f"cbVisible{k}", (k - 1) / 4) for k in range(1, 6)),
    "Story": tuple((f"cbStory{k}", (k - 1) / 4) for k in range(1, 6)),
    "Meta": (("cbMetaBad", 0.0), ("cbMetaGood", 1.0)),
    "Subjective": (("cbSubjectiveBad", 0.0), ("cbSubjectiveGood", 1.0)),
}
WRITE_PROMPT = "Please write the caption."
_FLAG_COLUMNS = ("cbBrokenImg", *LABEL_COLUMNS.values(), *(c for cols in RATING_COLUMNS.values() for c, _ in cols))
REQUIRED_COLUMNS: tuple[str, ...] = ("id_annotation", "caption", "url", "other", *_FLAG_COLUMNS)
MAX_TSV_BYTES = 256 * 1024 * 1024

DEVIATIONS: tuple[str, ...] = (
    "image vector: the CLIP image embedding of the run's CLIP model, not the paper's ResNet/ViLBERT features",
    "coherence labels at scoring time are predicted by a logistic head on the candidate's BERT [CLS] (labels_from=predicted)",
    "RaCCoon has no reference caption: a row's reference is another caption of the same image (a written one first, "
    "else the best-rated other caption); its label is that caption's best-rated label",
    "one training example per (row, rated label); ratings mapped to [0, 1]; sigmoid output; Adam instead of SGD",
    "BERT is frozen (the paper's vanilla COSMic reads precomputed [CLS] features)",
    "stories: sentence i with image i is rated against the reference story's sentence i; the story's score is the mean",
)


class CosmicDataError(ValueError):
    """A TSV file that cannot be read as the RaCCoon/COIN layout at all (row problems are values)."""


# ---------------------------------------------------------------- the TSV layout


@dataclass(frozen=True, slots=True)
class CosmicRow:
    """One annotated caption. ``ratings``: (label, rating in [0, 1]) per rated label;
    ``written``: the caption was written by the annotator (COIN), not rated."""

    line: int
    row_id: str
    url: str
    caption: str
    labels: tuple[str, ...] = ()
    ratings: tuple[tuple[str, float], ...] = ()
    broken: bool = False
    written: bool = False

    @property
    def best(self) -> tuple[str, float] | None:
        """The best-rated label and its rating (ties: :data:`LABELS` order), or None."""
        if not self.ratings:
            return None
        return max(self.ratings, key=lambda lr: (lr[1], -LABELS.index(lr[0])))


def _flag(value: str) -> bool | None:
    value = value.strip()
    return {"": False, "0": False, "1": True}.get(value)


def read_cosmic_tsv(path: str | Path) -> tuple[list[CosmicRow], list[Problem]]:
    """Rows of a RaCCoon/COIN-layout TSV and the problems of the rows left out.

    Raises :class:`CosmicDataError` (and nothing else) when the file cannot be read, is not UTF-8,
    or lacks a column of :data:`REQUIRED_COLUMNS`. A row with the wrong number of fields, a box
    that is not 0/1, no URL or no caption is a :class:`Problem` and left out; two ratings for one
    label drop that label's rating (a problem too). Fields are tab-separated, no quoting.
    """
    path = Path(path)
    try:
        if not path.is_file():
            raise CosmicDataError(f"{path}: not a file")
        if path.stat().st_size > MAX_TSV_BYTES:
            raise CosmicDataError(f"{path}: over {MAX_TSV_BYTES >> 20} MiB")
        text = path.read_bytes().decode("utf-8-sig")
    except CosmicDataError:
        raise
    except UnicodeDecodeError as exc:
        raise CosmicDataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:
        raise CosmicDataError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    lines = text.split("\n")
    header = [name.strip() for name in lines[0].rstrip("\r").split("\t")]
    if not any(header):
        raise CosmicDataError(f"{path}: empty file (expected the RaCCoon/COIN header)")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise CosmicDataError(f"{path}: not the RaCCoon/COIN layout, missing columns {', '.join(missing)}")
    duplicated = sorted({c for c in header if c and header.count(c) > 1})
    if duplicated:
        raise CosmicDataError(f"{path}: columns named twice: {', '.join(duplicated)}")
    col = {name: i for i, name in enumerate(header)}
    rows: list[CosmicRow] = []
    problems: list[Problem] = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            problems.append(Problem(f"{len(fields)} fields, the header has {len(header)}", "line", line=number))
            continue
        flags: dict[str, bool] = {}
        bad = ""
        for name in _FLAG_COLUMNS:
            value = _flag(fields[col[name]])
            if value is None:
                bad = f"column {name} holds {fields[col[name]][:20]!r}, not 0 or 1"
                break
            flags[name] = value
        url = fields[col["url"]].strip()
        caption = fields[col["caption"]].strip()
        written = caption == WRITE_PROMPT
        if written:
            caption = fields[col["other"]].strip()
        if bad or not url or not caption:
            problems.append(Problem(bad or ("no image URL" if not url else "no caption"), "line", line=number))
            continue
        ratings: list[tuple[str, float]] = []
        for label in LABELS:
            given = [value for name, value in RATING_COLUMNS[label] if flags[name]]
            if len(given) > 1:
                problems.append(Problem(f"{len(given)} ratings for {label}; that rating left out", "line", "warning", number))
            elif given:
                ratings.append((label, given[0]))
        rated = {label for label, _ in ratings}
        labels = tuple(label for label in LABELS if flags[LABEL_COLUMNS[label]] or label in rated)
        rows.append(
            CosmicRow(
                number,
                fields[col["id_annotation"]].strip(),
                url,
                caption,
                labels,
                tuple(ratings),
                flags["cbBrokenImg"],
                written,
            )
        )
    return rows, problems


# ---------------------------------------------------------------- images of the rows


def url_file_name(url: str) -> str:
    """The file name a download of ``url`` gets: the last segment of its path, percent-decoded.

    >>> url_file_name("http://host/a/photo%201.jpg?itok=x")
    'photo 1.jpg'
    """
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    name = unquote(path.rsplit("/", 1)[-1])
    return "" if name in {".", ".."} or "/" in name or "\0" in name else name


@dataclass(frozen=True)
class ImageLookup:
    """Where each row's image is (by row index), and per distinct image URL what was found."""

    paths: dict[int, Path]
    found: int
    missing: int
    unreadable: int
    ambiguous: int  # URLs whose file name another URL of the file shares (looked up by row id only)


def find_images(rows: Sequence[CosmicRow], images_dir: str | Path) -> ImageLookup:
    """Each row's image in ``images_dir`` (not its subfolders): ``<row id><suffix>`` (the row's
    ``id_annotation``, any suffix of :data:`~vst_core.data.paths.IMAGE_SUFFIXES`) first, else the
    file named as the URL's last path segment (:func:`url_file_name`) unless another URL of the
    TSV ends in the same name. An image that PIL cannot open is unreadable; its rows are skipped.
    Counts are per distinct URL (found when any row of the URL has a readable image)."""
    folder = Path(images_dir)
    if not folder.is_dir():
        raise CosmicDataError(f"images folder {folder} does not exist")
    files = {p.name: p for p in folder.iterdir() if p.is_file()}
    owners: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        owners[url_file_name(row.url)].add(row.url)
    checked: dict[Path, bool] = {}
    paths: dict[int, Path] = {}
    bad_urls: set[str] = set()
    for i, row in enumerate(rows):
        names = [f"{row.row_id}{suffix}" for suffix in IMAGE_SUFFIXES] if row.row_id else []
        by_url = url_file_name(row.url)
        if by_url and len(owners[by_url]) == 1:
            names.append(by_url)
        path = next((files[n] for n in names if n in files), None)
        if path is None:
            continue
        if path not in checked:
            checked[path] = check_image(path) is None
        if checked[path]:
            paths[i] = path
        else:
            bad_urls.add(row.url)
    urls = {row.url for row in rows}
    found = {rows[i].url for i in paths}
    unreadable = len(bad_urls - found)
    ambiguous = sum(len(names) for name, names in owners.items() if name and len(names) > 1)
    return ImageLookup(paths, len(found), len(urls) - len(found) - unreadable, unreadable, ambiguous)


# ---------------------------------------------------------------- training examples


@dataclass(frozen=True, slots=True)
class CosmicExample:
    """(candidate, its label, reference, its label, image) -> rating, from one rated label of a row."""

    url: str
    image: Path
    candidate: str
    label: str
    labels: tuple[str, ...]  # every label of the candidate's row (the label head's target)
    reference: str
    reference_label: str
    rating: float


def _reference_of(row: CosmicRow, others: Sequence[CosmicRow]) -> tuple[str, str] | None:
    """(reference caption, its label): a written caption of the image first, else the other caption
    with the best rating (ties: first in the file); never the same text as ``row``'s."""
    own = row.caption.casefold()
    usable = [o for o in others if o is not row and o.caption.casefold() != own and (o.written or o.best or o.labels)]
    if not usable:
        return None
    best = max(usable, key=lambda o: (o.written, o.best[1] if o.best else -1.0, -o.line))
    if best.written:
        return best.caption, "Visible"  # COIN's captions were written as Visible descriptions
    label = best.best[0] if best.best else best.labels[0]
    return best.caption, label


@dataclass
class ExampleCounts:
    rows: int = 0
    rated_rows: int = 0
    broken_image: int = 0
    no_image: int = 0
    no_reference: int = 0
    examples: int = 0


def cosmic_examples(rows: Sequence[CosmicRow], images: Mapping[int, Path]) -> tuple[list[CosmicExample], ExampleCounts]:
    """One example per rated label of each rated row with an image (``images``: row index -> file)
    and a reference (see :func:`_reference_of`); the counts say what was left out and why."""
    by_url: dict[str, list[CosmicRow]] = defaultdict(list)
    for row in rows:
        by_url[row.url].append(row)
    counts = ExampleCounts(rows=len(rows))
    out: list[CosmicExample] = []
    for i, row in enumerate(rows):
        if not row.ratings:
            continue
        counts.rated_rows += 1
        if row.broken:
            counts.broken_image += 1
            continue
        image = images.get(i)
        if image is None:
            counts.no_image += 1
            continue
        reference = _reference_of(row, by_url[row.url])
        if reference is None:
            counts.no_reference += 1
            continue
        for label, rating in row.ratings:
            out.append(CosmicExample(row.url, image, row.caption, label, row.labels, reference[0], reference[1], rating))
    counts.examples = len(out)
    return out, counts


def split_by_image(
    examples: Sequence[CosmicExample], held_out: float, seed: int
) -> tuple[list[CosmicExample], list[CosmicExample]]:
    """(train, held out): a ``held_out`` fraction of the image URLs (at least one when there are two
    or more), shuffled by ``seed``; all examples of an image fall on the same side."""
    urls = sorted({e.url for e in examples})
    random.Random(seed).shuffle(urls)
    n = max(1, round(len(urls) * held_out)) if len(urls) > 1 and held_out > 0 else 0
    held = set(urls[:n])
    return [e for e in examples if e.url not in held], [e for e in examples if e.url in held]


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
    from vst_core.models.hub import load_hf

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
    with (out / PREDICTIONS_FILE).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(predictions[0]) if predictions else ["url"])
        writer.writeheader()
        writer.writerows(predictions)
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
