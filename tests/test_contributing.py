"""CONTRIBUTING.md, the map of the code, kept short and true: its "Adding a metric" a checklist of at
most 60 lines, every in-page link a heading of it, the metric spec's field reference the one
``python -m vst_core.contract.reference`` writes, and the cards' index ``docs/metrics/README.md``
the registry's built-in metrics, each with its card."""

from __future__ import annotations

import re
from pathlib import Path

from vst_core.contract import registry
from vst_core.contract.reference import PAGE, reference

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
CARDS = ROOT / "docs" / "metrics" / "README.md"
#: Pages of the cards' index about measures that are no metric of the registry.
NOT_METRICS = {"dhm.md", "baselines.md"}


def slug(heading: str) -> str:
    """A heading's anchor as the Markdown renderers make it.

    >>> slug("Adding a metric"), slug("Identity and scale")
    ('adding-a-metric', 'identity-and-scale')
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def section(text: str, heading: str) -> list[str]:
    """The lines of a ``## heading`` section, up to the next ``## ``."""
    lines = text.splitlines()
    start = lines.index(f"## {heading}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def test_the_metric_spec_reference_is_the_one_its_module_writes() -> None:
    committed = (ROOT / PAGE).read_text(encoding="utf-8")
    assert "| `needs` |" in committed and "## Option" in committed
    assert committed == reference(), "run `python -m vst_core.contract.reference` and commit docs/metric-spec-reference.md"


def test_adding_a_metric_is_a_checklist_of_at_most_60_lines() -> None:
    lines = section(CONTRIBUTING.read_text(encoding="utf-8"), "Adding a metric")
    assert 20 <= len(lines) <= 60, len(lines)
    text = "\n".join(lines)
    for named in ("BUILTIN_METRICS", "vst metrics --markdown", "docs/metrics/README.md", "contract/checks.py"):
        assert named in text
    assert "metric-spec-reference.md" in text


def test_every_in_page_link_of_contributing_is_one_of_its_headings() -> None:
    text = re.sub(r"```.*?```", "", CONTRIBUTING.read_text(encoding="utf-8"), flags=re.S)
    anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
    links = re.findall(r"\]\(#([^)\s]+)\)", text)
    assert [a for a in links if a not in anchors] == []


def test_contributing_names_no_setting_or_constant_that_is_gone() -> None:
    text = CONTRIBUTING.read_text(encoding="utf-8")
    for gone in ("SIGNED_WITH_NEED", "SHARED_SETTINGS", "IMAGE_SETTINGS"):
        assert gone not in text


def card_rows() -> list[tuple[str, str]]:
    """Each row of the cards' index: (its ``--metrics`` / where cell, the card it links)."""
    rows = []
    for line in CARDS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        link = re.fullmatch(r"\[[^\]]+\]\(([^)]+)\)", cells[-1]) if line.startswith("|") else None
        if link:
            rows.append((cells[3], link.group(1)))
    return rows


def test_the_cards_index_is_the_registrys_builtin_metrics() -> None:
    reg = registry()
    builtin = {s.name: s for s in reg.specs.values() if s not in reg.plugins}
    rows = card_rows()
    assert len(rows) >= len(builtin)
    linked = {card for _, card in rows}
    missing = [
        n for n, s in builtin.items() if Path(s.card).name not in linked or Path(s.card).parent != CARDS.parent.relative_to(ROOT)
    ]
    assert missing == [], "add a row linking each metric's card to docs/metrics/README.md"
    cards = {Path(s.card).name: n for n, s in builtin.items()}
    for where, card in rows:
        assert (CARDS.parent / card).exists(), card
        named = re.search(r"`([^`]+)`", where)
        if card in NOT_METRICS:
            assert named is None or named.group(1).startswith("vst "), where
            continue
        assert card in cards, f"a row links {card}, the card of no registered metric"
        assert named is not None and named.group(1) == cards[card], f"{where} is not {cards[card]}, whose card is {card}"
