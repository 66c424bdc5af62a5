"""What is wrong with an input, as a value: reported to the user, never silently dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]
ProblemKind = Literal["file", "line", "empty", "length", "image", "alignment", "id"]


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with the input, reported to the user; never silently dropped."""

    message: str
    kind: ProblemKind
    severity: Severity = "error"
    line: int | None = None
    story_id: str | None = None

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.story_id is not None:
            where.append(f"story {self.story_id!r}")
        prefix = f"{self.severity} ({', '.join(where)})" if where else self.severity
        return f"{prefix}: {self.message}"
