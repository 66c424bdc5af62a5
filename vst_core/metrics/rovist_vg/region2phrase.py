"""The RoViST-VG model as its authors built it (``usydnlp/rovist``, ``scripts/rovist_vg.py``).

``Region2PhraseModel``: an image encoder, ViT (``google/vit-base-patch16-224-in21k``) pooled output ->
linear 768->1024 -> tanh, and a text encoder, a GloVe vector (``glove.6B.300d``; an unknown word takes
the vector of ``unk``) -> linear 300->1024 -> tanh, trained on Flickr30k Entities region-phrase pairs.
Both sides are L2-normalised before the cosine (``scripts/visual_grounding_scorer.py``).

Three user files and one hub model:

* the checkpoint as their training script saves it, ``{"epoch", "model": state_dict, "valid_loss",
  "train_loss"}``, read with ``torch.load(weights_only=True)``: anything but tensors and numbers is
  refused unread. Its state dict holds every weight, the fine-tuned ViT's included;
* the ViT's configuration and image processor by their Hugging Face name, from the hub cache (the
  ViT weights come from the checkpoint, through transformers' own loader, which also reads the
  layer names of the transformers version the authors trained with);
* GloVe as Stanford ships it (``glove.6B.300d.txt``) or in the word2vec text format their script
  writes beside it (the same lines under a ``count dim`` header), read line by line for the words
  a run needs only;
* optionally their ``idf_dict.pkl`` (:mod:`vst_core.metrics.rovist_vg.idf_table`, read without running pickle
  code): the idf weights their scorer uses; without it idf is fitted over the scored set.

The crops are preprocessed as their ``ViTFeatureExtractor`` did (:func:`feature_extractor_pixels`:
a Pillow resize, then rescale and normalise), not by transformers 5's ``ViTImageProcessor``, which
resizes with torchvision and moves a pixel by up to one grey level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vst_core.hashing import weights_digest
from vst_core.metrics.rovist_vg.defaults import VIT
from vst_core.metrics.rovist_vg.idf_table import FITTED_IDF, IdfTable, read_idf_table
from vst_core.models.checkpoints import numpy_scalar_globals, read_checkpoint
from vst_core.models.device import resolve_device
from vst_core.models.folders import load_hf, loading, regular_file
from vst_core.models.hub import ModelLoadError, hf_weights_id, option

VIT_NAME = VIT
GLOVE_NAME = "glove.6B.300d.txt"
UNKNOWN_WORD = "unk"
#: Prefixes of the authors' state dict (``Region2PhraseModel``'s attribute names).
VIT_PREFIX = "image_encoder.image_model."
HEADS = ("image_encoder.linear.weight", "image_encoder.linear.bias", "text_encoder.linear.weight", "text_encoder.linear.bias")
#: Where to get what this metric needs, for the missing-file messages.
WHERE = (
    "the RoViST-VG checkpoint (r2p_model_epoch2.pth.tar) and glove.6B.300d.txt are linked from the authors' "
    f"RoViST_VG_Demo.ipynb (github.com/usydnlp/rovist); pass them with {option('rovist_vg_checkpoint', 'PATH')} and "
    f"{option('glove_file', 'PATH')}"
)


class GloveVectors:
    """GloVe vectors read from a text file for the words asked, one pass over the file per new batch
    of words; nothing is written anywhere."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelLoadError(f"GloVe file {self.path} not found; {WHERE}")
        self.digest = weights_digest(self.path)
        self.dim: int | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._absent: set[str] = set()

    @property
    def signature(self) -> str:
        return f"{self.path.name}@{self.digest}"

    def load(self, words: Iterable[str]) -> None:
        """Read the vectors of ``words`` (and of ``unk``) not read yet, in one pass over the file."""
        todo = {w for w in [*words, UNKNOWN_WORD] if w not in self._vectors and w not in self._absent}
        if not todo:
            return
        with loading(f"GloVe file {self.path.name}", WHERE), self.path.open("r", encoding="utf-8", errors="strict") as fh:
            first = True
            for line in fh:
                if first:
                    first = False
                    head = line.split()
                    if len(head) == 2 and all(h.isdigit() for h in head):  # word2vec text header
                        self.dim = int(head[1])
                        continue
                word, _, rest = line.rstrip("\n").rstrip().partition(" ")
                if word in todo:
                    vector = np.array(rest.split(" "), dtype=np.float32)
                    if self.dim is None:
                        self.dim = vector.size
                    if vector.size != self.dim:
                        raise ModelLoadError(f"{self.path}: the vector of {word!r} has {vector.size} values, not {self.dim}")
                    if not np.isfinite(vector).all():
                        raise ModelLoadError(f"{self.path}: the vector of {word!r} holds non-finite values")
                    self._vectors.setdefault(word, vector)  # the first line of a word, as gensim keeps it
                    todo.discard(word)
                    if not todo:
                        break
        self._absent |= todo
        if UNKNOWN_WORD in self._absent:
            raise ModelLoadError(f"{self.path} has no vector for {UNKNOWN_WORD!r}: not a GloVe 6B file")

    def vector(self, word: str) -> tuple[np.ndarray, bool]:
        """The word's vector and True, or ``unk``'s vector and False (the authors' fallback)."""
        self.load([word])
        found = self._vectors.get(word)
        return (found, True) if found is not None else (self._vectors[UNKNOWN_WORD], False)


