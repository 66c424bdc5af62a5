"""How CLIP's tokens are counted for the truncation notes: the start and end tokens once, whichever
tokenizer the model has (open_clip's own, or a Hugging Face one that adds them itself)."""

from __future__ import annotations

from types import SimpleNamespace

from vst_core.models.clip import ClipEncoder


class _Words:
    """A tokenizer that counts words, as open_clip's SimpleTokenizer encodes: no special tokens."""

    def encode(self, text: str) -> list[int]:
        return list(range(len(text.split())))


class _HuggingFace:
    """A Hugging Face tokenizer: ``encode`` adds a start and an end token unless told not to."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [0] * (len(text.split()) + (2 if add_special_tokens else 0))


def test_start_and_end_tokens_are_counted_once() -> None:
    for inner in (_Words(), _HuggingFace()):
        encoder = SimpleNamespace(tokenizer=SimpleNamespace(tokenizer=inner))
        assert ClipEncoder._text_length(encoder, "a photo of two dogs") == 7, type(inner).__name__  # type: ignore[arg-type]
    assert ClipEncoder._text_length(SimpleNamespace(tokenizer=object()), "x") is None  # type: ignore[arg-type]
