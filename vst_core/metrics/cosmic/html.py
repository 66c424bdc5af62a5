"""COSMic's evidence on a story's card: each sentence's rating against the reference sentence."""

from __future__ import annotations

from vst_core.metrics.cosmic.record import CosmicScores
from vst_core.viz.safe import html_text
from vst_core.viz.story import format_score


def cosmic_html(record: CosmicScores) -> str:
    """COSMic's sentence ratings as a compact table that fits a card: each sentence's rating, its
    coherence label and the reference sentence's label; the reference sentence on hover."""
    cell = "padding:1px 4px;text-align:right"
    rows = "".join(
        f'<tr title="{html_text("against: " + s.reference)}"><td style="{cell}">{s.index + 1}</td>'
        f"<td style='{cell}'>{format_score(s.rating)}</td>"
        f"<td style='padding:1px 4px'>{html_text(s.label)}</td><td style='padding:1px 4px'>{html_text(s.reference_label)}</td></tr>"
        for s in record.sentences
    )
    head = (
        f"<tr><th style='{cell}'>sent.</th><th style='{cell}'>rating</th><th style='padding:1px 4px'>label</th>"
        "<th style='padding:1px 4px'>ref. label</th></tr>"
    )
    labels = {s.labels_from for s in record.sentences}
    caption = (
        f"COSMic {format_score(record.score)} against {record.reference}; labels {', '.join(sorted(labels)) or '-'}; "
        "hover a row for the reference sentence"
    )
    return (
        f'<table class="vst-cosmic" style="font-size:0.8em;width:100%;border-collapse:collapse">'
        f"<caption>{html_text(caption)}</caption>{head}{rows}</table>"
    )
