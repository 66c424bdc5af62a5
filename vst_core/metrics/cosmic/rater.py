"""COSMic's rater (Inan et al., 2021) as a model: loading a folder written by ``vst train-cosmic``
(:mod:`.train`, where the recipe and its stated deviations are) and rating each
sentence of a story with its image against the reference story's sentence.

The rater is an MLP over BERT's [CLS] vector of the candidate and of the reference, a one-hot
coherence label for each (:data:`LABELS`) and the run's CLIP image vector, reduced to one rating in
[0, 1]; a logistic head on the candidate's [CLS] predicts its label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vst_core.data import Story
from vst_core.data.paths import ImagePathError, check_image, resolve_image
from vst_core.hashing import folder_signature
from vst_core.metrics.cosmic.record import CosmicScores, CosmicSentence
from vst_core.models.folders import check_transformers_folder, load_state, loading, model_folder, read_safetensors, read_settings
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError, option

if TYPE_CHECKING:
    from vst_core.models.protocols import ImageTextEncoder

#: COSMic's coherence labels, in the order of the one-hot vectors.
LABELS: tuple[str, ...] = ("Visible", "Subjective", "Story", "Meta")
FORMAT = "vst-cosmic/1"
WEIGHTS_FILE = "cosmic.safetensors"
PROBE_SENTENCE = "A dog ran to the sea, zyx ✓ 42 … «unknown» words!"
CONFIG_FILE = "config.json"  # BERT's config, with the trainer's settings under "cosmic"


def _rater_module(caption_dim: int, image_dim: int, hidden: int) -> Any:
    """The rating MLP: each part projected (the two captions share a projection, so do the two
    labels), the five concatenated, two hidden layers, a sigmoid rating. Inputs are standardised
    by buffers set from the training features."""
    import torch
    from torch import nn

    class Rater(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.caption = nn.Sequential(nn.Linear(caption_dim, hidden), nn.ReLU())
            self.label = nn.Sequential(nn.Linear(len(LABELS), hidden), nn.ReLU())
            self.image = nn.Sequential(nn.Linear(image_dim, hidden), nn.ReLU())
            half = max(1, hidden // 2)
            self.head = nn.Sequential(
                nn.Linear(5 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, half), nn.ReLU(), nn.Linear(half, 1)
            )
            for name, dim in (("caption", caption_dim), ("image", image_dim)):
                self.register_buffer(f"{name}_mean", torch.zeros(dim))
                self.register_buffer(f"{name}_std", torch.ones(dim))

        def forward(self, candidate: Any, label: Any, reference: Any, reference_label: Any, image: Any) -> Any:
            def text(x: Any) -> Any:
                return self.caption((x - self.caption_mean) / self.caption_std)

            picture = self.image((image - self.image_mean) / self.image_std)
            parts = [text(candidate), text(reference), self.label(label), self.label(reference_label), picture]
            return torch.sigmoid(self.head(torch.cat(parts, dim=-1))).squeeze(-1)

    return Rater()


def _cls_vectors(
    bert: Any,
    tokenizer: Any,
    texts: Sequence[str],
    device: str,
    *,
    batch_size: int,
    max_length: int,
    bar: Any = None,
) -> np.ndarray:
    """(N, H) float32: BERT's last-layer [CLS] vector of each text, batched by length."""
    import torch

    max_length = min(max_length, int(getattr(bert.config, "max_position_embeddings", max_length) or max_length))
    out = np.zeros((len(texts), int(bert.config.hidden_size)), np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    bert.eval()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt").to(
            device
        )
        with torch.inference_mode():
            hidden = bert(**enc).last_hidden_state[:, 0]
        out[idx] = hidden.float().cpu().numpy()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _one_hot(labels: Sequence[str]) -> np.ndarray:
    out = np.zeros((len(labels), len(LABELS)), np.float32)
    for i, label in enumerate(labels):
        out[i, LABELS.index(label)] = 1.0
    return out


class CosmicModel:
    """A trained COSMic folder loaded for scoring: BERT + tokenizer, the rating MLP (``rater``), the
    label head (``classifier``) on ``device``. ``name`` is the folder's
    :func:`~vst_core.learned.folder_signature`; ``clip`` the CLIP signature it was trained with."""

    def __init__(
        self,
        name: str,
        bert: Any,
        tokenizer: Any,
        rater: Any,
        classifier: Any,
        device: str,
        *,
        clip: str,
        max_length: int = 64,
        batch_size: int = 32,
    ) -> None:
        self.name = name
        self.bert = bert
        self.tokenizer = tokenizer
        self.rater = rater
        self.classifier = classifier
        self.device = device
        self.clip = clip
        self.max_length = max_length
        self.batch_size = batch_size

    def cls(self, texts: Sequence[str]) -> np.ndarray:
        """BERT [CLS] vectors of ``texts``, in batches."""
        return _cls_vectors(self.bert, self.tokenizer, texts, self.device, batch_size=self.batch_size, max_length=self.max_length)

    def labels(self, cls: np.ndarray) -> list[str]:
        """The predicted coherence label of each [CLS] vector."""
        import torch

        if not len(cls):
            return []
        with torch.inference_mode():
            logits = self.classifier(torch.from_numpy(cls).to(self.device))
        return [LABELS[int(k)] for k in logits.argmax(-1).cpu()]

    def rate(
        self,
        candidate: np.ndarray,
        label: Sequence[str],
        reference: np.ndarray,
        reference_label: Sequence[str],
        image: np.ndarray,
    ) -> np.ndarray:
        """(N,) ratings in [0, 1] of N aligned inputs."""
        import torch

        if not len(candidate):
            return np.zeros(0, np.float32)
        ratings: list[np.ndarray] = []
        for s in range(0, len(candidate), 1024):
            parts = (candidate[s : s + 1024], _one_hot(label[s : s + 1024]), reference[s : s + 1024])
            rest = (_one_hot(reference_label[s : s + 1024]), image[s : s + 1024])
            tensors = [torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(self.device) for x in (*parts, *rest)]
            with torch.inference_mode():
                ratings.append(self.rater(*tensors).float().cpu().numpy())
        return np.concatenate(ratings)


