"""What every command shares: exit codes, error printing, progress bars."""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vst_core.data.merge import Conflict

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_WEIGHTS = 4
EXIT_DIVERGED = 5  # training met a non-finite loss; nothing written
EXIT_PARTIAL = 6  # some metrics' models could not load; the others were scored
EXIT_PLUGIN = 7  # an installed metric package could not be loaded (vst metrics)


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def note(message: str) -> None:
    print(message, file=sys.stderr)


def bar(total: int, unit: str, desc: str, disable: bool = False) -> Any:
    """A tqdm progress bar on stderr."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, disable=disable)


def csv_list(value: str | None) -> list[str] | None:
    """A comma-separated option as its items, read as one CSV row: a name holding a comma is given
    in double quotes.

    >>> csv_list('a, "b,c" ,d'), csv_list(""), csv_list("x")
    (['a', 'b,c', 'd'], None, ['x'])
    """
    if not value:
        return None
    row = next(csv.reader([value], skipinitialspace=True), [])
    items = [v.strip() for v in row if v.strip()]
    return items or None


class DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` with each option's default, unless its help already says it or there is none
    (a ``None`` or empty default means "decided at run time", which the help text explains)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text or action.default in (None, "", argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


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
