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
tokenizer (:class:`SentencePieceAlbertTokenizer`) and sends no over-long pair to the model (see
:class:`TransformerPairScorer`, ``overlong="skip"``).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vst_core.metrics.coherence import transitions
from vst_core.metrics.variants import CoherenceContext
from vst_core.models.device import resolve_device
from vst_core.models.folders import check_transformers_folder
from vst_core.models.hub import (
    HF_WEIGHT_FILES,
    ModelLoadError,
    WeightsUnavailableError,
    hf_weights_id,
    hub_file,
    load_allowlisted,
    load_hf,
    numpy_scalar_globals,
    weights_digest,
)
from vst_core.models.protocols import PairScores

log = logging.getLogger(__name__)

DEFAULT_NSP_MODEL = "bert-base-uncased"
ROVIST_C_TOKENIZER = "albert-large-v1"
SOP_META_FILE = "vst_sop.json"
#: The sentencepiece model of an ALBERT tokenizer, the file the authors' slow ``AlbertTokenizer`` reads.
SPIECE_FILE = "spiece.model"
SPIECE_UNDERLINE = "\u2581"

#: What a scorer does with a pair longer than the model's maximum length: ``truncate`` it (paper
#: profile) or ``skip`` it, unscored (reference profile: the authors' code cannot score it).
Overlong = Literal["truncate", "skip"]

# ALBERT sizes: hidden -> (layers, heads); layers are weight-shared, so not in the state dict.
_ALBERT_SHAPES: dict[int, tuple[int, int]] = {768: (12, 12), 1024: (24, 16), 2048: (24, 16), 4096: (12, 64)}


class CheckpointShapeError(ModelLoadError, ValueError):
    """A checkpoint whose tensors do not have the expected shapes."""


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' load report and progress bars off while loading (errors still raise)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


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


# --------------------------------------------------------------------------- the authors' tokenizer


