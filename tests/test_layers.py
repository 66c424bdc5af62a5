"""The package's folders are its layers: no import runs up a layer, no package imports another in
a circle, and vst_core never imports streamlit."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "vst_core"
#: Lower numbers are lower layers; a module may import its own layer or any lower one.
LAYER = {
    "hashing": 0,
    "stores": 0,
    "problems": 0,
    "limits": 0,
    "story": 0,
    "terminal": 1,
    "formulas": 0,
    "records": 0,
    "contract": 0,
    "text": 1,
    "config": 1,
    "data": 2,
    "models": 3,
    "images": 4,
    "signature": 5,
    "scoring": 5,
    "analysis": 6,
    "viz": 7,
    "learned": 7,
    "study": 7,
    "bench": 8,
    "api": 8,
    "metrics": 8,
    "cli": 9,
    "__init__": 10,
    "__main__": 10,
}


def imports() -> list[tuple[str, str, str]]:
    """(importing top-level name, imported top-level name, where) for every vst_core import."""
    found = []
    for path in ROOT.rglob("*.py"):
        top = path.relative_to(ROOT).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "streamlit":
                    found.append((top, "streamlit", f"{path.relative_to(ROOT)}:{node.lineno}"))
                elif parts[0] == "vst_core" and len(parts) > 1 and parts[1] != top:
                    found.append((top, parts[1], f"{path.relative_to(ROOT)}:{node.lineno}"))
    return found


def test_every_top_level_name_has_a_layer() -> None:
    names = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in ROOT.rglob("*.py")}
    assert names <= set(LAYER), sorted(names - set(LAYER))


def test_no_import_runs_up_a_layer_and_none_is_streamlit() -> None:
    upward = [f"{where}: {src} -> {dst}" for src, dst, where in imports() if dst == "streamlit" or LAYER[dst] > LAYER[src]]
    assert upward == []


def test_no_package_imports_another_in_a_circle() -> None:
    graph: dict[str, set[str]] = {}
    for src, dst, _ in imports():
        graph.setdefault(src, set()).add(dst)

    def reaches(a: str, b: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(n == b or (n not in seen and reaches(n, b, seen | {n})) for n in graph.get(a, ()))

    assert sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if reaches(b, a)}) == []


def module_imports() -> dict[str, set[str]]:
    """Each vst_core module and the vst_core modules it names in an import statement, wherever the
    statement is (inside functions too): ``from a.b import c`` names ``a.b``, and ``a.b.c`` when
    that is a module."""
    modules: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = ("vst_core", *path.relative_to(ROOT).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        named: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                named.update([base, *(f"{base}.{a.name}" for a in node.names)])
            elif isinstance(node, ast.Import):
                named.update(a.name for a in node.names)
        graph[name] = {m for m in named if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted.

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_another_in_a_circle_not_even_inside_a_function() -> None:
    graph = module_imports()
    assert len(graph) > 150 and graph["vst_core.contract"] >= {"vst_core.contract.spec"}
    assert cycles(graph) == []
