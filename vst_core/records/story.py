"""One line of a scores JSONL: a story, its metric records, errors as data, its signature."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from vst_core.records.codec import encode
from vst_core.records.types import (
    ClipScoreScores,
    GroundingScores,
    MetricScores,
    RedundancyScores,
    RovistVGClipScores,
    RovistVGScores,
)

#: Layout version written into every record; bumped when the layout changes.
SCORES_FORMAT = 1
T = TypeVar("T")


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
    def redundancy(self) -> RedundancyScores | None:
        return _of_type(self.metrics, RedundancyScores)

    @property
    def coherence(self) -> Any:
        """RoViST-C's record of the story (its package's ``CoherenceScores``), or None."""
        return self.metrics.get("coherence")

    @property
    def grounding(self) -> GroundingScores | None:
        return _of_type(self.metrics, GroundingScores)

    @property
    def clipscore(self) -> ClipScoreScores | None:
        return _of_type(self.metrics, ClipScoreScores)

    @property
    def rovist_vg(self) -> RovistVGScores | None:
        return _of_type(self.metrics, RovistVGScores)

    @property
    def rovist_vg_clip(self) -> RovistVGClipScores | None:
        return _of_type(self.metrics, RovistVGClipScores)

    @property
    def vrank(self) -> Any:
        """Vrank's record of the story (its package's ``VrankScores``), or None."""
        return self.metrics.get("vrank")

    @property
    def cosmic(self) -> Any:
        """COSMic's record of the story (its package's ``CosmicScores``), or None."""
        return self.metrics.get("cosmic")

    @property
    def judge(self) -> Any:
        """The rubric judge's record of the story (its package's ``JudgeScores``), or None."""
        return self.metrics.get("judge")

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


def _of_type(metrics: Mapping[str, object], kind: type[T]) -> T | None:
    """The record of type ``kind`` among a story's metrics (each metric has its own record type)."""
    return next((v for v in metrics.values() if type(v) is kind), None)
