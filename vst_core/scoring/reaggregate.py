"""Re-aggregate stored evidence under other GROOVIST settings (θ, penalty −P, weighting −C) with
no model: every phrase's best cosine and weight are in its record, and the matched image, box and
temporal misalignment do not depend on these settings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vst_core.config import Settings
from vst_core.metrics.grounding import groovist_score
from vst_core.records import GroundingScores, StoryScores
from vst_core.signature import recorded_inputs, signature


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


def reaggregate(records: Sequence[StoryScores], base: Settings, wanted: Settings) -> list[StoryScores]:
    """Records scored under ``base`` as ``wanted`` would give them, when the two differ only in θ,
    the penalty or whether weights are used; each record then carries ``wanted``'s signature.

    Raises ValueError when ``wanted`` differs from ``base`` in anything a model would have to redo."""
    if wanted == base:
        return list(records)
    comparable = base.with_(theta=wanted.theta, penalize=wanted.penalize, weighting=wanted.weighting)
    if comparable != wanted:
        raise ValueError("only θ, the penalty and the weighting can be changed without scoring again")
    if wanted.weighting not in ("none", base.weighting):
        raise ValueError(f"weights {wanted.weighting!r} are not stored in records scored with {base.weighting!r}")
    sig = signature(wanted, recorded_inputs(records))
    out = []
    for record in records:
        grounding = record.grounding
        if grounding is not None:
            grounding = rescore_grounding(
                grounding, wanted.theta_value, penalize=wanted.penalize, weight=wanted.weighting != "none"
            )
            record = record.with_metric("grounding", grounding)
        out.append(replace(record, signature=sig))
    return out
