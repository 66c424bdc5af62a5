"""Visual grounding: GROOVIST, temporal misalignment, NP proportion, CLIPScore, RoViST-VG style.

All functions take similarities already computed (raw cosines between L2-normalised CLIP
embeddings); no model is loaded here.

GROOVIST (Surikuchi et al. 2023, Eq. 2 and Algorithm 2), for noun phrases k = 1..N:

    s_k  = 2.5 · max over all regions of all images of cos(np_k, region)
    p_k  = s_k            if s_k >= θ        (penalty; without it p_k = s_k)
         = s_k − θ        otherwise
    c_k  = p_k · w_k      w_k: concreteness (or idf, or 1)
    G    = Σ c_k / N,     bounded: tanh(G)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CLIP_SCALE = 2.5

#: θ presets of the reference configuration (mean NP score over each dataset).
THETA_PRESETS: dict[str, float] = {
    "VIST": 0.6159241924121119,
    "AESOP": 0.5949957337433985,
    "VWP": 0.6193549522736276,
    "custom": 0.5,
}


def resolve_theta(value: str | float) -> float:
    """A preset name (case-insensitive) or a number."""
    if isinstance(value, (int, float)):
        return float(value)
    for name, theta in THETA_PRESETS.items():
        if value.strip().lower() == name.lower():
            return theta
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"theta must be a number or one of {', '.join(THETA_PRESETS)}; got {value!r}") from None


@dataclass(frozen=True, slots=True)
class GroovistScore:
    """Story grounding. ``score`` is the reported value tanh(G), ``unbounded`` G itself (as in the
    record); ``contributions[k]`` is c_k; ``None`` scores mean no noun phrase."""

    score: float | None  # tanh(G)
    unbounded: float | None  # G
    scores: tuple[float, ...]  # s_k (scaled)
    contributions: tuple[float, ...]  # c_k
    weights: tuple[float, ...]
    theta: float
    notes: tuple[str, ...]


def groovist_score(
    similarities: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None,
    theta: float,
    *,
    penalize: bool = True,
    weight: bool = True,
) -> GroovistScore:
    """GROOVIST from each NP's best raw cosine and its weight w_k (concreteness, idf or 1; see the
    module doc); ``weight=False`` or ``weights=None`` sets w_k = 1.

    >>> g = groovist_score([0.3, 0.2], [2.0, 1.0], 0.6)
    >>> round(g.unbounded, 4), round(g.score, 4)
    (0.7, 0.6044)
    """
    sims = np.asarray(similarities, dtype=np.float64).reshape(-1)
    if not weight or weights is None:
        w = np.ones_like(sims)
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != sims.shape:
            raise ValueError(f"{sims.size} similarities but {w.size} weights")
    if sims.size == 0:
        return GroovistScore(None, None, (), (), (), theta, ("no noun phrase: grounding is undefined",))
    if np.isnan(sims).any():
        raise ValueError("similarities contain NaN")
    scores = CLIP_SCALE * sims
    penalized = np.where(scores >= theta, scores, scores - theta) if penalize else scores
    contributions = penalized * w
    g = float(contributions.mean())
    return GroovistScore(
        score=math.tanh(g),
        unbounded=g,
        scores=tuple(float(x) for x in scores),
        contributions=tuple(float(x) for x in contributions),
        weights=tuple(float(x) for x in w),
        theta=theta,
        notes=(),
    )


def groovist_many(
    cosines: np.ndarray,
    weights: np.ndarray,
    owners: np.ndarray,
    n: int,
    theta: float,
    *,
    penalize: bool = True,
    weight: bool = True,
) -> np.ndarray:
    """GROOVIST before tanh of ``n`` stories at once from their phrases' best cosines and weights
    (``owners[k]``: the story of phrase k): the mean over a story's phrases of
    w · (2.5·cos, minus θ below θ), as :func:`groovist_score`; NaN for a story without phrases.

    >>> groovist_many(np.array([0.3, 0.2]), np.array([2.0, 1.0]), np.array([0, 0]), 2, 0.6).round(4).tolist()
    [0.7, nan]
    """
    scores = CLIP_SCALE * np.asarray(cosines, dtype=np.float64)
    penalized = np.where(scores >= theta, scores, scores - theta) if penalize else scores
    contributions = penalized * (np.asarray(weights, dtype=np.float64) if weight else 1.0)
    sums = np.bincount(owners, weights=contributions, minlength=n)
    counts = np.bincount(owners, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def theta_from_scores(best_cosines: Sequence[float] | np.ndarray) -> float:
    """θ as GROOVIST defines it: the mean scaled NP score (2.5 · best cosine) over a dataset."""
    values = np.asarray(best_cosines, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no noun phrase in the dataset: θ cannot be computed")
    return float(CLIP_SCALE * values.mean())


@dataclass(frozen=True, slots=True)
class Misalignment:
    """GROOVIST's temporal misalignment: ``score`` is T, ``per_sentence`` each t_i (None: no NP)."""

    score: float | None
    per_sentence: tuple[float | None, ...]


