"""RoViST-C over a batch of stories: every transition of the batch in one model call, each story's
record from its pair probabilities, and what a run says of over-long pairs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vst_core.contract.protocols import SettingsLike
from vst_core.data import Story
from vst_core.formulas.coherence import OVER_LONG_NOTE, Coherence, coherence
from vst_core.formulas.variants import CoherenceContext
from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores
from vst_core.metrics.rovist_c.scorers import pairs_of
from vst_core.metrics.rovist_c.seam import PairScorer, PairScores


def pair_scores_for(
    stories: Sequence[Story], scorer: PairScorer, context: CoherenceContext = "pair", *, repeat_is_zero: bool = True
) -> dict[tuple[str, str], PairScores]:
    """Score the transitions of many stories in one batched call (``context`` and ``repeat_is_zero``:
    see :func:`pairs_of`), keyed by each story's ``(system, story_id)``."""
    owners: list[tuple[tuple[str, str], int, int]] = []
    pairs: list[tuple[str, str]] = []
    for story in stories:
        story_pairs = pairs_of(story.sentences, context, repeat_is_zero=repeat_is_zero)
        owners.append((story.key, len(pairs), len(pairs) + len(story_pairs)))
        pairs.extend(story_pairs)
    scored = scorer.score_pairs_detailed(pairs) if pairs else PairScores(np.zeros(0), ())
    return {key: PairScores(scored.probabilities[a:b], scored.truncated[a:b]) for key, a, b in owners}


def coherence_of(story: Story, settings: SettingsLike, scores: PairScores, model: str) -> CoherenceScores:
    """RoViST-C of one story from its pair probabilities. An over-long pair (``scores.truncated``)
    counts truncated under the paper profile; under the reference profile the story has no score
    and its notes say why (:func:`vst_core.formulas.coherence.coherence`, ``over_long``)."""
    context = settings.option("coherence_context")
    reference = settings.option("coherence_profile") == "reference"
    result = coherence(
        list(scores.probabilities),
        story.sentences,
        repeat_is_zero=settings.option("coherence_repeat_zero"),
        context=context,
        over_long=scores.truncated if reference and len(scores.truncated) == len(scores.probabilities) else None,
    )
    return coherence_scores(result, () if reference else scores.truncated, model, context)


def profile_problem(scorer: PairScorer, settings: SettingsLike) -> str | None:
    """Why ``scorer`` cannot give the reference profile's numbers (a RoViST-C scorer loaded with the
    fast tokenizer, e.g. one injected or cached under other settings), or None."""
    tokenizer = getattr(scorer, "tokenizer", None)
    if (
        settings.option("coherence_profile") == "reference"
        and scorer.name.startswith("rovist-c:")
        and getattr(tokenizer, "is_fast", False)
    ):
        return (
            "the reference coherence profile needs the authors' slow ALBERT tokenizer, but this RoViST-C scorer "
            "was loaded with the fast one; load it with load_pair_scorer(..., profile='reference')"
        )
    return None


def truncation_warnings(story: Story, scores: PairScores, record: CoherenceScores | None = None) -> list[str]:
    """One warning per truncated pair (paper profile), or one for a story the reference profile left
    unscored because of an over-long pair (``record``: the story's coherence record)."""
    if record is not None and record.score is None and any(OVER_LONG_NOTE in note for note in record.notes):
        cut = ", ".join(f"{i + 1}->{i + 2}" for i, flag in enumerate(scores.truncated) if flag)
        return [
            f"coherence: story {story.story_id!r} has no coherence score: pair(s) {cut} are longer than the model's "
            "maximum length, and the reference profile leaves such a story unscored as the authors' code does"
        ]
    if record is not None and not any(p.truncated for p in record.pairs):
        return []
    return [
        f"coherence: pair {i + 1}->{i + 2} of story {story.story_id!r} is longer than the "
        "model's maximum length and was truncated"
        for i, cut in enumerate(scores.truncated)
        if cut
    ]


def coherence_scores(
    result: Coherence, truncated: Sequence[bool], model: str, context: CoherenceContext = "pair"
) -> CoherenceScores:
    """RoViST-C record: one pair per adjacent sentences, flagged when the model truncated it."""
    return CoherenceScores(
        score=result.score,
        pairs=tuple(
            CoherencePair(i, i + 1, p, bool(truncated[i]) if i < len(truncated) else False) for i, p in enumerate(result.pairs)
        ),
        weakest=result.weakest,
        model=model,
        notes=tuple(result.notes),
        context=context,
    )
