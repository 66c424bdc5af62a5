"""The field reference of a metric's declaration, generated from the dataclasses of
:mod:`vst_core.contract.spec`: each class's docstring (its examples left out) and a table of its
fields (name, type, default and the ``#:`` note above it). ``python -m vst_core.contract.reference``
writes ``docs/metric-spec-reference.md``; a test fails while the committed file differs.

>>> "| `needs` | `frozenset[Need]` | `frozenset()` |" in reference()
True
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
from pathlib import Path

from vst_core.contract.spec import Component, Computing, MetricField, MetricSpec, Option, Reading, Showing, Signing, Tools

#: The classes of the reference, in its order: the spec, its groups, then what they hold.
CLASSES: tuple[type, ...] = (MetricSpec, Computing, Signing, Showing, Reading, Tools, Option, MetricField, Component)
#: Where the reference is written, from the repository's root.
PAGE = Path("docs") / "metric-spec-reference.md"
_HEADER = (
    "# Metric spec: field reference\n\n"
    "<!-- written by `python -m vst_core.contract.reference` from vst_core/contract/spec.py; do not edit -->\n\n"
    "Every field a metric declares, by class, as `vst_core/contract/spec.py` defines it: a class's\n"
    "description, then its fields with their type, their default (none: required) and their note.\n"
    "[CONTRIBUTING.md](../CONTRIBUTING.md#adding-a-metric) says which of them a new metric needs.\n"
)


def markdown(text: str) -> str:
    """A docstring's reStructuredText as Markdown: roles and double back-quotes as code spans.

    >>> markdown("a :class:`~vst_core.config.Settings` keyword, ``flag``")
    'a `vst_core.config.Settings` keyword, `flag`'
    """
    text = re.sub(r":(?:class|func|data|mod|meth|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def description(kind: type) -> str:
    """A class's docstring without its examples (the ``>>>`` lines and what they print)."""
    kept: list[str] = []
    in_example = False
    for line in (inspect.getdoc(kind) or "").splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_example = True
        elif not stripped:
            in_example = False
        if not in_example:
            kept.append(line)
    return markdown("\n".join(kept).strip())


def field_notes(kind: type) -> dict[str, str]:
    """Each field's ``#:`` comment in the class's source, by name (a field without one is left out).

    >>> field_notes(Option)["needs"].startswith("signed in every run with a metric")
    True
    """
    lines = textwrap.dedent(inspect.getsource(kind)).splitlines()
    tree = ast.parse("\n".join(lines))
    notes: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        comment: list[str] = []
        row = node.lineno - 2  # the line above, 0-based
        while row >= 0 and lines[row].strip().startswith("#:"):
            comment.insert(0, lines[row].strip()[2:].strip())
            row -= 1
        if comment:
            notes[node.target.id] = " ".join(comment)
    return notes


def alias_notes(kind: type) -> dict[str, str]:
    """The ``#:`` comment above each top-level name of the class's module (a hook's type, ``Need``), by name.

    >>> alias_notes(Computing)["Need"].startswith("What computing a metric needs")
    True
    """
    module = sys.modules[kind.__module__]
    lines = inspect.getsource(module).splitlines()
    notes: dict[str, str] = {}
    for node in ast.parse("\n".join(lines)).body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if not isinstance(target, ast.Name):
            continue
        comment: list[str] = []
        row = node.lineno - 2
        while row >= 0 and lines[row].startswith("#:"):
            comment.insert(0, lines[row][2:].strip())
            row -= 1
        if comment:
            notes[target.id] = " ".join(comment)
    return notes


def type_note(kind: type, name: str, aliases: dict[str, str]) -> str:
    """What a name in a field's type says of the field: its ``#:`` comment in the class's module, or
    the first paragraph of its class's docstring (a class of this package); "" for any other.

    >>> type_note(Computing, "Reaggregation", {}).startswith("How a metric is computed again with no model")
    True
    """
    if name in aliases:
        return aliases[name]
    found = getattr(sys.modules[kind.__module__], name, None)
    if isinstance(found, type) and found.__module__.startswith("vst_core.") and found.__doc__:
        return description(found).split("\n\n")[0]
    return ""


def field_types(kind: type) -> dict[str, str]:
    """Each field's annotation as written in the class's source, by name."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(kind)))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    return {
        n.target.id: ast.unparse(n.annotation) for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def default_of(f: dataclasses.Field[object]) -> str:
    """A field's default as written in a declaration, or ``required``.

    >>> [default_of(f) for f in dataclasses.fields(MetricSpec) if f.name in ("name", "card", "tools")]
    ['required', "''", 'Tools()']
    """
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    factory = f.default_factory
    if factory is not dataclasses.MISSING:
        return f"{getattr(factory, '__name__', repr(factory))}()"
    return "required"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def section(kind: type) -> str:
    """One class's part of the reference: its heading, its description and its fields' table."""
    notes, types, aliases = field_notes(kind), field_types(kind), alias_notes(kind)
    for name, written in types.items():  # no note of its own: its type's (``ScoreHook``: what the hook is given)
        named = [n for t in re.findall(r"[A-Za-z_]+", written) if (n := type_note(kind, t, aliases))]
        if name not in notes and named:
            notes[name] = named[0]
    rows = [
        f"| `{f.name}` | `{_cell(types.get(f.name, str(f.type)))}` | "
        + ("required" if (d := default_of(f)) == "required" else f"`{_cell(d)}`")
        + f" | {_cell(markdown(notes.get(f.name, '')))} |"
        for f in dataclasses.fields(kind)
    ]
    table = "\n".join(["| field | type | default | note |", "|---|---|---|---|", *rows])
    return f"## {kind.__name__}\n\n{description(kind)}\n\n{table}\n"


def reference() -> str:
    """The whole reference page, as ``python -m vst_core.contract.reference`` writes it."""
    return "\n".join([_HEADER, *(section(kind) for kind in CLASSES)])


def main(argv: list[str] | None = None) -> int:
    """Write the reference into ``docs/metric-spec-reference.md`` under the folder given (by default
    the repository this module is in); print the path written."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[2]
    path = root / PAGE
    path.write_text(reference(), encoding="utf-8")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
