"""The rubric judge's evidence as HTML: per aspect the score, the rating distribution over 1..5 as
small bars, each paraphrase's score, and with a vision-language judge the score without the images;
a generated rationale labelled as such. Every text from a record goes through
:func:`vst_core.viz.safe.html_text`."""

from __future__ import annotations

from vst_core.metrics.judge.record import JudgeAspect, JudgeScores
from vst_core.viz.safe import html_text

ASPECT_LABELS = {
    "grounding": "grounding (images)",
    "coherence": "coherence",
    "non_redundancy": "non-redundancy",
    "overall": "overall",
}


def _score(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def distribution_bars(distribution: tuple[float, ...]) -> str:
    """p(1..5) as five small bars (hover: the probability of each rating)."""
    bars = "".join(
        f'<span title="p({k + 1}) = {p:.3f}" style="display:inline-block;width:9px;margin-right:1px;'
        f'height:{max(1, round(22 * p))}px;background:#4a5568;vertical-align:bottom"></span>'
        for k, p in enumerate(distribution)
    )
    return f'<span class="vst-judge-dist" style="display:inline-block;height:22px;line-height:0">{bars}</span>'


def judge_html(record: JudgeScores) -> str:
    """A table of the judge's answers on one story (module doc), compact enough for a card: each
    paraphrase's score and the rating tokens' probability mass on hover of the row."""
    cell = "padding:1px 4px;text-align:right"
    without = {a.aspect: a for a in record.without_images}
    rows = []
    for a in record.aspects:
        other: JudgeAspect | None = without.get(a.aspect)
        paraphrases = " · ".join(f"{s:.2f}" for s in a.paraphrases)
        mass = "" if a.mass is None else f"; ratings 1-5 hold {a.mass:.0%} of the next-token probability"
        rows.append(
            f'<tr title="{html_text("paraphrases: " + paraphrases + mass)}">'
            f"<td style='padding:1px 4px'>{html_text(ASPECT_LABELS.get(a.aspect, a.aspect))}</td>"
            f"<td style='{cell}'><b>{_score(a.score)}</b></td><td style='padding:1px 4px'>{distribution_bars(a.distribution)}</td>"
            + (f"<td style='{cell}'>{_score(other.score if other else None)}</td>" if record.without_images else "")
            + "</tr>"
        )
    head = (
        "<tr><th style='padding:1px 4px'>aspect</th><th style='padding:1px 4px'>score</th><th>p(1..5)</th>"
        + ("<th style='padding:1px 4px'>no images</th>" if record.without_images else "")
        + "</tr>"
    )
    seen = " (with the images)" if any(a.images for a in record.aspects) else " (text only)"
    caption = f"Rubric judge{seen}: score = Σ k·p(k) · {record.model} · {record.template}; hover a row for its paraphrases"
    table = (
        f'<table class="vst-judge" style="font-size:0.8em;width:100%;border-collapse:collapse">'
        f"<caption>{html_text(caption)}</caption>{head}{''.join(rows)}</table>"
    )
    if record.rationale:
        table += (
            '<div class="vst-judge-rationale" style="font-size:0.8em;margin-top:4px;border-left:3px solid #cbd5e0;'
            f'padding-left:6px"><i>Generated rationale (model text, not part of the score):</i> {html_text(record.rationale)}</div>'
        )
    return table


def judge_detail(record: JudgeScores) -> str:
    """The hover text of the judge's card: each aspect's score and its most likely rating."""
    parts = [
        f"{ASPECT_LABELS.get(a.aspect, a.aspect)} {_score(a.score)} (mode {a.distribution.index(max(a.distribution)) + 1})"
        for a in record.aspects
        if a.distribution
    ]
    return " · ".join(parts) + f" · {record.model}"
