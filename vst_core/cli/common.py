"""What the commands share: the terminal's words (:mod:`vst_core.terminal`, here under their former
names), conflicts between merged records said, and a file of another kind than the command reads
named for what it is (:func:`wrong_file`)."""

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
    from vst_core.data.kinds import FileKind
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
    "outputs_unwritable",
    "story_set_given",
    "wrong_file",
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


def outputs_unwritable(files: Sequence[Path | None], folders: Sequence[Path | None] = ()) -> bool:
    """Whether a file or folder a command is to write cannot be (checked before anything is
    computed or written, so a bad one leaves nothing half done); if so, one error line says which
    and why. None stands for an output not asked for.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> outputs_unwritable([folder / "report.html", folder], [folder / "figures"])
    True
    >>> outputs_unwritable([folder / "report.html", folder / "t.tex"], [folder / "figures"])
    False
    """
    import os

    seen: set[Path] = set()
    for path, want_folder in [*((f, False) for f in files if f is not None), *((d, True) for d in folders if d is not None)]:
        why = None
        if path.resolve() in seen:
            why = "it is given for two outputs"
        elif path.exists() and want_folder != path.is_dir():
            why = (
                "it is a folder, not a file"
                if path.is_dir()
                else "it is a file, not a folder"
                if want_folder
                else "not a regular file"
            )
        else:
            parent = next(p for p in (path if want_folder else path.parent, *path.parents) if p.exists())
            if not parent.is_dir():
                why = f"{parent} is a file, not a folder"
            elif not os.access(parent, os.W_OK | os.X_OK):
                why = f"{parent} is not writable"
        if why is not None:
            error(f"cannot write {path}: {why}; nothing was written")
            return True
        seen.add(path.resolve())
    return False


def story_set_given(paths: Sequence[Path]) -> bool:
    """Whether one of ``paths`` is not scores but stories, judgements or a table of scores to
    import; if so, says which and what to run instead (one error line): :func:`wrong_file` for
    scores.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "stories.jsonl"
    >>> _ = path.write_text('{"story_id": "a", "sentences": ["A dog ran."]}\\n')
    >>> story_set_given([path])
    True
    """
    return wrong_file(paths, "scores")


def wrong_file(paths: Sequence[Path], want: FileKind) -> bool:
    """Whether one of ``paths`` holds another kind of data than ``want`` (told from its content by
    :func:`~vst_core.data.kinds.content_kind`); if so, one error line names it for what it is, with
    the command that reads it.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "human.csv"
    >>> _ = path.write_text("story_id,rater,aspect,value\\na,r1,overall,3\\n")
    >>> wrong_file([path], "stories"), wrong_file([path], "judgements")
    (True, False)
    """
    from vst_core.data.kinds import not_what, wrong_kind  # vst_core.data's readers: only when a file is read

    for path in paths:
        found = wrong_kind(path, want)
        if found is not None:
            error(f"{not_what(path, found, want)}: {_instead(shlex.quote(str(path)), found, want)}")
            return True
    return False


def _instead(path: str, found: FileKind, want: FileKind) -> str:
    """What to run with a file of kind ``found`` given where ``want`` is read."""
    if found == "stories":
        return f"score it first, e.g. `vst score {path} --out scores.jsonl`, then pass scores.jsonl"
    if found == "scores" and want == "judgements":
        return f"give it as the scores and the ratings as the judgements, e.g. `vst meta-eval {path} human.csv --out report.json`"
    if found == "scores":
        return f"it is read by vst compare, meta-eval, dhm and report, e.g. `vst compare {path}`"
    if found == "score table":
        return f"import it first, e.g. `vst import-scores {path} --system NAME --out scores.jsonl` (--long for a long CSV)"
    return (
        f"give it as the judgements, e.g. `vst meta-eval scores.jsonl {path} --out report.json` or "
        f"`vst compare scores.jsonl --judgements {path}` (scores.jsonl: what vst score wrote)"
    )
