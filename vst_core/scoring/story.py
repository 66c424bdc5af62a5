"""Score stories: every metric of the settings on one story (or a batch), as a typed record.

A failing metric becomes an error entry of the record with its reason, never a silent 0; a story
whose text is empty carries that error for every metric. Models come from a
:class:`~vst_core.scoring.registry.Models` (loaded once, or injected)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from vst_core.config import CLIP_METRICS, SET_METRICS, Settings
from vst_core.data import Story, StorySet
from vst_core.metrics.coherence import OVER_LONG_NOTE, coherence
from vst_core.metrics.grounding import theta_from_scores
from vst_core.metrics.redundancy import (
    combine_parts,
    non_redundancy,
    non_redundancy_scores,
)
from vst_core.metrics.variants import CoherenceContext, NRVariant
from vst_core.models.hub import ModelLoadError
from vst_core.models.pairs import pairs_of
from vst_core.models.protocols import PairScorer, PairScores
from vst_core.records import (
    CoherenceScores,
    MetricScores,
    RedundancyScores,
    StoryScores,
)
from vst_core.scoring.builders import (
    NO_SPANS_NOTE,
    coherence_scores,
    redundancy_numbers,
    redundancy_scores,
)
from vst_core.scoring.judge import judge_records
from vst_core.scoring.registry import Models
from vst_core.signature import signature as settings_signature
from vst_core.text.phrases import token_texts, tokenize
from vst_core.text.public import located_tokens, punkt_sentences, word_tokens

#: Note on a reference-profile NR record whose sentences differ from the story's own.
RESPLIT_NOTE = "the public code's sentence split differs from the story's sentences: repeated spans not shown"


def _reference_sentences(story: Story) -> list[str]:
    """The story as the public RoViST code sees it: one text, split again by NLTK Punkt."""
    return punkt_sentences(" ".join(s.strip() for s in story.sentences if s.strip()))


def nr_words(story: Story, variant: NRVariant) -> list[list[str]]:
    """Token texts per sentence as the variant reads them: our tokenizer over the story's sentences
    (``paper``), or NLTK's sentences and word tokens (``reference``, see :mod:`vst_core.text.public`)."""
    if variant == "reference":
        return [word_tokens(s) for s in _reference_sentences(story)]
    return [token_texts(s) for s in story.sentences]


def redundancy_of(story: Story, n: int, variant: NRVariant) -> RedundancyScores:
    """RoViST-NR of one story with its repeated spans (character spans in the story's sentences)."""
    if variant != "reference":
        tokens = [tokenize(s) for s in story.sentences]
        return redundancy_scores(non_redundancy([[t.text for t in ts] for ts in tokens], n=n, variant=variant), tokens)
    sentences = _reference_sentences(story)
    located = [located_tokens(s) for s in sentences] if sentences == [s.strip() for s in story.sentences] else []
    if located and all(t is not None for t in located):
        tokens = [t for t in located if t is not None]
        return redundancy_scores(non_redundancy([[t.text for t in ts] for ts in tokens], n=n, variant=variant), tokens)
    result = non_redundancy([word_tokens(s) for s in sentences], n=n, variant=variant)
    return redundancy_numbers(
        result.score, result.inter, result.intra, variant=variant, n=n, notes=result.notes, why=RESPLIT_NOTE
    )


def redundancy_without_spans(stories: Sequence[Story], settings: Settings) -> dict[tuple[str, str], RedundancyScores]:
    """NR records of many stories from one vectorised pass (:func:`non_redundancy_scores`): the
    numbers and notes of :func:`redundancy_of` (up to float rounding) without the repeated spans
    (:func:`with_repeated_spans` adds them when a story is shown), keyed by ``(system, story_id)``."""
    tokens = [nr_words(story, settings.nr_variant) for story in stories]
    batch = non_redundancy_scores(tokens, n=settings.nr_ngram, variant=settings.nr_variant)
    out: dict[tuple[str, str], RedundancyScores] = {}
    for k, story in enumerate(stories):
        e, a = float(batch.inter_mean[k]), float(batch.intra_mean[k])
        score, inter, intra, notes = combine_parts(
            None if math.isnan(e) else e,
            None if math.isnan(a) else a,
            bool(batch.sentences[k]),
            settings.nr_ngram,
            settings.nr_variant,
        )
        out[story.key] = redundancy_numbers(score, inter, intra, variant=settings.nr_variant, n=settings.nr_ngram, notes=notes)
    return out


