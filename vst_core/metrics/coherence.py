"""RoViST-C coherence: sentence-pair probabilities to a story score.

    coherence(story) = mean over adjacent pairs i of P(s_i+1 follows s_i)

or, with ``context="prefix"`` (the variant of the GROOVIST authors' dHM evaluation, 2024),
P(s_i+1 follows s_1 … s_i), the whole story so far.

A one-sentence story has no pair: its score is undefined (``None`` with the reason), never
NaN shown as a number and never 0. A pair that could not be scored (an empty sentence) is
``None`` and left out of the mean. With ``repeat_is_zero`` a pair of identical sentences gets
probability 0 without asking the model, as the public RoViST code does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vst_core.metrics.variants import CoherenceContext


@dataclass(frozen=True, slots=True)
class Coherence:
    """Story coherence. ``pairs[i]`` is P(sentence i+1 follows sentence i) or None."""

    score: float | None
    pairs: tuple[float | None, ...]
    weakest: int | None  # index i of the weakest transition (sentence i -> i+1)
    notes: tuple[str, ...]


def coherence(
    probabilities: Sequence[float | None],
    sentences: Sequence[str] | None = None,
    *,
    repeat_is_zero: bool = False,
    context: CoherenceContext = "pair",
) -> Coherence:
    """Story coherence from pair probabilities (NaN counts as not scored); see module doc."""
    pairs: list[float | None] = [None if p is None or math.isnan(p) else float(p) for p in probabilities]
    notes: list[str] = []
    if sentences is not None:
        if len(sentences) - 1 != len(pairs) and len(sentences) > 0:
            raise ValueError(f"{len(sentences)} sentences need {len(sentences) - 1} pair probabilities, got {len(pairs)}")
        if repeat_is_zero:
            for i, b in enumerate(sentences[1:]):
                a = " ".join(sentences[: i + 1]) if context == "prefix" else sentences[i]
                if a.strip() and a.strip() == b.strip():
                    pairs[i] = 0.0
                    notes.append(f"sentences {i + 1} and {i + 2} are identical: probability set to 0")
    for i, p in enumerate(pairs):
        if p is not None and not 0.0 <= p <= 1.0:
            raise ValueError(f"pair {i}: probability {p} outside [0, 1]")
    defined = [(i, p) for i, p in enumerate(pairs) if p is not None]
    if not pairs:
        notes.append("fewer than two sentences: there is no sentence pair, coherence is undefined")
    elif not defined:
        notes.append("no pair could be scored: coherence is undefined")
    elif len(defined) < len(pairs):
        notes.append(f"{len(pairs) - len(defined)} pair(s) with an empty sentence left out of the mean")
    if not defined:
        return Coherence(None, tuple(pairs), None, tuple(notes))
    score = sum(p for _, p in defined) / len(defined)
    weakest = min(defined, key=lambda ip: ip[1])[0]
    return Coherence(score, tuple(pairs), weakest, tuple(notes))
