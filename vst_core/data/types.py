"""Stories, story sets and the problems found while reading them (plain data, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vst_core.data.paths import resolve_image
from vst_core.hashing import text_digest
from vst_core.problems import Problem, ProblemKind, Severity

__all__ = ["Problem", "ProblemKind", "Severity", "Splitter", "Story", "StorySet", "StorySetError"]

Splitter = Callable[[str], list[str]]


class StorySetError(ValueError):
    """The file as a whole cannot be read (not found, not UTF-8 JSON, unknown layout)."""


def _identity(story: Story) -> list[Any]:
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


@dataclass(frozen=True)
class StorySet:
    """Stories read from one file, with the folder their image paths are relative to."""

    stories: tuple[Story, ...]
    root: Path
    source: str
    problems: tuple[Problem, ...] = ()
    _index: dict[tuple[str, str], Story] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update({s.key: s for s in self.stories})

    @classmethod
    def of(cls, stories: Iterable[Story], root: str | Path = ".", source: str = "memory") -> StorySet:
        """A set of stories made in memory; image paths are relative to ``root``.

        >>> len(StorySet.of([Story.from_sentences(["One.", "Two."])]))
        1
        """
        return cls(tuple(stories), Path(root), source)

    def __len__(self) -> int:
        return len(self.stories)

    def __iter__(self) -> Iterator[Story]:
        return iter(self.stories)

    def get(self, story_id: str, system: str | None = None) -> Story:
        """The story ``(system, story_id)``; without a system, the one story with that id
        (KeyError when none, or when several systems share it)."""
        if system is not None:
            return self._index[(system, story_id)]
        found = [s for s in self.stories if s.story_id == story_id]
        if len(found) != 1:
            raise KeyError(f"{story_id!r} names {len(found)} stories: give the system too" if found else story_id)
        return found[0]

    def sequences(self) -> dict[str, list[Story]]:
        """Stories grouped by sequence id, in input order."""
        groups: dict[str, list[Story]] = {}
        for story in self.stories:
            groups.setdefault(story.sequence_id, []).append(story)
        return groups

    def systems(self) -> list[str]:
        return list(dict.fromkeys(s.system for s in self.stories))

    def image_path(self, ref: str) -> Path:
        return resolve_image(self.root, ref)

    def digest(self) -> str:
        """Content hash of the stories (:meth:`content_digest`'s parts) and root."""
        parts = [str(self.root.resolve())]
        parts += [json.dumps(_identity(st)) for st in self.stories]
        return text_digest("".join(parts))

    def content_digest(self) -> str:
        """16 hex digits of sha256 over the stories (ids, systems, sequences, sentences, image refs,
        and where given their image groups and named characters), wherever the file lies: what a
        signature names as the input."""
        parts = [json.dumps(_identity(st)) for st in self.stories]
        return text_digest("\n".join(parts), 16)

    def all_problems(self) -> list[Problem]:
        return [*self.problems, *(p for s in self.stories for p in s.problems)]
