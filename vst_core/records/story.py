"""One line of a scores JSONL: a story, its metric records, errors as data, its signature."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from vst_core.records.codec import encode

#: Layout version written into every record; bumped when the layout changes.
SCORES_FORMAT = 1
#: A metric's record of a story: a frozen dataclass its metric's module declares (its spec's
#: ``record``; GROOVIST's ``metrics/groovist/record.py``), known here only through the
#: registry, which the reader decodes each record by.
MetricScores = object


@dataclass(frozen=True)
class StoryScores:
    """One line of a scores JSONL: a story, its metric records, errors as data, its signature."""

    story_id: str
    sequence_id: str
    system: str
    sentences: tuple[str, ...]
    images: tuple[str, ...] = ()
    metrics: Mapping[str, MetricScores] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    signature: Mapping[str, Any] = field(default_factory=dict)  # JSON as written by signature()
    problems: tuple[str, ...] = ()
    format: int = SCORES_FORMAT
    frames: tuple[int, ...] = ()  # the image each sentence belongs to (sentence groups); empty: one per image
    characters: tuple[tuple[str, str], ...] = ()  # the story's named characters: (name, crop file or '')

    @property
    def signature_id(self) -> str | None:
        value = self.signature.get("id")
        return None if value is None else str(value)

    def with_metric(self, name: str, record: MetricScores) -> StoryScores:
        return replace(self, metrics={**self.metrics, name: record})

    def to_json(self) -> dict[str, Any]:
        """The JSON object of a scores JSONL line (``problems`` only when there are some)."""
        out: dict[str, Any] = {
            "format": self.format,
            "story_id": self.story_id,
            "sequence_id": self.sequence_id,
            "system": self.system,
            "sentences": list(self.sentences),
            "images": list(self.images),
            "metrics": {name: encode(record) for name, record in self.metrics.items()},
            "errors": dict(self.errors),
            "warnings": list(self.warnings),
            "signature": dict(self.signature),
        }
        if self.problems:
            out["problems"] = list(self.problems)
        if self.frames:
            out["frames"] = list(self.frames)
        if self.characters:
            out["characters"] = [list(c) for c in self.characters]
        return out
