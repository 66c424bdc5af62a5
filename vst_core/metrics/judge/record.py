"""The rubric judge's record: each aspect's score Σ k·p(k) over the ratings 1..5, with what it rests on.

>>> JudgeScores.__dataclass_fields__["aspects"].type
'tuple[JudgeAspect, ...]'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JudgeAspect:
    """A rubric judge's answer on one aspect (G-Eval's rule, :mod:`vst_core.metrics.judge.rule`):
    ``score`` = Σ k·p(k) of ``distribution`` p(1..5), both averaged over the rubric's
    ``paraphrases`` (each paraphrase's score kept; ``spread`` their standard deviation), ``mass``
    the rating tokens' share of the next-token distribution, ``images`` whether the model saw the
    story's images."""

    aspect: str
    score: float | None
    distribution: tuple[float, ...]
    paraphrases: tuple[float, ...]
    spread: float | None = None
    mass: float | None = None
    images: bool = False


@dataclass(frozen=True, slots=True)
class JudgeScores:
    """A rubric judge on one story: ``score`` the ``overall`` aspect, the four standard aspects'
    scores as numbers (the registry's columns), ``aspects`` every answer they are read from,
    ``without_images`` the same model's answers with the images left out (when it was run with
    them), ``rationale`` text the model generated (greedy decoding), shown, never scored."""

    score: float | None
    aspects: tuple[JudgeAspect, ...]
    overall: float | None = None
    grounding: float | None = None
    coherence: float | None = None
    non_redundancy: float | None = None
    without_images: tuple[JudgeAspect, ...] = ()
    rationale: str | None = None
    model: str = ""  # name@weights digest
    template: str = ""  # name-vN@sha256
    notes: tuple[str, ...] = ()

    def aspect(self, name: str, images: bool | None = None) -> JudgeAspect | None:
        """The answer on aspect ``name`` (from ``without_images`` when ``images`` is False and the
        main answers saw the images)."""
        pool = self.without_images if images is False and self.without_images else self.aspects
        return next((a for a in pool if a.aspect == name), None)
