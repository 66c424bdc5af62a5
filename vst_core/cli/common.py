"""What the commands share: the terminal's words (:mod:`vst_core.terminal`, here under their former
names), conflicts between merged records said, and a story set told from a scores file."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vst_core.terminal import (
    EXIT_DIVERGED,
    EXIT_INPUT,
    EXIT_PARTIAL,
    EXIT_PLUGIN,
    EXIT_USAGE,
    EXIT_WEIGHTS,
    DefaultsHelp,
    bar,
    csv_list,
    error,
    note,
)

if TYPE_CHECKING:
    from vst_core.data.merge import Conflict

__all__ = [
    "EXAMPLES",
    "EXIT_DIVERGED",
    "EXIT_INPUT",
    "EXIT_PARTIAL",
    "EXIT_PLUGIN",
    "EXIT_USAGE",
    "EXIT_WEIGHTS",
    "DefaultsHelp",
    "bar",
    "csv_list",
    "error",
    "note",
    "note_conflicts",
    "story_set_given",
]

#: Conflict examples shown per metric.
EXAMPLES = 3


def note_conflicts(conflicts: Sequence[Conflict]) -> None:
    """Each metric's conflict count and a few examples (which value was used) on stderr."""
    by_metric: dict[str, list[Conflict]] = {}
    for c in conflicts:
        by_metric.setdefault(c.metric, []).append(c)
    for metric, found in by_metric.items():
        stories = len({(c.system, c.story_id) for c in found})
        note(
            f"warning: {stories} stories have two values of {metric} or more "
            "(a computed value is used over an imported one, else the file named first; each example names "
            "the value used once every file is read), e.g.:"
        )
        for c in found[:EXAMPLES]:
            note(f"  {c}")


def story_set_given(paths: Sequence[Path]) -> bool:
    """Whether one of ``paths`` is a story set rather than scores (its first lines are stories and
    none holds scores); if so, says which and what to run first (one error line).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "stories.jsonl"
    >>> _ = path.write_text('{"story_id": "a", "sentences": ["A dog ran."]}\\n')
    >>> story_set_given([path])
    True
    """
    for path in paths:
        if _stories_not_scores(path):
            error(
                f"{path} holds stories, not scores (no line has metrics): score it first, e.g. "
                f"`vst score {shlex.quote(str(path))} --out scores.jsonl`, then pass scores.jsonl"
            )
            return True
    return False


def _stories_not_scores(path: Path, lines: int = 50) -> bool:
    """The first ``lines`` JSON lines of ``path`` (or its whole JSON document) are stories with
    text and none has ``metrics`` or a scores ``format``."""
    import json

    try:
        with path.open("rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return False
    text = head.decode("utf-8", "replace").lstrip()
    rows: list[object] = []
    if text.startswith("[") or (text.startswith("{") and "\n{" not in text[:4096]):
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and not any(k in whole for k in ("sentences", "story", "text", "metrics")):
            # a VIST-style file or a {story_id: text} map
            return "annotations" in whole or (bool(whole) and all(isinstance(v, str) for v in whole.values()))
        rows = whole[:lines] if isinstance(whole, list) else [whole]
    else:
        for line in text.splitlines()[:lines]:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    stories = [r for r in rows if isinstance(r, dict)]
    if not stories or any("metrics" in r or "format" in r for r in stories):
        return False
    return all(any(k in r for k in ("sentences", "story", "text")) for r in stories)
