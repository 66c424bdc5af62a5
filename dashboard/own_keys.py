"""The dashboard's own keys, collected from its code (``app.py``, ``app_pages/``, ``dashboard/``) with
:mod:`ast`, so that the list no installed metric's box or control may take
(:data:`vst_core.contract.DASHBOARD_KEYS`, :data:`~vst_core.contract.DASHBOARD_KEY_PREFIXES`)
is made from the code instead of kept by hand. ``python -m dashboard.own_keys`` writes that list
(``vst_core/contract/dashboard_keys.py``); ``tests/test_dashboard_keys.py`` fails while it differs.

A key is what the code gives as a widget's ``key`` (by keyword to any call; by position to a
Streamlit element, where its signature places it, or to a function here that passes a parameter on
as a key, as ``story_table(frame, "table", ...)``), a name it reads or writes in
``st.session_state`` or ``st.query_params`` (``[...]``, ``.get``, ``.pop``, ``.setdefault``, ``in``,
an attribute) and a field of :class:`dashboard.choices.Choices` (the sidebar's values by name). A
key is found when it is a string constant, a module's constant (imported from another module here
too), a tuple of them looped over, or an f-string, whose constant start is a prefix
(``f"measure_{name}"``); one the code computes otherwise (a metric's ``o.control_key``, a story's
``story_widget_key(...)``) is ``unresolved``, with where it is, so that a test names each on purpose.

>>> found = collect()
>>> {"table", "dis_pairs", "files", "tuned", "story"} <= found.keys, "measure_" in found.prefixes
(True, True)
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The generated list that registration checks.
TARGET = ROOT / "vst_core" / "contract" / "dashboard_keys.py"
#: What a metric's key may be (:data:`vst_core.contract.spec.NAME_PATTERN`, any length): only such
#: keys and prefixes can collide with one, so only they are listed.
WORDS = re.compile(r"[a-z][a-z0-9_]*")
_STATES = ("session_state", "query_params")
_STATE_METHODS = frozenset(
    {"get", "pop", "setdefault", "get_all", "keys", "items", "values", "clear", "update", "to_dict", "from_dict"}
)


@dataclass(frozen=True)
class Collected:
    """The keys and key prefixes the dashboard's code names, and the keys it computes
    (``(file, scope, expression)``: what no constant says)."""

    keys: frozenset[str]
    prefixes: frozenset[str]
    unresolved: frozenset[tuple[str, str, str]]


def sources(root: Path = ROOT) -> list[Path]:
    """The dashboard's code: the frame, its modules and its pages."""
    return [root / "app.py", *sorted((root / "dashboard").glob("*.py")), *sorted((root / "app_pages").glob("*.py"))]


Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


