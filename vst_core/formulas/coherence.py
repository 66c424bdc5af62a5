"""RoViST-C coherence: sentence-pair probabilities to a story score.

    coherence(story) = mean over adjacent pairs i of P(s_i+1 follows s_i)

or, with ``context="prefix"`` (the variant of the GROOVIST authors' dHM evaluation, 2024),
P(s_i+1 follows the story so far); see :func:`transitions` for what the story so far holds.

A one-sentence story has no pair: its score is undefined (``None`` with the reason), never
NaN shown as a number and never 0. A pair that could not be scored (an empty sentence) is
``None`` and left out of the mean. With ``repeat_is_zero`` a pair whose second sentence repeats
the first text gets probability 0 without asking the model, as the public RoViST code does.
With ``over_long`` (the reference profile) a story with a pair longer than the model's maximum
length, other than such a repeat, has no score: the authors' code cannot score it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vst_core.formulas.variants import CoherenceContext

#: Note of a story left unscored under the reference profile (followed by the pairs).
OVER_LONG_NOTE = (
    "longer than the model's maximum length: the reference profile leaves the story unscored, as the authors' "
    "code does (RoViST's scorer stops with an error, dHM's eval_C_R.py leaves the story out), instead of "
    "truncating the pair"
)


@dataclass(frozen=True, slots=True)
class Coherence:
    """Story coherence. ``pairs[i]`` is P(sentence i+1 follows sentence i) or None."""

    score: float | None
    pairs: tuple[float | None, ...]
    weakest: int | None  # index i of the weakest transition (sentence i -> i+1)
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Transition:
    """The model input of transition i: ``first`` (sentence i, or the story so far) and ``second``
    (sentence i+1); ``repeated`` when ``second`` repeats ``first`` (probability 0 without the model)."""

    first: str
    second: str
    repeated: bool


def transitions(
    sentences: Sequence[str], context: CoherenceContext = "pair", *, repeat_is_zero: bool = False
) -> tuple[Transition, ...]:
    """The inputs of each transition and which are repeats.

    ``pair``: ``(s_i, s_i+1)``, a repeat when ``s_i.strip() == s_i+1.strip()``.

    ``prefix``: the rule of dHM's ``evaluate/eval_C_R.py::get_coherence_score``, applied in both
    coherence profiles since the prefix context exists to be that variant. The story so far starts
    as ``s_1``; each next sentence is compared with it (``prefix.strip() == sentence.strip()``): a
    repeat scores 0 and is **not** added to the story so far; any other sentence is scored after it
    and then appended (``prefix += " " + sentence``). So after a repeated sentence, later prefixes
    leave it out. Without ``repeat_is_zero`` nothing is a repeat and the prefix is every earlier
    sentence joined by spaces. A text that is empty once stripped is never a repeat.
    """
    out: list[Transition] = []
    if context == "prefix":
        prefix = sentences[0] if sentences else ""
        for sentence in sentences[1:]:
            repeated = repeat_is_zero and bool(prefix.strip()) and prefix.strip() == sentence.strip()
            out.append(Transition(prefix, sentence, repeated))
            if not repeated:
                prefix += " " + sentence
        return tuple(out)
    for a, b in zip(sentences, sentences[1:], strict=False):
        out.append(Transition(a, b, repeat_is_zero and bool(a.strip()) and a.strip() == b.strip()))
    return tuple(out)


def coherence(
    probabilities: Sequence[float | None],
    sentences: Sequence[str] | None = None,
    *,
    repeat_is_zero: bool = False,
    context: CoherenceContext = "pair",
    over_long: Sequence[bool] | None = None,
) -> Coherence:
    """Story coherence from pair probabilities (NaN counts as not scored); see module doc.

    ``over_long[i]`` says that pair i was longer than the model's maximum length; given (the
    reference profile), such a pair has no probability and, unless it is a repeat, the story no
    score. Left out (the paper profile), a truncated pair's probability counts as any other."""
    pairs: list[float | None] = [None if p is None or math.isnan(p) else float(p) for p in probabilities]
    notes: list[str] = []
    repeats = [False] * len(pairs)
    if sentences is not None:
        if len(sentences) - 1 != len(pairs) and len(sentences) > 0:
            raise ValueError(f"{len(sentences)} sentences need {len(sentences) - 1} pair probabilities, got {len(pairs)}")
        for i, t in enumerate(transitions(sentences, context, repeat_is_zero=repeat_is_zero)):
            if t.repeated:
                repeats[i] = True
                pairs[i] = 0.0
                what = "repeats the story so far" if context == "prefix" else "are identical"
                notes.append(f"sentences {i + 1} and {i + 2} {what}: probability set to 0")
    for i, p in enumerate(pairs):
        if p is not None and not 0.0 <= p <= 1.0:
            raise ValueError(f"pair {i}: probability {p} outside [0, 1]")
    if over_long is not None:
        if len(over_long) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs need {len(pairs)} over-long flags, got {len(over_long)}")
        cut = [i for i, flag in enumerate(over_long) if flag and not repeats[i]]
        if cut:
            for i in cut:
                pairs[i] = None
            which = ", ".join(f"{i + 1}->{i + 2}" for i in cut)
            notes.append(f"pair(s) {which} {OVER_LONG_NOTE}")
            return Coherence(None, tuple(pairs), None, tuple(notes))
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
