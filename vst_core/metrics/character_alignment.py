"""Character–image alignment: is a character named beside the image that shows it?

For a story with named characters and their crops (VWP's ``char*_url``), each character's crop is
encoded whole with CLIP, and its best cosine with each image's regions (the regions GROOVIST
chose, and the whole image) says how well that image shows it. A mention (the character named in
the text of image i: its sentence group, or sentence i) scores the share of the story's other
images that show the character less well than image i (:func:`vst_core.formulas.characters.mention_alignment`):
1 when the story names the character beside the image that shows it best, 0.5 by chance. The
story's value is the mean over its mentions. Presence by name, as :mod:`vst_core.metrics.characters`.

Formula: :mod:`vst_core.formulas.characters`; the crops' vectors come from the image work every
image metric shares (:class:`vst_core.images.grounder.Grounder`). Card: ``docs/metrics/character_alignment.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from vst_core.contract import (
    Card,
    Computing,
    GrounderLike,
    ImageEntryLike,
    MetricField,
    MetricSpec,
    Showing,
)
from vst_core.formulas.characters import Mention  # the record's per-mention part (pure, stdlib only)

if TYPE_CHECKING:
    from vst_core.data import Story

NAME = "char_alignment"


@dataclass(frozen=True, slots=True)
class CharacterAlignmentScores:
    """``score``: the mean rank over the story's mentions (None without one); ``mentions``: each
    character named beside an image, with that image's rank and the image that shows it best;
    ``crops``: the characters with a readable crop, of ``named``."""

    score: float | None
    mentions: tuple[Mention, ...]
    named: int
    crops: int
    notes: tuple[str, ...] = ()


def crop_ref(story: Story, crop: str) -> str:
    """Where a character's crop is, as the story names its images: beside the story's first image
    (VWP's crops and shots are downloaded into one folder).

    >>> from vst_core.data import Story
    >>> crop_ref(Story.from_sentences(["Ann waves."], images=["shots/1.jpg"]), "char_0.jpg")
    'shots/char_0.jpg'
    """
    folder = PurePosixPath(story.images[0]).parent if story.images else PurePosixPath()
    return str(folder / crop) if str(folder) != "." else crop


def image_refs(story: Story) -> list[str]:
    """The crops of the story's named characters (those given one)."""
    return [crop_ref(story, crop) for _, crop in story.characters if crop]


def record(grounder: GrounderLike, story: Story, entries: Sequence[ImageEntryLike]) -> CharacterAlignmentScores:
    """The alignment of each mention of a named character with the image it is named beside, ranked
    among every image of the story that has vectors (one that cannot be read is left out, said)."""
    from vst_core.formulas.characters import mention_alignment, presence_by_names

    named = list(dict.fromkeys(name.strip() for name, _ in story.characters if name.strip()))
    notes: list[str] = []
    seen = [j for j, e in enumerate(entries) if e.whole_emb is not None or (e.region_emb is not None and len(e.region_emb))]
    if len(seen) < len(entries):
        notes.append(f"{len(entries) - len(seen)} of {len(entries)} images cannot be read: left out of the ranking")
    similarity: dict[str, list[float]] = {}
    for name, crop in {n.strip(): c for n, c in story.characters if n.strip() and c}.items():
        entry = grounder.crop(crop_ref(story, crop))
        if entry.error is not None or entry.whole_emb is None:
            notes.append(f"{name}'s crop: {entry.error or 'not encoded'}")
            continue
        similarity[name] = [_best(entries[j], entry.whole_emb) for j in seen]
    texts = story.frame_texts
    n = min(len(texts), len(entries))
    if not named:
        notes.append("no named characters given for this story")
    elif not similarity:
        notes.append("no named character has a readable crop")
    if len(texts) != len(entries):
        unit = "sentence groups" if story.frames else "sentences"
        notes.append(f"{len(texts)} {unit}, {len(entries)} images: mentions in the first {n} compared")
    if len(seen) < 2:
        notes.append("fewer than 2 readable images: no other image to compare with")
        return CharacterAlignmentScores(None, (), len(named), len(similarity), tuple(notes))
    at = {j: k for k, j in enumerate(seen)}  # a story image's place among the readable ones
    named_in = presence_by_names(texts[:n], similarity)
    mentions = {name: {at[i] for i in frames if i in at} for name, frames in named_in.items()}
    score, found = mention_alignment(similarity, mentions)
    found = [Mention(m.name, seen[m.frame], m.rank, m.cosine, seen[m.best_frame]) for m in found]
    if named and similarity and not found:
        notes.append("no character with a crop is named in the text of an image")
    return CharacterAlignmentScores(score, tuple(found), len(named), len(similarity), tuple(notes))


def _best(entry: ImageEntryLike, vector: np.ndarray) -> float:
    """The best cosine of ``vector`` with the image's regions and its whole-image vector."""
    parts = [entry.region_emb @ vector] if entry.region_emb is not None and len(entry.region_emb) else []
    if entry.whole_emb is not None:
        parts.append(np.array([entry.whole_emb @ vector]))
    return float(np.max(np.concatenate(parts)))


def cards(found: CharacterAlignmentScores | None) -> list[Card]:
    """One card, the mean rank; none for a story given no named characters (or without a record)."""
    if found is None or not found.named:
        return []
    return [
        ("Char alignment", found.score, f"{len(found.mentions)} mentions · {found.crops} of {found.named} crops · 0.5 is chance")
    ]


def evidence(found: CharacterAlignmentScores) -> tuple[str, str] | None:
    """Each mention: the character, the image it is named beside, that image's rank and the image
    that shows the character best; escaped."""
    import html

    if not found.mentions:
        return None
    rows = "".join(
        f"<li><b>{html.escape(m.name)}</b> named beside image {m.frame + 1}: rank {m.rank:.2f}"
        + ("" if m.best_frame == m.frame else f" (shown best in image {m.best_frame + 1})")
        + "</li>"
        for m in found.mentions
    )
    score = "–" if found.score is None else f"{found.score:.2f}"
    return f"Character alignment: {score} over {len(found.mentions)} mentions", f"<ul>{rows}</ul>"


METRIC = MetricSpec(
    name=NAME,
    title="Character alignment",
    description="character-image alignment: is a named character named beside the image that shows it (CLIP, crops)",
    record=CharacterAlignmentScores,
    fields=(
        MetricField(
            "char alignment",
            NAME,
            "score",
            "mean over mentions of the share of other images that show the character less well (0.5: chance)",
            report="char alignment",
            bounds=(0.0, 1.0),
        ),
    ),
    card="docs/metrics/character_alignment.md",
    computing=Computing(
        needs=frozenset({"images", "clip", "image_vector"}),
        image_record=record,
        image_refs=image_refs,
        load=lambda models: models.clip,
    ),
    showing=Showing(
        cards=cards,
        evidence=evidence,
    ),
)
