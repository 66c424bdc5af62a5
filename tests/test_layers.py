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
    "metrics": 0,
    "records": 0,
    "metric_spec": 0,
    "text": 1,
    "config": 1,
    "judge": 1,
    "data": 2,
    "models": 3,
    "grounding": 4,
    "signature": 5,
    "scoring": 5,
    "analysis": 6,
    "viz": 7,
    "learned": 7,
    "bench": 8,
    "api": 8,
    "metric_modules": 8,
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
