"""The seams between scoring and models: what an encoder, a pair scorer and an embedding store
must offer. The real adapters (:class:`~vst_core.models.clip.ClipEncoder`,
:class:`~vst_core.images.embeddings.EmbeddingCache`)
satisfy them, and so can a tiny model built in a test."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vst_core.contract.protocols import ImageTextEncoder

__all__ = ["CropEncoder", "EmbeddingStore", "ImageTextEncoder"]


@runtime_checkable
class CropEncoder(Protocol):
    """An image encoder that also takes decoded images and crop boxes and cuts, resizes and
    normalises on its own device (the ``device`` preprocessing)."""

    def encode_crops(
        self, sources: Sequence[Any], load: Callable[[Any], tuple[np.ndarray, list[tuple[int, int, int, int]]]]
    ) -> np.ndarray: ...


class EmbeddingStore(Protocol):
    """Vectors by content key; ``fetch`` computes (in one batch) only what the store lacks."""

    hits: int
    misses: int

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: dict[str, np.ndarray]) -> None: ...

    def fetch(self, keys: Sequence[str], compute: Callable[[list[int]], np.ndarray]) -> np.ndarray: ...