def _vg_globals() -> list[Any]:
    """Non-tensor types a RoViST-VG file may hold: the losses as numpy scalars (their script saves
    Python floats, an edited one may not); nothing else is unpickled."""
    return numpy_scalar_globals()


def read_vg_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state dict of a RoViST-VG checkpoint (``{"model": state_dict, ...}``), read with
    ``weights_only=True`` and :func:`_vg_globals`; anything else is refused with the reason."""
    import torch

    path = Path(path)
    if not path.exists():
        raise ModelLoadError(f"RoViST-VG checkpoint {path} not found; {WHERE}")
    regular_file(path, "RoViST-VG checkpoint", WHERE)
    data = read_checkpoint(path, "a RoViST-VG checkpoint (a torch.save'd dict with 'model')", allowed=_vg_globals())
    state = data.get("model") if isinstance(data, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelLoadError(f"{path} is not a RoViST-VG checkpoint: expected a dict whose 'model' is a state dict")
    missing = [k for k in HEADS if k not in state]
    if missing or not any(k.startswith(VIT_PREFIX) for k in state):
        raise ModelLoadError(
            f"{path} is not a RoViST-VG checkpoint (Region2PhraseModel with a ViT image encoder and a GloVe text "
            f"encoder): missing {', '.join(missing) or VIT_PREFIX + '*'}"
        )
    return state


@dataclass(frozen=True)
class CropPreprocess:
    """The steps of the authors' ``ViTFeatureExtractor``, with the values of the ViT's
    ``preprocessor_config.json``: resize to (width, height) with Pillow's ``resample`` filter, then
    x · rescale, then (x − mean) / std per channel, channels first."""

    width: int = 224
    height: int = 224
    resample: int = 2  # Pillow's BILINEAR, the ViT's configured filter
    rescale: float = 1 / 255
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)

    @classmethod
    def of(cls, processor: Any) -> CropPreprocess:
        """The steps a (transformers 5) ``ViTImageProcessor`` was configured with."""
        size = processor.size
        height, width = (size, size) if isinstance(size, int) else (int(size["height"]), int(size["width"]))
        return cls(
            width=width,
            height=height,
            resample=int(processor.resample),
            rescale=float(processor.rescale_factor) if processor.do_rescale else 1.0,
            mean=tuple(float(v) for v in processor.image_mean) if processor.do_normalize else (0.0, 0.0, 0.0),  # type: ignore[arg-type]
            std=tuple(float(v) for v in processor.image_std) if processor.do_normalize else (1.0, 1.0, 1.0),  # type: ignore[arg-type]
        )


def feature_extractor_pixels(crops: Sequence[Image.Image], steps: CropPreprocess) -> np.ndarray:
    """The ViT's input for ``crops``, (n, 3, height, width) float32, as ``ViTFeatureExtractor``
    made it: ``Image.resize((w, h), resample)``, then · rescale, then (x − mean) / std.

    >>> feature_extractor_pixels([Image.new("RGB", (40, 30), (255, 0, 128))], CropPreprocess(width=4, height=4))[0, :, 0, 0].astype(float).round(4).tolist()
    [1.0, -1.0, 0.0039]
    """
    out = np.empty((len(crops), 3, steps.height, steps.width), dtype=np.float32)
    mean = np.asarray(steps.mean, dtype=np.float32)[:, None, None]
    std = np.asarray(steps.std, dtype=np.float32)[:, None, None]
    for k, crop in enumerate(crops):
        resized = crop.convert("RGB").resize((steps.width, steps.height), resample=steps.resample)
        pixels = np.asarray(resized, dtype=np.float32).transpose(2, 0, 1)
        pixels = pixels / np.float32(round(1 / steps.rescale, 6)) if steps.rescale != 1 else pixels  # x / 255.0, as theirs
        out[k] = (pixels - mean) / std
    return out


class RovistVGModel:
    """The loaded model: words -> unit vectors, region crops -> unit vectors (one object per process);
    ``idf`` the authors' idf table when one was given."""

    def __init__(
        self,
        vit: Any,
        processor: Any,
        heads: dict[str, Any],
        glove: GloveVectors,
        device: str,
        batch_size: int,
        signature: str,
        idf: IdfTable | None = None,
    ) -> None:
        import torch

        self.vit = vit.to(device).eval()
        self.processor = processor
        self.steps = CropPreprocess.of(processor)
        self.idf = idf
        self.device = device
        self.batch_size = batch_size
        self.glove = glove
        self.signature = signature
        self.image_w, self.image_b = (
            heads["image_encoder.linear.weight"].to(device),
            heads["image_encoder.linear.bias"].to(device),
        )
        self.text_w, self.text_b = heads["text_encoder.linear.weight"].to(device), heads["text_encoder.linear.bias"].to(device)
        self._torch = torch

    @property
    def region_signature(self) -> str:
        """What a region's vector depends on: the weights (not the idf table) and how crops are
        preprocessed; the key of the cached region vectors."""
        return self.signature.split("|idf:")[0] + f"|crops:pil{self.steps.resample}-{self.steps.width}x{self.steps.height}"

    def load_words(self, words: Iterable[str]) -> None:
        """Read the GloVe vectors of ``words`` in one pass over the file (a set's nouns at once)."""
        self.glove.load(words)

    def encode_words(self, words: Sequence[str]) -> tuple[np.ndarray, list[bool]]:
        """tanh(linear(GloVe(word))), L2-normalised, per word; and whether GloVe knew each word."""
        torch = self._torch
        self.glove.load(words)
        found = [self.glove.vector(w) for w in words]
        if not words:
            return np.zeros((0, self.text_w.shape[0]), np.float32), []
        with torch.no_grad():
            x = torch.from_numpy(np.stack([v for v, _ in found])).to(self.device)
            out = torch.tanh(x @ self.text_w.T + self.text_b)
            out = torch.nn.functional.normalize(out, p=2, dim=-1)
        return out.cpu().numpy(), [known for _, known in found]

    def encode_crops(self, crops: Sequence[Image.Image]) -> np.ndarray:
        """tanh(linear(ViT pooled output)) of each crop (:func:`feature_extractor_pixels`), L2-normalised, in batches."""
        torch = self._torch
        parts = []
        for start in range(0, len(crops), self.batch_size):
            batch = feature_extractor_pixels(crops[start : start + self.batch_size], self.steps)
            with torch.no_grad():
                pixels = torch.from_numpy(batch).to(self.device)
                pooled = self.vit(pixels)[1]
                out = torch.tanh(pooled @ self.image_w.T + self.image_b)
                parts.append(torch.nn.functional.normalize(out, p=2, dim=-1).cpu().numpy())
        return np.concatenate(parts) if parts else np.zeros((0, self.image_w.shape[0]), np.float32)