_FIX = "train one with `vst train-cosmic TSV --images DIR --out DIR`"


def _read_config(path: Path) -> dict[str, Any]:
    """The trainer's settings in ``config.json`` (key ``cosmic``); ModelLoadError when the folder was
    not written by ``vst train-cosmic``."""
    config_file, weights = path / CONFIG_FILE, path / WEIGHTS_FILE
    if not config_file.exists() or not weights.exists():
        raise ModelLoadError(f"{path} is not a COSMic folder (no {CONFIG_FILE} and {WEIGHTS_FILE}); {_FIX}")
    what = f"COSMic folder {path.name}"
    config = read_settings(config_file, what, {}, {"cosmic": dict}, _FIX)
    meta = config.get("cosmic")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelLoadError(f"{path} was not written by vst train-cosmic ({CONFIG_FILE} has no {FORMAT!r} entry); {_FIX}")
    for key, kind in (("caption_dim", int), ("image_dim", int), ("hidden_size", int), ("clip", str)):
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise ModelLoadError(f"{config_file}: entry cosmic.{key} is missing or not {kind.__name__}; {_FIX}")
    for key in ("caption_dim", "image_dim", "hidden_size"):
        if not 1 <= meta[key] <= 65_536:
            raise ModelLoadError(f"{config_file}: entry cosmic.{key} is {meta[key]}, outside 1-65536; {_FIX}")
    if not isinstance(meta.get("max_length", 64), int) or not 8 <= meta.get("max_length", 64) <= 8192:
        raise ModelLoadError(f"{config_file}: entry cosmic.max_length is not a whole number in 8-8192; {_FIX}")
    return meta


def load_cosmic(folder: str | None, *, device: str = "auto") -> CosmicModel:
    """Load a folder written by :func:`train_cosmic` (safetensors only).

    Raises :class:`WeightsUnavailableError` when ``folder`` is None or missing (no weights are
    released: train them) and :class:`ModelLoadError` for a folder the trainer did not write, or
    with a file missing, damaged, of the wrong shape or not safetensors
    (:mod:`vst_core.models.folders`)."""
    if not folder or not Path(folder).is_dir():
        where = f" ({folder} does not exist)" if folder else ""
        raise WeightsUnavailableError(
            f"COSMic needs {option('cosmic_model', 'DIR')}, a folder written by `vst train-cosmic TSV --images DIR --out DIR`{where}; "
            "its authors released no weights"
        )
    path = model_folder(folder, "COSMic")
    meta = _read_config(path)
    what = f"COSMic folder {path.name}"
    state = read_safetensors(path / WEIGHTS_FILE, what, _FIX)
    check_transformers_folder(path, what, _FIX)
    import torch
    from transformers import AutoModel, AutoTokenizer

    from vst_core.models.device import resolve_device

    device = resolve_device(device)
    with loading(what, _FIX):
        bert = AutoModel.from_pretrained(str(path), local_files_only=True, use_safetensors=True).to(device).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if int(getattr(bert.config, "hidden_size", -1)) != meta["caption_dim"]:
        raise ModelLoadError(
            f"{what}: BERT's width {bert.config.hidden_size} is not cosmic.caption_dim {meta['caption_dim']}; {_FIX}"
        )
    rater = _rater_module(meta["caption_dim"], meta["image_dim"], meta["hidden_size"])
    load_state(rater, {k[6:]: v for k, v in state.items() if k.startswith("rater.")}, f"{what}: the rater", _FIX)
    classifier = torch.nn.Linear(meta["caption_dim"], len(LABELS))
    load_state(classifier, {k[7:]: v for k, v in state.items() if k.startswith("labels.")}, f"{what}: the label head", _FIX)
    model = CosmicModel(
        folder_signature(path, "cosmic"),
        bert,
        tokenizer,
        rater.to(device).eval(),
        classifier.to(device).eval(),
        device,
        clip=meta["clip"],
        max_length=int(meta.get("max_length", 64)),
    )
    with loading(f"{what}: a first sentence", _FIX):  # what loads but cannot read text (e.g. a damaged vocabulary)
        probe = model.cls([PROBE_SENTENCE])
        model.labels(probe)
    if not np.isfinite(probe).all():
        raise ModelLoadError(f"{what}: BERT gives non-finite vectors for a probe sentence; {_FIX}")
    return model


