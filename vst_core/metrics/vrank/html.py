"""Vrank's evidence on a story's card: its verdict against each other story of the sequence."""

from __future__ import annotations

from vst_core.metrics.vrank.record import VrankScores
from vst_core.viz.safe import html_text
from vst_core.viz.story import format_score


def vrank_html(record: VrankScores) -> str:
    """Vrank's verdicts on a story: each other story of its sequence, whether Vrank prefers this
    story to it and by how much (the margin m = (f(this, other) − f(other, this)) / 2), strongest first."""
    cell = "padding:1px 4px;text-align:right"
    rows = "".join(
        f"<tr><td style='padding:1px 4px'>{html_text(p.system)} · {html_text(p.story_id)}</td>"
        f"<td style='padding:1px 4px'>{'preferred' if p.margin > 0 else 'not preferred' if p.margin < 0 else 'tie'}</td>"
        f"<td style='{cell}'>{p.margin:+.3f}</td></tr>"
        for p in sorted(record.preferences, key=lambda p: -p.margin)
    )
    head = f"<tr><th style='padding:1px 4px'>against</th><th style='padding:1px 4px'>this story is</th><th style='{cell}'>margin</th></tr>"
    caption = f"Vrank {format_score(record.score)}: the mean margin over {len(record.preferences)} stories"
    return (
        f'<table class="vst-vrank" style="font-size:0.8em;width:100%;border-collapse:collapse">'
        f"<caption>{html_text(caption)}</caption>{head}{rows}</table>"
    )