def vg_signature(checkpoint: str | Path, vit: str, glove: str | Path, idf: str | Path | None = None) -> str:
    """Identity of the weights: checkpoint digest, the ViT's name and digest, the GloVe file's digest,
    and the idf table's digest (``idf:fitted`` without one)."""

    def digest(path: str | Path) -> str:
        p = Path(path)
        return f"{p.name}@{weights_digest(p)}" if p.is_file() else f"{p.name}@not-found"

    return (
        f"rovist-vg:{digest(checkpoint)}|vit:{hf_weights_id(vit)}|glove:{digest(glove)}|idf:{digest(idf) if idf else FITTED_IDF}"
    )


def load_rovist_vg(
    checkpoint: str | Path | None,
    *,
    vit: str = VIT_NAME,
    glove: str | Path | None,
    idf: str | Path | None = None,
    device: str = "auto",
    batch_size: int = 32,
) -> RovistVGModel:
    """The authors' model from their checkpoint, the ViT's hub config and processor, GloVe and,
    when given, their idf table."""
    if not checkpoint:
        raise ModelLoadError(f"RoViST-VG needs the authors' checkpoint: {WHERE}")
    if not glove:
        raise ModelLoadError(f"RoViST-VG needs GloVe vectors ({GLOVE_NAME}): {WHERE}")
    with loading(f"RoViST-VG ({Path(checkpoint).name}, {Path(glove).name}, {vit})", WHERE):
        return _load_rovist_vg(checkpoint, vit=vit, glove=glove, idf=idf, device=device, batch_size=batch_size)


