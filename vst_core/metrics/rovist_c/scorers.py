"""Sentence-pair scorers: P(B follows A) for a batch of sentence pairs.

Backends, all fed ``[CLS] A [SEP] B [SEP]`` with segment ids 0 for A and 1 for B:

* ``bert-nsp`` (default ``bert-base-uncased``): BERT's next-sentence head; index 0 is "B is next";
* ``rovist-c``: the RoViST-C checkpoint, a dict ``{"opt": Namespace(hidden_dim, dropout_prob, ...),
  "model": state_dict}`` of an ALBERT encoder (``albert_model.*``) with a ``linear`` 1024→2 head on
  the pooled output; index 1 is "in order";
* a sequence-classification checkpoint directory, e.g. one written by ``vst train-sop``; the
  positive index is ``label2id["in_order"]`` (1 when absent).

Profiles (``coherence_profile``): ``paper`` tokenizes with transformers' fast tokenizer and truncates
an over-long pair; ``reference`` reads RoViST-C's text with the authors' slow sentencepiece ALBERT
tokenizer (:class:`~vst_core.metrics.rovist_c.albert_tokenizer.SentencePieceAlbertTokenizer`) and sends no over-long pair to the model (see
:class:`TransformerPairScorer`, ``overlong="skip"``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vst_core.formulas.coherence import transitions
from vst_core.formulas.variants import CoherenceContext
from vst_core.metrics.rovist_c.albert_tokenizer import ROVIST_C_TOKENIZER, SPIECE_FILE, load_slow_albert_tokenizer
from vst_core.metrics.rovist_c.defaults import NSP_MODEL
from vst_core.metrics.rovist_c.seam import PairScores
from vst_core.models.checkpoints import numpy_scalar_globals, read_checkpoint
from vst_core.models.device import resolve_device
from vst_core.models.folders import check_transformers_folder, load_hf, quiet_transformers
from vst_core.models.hub import (
    HF_WEIGHT_FILES,
    ModelLoadError,
    WeightsUnavailableError,
    hf_weights_id,
    hub_file,
    option,
    weights_digest,
)

log = logging.getLogger(__name__)

DEFAULT_NSP_MODEL = NSP_MODEL
SOP_META_FILE = "vst_sop.json"

#: What a scorer does with a pair longer than the model's maximum length: ``truncate`` it (paper
#: profile) or ``skip`` it, unscored (reference profile: the authors' code cannot score it).
Overlong = Literal["truncate", "skip"]

# ALBERT sizes: hidden -> (layers, heads); layers are weight-shared, so not in the state dict.
_ALBERT_SHAPES: dict[int, tuple[int, int]] = {768: (12, 12), 1024: (24, 16), 2048: (24, 16), 4096: (12, 64)}


class CheckpointShapeError(ModelLoadError, ValueError):
    """A checkpoint whose tensors do not have the expected shapes."""


class TransformerPairScorer:
    """Batched pair scorer around a transformers tokenizer and a model returning 2-way logits.

    ``forward(batch) -> logits`` is the model call; ``positive`` is the logit index of
    "B follows A". A pair longer than :attr:`max_length` tokens is flagged in
    ``PairScores.truncated``; with ``overlong="truncate"`` it is scored truncated
    (``longest_first``), with ``overlong="skip"`` it is not sent to the model (probability NaN).
    """

    def __init__(
        self,
        name: str,
        tokenizer: Any,
        model: Any,
        positive: int,
        *,
        device: str = "auto",
        batch_size: int = 32,
        forward: Any = None,
        overlong: Overlong = "truncate",
    ) -> None:
        import torch

        if overlong not in ("truncate", "skip"):
            raise ValueError(f"overlong must be 'truncate' or 'skip', got {overlong!r}")
        self.name = name
        self.overlong = overlong
        self.tokenizer = tokenizer
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.positive = positive
        self.batch_size = batch_size
        self._forward = forward or (lambda batch: self.model(**batch).logits)
        limits = [getattr(model.config, "max_position_embeddings", 512), getattr(tokenizer, "model_max_length", 512)]
        self.max_length = int(min(x for x in limits if isinstance(x, int) and 0 < x < 100_000))
        self._torch = torch

    def encode(self, pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """``[CLS] A [SEP] B [SEP]`` with segment ids 0 for ``[CLS] A [SEP]`` and 1 for ``B [SEP]``
        (asked for explicitly: transformers 5's ALBERT tokenizer returns none unless asked)."""
        return dict(
            self.tokenizer(
                [a for a, _ in pairs],
                [b for _, b in pairs],
                padding=True,
                truncation="longest_first",
                max_length=self.max_length,
                return_tensors="pt",
                return_token_type_ids=True,
            )
        )

    def _length(self, a: str, b: str) -> int:
        return len(self.tokenizer(a, b, truncation=False)["input_ids"])

    def score_pairs_detailed(self, pairs: list[tuple[str, str]]) -> PairScores:
        probs = np.full(len(pairs), np.nan, dtype=np.float64)
        valid = [k for k, (a, b) in enumerate(pairs) if a.strip() and b.strip()]
        truncated = [False] * len(pairs)
        for k in valid:
            if self._length(*pairs[k]) > self.max_length:
                truncated[k] = True
        if self.overlong == "skip":
            valid = [k for k in valid if not truncated[k]]
        torch = self._torch
        for start in range(0, len(valid), self.batch_size):
            idx = valid[start : start + self.batch_size]
            enc = {key: value.to(self.device) for key, value in self.encode([pairs[k] for k in idx]).items()}
            with torch.inference_mode(), torch.autocast("cuda", enabled=self.device == "cuda"):
                logits = self._forward(enc).float()
            probs[idx] = torch.softmax(logits, dim=-1)[:, self.positive].cpu().numpy()
        return PairScores(probs, tuple(truncated))

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(B follows A) per pair; NaN for a pair with an empty sentence."""
        return self.score_pairs_detailed(pairs).probabilities


# --------------------------------------------------------------------------- loaders


def _load_tokenizer(name: str, what: str) -> Any:
    from transformers import AutoTokenizer

    return load_hf(name, AutoTokenizer.from_pretrained, f"{what} tokenizer", f" with {option('coherence_tokenizer', 'DIR')}")


def load_bert_nsp(name: str = DEFAULT_NSP_MODEL, *, device: str = "auto", batch_size: int = 32) -> TransformerPairScorer:
    """BERT with its next-sentence-prediction head (by hub id or local directory)."""
    from transformers import BertForNextSentencePrediction

    def load(source: str, **kwargs: Any) -> Any:
        with quiet_transformers():
            return BertForNextSentencePrediction.from_pretrained(source, output_loading_info=True, **kwargs)

    model, info = load_hf(name, load, "next-sentence model", f" with {option('coherence_model', 'PATH')}", weights=True)
    missing = [k for k in info.get("missing_keys", []) if "seq_relationship" in k]
    if missing:
        raise CheckpointShapeError(
            f"{name} has no next-sentence head ({', '.join(missing)} missing): its scores would come from random "
            "weights. Use a BERT checkpoint saved with its pre-training heads (bert-base-uncased is one)."
        )
    tokenizer = _load_tokenizer(name, "next-sentence model")
    return TransformerPairScorer(f"bert-nsp:{name}", tokenizer, model, positive=0, device=device, batch_size=batch_size)


def load_sequence_classifier(path: str | Path, *, device: str = "auto", batch_size: int = 32) -> TransformerPairScorer:
    """A sequence-classification checkpoint directory (e.g. written by ``train-sop``)."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    path = Path(path)
    check_transformers_folder(path, f"sentence-order classifier {path.name}", "write it with vst train-sop")
    config = AutoConfig.from_pretrained(path)
    architectures = config.architectures or []
    if any("NextSentencePrediction" in a or "ForPreTraining" in a for a in architectures):
        return load_bert_nsp(str(path), device=device, batch_size=batch_size)
    if getattr(config, "num_labels", 2) != 2:
        raise CheckpointShapeError(f"{path}: expected a 2-label sentence-order classifier, found {config.num_labels} labels")
    with quiet_transformers():
        model = AutoModelForSequenceClassification.from_pretrained(path)
    tokenizer = _load_tokenizer(str(path), "sentence-order classifier")
    positive = int((config.label2id or {}).get("in_order", 1))
    return TransformerPairScorer(f"sop:{path.name}", tokenizer, model, positive=positive, device=device, batch_size=batch_size)


def _albert_config(state: dict[str, Any], opt: Any) -> Any:
    from transformers import AlbertConfig

    try:
        vocab, embedding = state["albert_model.embeddings.word_embeddings.weight"].shape
        hidden = state["albert_model.encoder.embedding_hidden_mapping_in.weight"].shape[0]
        ffn = state["albert_model.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"].shape[0]
        positions = state["albert_model.embeddings.position_embeddings.weight"].shape[0]
    except KeyError as exc:
        raise CheckpointShapeError(
            f"not a RoViST-C checkpoint: missing {exc.args[0]!r}; expected an ALBERT encoder under 'albert_model.' "
            "and a 'linear' head"
        ) from None
    layers, heads = _ALBERT_SHAPES.get(hidden, (12, max(1, hidden // 64)))
    layers = int(getattr(opt, "num_hidden_layers", None) or layers)
    heads = int(getattr(opt, "num_attention_heads", None) or heads)
    return AlbertConfig(
        vocab_size=vocab,
        embedding_size=embedding,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=positions,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


def _checkpoint_globals() -> list[Any]:
    """The only non-tensor types the authors' RoViST-C file holds: the script's
    ``argparse.Namespace`` and ``numpy.float64`` accuracies (under numpy 1.x and 2.x names)."""
    return [argparse.Namespace, *numpy_scalar_globals()]


def read_rovist_checkpoint(path: Path) -> Any:
    """``torch.load`` with ``weights_only=True`` and exactly the globals the RoViST-C file needs;
    anything else in the file (code, other classes) is refused, never unpickled."""
    what = "a RoViST-C checkpoint (a torch.save'd dict with 'opt' and 'model')"
    return read_checkpoint(path, what, allowed=_checkpoint_globals(), wrong_format=CheckpointShapeError)


def _check_head(path: Path, state: dict[str, Any], opt: Any, hidden_size: int) -> None:
    """The authors' head: ``linear`` (2, hidden) on the pooled ALBERT output, as ``opt.hidden_dim`` says."""
    hidden = int(getattr(opt, "hidden_dim", None) or hidden_size)
    head_w = state.get("linear.weight")
    if head_w is None or tuple(head_w.shape) != (2, hidden_size) or hidden != hidden_size:
        found = None if head_w is None else tuple(head_w.shape)
        raise CheckpointShapeError(
            f"{path}: expected a linear head of shape (2, {hidden_size}) on the pooled ALBERT output "
            f"(opt.hidden_dim={hidden}), found {found}"
        )


def _rovist_c_module(config: Any, dropout: float) -> Any:
    """An ALBERT encoder with a linear(hidden, 2) head on its pooled output, named as in the file."""
    from torch import nn
    from transformers import AlbertModel

    class RoViSTC(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.albert_model = AlbertModel(config)
            self.dropout = nn.Dropout(dropout)
            self.linear = nn.Linear(config.hidden_size, 2)
            self.config = config

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            pooled = self.albert_model(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[1]
            return self.linear(pooled)

    return RoViSTC()


def load_rovist_c(
    path: str | Path,
    *,
    tokenizer: str | None = None,
    slow_tokenizer: bool = False,
    overlong: Overlong = "truncate",
    device: str = "auto",
    batch_size: int = 32,
) -> TransformerPairScorer:
    """The RoViST-C checkpoint file (``{"opt": ..., "model": state_dict}``); see module doc.

    The file holds no tokenizer: ``tokenizer`` (default ``albert-large-v1``) is a hub id or directory,
    read by transformers' fast tokenizer, or with ``slow_tokenizer`` by the authors' slow one
    (:class:`SentencePieceAlbertTokenizer`, from its ``spiece.model``).
    """
    path = Path(path)
    if not path.exists():  # anything else there (a folder, a FIFO) is said to be what it is when read
        raise WeightsUnavailableError(
            f"RoViST-C checkpoint not found at {path}. Download the authors' checkpoint (see the RoViST "
            f"repository) and pass its path with {option('coherence_model', 'rovist-c:PATH')}"
        )
    checkpoint = read_rovist_checkpoint(path)
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("model"), dict):
        raise CheckpointShapeError(f"{path}: expected a dict with 'opt' and 'model' (the RoViST-C format)")
    state = checkpoint["model"]
    opt = checkpoint.get("opt")
    config = _albert_config(state, opt)
    _check_head(path, state, opt, config.hidden_size)
    model = _rovist_c_module(config, float(getattr(opt, "dropout_prob", 0.0)))
    # buffers older transformers versions saved with the weights (rebuilt by the model itself)
    state = {k: v for k, v in state.items() if not k.endswith(("embeddings.position_ids", "embeddings.token_type_ids"))}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise CheckpointShapeError(f"{path}: does not match an ALBERT encoder + linear(hidden, 2) head: {exc}") from None
    name = tokenizer or ROVIST_C_TOKENIZER
    tok = load_slow_albert_tokenizer(name) if slow_tokenizer else _load_tokenizer(name, "RoViST-C (ALBERT)")
    if len(tok) > config.vocab_size:
        raise CheckpointShapeError(f"tokenizer has {len(tok)} tokens but the checkpoint embeds {config.vocab_size}")
    return TransformerPairScorer(
        f"rovist-c:{path.name}",
        tok,
        model,
        positive=1,
        device=device,
        batch_size=batch_size,
        forward=lambda batch: model(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids")),
        overlong=overlong,
    )


def load_pair_scorer(
    spec: str = "bert-nsp",
    *,
    tokenizer: str | None = None,
    profile: str = "paper",
    device: str = "auto",
    batch_size: int = 32,
) -> TransformerPairScorer:
    """Load a scorer from a spec: ``bert-nsp[:NAME|PATH]``, ``rovist-c:PATH``, or a checkpoint directory.

    ``profile="reference"`` (the authors' code): a RoViST-C checkpoint reads text with the slow
    sentencepiece tokenizer, and no scorer sends an over-long pair to its model (``overlong="skip"``).

    Every failure is a :class:`ModelLoadError` (or ``ValueError`` for a malformed spec) whose
    message names the model, the path tried and the fix; no loader error escapes as another type.
    """
    if profile not in ("paper", "reference"):
        raise ValueError(f"coherence profile must be 'paper' or 'reference', got {profile!r}")
    kind, _, arg = spec.partition(":")
    reference = profile == "reference"
    overlong: Overlong = "skip" if reference else "truncate"
    try:
        if kind == "bert-nsp":
            scorer = load_bert_nsp(arg or DEFAULT_NSP_MODEL, device=device, batch_size=batch_size)
            scorer.overlong = overlong
            return scorer
        if kind == "rovist-c" or (kind != "bert-nsp" and Path(spec).is_file()):
            if kind == "rovist-c" and not arg:
                raise ValueError("rovist-c needs the checkpoint path: rovist-c:PATH")
            return load_rovist_c(
                arg if kind == "rovist-c" else spec,
                tokenizer=tokenizer,
                slow_tokenizer=reference,
                overlong=overlong,
                device=device,
                batch_size=batch_size,
            )
        path = Path(spec)
        if path.is_dir():
            scorer = load_sequence_classifier(path, device=device, batch_size=batch_size)
            scorer.overlong = overlong
            return scorer
    except (ModelLoadError, ValueError):
        raise
    except Exception as exc:
        raise ModelLoadError(
            f"coherence model {spec!r} could not be loaded: {type(exc).__name__}: {str(exc)[:300]}. Check "
            f"{option('coherence_model')} / {option('coherence_tokenizer')}."
        ) from None
    raise ValueError(
        f"unknown coherence model {spec!r}: use bert-nsp, bert-nsp:NAME_OR_PATH, rovist-c:PATH, "
        "or a checkpoint directory written by train-sop"
    )


def pair_weights_id(spec: str, tokenizer: str | None = None, profile: str = "paper") -> str:
    """Which weights a coherence spec names: the model and a digest of its weights file (hub cache,
    folder or checkpoint file), plus the tokenizer for RoViST-C; cheap, builds no model.

    The tokenizer part names its kind: ``+tokenizer:NAME`` is transformers' fast tokenizer (the
    paper profile), ``+slow-tokenizer:NAME@DIGEST`` the authors' slow one with a digest of the
    ``spiece.model`` it reads (the reference profile; ``not-downloaded`` until it is there)."""
    kind, _, arg = spec.partition(":")
    if kind == "bert-nsp":
        return "bert-nsp:" + hf_weights_id(arg or DEFAULT_NSP_MODEL)
    path = Path(arg if kind == "rovist-c" else spec)
    if path.is_file():
        name = tokenizer or ROVIST_C_TOKENIZER
        if profile == "reference":
            spiece = hub_file(name, (SPIECE_FILE,))
            return f"rovist-c:{path.name}@{weights_digest(path)}+slow-tokenizer:{name}@{weights_digest(spiece) if spiece else 'not-downloaded'}"
        return f"rovist-c:{path.name}@{weights_digest(path)}+tokenizer:{name}"
    if path.is_dir():
        found = hub_file(str(path), HF_WEIGHT_FILES)
        return f"sop:{path.name}@{weights_digest(found) if found else 'missing'}"
    return f"{spec}@missing"


def pairs_of(
    sentences: Sequence[str], context: CoherenceContext = "pair", *, repeat_is_zero: bool = True
) -> list[tuple[str, str]]:
    """The model inputs of each transition: ``(s_i, s_i+1)``, or with ``context="prefix"`` (the dHM
    variant) ``(the story so far, s_i+1)``, the story so far leaving out every sentence that
    repeated it when ``repeat_is_zero`` (dHM's ``eval_C_R.py``; see
    :func:`vst_core.formulas.coherence.transitions`)."""
    return [(t.first, t.second) for t in transitions(sentences, context, repeat_is_zero=repeat_is_zero)]
