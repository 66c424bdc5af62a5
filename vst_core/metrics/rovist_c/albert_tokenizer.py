"""The authors' tokenizer for RoViST-C's reference profile: ALBERT's slow sentencepiece tokenizer
(:class:`SentencePieceAlbertTokenizer`) over the model's ``spiece.model``, loaded by
:func:`load_slow_albert_tokenizer` from a folder or the hub cache."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vst_core.models.folders import load_hf
from vst_core.models.hub import (
    ModelLoadError,
    hub_file,
    option,
)

#: The hub name of the tokenizer the RoViST-C checkpoint was trained with.
ROVIST_C_TOKENIZER = "albert-large-v1"
#: The sentencepiece model of an ALBERT tokenizer, the file the authors' slow ``AlbertTokenizer`` reads.
SPIECE_FILE = "spiece.model"
SPIECE_UNDERLINE = "\u2581"


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
        f"{SPIECE_FILE} of albert-large-v1 beside it (or pass {option('coherence_tokenizer', 'DIR')} with a folder or hub "
        f"id that has it), or score with {option('coherence_profile', 'paper')}"
    )
    folder = Path(name)
    if folder.is_dir():
        if (folder / SPIECE_FILE).is_file():
            return folder / SPIECE_FILE
        if (folder / "tokenizer.json").is_file():
            raise ModelLoadError(f"{folder}: {only_fast}")
        raise ModelLoadError(
            f"{folder} holds no ALBERT tokenizer ({SPIECE_FILE} not found); pass {option('coherence_tokenizer', 'DIR')}"
        )
    if folder.is_absolute() or name.startswith(".") or name.count("/") > 1:
        raise ModelLoadError(
            f"{name} holds no ALBERT tokenizer: no such folder, and not a hub id; pass {option('coherence_tokenizer', 'DIR')} "
            f"with the folder of albert-large-v1's {SPIECE_FILE}"
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

    return load_hf(name, download, "slow ALBERT tokenizer", f" with {option('coherence_tokenizer', 'DIR')}")


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