# ---------------------------------------------------------------- scoring stories


@dataclass
class _Job:
    story: Story
    reference: Story
    notes: list[str] = field(default_factory=list)
    # per sentence: (candidate text, reference text, image path or None), None where the sentence is empty
    items: list[tuple[str, str, Path | None] | None] = field(default_factory=list)


def cosmic_records(
    jobs: Sequence[tuple[Story, Story]], model: CosmicModel, clip: ImageTextEncoder, root: Path
) -> Mapping[tuple[str, str], CosmicScores | str]:
    """COSMic on each (candidate, reference story of the same sequence), keyed by the candidate's
    ``Story.key``: sentence i with image i (``root / images[i]``, CLIP) rated against the
    reference's sentence i, labels predicted for both; score = mean of the rated sentences.

    A sentence without its image or its reference sentence gets rating None and a note; a story
    none of whose sentences could be rated gets the reason as a string. All sentences go through
    BERT in batches, all images through CLIP in one call."""
    if model.clip != clip.signature:
        reason = (
            f"COSMic model {model.name} was trained on image vectors of CLIP {model.clip}, this run's CLIP is "
            f"{clip.signature}: score with the CLIP options it was trained with"
        )
        return {story.key: reason for story, _ in jobs}
    prepared: list[_Job] = []
    images: dict[Path, str | None] = {}
    for story, reference in jobs:
        job = _Job(story, reference)
        for i, sentence in enumerate(story.sentences):
            ref = reference.sentences[i].strip() if i < len(reference.sentences) else ""
            if not sentence.strip():
                job.items.append(None)
                job.notes.append(f"sentence {i + 1}: empty")
                continue
            path: Path | None = None
            if i >= len(story.images):
                job.notes.append(f"sentence {i + 1}: no image {i + 1}")
            else:
                try:
                    path = resolve_image(root, story.images[i])
                except ImagePathError as exc:
                    job.notes.append(f"sentence {i + 1}: {exc}")
                if path is not None:
                    if path not in images:
                        images[path] = check_image(path)
                    if images[path] is not None:
                        job.notes.append(f"sentence {i + 1}: {images[path]}")
                        path = None
            if not ref:
                job.notes.append(
                    f"sentence {i + 1}: the reference story {reference.system}:{reference.story_id} has no sentence {i + 1}"
                )
            job.items.append((sentence, ref, path))
        prepared.append(job)
    texts = sorted({t for job in prepared for item in job.items if item for t in item[:2] if t})
    vectors = model.cls(texts) if texts else np.zeros((0, 1), np.float32)
    row = {t: k for k, t in enumerate(texts)}
    predicted = dict(zip(texts, model.labels(vectors), strict=True))
    usable = sorted((p for p, why in images.items() if why is None), key=str)
    try:
        from vst_core.data.images import open_image

        encoded = clip.encode_images(usable, load=open_image) if usable else np.zeros((0, 1), np.float32)
    except Exception as exc:  # a file that changed since it was checked: every story says so
        reason = f"COSMic: images could not be encoded ({type(exc).__name__}: {str(exc)[:200]})"
        return {job.story.key: reason for job in prepared}
    image_row = {p: k for k, p in enumerate(usable)}
    wanted = [(j, i) for j, job in enumerate(prepared) for i, item in enumerate(job.items) if item and item[1] and item[2]]
    ratings: dict[tuple[int, int], float] = {}
    if wanted:
        items = [prepared[j].items[i] for j, i in wanted]
        cand = [it[0] for it in items if it]
        refs = [it[1] for it in items if it]
        paths = [it[2] for it in items if it and it[2]]
        scores = model.rate(
            vectors[[row[t] for t in cand]],
            [predicted[t] for t in cand],
            vectors[[row[t] for t in refs]],
            [predicted[t] for t in refs],
            encoded[[image_row[p] for p in paths]],
        )
        ratings = {key: float(value) for key, value in zip(wanted, scores, strict=True)}
    out: dict[tuple[str, str], CosmicScores | str] = {}
    for j, job in enumerate(prepared):
        sentences: list[CosmicSentence] = []
        for i, item in enumerate(job.items):
            if item is None:
                sentences.append(CosmicSentence(i, None, "", "", ""))
                continue
            text, ref, _ = item
            sentences.append(
                CosmicSentence(i, ratings.get((j, i)), predicted[text], predicted.get(ref, ""), ref, labels_from="predicted")
            )
        rated = [s.rating for s in sentences if s.rating is not None]
        if not rated:
            why = "; ".join(job.notes[:3]) or "the story has no sentences"
            out[job.story.key] = f"COSMic rated no sentence: {why}"
            continue
        out[job.story.key] = CosmicScores(
            float(np.mean(rated)),
            tuple(sentences),
            f"{job.reference.system}:{job.reference.story_id}",
            tuple(job.notes),
            model.name,
        )
    return out
