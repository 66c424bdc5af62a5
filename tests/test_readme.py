"""The README a newcomer reads in five minutes: at most 300 lines, its metric table the one
``vst metrics --markdown`` generates from the registry, its Python example pasteable into a plain
``python`` and right (run as a doctest), and every relative link of the README, CONTRIBUTING and the
pages of ``docs/`` pointing at a file that exists."""

from __future__ import annotations

import codeop
import doctest
import re
from pathlib import Path

import pytest

from vst_core.cli.metrics import markdown_table
from vst_core.contract import registry

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- metrics-table", "<!-- /metrics-table -->"


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_the_metric_table_is_the_registrys() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index(START) : text.index(END)]
    shown = block[block.index("\n") + 1 :]  # after the marker's line
    builtin = [s for s in registry().specs.values() if s not in registry().plugins]
    assert [s.name for s in builtin][:3] == ["redundancy", "coherence", "grounding"]
    assert shown == markdown_table(builtin), "run `vst metrics --markdown` and paste it between the markers"


def test_every_relative_link_points_at_a_file() -> None:
    pages = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(pages) > 15
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.partition("#")[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def python_example() -> list[str]:
    """The lines of the README's Python example (the ``python`` block after its ``#python`` anchor)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\n", text.index('<a id="python">')) + len("```python\n")
    return text[start : text.index("```", start)].splitlines()


def as_doctest(lines: list[str]) -> str:
    """The example as a doctest: each line a ``>>>`` example, a ``# ...`` line under it what it prints.

    >>> as_doctest(["x = 1 + 1  # two", "x", "# 2"]).splitlines()
    ['>>> x = 1 + 1  # two', '>>> x', '2']
    """
    return "".join(f"{line[2:]}\n" if line.startswith("# ") else f">>> {line}\n" for line in lines if line.strip())


def test_the_python_example_can_be_pasted_into_python() -> None:
    """Pasted into a plain ``python``, each line is one whole statement (no ``>>>`` prompt, which is a
    SyntaxError there, no statement over several lines) and each printed value is a comment."""
    lines = python_example()
    assert len(lines) >= 15
    for line in lines:
        try:
            whole = codeop.compile_command(line, symbol="single") is not None
        except SyntaxError as exc:
            pytest.fail(f"a SyntaxError pasted into python ({exc.msg}): {line}")
        assert whole, f"not a whole statement: {line}"


def test_the_python_example_prints_what_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    test = doctest.DocTestParser().get_doctest(as_doctest(python_example()), {}, "README.md", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).attempted >= 15 and runner.failures == 0
