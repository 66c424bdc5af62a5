"""RoViST-NR of stories: one story with its repeated spans located in its sentences
(:func:`redundancy_of`), or many at once in one vectorised pass without them
(:func:`redundancy_without_spans`, ``vst score --no-spans``), under either reading of the text
(``paper``: our tokenizer over the story's sentences; ``reference``: the public code's NLTK split).
The engine refuses a story over the length limits before NR sees it; the reference reading's own
split is held to the sentence limit here (one long sentence can be many to Punkt)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from vst_core.config import story_limit_reason
from vst_core.contract.protocols import SettingsLike
from vst_core.formulas.redundancy import combine_parts, non_redundancy, non_redundancy_scores
from vst_core.formulas.variants import NRVariant
from vst_core.metrics.rovist_nr.builders import redundancy_numbers, redundancy_scores
from vst_core.metrics.rovist_nr.defaults import ngram_of, variant_of
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.story import Story
from vst_core.text.phrases import token_texts, tokenize
from vst_core.text.public import located_tokens, punkt_sentences, word_tokens

#: Note on a reference-profile NR record whose sentences differ from the story's own.
RESPLIT_NOTE = "the public code's sentence split differs from the story's sentences: repeated spans not shown"


def _reference_sentences(story: Story) -> list[str]:
    """The story as the public RoViST code sees it: one text, split again by NLTK Punkt."""
    return punkt_sentences(" ".join(s.strip() for s in story.sentences if s.strip()))


def _within_limits(sentences: list[str]) -> list[str]:
    """The public code's sentences of a story; ValueError when they are over the story limits."""
    why = story_limit_reason(sentences)
    if why is not None:
        raise ValueError(f"the public code's sentence split of the story gives {why}")
    return sentences


def nr_words(story: Story, variant: NRVariant) -> list[list[str]]:
    """Token texts per sentence as the variant reads them: our tokenizer over the story's sentences
    (``paper``), or NLTK's sentences and word tokens (``reference``, see :mod:`vst_core.text.public`;
    ValueError when they are more than the sentence limit)."""
    if variant == "reference":
        return [word_tokens(s) for s in _within_limits(_reference_sentences(story))]
    return [token_texts(s) for s in story.sentences]


def redundancy_of(story: Story, n: int, variant: NRVariant) -> RedundancyScores:
    """RoViST-NR of one story with its repeated spans (character spans in the story's sentences; at
    most :data:`~vst_core.formulas.redundancy.MAX_SPANS`, a note counting the rest); ValueError when
    the reference reading splits it into more sentences than the limit."""
    if variant != "reference":
        tokens = [tokenize(s) for s in story.sentences]
        return redundancy_scores(non_redundancy([[t.text for t in ts] for ts in tokens], n=n, variant=variant), tokens)
    sentences = _within_limits(_reference_sentences(story))
    located = [located_tokens(s) for s in sentences] if sentences == [s.strip() for s in story.sentences] else []
    if located and all(t is not None for t in located):
        tokens = [t for t in located if t is not None]
        return redundancy_scores(non_redundancy([[t.text for t in ts] for ts in tokens], n=n, variant=variant), tokens)
    result = non_redundancy([word_tokens(s) for s in sentences], n=n, variant=variant)
    return redundancy_numbers(
        result.score, result.inter, result.intra, variant=variant, n=n, notes=result.notes, why=RESPLIT_NOTE
    )


def redundancy_without_spans(stories: Sequence[Story], settings: SettingsLike) -> dict[tuple[str, str], RedundancyScores | str]:
    """NR records of many stories from one vectorised pass (:func:`non_redundancy_scores`): the
    numbers and notes of :func:`redundancy_of` (up to float rounding) without the repeated spans
    (the spec's ``complete`` adds them when a story is shown), keyed by ``(system, story_id)``; a
    story the reference reading splits into more sentences than the limit gets the reason."""
    out: dict[tuple[str, str], RedundancyScores | str] = {}
    tokens, kept = [], []
    for story in stories:
        try:
            tokens.append(nr_words(story, variant_of(settings)))
        except ValueError as exc:
            out[story.key] = f"ValueError: {exc}"
            continue
        kept.append(story)
    batch = non_redundancy_scores(tokens, n=ngram_of(settings), variant=variant_of(settings))
    for k, story in enumerate(kept):
        e, a = float(batch.inter_mean[k]), float(batch.intra_mean[k])
        score, inter, intra, notes = combine_parts(
            None if math.isnan(e) else e,
            None if math.isnan(a) else a,
            bool(batch.sentences[k]),
            ngram_of(settings),
            variant_of(settings),
        )
        out[story.key] = redundancy_numbers(score, inter, intra, variant=variant_of(settings), n=ngram_of(settings), notes=notes)
    return out