class _File:
    """One parsed source: its module constants and, per node, the function it is in."""

    def __init__(self, path: Path, root: Path) -> None:
        self.name = path.relative_to(root).as_posix()
        self.module = ".".join(path.relative_to(root).with_suffix("").parts)
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.scope_of: dict[ast.AST, Scope] = {}
        self._enclose(self.tree, self.tree)
        self.constants: dict[str, tuple[str, ...]] = {}
        for statement in self.tree.body:
            target, value = _single_target(statement)
            strings = _strings(value) if target is not None else None
            if target is not None and strings is not None:
                self.constants[target] = strings
        self.imported: dict[str, tuple[str, str]] = {}  # local name -> (module, name)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (node.module, alias.name)

    def _enclose(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self.scope_of[child] = scope
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
            self._enclose(child, inner)


def _single_target(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None, None


def _strings(value: ast.expr | None) -> tuple[str, ...] | None:
    """A string constant or a tuple or list of them, as strings (None: anything else)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return (value.value,)
    if isinstance(value, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return tuple(str(e.value) for e in value.elts if isinstance(e, ast.Constant))
    return None


def _is_state(node: ast.expr) -> bool:
    """Whether ``node`` is ``<anything>.session_state`` or ``<anything>.query_params``."""
    return isinstance(node, ast.Attribute) and node.attr in _STATES


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]


@functools.cache
def _positional_key(attr: str) -> int | None:
    """Where a Streamlit element named ``attr`` takes ``key`` by position (None: it takes none so)."""
    import streamlit as st

    element = getattr(st, attr, None)
    if not callable(element):
        return None
    try:
        parameters = list(inspect.signature(element).parameters.values())
    except (TypeError, ValueError):
        return None
    for k, p in enumerate(parameters):
        if p.name == "key" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return k
    return None


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


class _Collector:
    """The key sites of the files, the parameters their functions give on as keys, and what each
    site resolves to."""

    def __init__(self, files: list[_File]) -> None:
        self.files = files
        self.by_module = {f.module: f for f in files}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for f in files:
            for node in ast.walk(f.tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions.setdefault(node.name, node)
        self.key_params: dict[str, set[str]] = {}  # function -> its parameters given on as keys
        self.keys: set[str] = set()
        self.prefixes: set[str] = set()
        self.unresolved: set[tuple[str, str, str]] = set()

    def sites(self, f: _File) -> Iterator[ast.expr]:
        """Every expression of ``f`` that is a key."""
        for node in ast.walk(f.tree):
            if isinstance(node, ast.Call):
                yield from (k.value for k in node.keywords if k.arg == "key")
                name = _called(node)
                if name in self.key_params:
                    params = _params(self.functions[name])
                    for k, arg in enumerate(node.args):
                        if k < len(params) and params[k] in self.key_params[name]:
                            yield arg
                    yield from (k.value for k in node.keywords if k.arg in self.key_params[name] and k.arg != "key")
                elif isinstance(node.func, ast.Attribute) and name is not None and name not in self.functions:
                    at = _positional_key(name)
                    if at is not None and at < len(node.args):
                        yield node.args[at]
                if isinstance(node.func, ast.Attribute) and _is_state(node.func.value) and node.args:
                    if node.func.attr in ("get", "pop", "setdefault", "get_all"):
                        yield node.args[0]
            elif isinstance(node, ast.Subscript) and _is_state(node.value):
                yield node.slice
            elif isinstance(node, ast.Compare) and any(_is_state(c) for c in node.comparators):
                yield node.left
            elif isinstance(node, ast.Attribute) and _is_state(node.value) and node.attr not in _STATE_METHODS:
                yield ast.Constant(node.attr)

    def find_key_params(self) -> None:
        """The parameters each function gives on as a key, directly or through another function."""
        while True:
            before = sum(map(len, self.key_params.values()))
            for f in self.files:
                for site in self.sites(f):
                    scope = f.scope_of.get(site)
                    if isinstance(site, ast.Name) and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        if site.id in _params(scope):
                            self.key_params.setdefault(scope.name, set()).add(site.id)
            if sum(map(len, self.key_params.values())) == before:
                return

    def resolve(self, f: _File, node: ast.expr, seen: frozenset[str] = frozenset()) -> None:
        scope = f.scope_of.get(node, f.tree)
        where = scope.name if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<module>"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.keys.add(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            start = str(node.values[0].value)
            (self.prefixes if len(node.values) > 1 else self.keys).add(start)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for element in node.elts:
                self.resolve(f, element, seen)
        elif isinstance(node, ast.Starred):
            self.resolve(f, node.value, seen)
        elif isinstance(node, ast.Name) and node.id not in seen:
            self._resolve_name(f, node, scope, where, seen | {node.id})
        else:
            self.unresolved.add((f.name, where, ast.unparse(node)))

    def _resolve_name(self, f: _File, node: ast.Name, scope: Scope, where: str, seen: frozenset[str]) -> None:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.id in _params(scope):
            if node.id not in self.key_params.get(scope.name, set()):
                self.unresolved.add((f.name, where, node.id))
            return  # a key parameter: what its callers give is a key of its own
        bound = [b for b in _bindings(scope, node.id)] or ([] if scope is f.tree else [b for b in _bindings(f.tree, node.id)])
        if bound:
            for value in bound:
                if value is None:
                    self.unresolved.add((f.name, where, node.id))
                else:
                    self.resolve(f, value, seen)
            return
        if node.id in f.imported:
            module, name = f.imported[node.id]
            source = self.by_module.get(module)
            if source is not None and name in source.constants:
                self.keys.update(source.constants[name])
                return
        self.unresolved.add((f.name, where, node.id))


def _bindings(scope: Scope, name: str) -> list[ast.expr | None]:
    """What ``name`` is bound to in ``scope`` (not in the functions inside it): an assigned value; for
    a loop's variable, the literal tuple or the name it walks; None for any other binding."""
    found: list[ast.expr | None] = []
    for node in _walk_scope(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append(node.value)
                elif _stores(target, name):
                    found.append(None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            if isinstance(node.target, ast.Name) and node.target.id == name:
                literal = isinstance(node.iter, (ast.Tuple, ast.List, ast.Set))
                found.append(node.iter if literal or isinstance(node.iter, ast.Name) else None)
            elif _stores(node.target, name):
                found.append(None)
        elif isinstance(node, (ast.AugAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.target.id == name:
            found.append(None)
    return found


def _stores(target: ast.expr, name: str) -> bool:
    """Whether assigning to ``target`` (a tuple of names, say) binds ``name``."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(target))


def _walk_scope(scope: Scope) -> Iterator[ast.AST]:
    todo: list[ast.AST] = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def collect(root: Path = ROOT) -> Collected:
    """Every key and key prefix the dashboard's code names, and the keys it computes (module doc)."""
    files = [_File(path, root) for path in sources(root)]
    found = _Collector(files)
    found.find_key_params()
    for f in files:
        for site in found.sites(f):
            found.resolve(f, site)
        for node in ast.walk(f.tree):  # the sidebar's values go by Choices' field names
            if isinstance(node, ast.ClassDef) and node.name == "Choices":
                found.keys.update(
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                )
    return Collected(frozenset(found.keys), frozenset(found.prefixes), frozenset(found.unresolved))


def dashboard_keys(found: Collected) -> tuple[frozenset[str], tuple[str, ...]]:
    """What registration checks: the keys and prefixes a metric's key could be (lower-case words),
    less the built-in metrics' own controls and settings (taken as another metric's already).

    >>> keys, prefixes = dashboard_keys(collect())
    >>> "table" in keys, "variant" in keys, "dl-" in prefixes, prefixes
    (True, False, False, ('measure_', 'meta_', 'slice_range_'))
    """
    from vst_core.contract import registry

    builtin = [s for s in registry().specs.values() if s not in registry().plugins]
    metrics = {k for s in builtin for o in s.signing.options for k in (o.setting, o.control_key)}
    keys = frozenset(k for k in found.keys if WORDS.fullmatch(k) and k not in metrics)
    return keys, tuple(sorted(p for p in found.prefixes if WORDS.fullmatch(p)))


def module_text(keys: frozenset[str], prefixes: tuple[str, ...]) -> str:
    """The source of :data:`TARGET` for ``keys`` and ``prefixes`` (as ``ruff format`` leaves it)."""
    starts = ", ".join(f'"{p}"' for p in prefixes) + ("," if len(prefixes) == 1 else "")
    lines = [
        '"""The dashboard\'s own keys, which no installed metric\'s box or control may take: every widget',
        "key, session-state name, link parameter and sidebar value its code names that a metric's key",
        "could be (lower-case words), less the built-in metrics' own. Written by ``python -m",
        'dashboard.own_keys`` from the code; a test fails while the code names another."""',
        "",
        "from __future__ import annotations",
        "",
        "#: The dashboard's own keys (each a widget key or a session-state name, many a URL parameter).",
        "DASHBOARD_KEYS: frozenset[str] = frozenset(",
        "    {",
        *(f'        "{k}",' for k in sorted(keys)),
        "    }",
        ")",
        "#: The beginnings of the keys the dashboard makes per metric or per value (``measure_<metric>``).",
        f"DASHBOARD_KEY_PREFIXES: tuple[str, ...] = ({starts})",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Write :data:`TARGET` from the code."""
    TARGET.write_text(module_text(*dashboard_keys(collect())), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
