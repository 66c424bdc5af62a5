"""The README a newcomer reads in five minutes: at most 300 lines, its metric table the one
``vst metrics --markdown`` generates from the registry, and every relative link of the README,
CONTRIBUTING and the pages of ``docs/`` pointing at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

from vst_core.cli.metrics import markdown_table
from vst_core.metric_spec import registry

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
