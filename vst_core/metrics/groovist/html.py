"""GROOVIST in the story's text: each noun phrase underlined by its contribution (blue grounded,
red below θ), hover giving its score, concreteness and the region it matched."""

from __future__ import annotations

from vst_core.contract import LegendEntry, Mark
from vst_core.metrics.groovist.record import GroundingScores


def contribution_colour(c: float) -> str:
    """Diverging colour for a signed contribution (a phrase's share of GROOVIST): blue positive, red negative.

    >>> contribution_colour(2), contribution_colour(-0.5)
    ('rgba(43, 108, 176, 0.92)', 'rgba(197, 48, 48, 0.85)')
    """
    if c >= 0:
        return f"rgba(43, 108, 176, {min(1.0, 0.25 + c / 3):.2f})"
    return f"rgba(197, 48, 48, {min(1.0, 0.35 + -c):.2f})"


LEGEND = (
    LegendEntry("grounded phrase", "underline", contribution_colour(2)),
    LegendEntry("phrase below θ", "underline", contribution_colour(-0.5)),
)


def marks(record: GroundingScores) -> list[Mark]:
    """An underline per noun phrase, ``data-phrase`` its index among the record's phrases."""
    out = []
    for k, p in enumerate(record.phrases):
        sign = "grounded" if p.positive else "below θ"
        title = (
            f"{p.text}: contribution {p.contribution:+.3f} ({sign}) · score {p.score:.3f} · "
            f"concreteness {p.weight:.2f} · matched image {p.image + 1}, {p.box_label or 'box'} {list(p.box)}"
        )
        start, end = p.span
        out.append(
            Mark(p.sentence, start, end, "underline", contribution_colour(p.contribution), title, "vst-np", (("phrase", str(k)),))
        )
    return out
