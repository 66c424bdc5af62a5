"""RoViST-VG's record (the authors' model): a story's Eq. 3 and S, and each noun with its best region.

>>> RovistVGScores(0.2, 0.4, (NounRegion("dog", 0, 0.3, 1.5, 1, (0.0, 0.0, 8.0, 8.0)),)).nouns[0].known
True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NounRegion:
    """One noun of RoViST-VG and its best region: image index, box, cosine, idf weight; ``known``
    False when GloVe lacks the word and ``unk``'s vector stood in (the authors' fallback)."""

    noun: str
    sentence: int
    best_cosine: float
    idf: float
    image: int
    box: tuple[float, ...]
    box_label: str | None = None
    known: bool = True


@dataclass(frozen=True, slots=True)
class RovistVGScores:
    """RoViST-VG with the authors' model: ``lse`` the S their ``vg_score`` returns (idf-weighted
    log-sum-exp of each noun's best cosine), ``score`` Eq. 3 = 2/(1+exp(−S/2)) − 1 in (−1, 1)."""

    score: float | None
    lse: float | None
    nouns: tuple[NounRegion, ...]
    notes: tuple[str, ...] = ()
    model: str = ""  # checkpoint, ViT and GloVe digests
    tagger: str = ""  # which POS tagger found the nouns