def with_repeated_spans(record: StoryScores) -> StoryScores:
    """The record with the repeated spans of its NR result filled in, if a run left them out."""
    nr = record.redundancy
    if nr is None or nr.inter_repeats is not None or NO_SPANS_NOTE not in nr.notes or nr.variant == "imported":
        return record
    story = Story(record.story_id, record.sequence_id, record.system, record.sentences, record.images)
    spans = redundancy_of(story, nr.n, nr.variant)
    kept = [x for x in nr.notes if x != NO_SPANS_NOTE]
    filled = replace(
        nr,
        notes=tuple(kept + [x for x in spans.notes if x == RESPLIT_NOTE and x not in kept]),
        inter_repeats=spans.inter_repeats,
        intra_repeats=spans.intra_repeats,
    )
    return record.with_metric("redundancy", filled)


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


def coherence_of(story: Story, settings: Settings, scores: PairScores, model: str) -> CoherenceScores:
    """RoViST-C of one story from its pair probabilities. An over-long pair (``scores.truncated``)
    counts truncated under the paper profile; under the reference profile the story has no score
    and its notes say why (:func:`vst_core.metrics.coherence.coherence`, ``over_long``)."""
    context = settings.coherence_context
    reference = settings.coherence_profile == "reference"
    result = coherence(
        list(scores.probabilities),
        story.sentences,
        repeat_is_zero=settings.coherence_repeat_zero,
        context=context,
        over_long=scores.truncated if reference and len(scores.truncated) == len(scores.probabilities) else None,
    )
    return coherence_scores(result, () if reference else scores.truncated, model, context)


def _profile_problem(scorer: PairScorer, settings: Settings) -> str | None:
    """Why ``scorer`` cannot give the reference profile's numbers (a RoViST-C scorer loaded with the
    fast tokenizer, e.g. one injected or cached under other settings), or None."""
    tokenizer = getattr(scorer, "tokenizer", None)
    if settings.coherence_profile == "reference" and scorer.name.startswith("rovist-c:") and getattr(tokenizer, "is_fast", False):
        return (
            "the reference coherence profile needs the authors' slow ALBERT tokenizer, but this RoViST-C scorer "
            "was loaded with the fast one; load it with load_pair_scorer(..., profile='reference')"
        )
    return None


def _truncation_warnings(story: Story, scores: PairScores, record: CoherenceScores | None = None) -> list[str]:
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


def score_story(
    story: Story,
    settings: Settings,
    signature: Mapping[str, Any] | None = None,
    *,
    models: Models | None = None,
    pair_scores: PairScores | None = None,
    root: Path | None = None,
    redundancy: RedundancyScores | None = None,
    together: Mapping[str, MetricScores | str] | None = None,
    judge: MetricScores | str | None = None,
) -> StoryScores:
    """Score one story with every metric of ``settings``; a failing metric becomes an error entry.
    ``pair_scores``, ``redundancy`` and ``judge`` (a record or the reason there is none) are
    precomputed batch results (see :func:`score_batch`);
    ``together`` the story's set metrics (:mod:`vst_core.scoring.sets`: a record or the reason
    there is none), computed with the other stories of its sequence."""
    metrics: dict[str, MetricScores] = {}
    errors: dict[str, str] = {}
    warnings = [str(p) for p in story.problems if p.severity == "warning"]
    blocking = [p.message for p in story.problems if p.kind == "empty" and p.severity == "error"]
    clip_results: dict[str, MetricScores] | None = None
    for name in settings.metrics:
        if blocking:
            errors[name] = "; ".join(blocking)
            continue
        try:
            if name == "redundancy":
                metrics[name] = redundancy or redundancy_of(story, settings.nr_ngram, settings.nr_variant)
            elif name == "coherence":
                models = models or Models(settings)
                problem = _profile_problem(models.pair_scorer, settings)
                if problem:
                    raise ValueError(problem)
                scores = (
                    pair_scores
                    or pair_scores_for(
                        [story], models.pair_scorer, settings.coherence_context, repeat_is_zero=settings.coherence_repeat_zero
                    )[story.key]
                )
                record = coherence_of(story, settings, scores, models.pair_scorer.name)
                metrics[name] = record
                warnings.extend(_truncation_warnings(story, scores, record))
            elif name in SET_METRICS:
                found = (together or {}).get(name)
                if found is None:
                    raise ValueError(f"{name} compares the stories of a sequence: score the story set (score_story_set)")
                if isinstance(found, str):
                    errors[name] = found
                    continue
                metrics[name] = found
            elif name == "judge":
                if judge is None:
                    models = models or Models(settings)
                    judge = judge_records(
                        [story], settings, models.judge, models.rubric, models.judge_cache, root or Path(".")
                    ).get(story.key, "empty story")
                if isinstance(judge, str):
                    errors[name] = judge
                    continue
                metrics[name] = judge
            elif name in CLIP_METRICS:
                if clip_results is None:
                    models = models or Models(settings)
                    grounder = models.grounder(root or Path("."))
                    if not grounder.ready(story):
                        grounder.prepare([story])
                    clip_results = grounder.score(story)
                metrics[name] = clip_results[name]
            else:  # pragma: no cover - parse_metrics rejects unknown names
                raise KeyError(name)
        except Exception as exc:  # a story that fails shows why; the run goes on
            errors[name] = f"{type(exc).__name__}: {exc}"
    return StoryScores(
        story_id=story.story_id,
        sequence_id=story.sequence_id,
        system=story.system,
        sentences=story.sentences,
        images=story.images,
        metrics=metrics,
        errors=errors,
        warnings=tuple(warnings),
        signature=signature or settings_signature(settings),
        problems=tuple(str(p) for p in story.problems if p.severity == "error" and p.kind != "empty"),
    )