class SentencePieceAlbertTokenizer:
    """ALBERT's slow sentencepiece tokenizer as the RoViST authors ran it (``transformers`` 4.30's
    ``AlbertTokenizer``, pinned by the dHM evaluation code), over the same ``spiece.model``.

    transformers 5 has no slow ALBERT tokenizer (``use_fast=False`` is ignored and
    ``AlbertTokenizer`` is the ``tokenizers`` one), so its text steps are transcribed here:
    ``preprocess_text`` (whitespace collapsed, ``\u0060\u0060``/``''`` to ``"``, accents dropped by
    NFKD, lower case), sentencepiece, then the rule the fast tokenizer only approximates: a piece
    ending in a digit and a comma (``▁101,``) is encoded again without the comma, and the comma
    appended. Special tokens in the text are kept whole, whitespace around them stripped
    (``[MASK]`` only on its left), as that version's ``tokenize`` does. A pair is
    ``[CLS] A [SEP] B [SEP]`` with segment ids ``(len(A)+2)·0 + (len(B)+1)·1``, the authors' input.
    """

    is_fast = False

    def __init__(
        self,
        spiece: str | Path,
        *,
        do_lower_case: bool = True,
        remove_space: bool = True,
        keep_accents: bool = False,
        model_max_length: int = 512,
        special: dict[str, str] | None = None,
    ) -> None:
        import sentencepiece as spm

        self.vocab_file = str(spiece)
        self.sp_model = spm.SentencePieceProcessor()
        self.sp_model.Load(self.vocab_file)
        self.do_lower_case = do_lower_case
        self.remove_space = remove_space
        self.keep_accents = keep_accents
        self.model_max_length = model_max_length
        tokens = {"cls": "[CLS]", "sep": "[SEP]", "pad": "<pad>", "unk": "<unk>", "mask": "[MASK]", **(special or {})}
        self.cls_token, self.sep_token, self.pad_token = tokens["cls"], tokens["sep"], tokens["pad"]
        self.unk_token, self.mask_token = tokens["unk"], tokens["mask"]
        unk = self.sp_model.piece_to_id(self.unk_token)
        for token in tokens.values():
            if token != self.unk_token and self.sp_model.piece_to_id(token) == unk:
                raise ModelLoadError(f"{spiece} is not an ALBERT sentencepiece model: it has no piece {token!r}")
        self.cls_token_id = self.sp_model.piece_to_id(self.cls_token)
        self.sep_token_id = self.sp_model.piece_to_id(self.sep_token)
        self.pad_token_id = self.sp_model.piece_to_id(self.pad_token)
        specials = sorted(set(tokens.values()), key=len, reverse=True)
        self._special = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")

    def __len__(self) -> int:
        return int(self.sp_model.get_piece_size())

    def preprocess_text(self, inputs: str) -> str:
        outputs = " ".join(inputs.strip().split()) if self.remove_space else inputs
        outputs = outputs.replace("``", '"').replace("''", '"')
        if not self.keep_accents:
            outputs = unicodedata.normalize("NFKD", outputs)
            outputs = "".join(c for c in outputs if not unicodedata.combining(c))
        return outputs.lower() if self.do_lower_case else outputs

    def _tokenize(self, text: str) -> list[str]:
        pieces = self.sp_model.encode(self.preprocess_text(text), out_type=str)
        out: list[str] = []
        for piece in pieces:
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                cur = list(self.sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
                if piece[0] != SPIECE_UNDERLINE and cur[0][0] == SPIECE_UNDERLINE:
                    if len(cur[0]) == 1:
                        cur = cur[1:]
                    else:
                        cur[0] = cur[0][1:]
                cur.append(piece[-1])
                out.extend(cur)
            else:
                out.append(piece)
        return out

    def tokenize(self, text: str) -> list[str]:
        """Pieces of ``text``; special tokens written in it stay whole (see class doc)."""
        parts = self._special.split(text)
        for i in range(1, len(parts), 2):  # odd parts are special tokens
            if parts[i] != self.mask_token:  # [MASK] strips only on its left (lstrip=True, rstrip=False)
                parts[i + 1] = parts[i + 1].lstrip()
            parts[i - 1] = parts[i - 1].rstrip()
        tokens: list[str] = []
        for i, part in enumerate(parts):
            if i % 2:
                tokens.append(part)
            elif part:
                tokens.extend(self._tokenize(part))
        return tokens

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> list[int]:
        return [int(self.sp_model.piece_to_id(t)) for t in tokens]

    def _pair(self, a: str, b: str | None, truncate: bool, max_length: int | None) -> tuple[list[int], list[int]]:
        ids_a = self.convert_tokens_to_ids(self.tokenize(a))
        ids_b = self.convert_tokens_to_ids(self.tokenize(b)) if b is not None else None
        if truncate and max_length is not None:  # transformers' "longest_first": one token at a time
            room = max_length - (3 if ids_b is not None else 2)
            while len(ids_a) + len(ids_b or []) > room and (ids_a or ids_b):
                if ids_b is not None and len(ids_b) >= len(ids_a):
                    ids_b.pop()
                else:
                    ids_a.pop()
        first = [self.cls_token_id, *ids_a, self.sep_token_id]
        if ids_b is None:
            return first, [0] * len(first)
        return first + [*ids_b, self.sep_token_id], [0] * len(first) + [1] * (len(ids_b) + 1)

    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: str | Sequence[str] | None = None,
        *,
        padding: bool = False,
        truncation: bool | str = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_token_type_ids: bool = True,
        **_: Any,
    ) -> dict[str, Any]:
        """``input_ids``, ``token_type_ids`` and ``attention_mask`` of one text (pair) or a batch, as
        transformers' tokenizers return them (``return_tensors="pt"``: padded on the right)."""
        single = isinstance(text, str)
        firsts = [text] if isinstance(text, str) else list(text)
        seconds: list[str | None] = (
            [None] * len(firsts) if text_pair is None else [text_pair] if isinstance(text_pair, str) else list(text_pair)
        )
        truncate = bool(truncation) and truncation != "do_not_truncate"
        encoded = [self._pair(a, b, truncate, max_length or self.model_max_length) for a, b in zip(firsts, seconds, strict=True)]
        ids = [e[0] for e in encoded]
        types = [e[1] for e in encoded]
        masks = [[1] * len(x) for x in ids]
        if padding or return_tensors:
            width = max((len(x) for x in ids), default=0)
            ids = [x + [self.pad_token_id] * (width - len(x)) for x in ids]
            types = [x + [0] * (width - len(x)) for x in types]
            masks = [x + [0] * (width - len(x)) for x in masks]
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": masks}
        if return_token_type_ids:
            out["token_type_ids"] = types
        if return_tensors == "pt":
            import torch

            return {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}
        return {k: v[0] for k, v in out.items()} if single else out


