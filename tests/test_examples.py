"""The notebooks in examples/ run top to bottom on the bundled sample (their code cells executed in
order in one namespace, as a kernel would; no Jupyter needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(notebook: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, f"{notebook.name} has no code cell"
    namespace: dict[str, object] = {"__name__": "__main__"}
    for k, cell in enumerate(cells):
        exec(compile("".join(cell["source"]), f"{notebook.name}[{k}]", "exec"), namespace)
    assert not any(c.get("outputs") for c in cells), "notebooks are kept without outputs"


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS
