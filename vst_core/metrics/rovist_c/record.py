"""RoViST-C's record: P(each sentence follows the previous one), their mean, the weakest transition.

>>> CoherenceScores(0.9, (CoherencePair(0, 1, 0.9),), 0, "bert-nsp").pairs[0].probability
0.9
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vst_core.formulas.variants import CoherenceContext


@dataclass(frozen=True, slots=True)
class CoherencePair:
    """P(sentence ``to`` follows sentence ``from``); None where undefined."""

    from_: int = field(metadata={"json": "from"})
    to: int
    probability: float | None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class CoherenceScores:
    """RoViST-C: mean transition probability; ``weakest`` is the index of the lowest pair."""

    score: float | None
    pairs: tuple[CoherencePair, ...]
    weakest: int | None
    model: str
    notes: tuple[str, ...] = ()
    context: CoherenceContext = "pair"  # "prefix": P(sentence i+1 follows sentences 1..i)
