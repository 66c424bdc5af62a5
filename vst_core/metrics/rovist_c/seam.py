"""The seam between RoViST-C's scoring and its models: what a sentence-pair scorer must offer (the
transformer scorers of :mod:`.scorers` satisfy it, and so can a tiny model built in a test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class PairScores:
    """Probabilities (NaN where a pair could not be scored) and which pairs were truncated."""

    probabilities: np.ndarray
    truncated: tuple[bool, ...]


class PairScorer(Protocol):
    """Anything that gives P(B follows A) for sentence pairs."""

    name: str

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray: ...

    def score_pairs_detailed(self, pairs: list[tuple[str, str]]) -> PairScores: ...
