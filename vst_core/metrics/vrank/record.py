"""Vrank's record: a story's mean margin and its verdict against each other story of its sequence.

>>> VrankScores(0.25, (Preference("model", "7", 0.25),)).preferences[0].margin
0.25
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Preference:
    """Vrank's verdict on this story against another story of its image sequence: ``margin`` =
    (f(this, other) − f(other, this)) / 2, the predicted ranking gap in both orders averaged;
    > 0 means Vrank prefers this story."""

    system: str
    story_id: str
    margin: float


@dataclass(frozen=True, slots=True)
class VrankScores:
    """Vrank (Hsu et al., 2022) on one story: ``score`` the mean margin over the other stories of
    its image sequence (None when it has none), one :class:`Preference` per other story."""

    score: float | None
    preferences: tuple[Preference, ...]
    notes: tuple[str, ...] = ()
    model: str = ""  # the model folder's name and weights digest