def _spiece_source(name: str) -> Path:
    """The ``spiece.model`` of a tokenizer folder or hub id (the cache, or the hub when reachable).

    Raises :class:`ModelLoadError` naming the fix when only a fast tokenizer (``tokenizer.json``) is there."""
    only_fast = (
        f"the reference coherence profile reads text with the authors' slow ALBERT tokenizer, which needs the "
        f"sentencepiece model {SPIECE_FILE}; {name} has only a fast tokenizer (tokenizer.json). Put the "
        f"{SPIECE_FILE} of albert-large-v1 beside it (or pass --coherence-tokenizer with a folder or hub id that "
        "has it), or score with --coherence-profile paper"
    )
    folder = Path(name)
    if folder.is_dir():
        if (folder / SPIECE_FILE).is_file():
            return folder / SPIECE_FILE
        if (folder / "tokenizer.json").is_file():
            raise ModelLoadError(f"{folder}: {only_fast}")
        raise ModelLoadError(f"{folder} holds no ALBERT tokenizer ({SPIECE_FILE} not found); pass --coherence-tokenizer")
    if folder.is_absolute() or name.startswith(".") or name.count("/") > 1:
        raise ModelLoadError(
            f"{name} holds no ALBERT tokenizer: no such folder, and not a hub id; pass --coherence-tokenizer with "
            f"the folder of albert-large-v1's {SPIECE_FILE}"
        )

    def download(repo: str, **kwargs: Any) -> Path:
        from huggingface_hub import hf_hub_download

        try:
            return Path(hf_hub_download(repo, SPIECE_FILE, **kwargs))
        except OSError:
            if hub_file(repo, ("tokenizer.json",)) is not None:
                raise ModelLoadError(only_fast) from None
            raise
        except Exception as exc:  # EntryNotFoundError and kin: a repository without spiece.model
            if type(exc).__name__.endswith("EntryNotFoundError"):
                raise ModelLoadError(only_fast) from None
            raise

    return load_hf(name, download, "slow ALBERT tokenizer", " with --coherence-tokenizer")


def load_slow_albert_tokenizer(name: str = ROVIST_C_TOKENIZER) -> SentencePieceAlbertTokenizer:
    """The authors' slow tokenizer from a tokenizer folder or hub id (its ``spiece.model``, and the
    case, space and accent options of its ``tokenizer_config.json`` when there is one)."""
    spiece = _spiece_source(name)
    config: dict[str, Any] = {}
    found = spiece.parent / "tokenizer_config.json"
    if found.is_file():
        try:
            config = json.loads(found.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
    options = {k: bool(config[k]) for k in ("do_lower_case", "remove_space", "keep_accents") if isinstance(config.get(k), bool)}
    special = {
        key: str(value["content"] if isinstance(value, dict) else value)
        for key in ("cls", "sep", "pad", "unk", "mask")
        if isinstance(value := config.get(f"{key}_token"), (str, dict))
    }
    length = config.get("model_max_length")
    max_length = int(length) if isinstance(length, int) and 0 < length < 100_000 else 512
    return SentencePieceAlbertTokenizer(spiece, model_max_length=max_length, special=special, **options)


# --------------------------------------------------------------------------- loaders


def _load_tokenizer(name: str, what: str) -> Any:
    from transformers import AutoTokenizer

    return load_hf(name, AutoTokenizer.from_pretrained, f"{what} tokenizer", " with --coherence-tokenizer")


def load_bert_nsp(name: str = DEFAULT_NSP_MODEL, *, device: str = "auto", batch_size: int = 32) -> TransformerPairScorer:
    """BERT with its next-sentence-prediction head (by hub id or local directory)."""
    from transformers import BertForNextSentencePrediction

    def load(source: str, **kwargs: Any) -> Any:
        with quiet_transformers():
            return BertForNextSentencePrediction.from_pretrained(source, output_loading_info=True, **kwargs)

    model, info = load_hf(name, load, "next-sentence model", " with --coherence-model PATH", weights=True)
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
    return load_allowlisted(path, _checkpoint_globals(), what, wrong_format=CheckpointShapeError)


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
    if not path.is_file():
        raise WeightsUnavailableError(
            f"RoViST-C checkpoint not found at {path}. Download the authors' checkpoint (see the RoViST "
            "repository) and pass its path with --coherence-model rovist-c:PATH"
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
            "--coherence-model / --coherence-tokenizer."
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
    :func:`vst_core.metrics.coherence.transitions`)."""
    return [(t.first, t.second) for t in transitions(sentences, context, repeat_is_zero=repeat_is_zero)]
