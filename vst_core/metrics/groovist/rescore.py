"""GROOVIST again under another θ, penalty (−P) or weighting (−C), with no model: every phrase's
best cosine and weight are in its record, and the matched image, box and temporal misalignment do
not depend on these settings."""

from __future__ import annotations

from dataclasses import replace

from vst_core.formulas.grounding import groovist_score
from vst_core.metrics.groovist.record import GroundingScores


def rescore_grounding(record: GroundingScores, theta: float, *, penalize: bool, weight: bool) -> GroundingScores:
    """A GROOVIST record with another θ / penalty / weighting, from its stored cosines and weights."""
    phrases = record.phrases
    g = groovist_score([p.best_cosine for p in phrases], [p.weight for p in phrases], theta, penalize=penalize, weight=weight)
    return replace(
        record,
        score=g.score,
        unbounded=g.unbounded,
        theta=theta,
        phrases=tuple(
            replace(p, contribution=g.contributions[k], positive=g.scores[k] >= theta or not penalize)
            for k, p in enumerate(phrases)
        ),
    )
