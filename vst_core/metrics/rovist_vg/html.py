"""RoViST-VG's evidence: each noun's best region as a hover text and a compact table (every text
from the record escaped)."""

from __future__ import annotations

from vst_core.metrics.rovist_vg.idf_table import idf_source
from vst_core.metrics.rovist_vg.record import RovistVGScores
from vst_core.viz.safe import html_text
from vst_core.viz.story import format_score


def rovist_vg_detail(record: RovistVGScores) -> str:
    """The hover text of a RoViST-VG card: S, then each noun's best region, cosine and idf weight."""
    nouns = "; ".join(
        f"{n.noun}{'' if n.known else ' (unk)'} → image {n.image + 1} [{', '.join(f'{v:.0f}' for v in n.box)}] "
        f"cos {n.best_cosine:.3f} · idf {n.idf:.2f}"
        for n in record.nouns
    )
    return f"S {format_score(record.lse)} (Eq. 3 → score) · {nouns or 'no noun'}"


def rovist_vg_html(record: RovistVGScores) -> str:
    """RoViST-VG's evidence as a compact table that fits a card: each noun, its sentence, the image of
    its best region, the cosine and the idf weight; the box (and its label) on hover. Nouns GloVe
    lacks are marked: ``unk``'s vector stood in."""
    cell = "padding:1px 4px;text-align:right"
    rows = "".join(
        f'<tr title="{html_text("box " + ", ".join(f"{v:.0f}" for v in n.box) + (" " + n.box_label if n.box_label else ""))}">'
        f"<td style='padding:1px 4px'>{html_text(n.noun)}{'' if n.known else ' <i>(unk)</i>'}</td>"
        f"<td style='{cell}'>{n.sentence + 1}</td><td style='{cell}'>{n.image + 1}</td>"
        f"<td style='{cell}'>{n.best_cosine:.3f}</td><td style='{cell}'>{n.idf:.2f}</td></tr>"
        for n in record.nouns
    )
    head = (
        f"<tr><th style='padding:1px 4px'>noun</th><th style='{cell}'>sent.</th><th style='{cell}'>img</th>"
        f"<th style='{cell}'>cos</th><th style='{cell}'>idf</th></tr>"
    )
    caption = (
        f"RoViST-VG {format_score(record.score)} (S {format_score(record.lse)}; {idf_source(record.model)}); "
        "hover a row for its box"
    )
    return (
        f'<table class="vst-rovist-vg" style="font-size:0.8em;width:100%;border-collapse:collapse">'
        f"<caption>{html_text(caption)}</caption>{head}{rows}</table>"
    )