def score_batch(
    stories: Sequence[Story],
    settings: Settings,
    signature: Mapping[str, Any],
    models: Models,
    root: Path,
    *,
    spans: bool = True,
    together: Mapping[tuple[str, str], Mapping[str, MetricScores | str]] | None = None,
) -> list[StoryScores]:
    """Score stories together: sentence pairs in one model call, regions and phrases of every
    story encoded in shared batches, NR in one vectorised pass when ``spans`` is False."""
    texts = [s for s in stories if not s.is_empty]
    nr: dict[tuple[str, str], RedundancyScores] = {}
    if not spans and "redundancy" in settings.metrics:
        nr = redundancy_without_spans(texts, settings)
    pair_scores: dict[tuple[str, str], PairScores] = {}
    if "coherence" in settings.metrics and not _profile_problem(models.pair_scorer, settings):
        pair_scores = pair_scores_for(
            texts, models.pair_scorer, settings.coherence_context, repeat_is_zero=settings.coherence_repeat_zero
        )
    grounder = None
    if CLIP_METRICS & set(settings.metrics):
        grounder = models.grounder(root)
        grounder.prepare(texts)
    judged: dict[tuple[str, str], MetricScores | str] = {}
    if "judge" in settings.metrics and texts:
        try:
            judged = dict(judge_records(texts, settings, models.judge, models.rubric, models.judge_cache, root))
        except ModelLoadError:
            raise
        except (ValueError, RuntimeError, OSError) as exc:  # a chunk the model cannot take: each story says why
            judged = {s.key: f"{type(exc).__name__}: {exc}" for s in texts}
    try:
        return [
            score_story(
                story,
                settings,
                signature,
                models=models,
                pair_scores=pair_scores.get(story.key),
                root=root,
                redundancy=nr.get(story.key),
                together=(together or {}).get(story.key),
                judge=judged.get(story.key),
            )
            for story in stories
        ]
    finally:
        if grounder is not None:
            grounder.forget()


def dataset_theta(story_set: StorySet, models: Models, chunk_size: int) -> tuple[float, int]:
    """θ as GROOVIST defines it, the mean scaled NP score over the loaded set: (θ, #phrases).

    Always over the whole set (never a shard), so every shard of a run agrees on θ."""
    grounder = models.grounder(story_set.root)
    stories = [s for s in story_set if not s.is_empty and s.images]
    values: list[float] = []
    for start in range(0, len(stories), chunk_size):
        chunk = stories[start : start + chunk_size]
        grounder.prepare(chunk)
        for story in chunk:
            values.extend(grounder.best_cosines(story))
        grounder.forget()
    return theta_from_scores(values), len(values)