def temporal_misalignment(np_sentences: Sequence[int], matched_images: Sequence[int], n_sentences: int) -> Misalignment:
    """GROOVIST Eq. 3: t_i = share of sentence i's NPs whose best image j ≠ i; T = mean of t_i.

    Sentences without NPs have t_i = None and are left out of T; T is None if no sentence has one.

    >>> temporal_misalignment([0, 0, 2], [0, 2, 1], 3)
    Misalignment(score=0.75, per_sentence=(0.5, None, 1.0))
    """
    counts = [0] * n_sentences
    off = [0] * n_sentences
    for s, j in zip(np_sentences, matched_images, strict=True):
        counts[s] += 1
        off[s] += int(j != s)
    per = tuple(off[i] / counts[i] if counts[i] else None for i in range(n_sentences))
    defined = [t for t in per if t is not None]
    return Misalignment(sum(defined) / len(defined) if defined else None, per)


def np_proportion(n_phrases: int, n_words: int) -> float | None:
    """GROOVIST Eq. 4: P = #NPs / #words (None for a story without words)."""
    return n_phrases / n_words if n_words else None


@dataclass(frozen=True, slots=True)
class ClipScore:
    """CLIPScore of a story: ``score`` the mean over its sentence–image pairs, ``pairs`` each one."""

    score: float | None
    pairs: tuple[float, ...]


def clipscore(cosines: Sequence[float] | np.ndarray) -> ClipScore:
    """CLIPScore per image–sentence pair, 2.5 · max(cos, 0) (Hessel et al. 2021), and the mean.

    >>> clipscore([0.3, -0.1])
    ClipScore(score=0.375, pairs=(0.75, 0.0))
    """
    values = tuple(float(CLIP_SCALE * max(c, 0.0)) for c in cosines)
    return ClipScore(sum(values) / len(values) if values else None, values)


@dataclass(frozen=True, slots=True)
class RovistVG:
    """RoViST-VG aggregation: ``score`` Eq. 3's value in (−1, 1), ``lse`` the log-sum-exp S (Eq. 2)."""

    score: float | None
    lse: float | None


def rovist_vg(best_cosines: Sequence[float] | np.ndarray, idf: Sequence[float] | np.ndarray) -> RovistVG:
    """RoViST-VG's aggregation (RoViST Eq. 2-3) of each noun's best cosine over the story's regions,
    from the authors' model (``rovist_vg``) or from CLIP (``rovist_vg_clip``):

    S = log Σ_i exp(idf_i · max_j cos(noun_i, region_j));  score = 2 / (1 + exp(−0.5 S)) − 1 = tanh(S / 4).

    S is what the authors' ``vg_score`` returns; it is computed here in float64 with the maximum
    taken out first (their code: float32, ``log(exp(x).sum())``).

    >>> r = rovist_vg([0.5, 0.2], [2.0, 1.0])
    >>> round(r.lse, 4), round(r.score, 4)
    (1.3711, 0.33)
    """
    cos = np.asarray(best_cosines, dtype=np.float64)
    weights = np.asarray(idf, dtype=np.float64)
    if cos.size == 0:
        return RovistVG(None, None)
    x = weights * cos
    m = float(x.max())
    s = m + math.log(float(np.exp(x - m).sum()))
    return RovistVG(math.tanh(s / 4.0), s)  # Eq. 3 in the form that cannot overflow for any S


def idf_table(documents: Sequence[Sequence[str]]) -> dict[str, float]:
    """idf(t) = log(N / (1 + df(t))) over documents (each a list of terms)."""
    n = len(documents)
    df: dict[str, int] = {}
    for doc in documents:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    return {t: math.log(n / (1 + d)) for t, d in df.items()}