def _load_rovist_vg(
    checkpoint: str | Path, *, vit: str, glove: str | Path, idf: str | Path | None, device: str, batch_size: int
) -> RovistVGModel:
    table = read_idf_table(idf) if idf else None
    state = read_vg_checkpoint(checkpoint)
    words = GloveVectors(glove)
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    extra = f" (or pass a local folder with {option('rovist_vg_vit', 'DIR')})"
    config = load_hf(vit, ViTConfig.from_pretrained, "ViT", extra)
    processor = load_hf(vit, ViTImageProcessor.from_pretrained, "ViT image processor", extra)
    vit_state = {k[len(VIT_PREFIX) :]: v for k, v in state.items() if k.startswith(VIT_PREFIX)}
    unknown = [k for k in state if not k.startswith(VIT_PREFIX) and k not in HEADS]
    if unknown:
        raise ModelLoadError(f"{checkpoint}: keys a Region2PhraseModel does not have: {', '.join(unknown[:5])}")
    try:
        loaded: Any = ViTModel.from_pretrained(None, config=config, state_dict=vit_state, output_loading_info=True)
        model, info = loaded
    except Exception as exc:
        raise ModelLoadError(
            f"{checkpoint}: its ViT does not fit {vit}'s configuration: {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    wrong = {k: sorted(v)[:5] for k, v in info.items() if v}
    if wrong:
        raise ModelLoadError(f"{checkpoint}: its ViT weights do not fit {vit}'s configuration: {wrong}")
    heads = {k: state[k].float() for k in HEADS}
    if not all(bool(torch.isfinite(v).all()) for v in heads.values()):
        raise ModelLoadError(f"{checkpoint}: its linear heads hold non-finite values")
    hidden, joint = int(config.hidden_size), int(heads["image_encoder.linear.weight"].shape[0])
    shapes = {k: tuple(heads[k].shape) for k in HEADS}
    expected = {HEADS[0]: (joint, hidden), HEADS[1]: (joint,), HEADS[2]: (joint, words_dim(words)), HEADS[3]: (joint,)}
    if shapes != expected:
        raise ModelLoadError(f"{checkpoint}: head shapes {shapes} do not fit a ViT of width {hidden} and {words.path.name}")
    return RovistVGModel(
        model.float(),
        processor,
        heads,
        words,
        resolve_device(device),
        batch_size,
        vg_signature(checkpoint, vit, glove, idf),
        table,
    )


def words_dim(glove: GloveVectors) -> int:
    """The GloVe file's dimension (read from its first vector)."""
    glove.load([])
    assert glove.dim is not None
    return glove.dim
