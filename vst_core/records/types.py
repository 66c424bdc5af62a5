"""The nine built-in metrics' record types: each story's score and evidence as frozen dataclasses
(phrases and regions, sentence pairs, repeated spans), the layout of a scores JSONL's ``metrics``.
Each metric's module (:mod:`vst_core.metric_modules`) names its type; a metric added later
defines its own there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vst_core.metrics.variants import RecordedNRVariant

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class InterRepeat:
    """Words sentence ``sentence`` shares with the earlier sentence ``earlier`` (character spans)."""

    sentence: int
    earlier: int
    jaccard: float
    words: tuple[str, ...]
    spans: tuple[Span, ...]
    earlier_spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class IntraRepeat:
    """An n-gram window of a sentence overlapping the previous window (character spans)."""

    sentence: int
    jaccard: float
    words: tuple[str, ...]
    window: Span
    previous: Span
    spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class RedundancyScores:
    """RoViST-NR = 1 − mean(inter, intra); repeats are None when a ``--no-spans`` run left them out."""

    score: float | None
    inter: float | None
    intra: float | None
    variant: RecordedNRVariant
    n: int
    notes: tuple[str, ...] = ()
    inter_repeats: tuple[InterRepeat, ...] | None = None
    intra_repeats: tuple[IntraRepeat, ...] | None = None


@dataclass(frozen=True, slots=True)
class PhraseMatch:
    """One noun phrase (or noun) and the region it matched best."""

    text: str
    surface: str
    sentence: int
    span: Span
    best_cosine: float
    score: float
    image: int
    box: tuple[float, ...]
    box_label: str | None
    weight: float
    contribution: float
    positive: bool


@dataclass(frozen=True, slots=True)
class GroundingScores:
    """GROOVIST: ``score`` = tanh(``unbounded``); T and P with it (GROOVIST Eq. 3, 4)."""

    score: float | None
    unbounded: float | None
    theta: float | None  # None for a score imported without its evidence
    temporal_misalignment: float | None
    misalignment_per_sentence: tuple[float | None, ...]
    np_proportion: float | None
    phrases: tuple[PhraseMatch, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClipScoreScores:
    """CLIPScore: mean of 2.5 · max(cos(sentence i, image i), 0) over the ``pairs``."""

    score: float | None
    pairs: tuple[float, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NounMatch:
    noun: str
    best_cosine: float
    idf: float


@dataclass(frozen=True, slots=True)
class RovistVGClipScores:
    """RoViST-VG's aggregation of CLIP similarities (``rovist_vg_clip``): ``score`` = 2/(1+exp(−0.5·lse)) − 1."""

    score: float | None
    lse: float | None
    nouns: tuple[NounMatch, ...]
    notes: tuple[str, ...] = ()


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


MetricScores = (
    RedundancyScores
    | GroundingScores
    | ClipScoreScores
    | RovistVGClipScores
    | RovistVGScores
    | Any  # a record that lives in its metric's package (Vrank's) or an installed metric's
)
