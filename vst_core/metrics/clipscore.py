"""CLIPScore (Hessel et al., 2021) per sentence and image: mean of 2.5 · max(cos(sentence i, image i), 0).

Formula: :mod:`vst_core.formulas.grounding`; wired here (:func:`record`) over the whole images' vectors
and the prompted sentences' the image metrics' shared work encoded
(:class:`vst_core.images.grounder.Grounder`). Card: ``docs/metrics/clipscore.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vst_core.contract import (
    Bench,
    Computing,
    GrounderLike,
    ImageEntryLike,
    MetricField,
    MetricSpec,
    Option,
    PhraseLike,
    SettingsLike,
    Signing,
    Tools,
)

if TYPE_CHECKING:
    from vst_core.data import Story

NAME = "clipscore"


@dataclass(frozen=True, slots=True)
class ClipScoreScores:
    """CLIPScore: mean of 2.5 · max(cos(sentence i, image i), 0) over the ``pairs``."""

    score: float | None
    pairs: tuple[float, ...]
    notes: tuple[str, ...] = ()


def texts(settings: SettingsLike, story: Story, phrases: Sequence[PhraseLike]) -> list[str]:
    """What CLIPScore embeds: each sentence (or image group, :attr:`Story.frame_texts`) after the
    prompt ("A photo depicts " by default)."""
    return [settings.option("clipscore_prompt") + t for t in story.frame_texts if t]


def record(grounder: GrounderLike, story: Story, entries: Sequence[ImageEntryLike]) -> ClipScoreScores:
    """CLIPScore of sentence (or image group) i, after the prompt, with the whole image i; pairs up
    to the shorter side, the rest said in a note."""
    from vst_core.formulas.grounding import clipscore

    texts = story.frame_texts
    n = min(len(texts), len(entries))
    prompt = grounder.settings.option("clipscore_prompt")
    cosines = [float(grounder.text_vector(prompt + texts[i]) @ entries[i].whole_emb) if texts[i] else 0.0 for i in range(n)]
    aligned = n == len(texts) == len(entries)
    unit = "sentence groups" if story.frames else "sentences"
    notes = [] if aligned else [f"{len(texts)} {unit}, {len(entries)} images: {n} pairs scored"]
    for i in range(n):
        cut = grounder.truncation(prompt + texts[i]) if texts[i] else None
        if cut is not None:
            notes.append(f"{unit[:-1]} {i + 1} ({cut[0]} tokens) truncated to CLIP's {cut[1]}: its end is not scored")
    found = clipscore(cosines)
    return ClipScoreScores(found.score, found.pairs, tuple(notes))


METRIC = MetricSpec(
    name=NAME,
    title="CLIPScore",
    description="CLIPScore: 2.5 * max(cos(sentence i, image i), 0), mean over the story",
    record=ClipScoreScores,
    fields=(
        MetricField(
            "CLIPScore", NAME, "score", "mean 2.5·max(cos(sentence i, image i), 0)", report="CLIPScore", bounds=(0.0, 2.5)
        ),
    ),
    card="docs/metrics/clipscore.md",
    computing=Computing(
        needs=frozenset({"images", "clip", "image_vector"}),
        image_record=record,
        texts=texts,
        load=lambda models: models.clip,
    ),
    signing=Signing(
        options=(
            Option(
                "clipscore_prompt",
                "A photo depicts ",
                help='the caption prefix (Hessel et al., 2021, §3: "A photo depicts "); "" scores the bare sentence',
            ),
        ),
    ),
    tools=Tools(bench=Bench(runs=frozenset({"warm", "memory", "e2e"}))),
)
