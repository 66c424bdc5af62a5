"""A story: one candidate (or reference) story for an image sequence, as plain data. It lies below
every other layer, so the metric contract (:mod:`vst_core.contract`) names the type its hooks are
given (:mod:`vst_core.data` re-exports it, its public home)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from vst_core.problems import Problem

__all__ = ["Story", "StoryFields", "StoryText", "identity_parts"]


def identity_parts(story: Story) -> list[Any]:
    """What names a story in a set's digests: groups and characters only where given, so a set
    without them keeps the digest it had before they existed."""
    base: list[Any] = [story.story_id, story.system, story.sequence_id, story.sentences, story.images]
    if story.frames or story.characters:
        base += [story.frames, story.characters]
    return base


@dataclass(frozen=True, slots=True)
class Story:
    """One candidate (or reference) story for an image sequence.

    ``images`` are references as written in the input, relative to the story set's root.
    ``frames``: the image each sentence belongs to (0-based, non-decreasing), for stories written
    as sentence groups per image (VWP, ``[SEP]``-separated model outputs); empty when sentence i
    belongs to image i. Non-redundancy and coherence read the sentences; grounding, CLIPScore and
    T read the groups (:attr:`frame_texts`).
    """

    story_id: str
    sequence_id: str
    system: str
    sentences: tuple[str, ...]
    images: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()
    frames: tuple[int, ...] = ()
    characters: tuple[tuple[str, str], ...] = ()  # named characters: (name, crop file name or ''), as VWP gives them

    @classmethod
    def from_sentences(
        cls,
        sentences: Iterable[str],
        *,
        story_id: str = "story",
        system: str = "candidate",
        sequence_id: str | None = None,
        images: Iterable[str] = (),
    ) -> Story:
        """A story from its sentences (one per image); ``sequence_id`` defaults to ``story_id``.

        >>> Story.from_sentences(["We went to the beach.", "The sea was cold."], story_id="s1").key
        ('candidate', 's1')
        """
        return cls(story_id, sequence_id or story_id, system, tuple(sentences), tuple(images))

    def frame_of(self, sentence: int) -> int:
        """The image (group) sentence ``sentence`` belongs to.

        >>> Story("s", "q", "m", ("A.", "B.", "C."), frames=(0, 0, 1)).frame_of(2)
        1
        """
        return self.frames[sentence] if self.frames else sentence

    @property
    def frame_texts(self) -> tuple[str, ...]:
        """One text per sentence group (the group's sentences joined), in image order; the
        sentences themselves when the story has no groups.

        >>> Story("s", "q", "m", ("A.", "B.", "C."), frames=(0, 0, 2)).frame_texts
        ('A. B.', '', 'C.')
        """
        if not self.frames:
            return self.sentences
        groups: list[list[str]] = [[] for _ in range(max(self.frames) + 1 if self.frames else 0)]
        for sentence, frame in zip(self.sentences, self.frames, strict=True):
            groups[frame].append(sentence)
        return tuple(" ".join(g) for g in groups)

    @property
    def is_empty(self) -> bool:
        return not any(s.strip() for s in self.sentences)

    @property
    def images_ok(self) -> bool:
        """Images are present and every one resolved and opened."""
        return bool(self.images) and not any(p.kind == "image" for p in self.problems)

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    @property
    def key(self) -> tuple[str, str]:
        """The story's identity, ``(system, story_id)``: released sets reuse ids across systems."""
        return (self.system, self.story_id)


class StoryText(Protocol):
    """What is read of a story's text (a :class:`Story`, a scores record and a table's row all fit):
    its ids, its system and its sentences."""

    @property
    def story_id(self) -> str: ...
    @property
    def sequence_id(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def sentences(self) -> Sequence[str]: ...


class StoryFields(StoryText, Protocol):
    """What a story is made of (a :class:`Story` and a scores record both have it): its text and its
    image references."""

    @property
    def images(self) -> Sequence[str]: ...
