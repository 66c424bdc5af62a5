"""Stories, story sets and the problems found while reading them (plain data, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vst_core.data.paths import resolve_image
from vst_core.hashing import text_digest
from vst_core.problems import Problem, ProblemKind, Severity
from vst_core.story import Story, identity_parts

__all__ = ["Problem", "ProblemKind", "Severity", "Splitter", "Story", "StorySet", "StorySetError"]

Splitter = Callable[[str], list[str]]


class StorySetError(ValueError):
    """The file as a whole cannot be read (not found, not UTF-8 JSON, unknown layout)."""


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
        parts += [json.dumps(identity_parts(st)) for st in self.stories]
        return text_digest("".join(parts))

    def content_digest(self) -> str:
        """16 hex digits of sha256 over the stories (ids, systems, sequences, sentences, image refs,
        and where given their image groups and named characters), wherever the file lies: what a
        signature names as the input."""
        parts = [json.dumps(identity_parts(st)) for st in self.stories]
        return text_digest("\n".join(parts), 16)

    def all_problems(self) -> list[Problem]:
        return [*self.problems, *(p for s in self.stories for p in s.problems)]
