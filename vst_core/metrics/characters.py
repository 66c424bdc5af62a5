"""Character consistency (NCS 2026's character measures, with the story's own named characters):
how each named character is kept through the story's sentences, and in how many of its images.

Formula: :mod:`vst_core.formulas.characters`. Wired here: the characters are the story's
``characters`` (VWP's ``char0`` … ``char4``; a story set's ``characters``); a character is present
in a sentence that names it (whole-word, any case). Presence by name, not by a coreference model:
a pronoun does not count, so a story that says "she" after introducing Ann keeps Ann less than a
coreference model would find. NCS find presence with a coreference model; given the same presence
(their released clusters), the measures here equal theirs (``tests/test_characters.py``).
Card: ``docs/metrics/characters.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vst_core.contract import Card, Computing, Key, MetricField, MetricSpec, Reading, RunLike, Showing
from vst_core.formulas.characters import Track  # the record's per-character part (pure, stdlib only)

if TYPE_CHECKING:
    from vst_core.data import Story

NAME = "characters"


@dataclass(frozen=True, slots=True)
class CharacterScores:
    """Means over the story's present named characters (None when none is found, or the story has
    fewer than two sentences): ``score`` the coherence; ``named``: how many characters the story
    was given, ``found``: how many it names."""

    score: float | None
    continuity: float | None
    spread: float | None
    persistence: float | None
    frame_share: float | None
    named: int
    found: int
    tracks: tuple[Track, ...] = ()  # each character's sentences, images and measures
    notes: tuple[str, ...] = ()
    introduction: float | None = None  # mean (first sentence naming it) / (N − 1): 0 all introduced at once


def record(story: Story) -> CharacterScores:
    """The character measures of one story (:mod:`vst_core.formulas.characters`)."""
    from vst_core.formulas.characters import mean_of, presence_by_names, tracks

    names = [name for name, _ in story.characters]
    n = len(story.sentences)
    groups = len(story.frame_texts) if story.frames else 0
    found = tracks(presence_by_names(story.sentences, names), n, story.frames, groups)
    notes: list[str] = []
    if not names:
        notes.append("no named characters given for this story")
    elif n < 2:
        notes.append("fewer than 2 sentences: continuity and spread are undefined")
    elif not found:
        notes.append(f"none of the {len(names)} named characters is named in the story")
    return CharacterScores(
        mean_of(found, "coherence"),
        mean_of(found, "continuity"),
        mean_of(found, "spread"),
        mean_of(found, "persistence"),
        mean_of(found, "frame_share"),
        len(dict.fromkeys(names)),
        len(found),
        tuple(found),
        tuple(notes),
        mean_of(found, "introduction"),
    )


def score(stories: Sequence[Story], run: RunLike) -> Mapping[Key, CharacterScores | str]:
    """Every story's :func:`record`."""
    return {story.key: record(story) for story in stories}


def cards(found: CharacterScores | None) -> list[Card]:
    """One card: the characters' coherence, with continuity and spread on hover; none for a story
    given no named characters (or without a record)."""
    from vst_core.viz.story import format_score

    if found is None or not found.named:  # a story given no characters has nothing to show
        return []
    tip = f"continuity {format_score(found.continuity)} · spread {format_score(found.spread)} · {found.found} of {found.named} named"
    return [("Characters", found.score, tip)]


def evidence(found: CharacterScores) -> tuple[str, str] | None:
    """Each character's sentences (1-based) and image groups, escaped."""
    import html

    if not found.tracks:
        return None
    rows = "".join(
        f"<li><b>{html.escape(t.name)}</b>: sentences {', '.join(str(s + 1) for s in t.sentences)}"
        + (f"; images {', '.join(str(f + 1) for f in t.frames)}" if t.frames else "")
        + f" (continuity {t.continuity:.2f}, spread {t.spread:.2f})</li>"
        for t in found.tracks
    )
    how = "<p><small>present where named (whole word, any case); pronouns are not resolved: no coreference model runs here</small></p>"
    return f"Characters: {found.found} of {found.named} named", f"<ul>{rows}</ul>{how}"


METRIC = MetricSpec(
    name=NAME,
    title="Character consistency",
    description="character consistency (NCS): how each named character is kept from sentence to sentence",
    record=CharacterScores,
    fields=(
        MetricField(
            "char coherence",
            NAME,
            "score",
            "mean over named characters of tanh(continuity / spread)",
            report="char coherence",
            bounds=(0.0, 1.0),
        ),
        MetricField(
            "char continuity",
            NAME,
            "continuity",
            "mean share of consecutive sentence pairs that both name the character",
            report="char continuity",
            bounds=(0.0, 1.0),
        ),
        MetricField(
            "char spread", NAME, "spread", "mean (last − first sentence naming it) / (N − 1)", direction="none", bounds=(0.0, 1.0)
        ),
        MetricField(
            "char persistence",
            NAME,
            "persistence",
            "mean share of sentences that name the character",
            direction="none",
            bounds=(0.0, 1.0),
        ),
        MetricField(
            "char images",
            NAME,
            "frame_share",
            "mean share of image groups that name the character (stories in groups)",
            direction="none",
            bounds=(0.0, 1.0),
        ),
        MetricField(
            "char introduction",
            NAME,
            "introduction",
            "mean (first sentence naming the character) / (N − 1): 0 when every character is named in the first sentence",
            direction="none",
            bounds=(0.0, 1.0),
        ),
    ),
    card="docs/metrics/characters.md",
    computing=Computing(score=score),
    showing=Showing(
        cards=cards,
        evidence=evidence,
    ),
    reading=Reading(aliases=("chars",)),
)
