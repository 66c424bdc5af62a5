"""COSMic's record: a story's sentences rated against the reference story's, and their mean.

>>> CosmicScores(0.5, (), "human:1").reference
'human:1'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CosmicSentence:
    """COSMic's rating of sentence ``index`` (with image ``index``) against the reference
    sentence ``index``; ``label`` and ``reference_label`` are the coherence labels used
    (Visible, Subjective, Story, Meta), ``labels_from`` says whether they were given or predicted."""

    index: int
    rating: float | None
    label: str
    reference_label: str
    reference: str
    labels_from: str = "predicted"


@dataclass(frozen=True, slots=True)
class CosmicScores:
    """COSMic's recipe on a story: ``score`` the mean sentence rating, against the reference story
    ``reference`` (``system:story_id``) of the same sequence."""

    score: float | None
    sentences: tuple[CosmicSentence, ...]
    reference: str = ""
    notes: tuple[str, ...] = ()
    model: str = ""
