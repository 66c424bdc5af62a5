"""Reports that travel: one self-contained HTML file (tables, figures drawn as inline SVG, or
plotly's interactive ones with its JavaScript inline on request, story cards with their evidence
and thumbnails as data URLs, the settings signature) that opens offline and asks the network for
nothing (a Content-Security-Policy allows only what the file holds); LaTeX (booktabs) and Markdown
tables with intervals and significance marks; figures as SVG and PNG files.

>>> cells = pd.DataFrame({"overall": ["0.412 [0.301, 0.520]* (n=120)"]}, index=pd.Index(["NR"], name="metric"))
>>> print(markdown_table(cells, "Spearman"))
| metric | overall |
|---|---|
| NR | 0.412 \\[0.301, 0.520\\]\\* (n=120) |
<BLANKLINE>
Spearman
<BLANKLINE>
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.intervals import SMALL_N_MARK, SMALL_N_NOTE, has_interval
from vst_core.analysis.leaderboard import Leaderboard, cluster_name
from vst_core.analysis.meta_eval import METHODS, MetaReport
from vst_core.analysis.meta_eval.stats import resampled_unit
from vst_core.analysis.meta_eval.versus import versus_matrix
from vst_core.data.csv_out import frame_csv
from vst_core.data.images import thumbnail
from vst_core.data.paths import resolve_image
from vst_core.records import StoryScores, direction_of
from vst_core.signature import signature
from vst_core.viz.figures import caption_figure, correlation_bars
from vst_core.viz.safe import html_text, plot_text
from vst_core.viz.story import annotated_story, evidence_blocks, legend_html, score_cards_html, story_cards
from vst_core.viz.svg import box_plot_svg, correlation_bars_svg
from vst_core.viz.tables import RunView, correlation_cells, table_columns

#: Nothing outside the file may load: styles inline, images and fonts as data URLs, and only the
#: scripts this module wrote itself (plotly's, carrying the report's nonce) run: a script tag or an
#: event handler in text that reached the page unescaped (a plugin's evidence, say) does not.
CSP = (
    "default-src 'none'; script-src 'nonce-{nonce}' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
)

#: The mark this process puts on the script tags it writes (plotly's), replaced by the report's
#: nonce; drawn at random so that no text from a file can carry it.
_OWN_SCRIPT = f"<script data-vst-{secrets.token_hex(8)}"
#: Longest side of an embedded thumbnail, in pixels.
THUMBNAIL = 160

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#1a202c}
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #e2e8f0;padding-bottom:4px;margin-top:32px}
table.vst-table{border-collapse:collapse;font-size:0.85em;margin:8px 0}
table.vst-table th,table.vst-table td{border:1px solid #e2e8f0;padding:3px 8px;text-align:left}
table.vst-table th{background:#f7fafc}
.vst-caption{color:#718096;font-size:0.8em}
.vst-story-card{border:1px solid #e2e8f0;border-radius:8px;padding:10px;margin:10px 0}
.vst-thumbs img{height:80px;margin-right:4px;border-radius:4px}
figure.vst-static{margin:12px 0}
pre.vst-signature{background:#f7fafc;padding:8px;font-size:0.75em;white-space:pre-wrap;word-break:break-all}
"""


@dataclass(frozen=True)
class Section:
    """One part of a report: a title and its HTML (built by this module's functions, already escaped)."""

    title: str
    html: str


def table_html(frame: pd.DataFrame, caption: str = "", *, index: bool = True, digits: int = 4) -> str:
    """A table as escaped HTML (every cell and header through :func:`~vst_core.viz.safe.html_text`)."""
    shown = frame.round(digits) if len(frame) else frame
    head = ([html_text(shown.index.name or "")] if index else []) + [html_text(c) for c in shown.columns]
    rows = []
    for label, row in zip(shown.index, shown.itertuples(index=False), strict=True):
        cells = ([f"<th>{html_text(label)}</th>"] if index else []) + [
            f"<td>{'' if pd.isna(v) else html_text(v)}</td>" if not isinstance(v, (tuple, list)) else f"<td>{html_text(v)}</td>"
            for v in row
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = f'<div class="vst-caption">{html_text(caption)}</div>' if caption else ""
    return (
        '<table class="vst-table"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + note
    )


def figures_html(figures: Sequence[Any]) -> list[str]:
    """Each plotly figure as a ``<div>``; the first carries plotly's JavaScript inline, once."""
    out = []
    for k, fig in enumerate(figures):
        html = fig.to_html(
            full_html=False,
            include_plotlyjs=k == 0,
            include_mathjax=False,
            config={"displaylogo": False, "responsive": True},
            div_id=f"vst-figure-{k}",
        )
        out.append(html.replace("<script", _OWN_SCRIPT))  # plotly's own scripts: they get the report's nonce
    return out


def data_url(path: Path, longest: int = THUMBNAIL) -> str | None:
    """A JPEG thumbnail of an image file as a ``data:`` URL, or None when it cannot be read."""
    try:
        image = thumbnail(path, longest)
    except (OSError, ValueError):
        return None
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def story_card_html(record: StoryScores, metrics: Sequence[str], images_root: Path | None = None) -> str:
    """A story as the Inspect page shows it: its ids, score cards, the sentences with their evidence
    (repeats, noun-phrase grounding, coherence chips) and its images as embedded thumbnails."""
    thumbs = []
    if images_root is not None:
        for ref in record.images:
            try:
                url = data_url(resolve_image(images_root, ref))
            except (OSError, ValueError):
                url = None
            thumbs.append(
                f'<img alt="{html_text(ref)}" src="{url}">'
                if url
                else f'<span class="vst-caption">[{html_text(ref)}: not readable]</span>'
            )
    return (
        '<div class="vst-story-card">'
        f"<div><b>{html_text(record.story_id)}</b> · system {html_text(record.system)} · sequence {html_text(record.sequence_id)}</div>"
        + (f'<div class="vst-thumbs">{"".join(thumbs)}</div>' if thumbs else "")
        + score_cards_html(story_cards(record, metrics))
        # content words' repeats only, the Inspect page's default (a repeated "the" says nothing)
        + annotated_story(record, content_only=True)
        + "".join(f"<details><summary>{html_text(title)}</summary>{body}</details>" for title, body in evidence_blocks(record))
        + "</div>"
    )


def report_html(title: str, sections: Sequence[Section], signature: Mapping[str, Any], description: str = "") -> str:
    """The whole report: one HTML document with a Content-Security-Policy that lets nothing load
    from outside it, the sections in order (one with nothing in it left out: no empty heading),
    then the signature as JSON."""
    nonce = secrets.token_urlsafe(18)
    body = "".join(f"<section><h2>{html_text(s.title)}</h2>{s.html}</section>" for s in sections if s.html.strip())
    body = body.replace(_OWN_SCRIPT, f'<script nonce="{nonce}"')
    sig = json.dumps(signature, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP.format(nonce=nonce)}">'
        "<meta name='referrer' content='no-referrer'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html_text(title)}</title>"
        f"<style>{STYLE}</style></head><body>"
        f"<h1>{html_text(title)}</h1>"
        + (f'<div class="vst-caption">{html_text(description)}</div>' if description else "")
        + body
        + f'<section><h2>Signature</h2><pre class="vst-signature">{html_text(sig)}</pre></section>'
        + "</body></html>\n"
    )


def legend_section(metrics: Sequence[str] | None = None) -> str:
    """The key to the story cards' highlights (of ``metrics``, the ones that ran; None: every metric's)."""
    return f'<div class="vst-caption">{legend_html(metrics=metrics)}</div>'


def system_summary(table: pd.DataFrame, columns: Sequence[str], resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """System × metric cells 'mean [low, high] (N n)': the mean over the system's stories with a 95%
    percentile bootstrap interval (``numpy.random.default_rng(seed)``) that resamples the image
    sequences (column ``sequence``: every story of a drawn sequence with it, as the leaderboard and
    the agreement tables do), or the stories where the table has no sequences; fewer than
    :data:`~vst_core.analysis.intervals.MIN_INTERVAL_N` stories: no interval, marked."""
    from vst_core.analysis.meta_eval.stats import group_counts

    rng = np.random.default_rng(seed)
    cells: dict[str, dict[str, str]] = {}
    for system, part in table.groupby("system", sort=True):
        for column in columns:
            if column not in part:
                continue
            values = part[column].to_numpy(dtype=float)
            finite = np.isfinite(values)
            v = values[finite]
            sequences = part["sequence"].astype(str).to_numpy()[finite] if "sequence" in part else None
            if not v.size:
                text = "–"
            elif not has_interval(v.size) or resamples < 1:
                text = f"{v.mean():.3f} (N {v.size})" + (SMALL_N_MARK if not has_interval(v.size) else "")
            elif sequences is not None:
                step = max(1, 4_000_000 // v.size)
                means = np.concatenate(
                    [
                        (lambda c: (c @ v) / c.sum(axis=1))(group_counts(sequences, min(step, resamples - k), rng))
                        for k in range(0, resamples, step)
                    ]
                )
                low, high = np.percentile(means, [2.5, 97.5])
                text = f"{v.mean():.3f} [{low:.3f}, {high:.3f}] (N {v.size})"
            else:
                step = max(1, 4_000_000 // v.size)
                means = np.concatenate(
                    [
                        v[rng.integers(0, v.size, (min(step, resamples - k), v.size))].mean(axis=1)
                        for k in range(0, resamples, step)
                    ]
                )
                low, high = np.percentile(means, [2.5, 97.5])
                text = f"{v.mean():.3f} [{low:.3f}, {high:.3f}] (N {v.size})"
            cells.setdefault(str(system), {})[column] = text
    return pd.DataFrame.from_dict(cells, orient="index").reindex(columns=list(columns)).rename_axis("system")


def build_report(
    title: str,
    table: pd.DataFrame,
    cards: Sequence[StoryScores],
    signature: Mapping[str, Any],
    description: str,
    *,
    metrics: Sequence[str] = (),
    meta: MetaReport | None = None,
    versus: pd.DataFrame | None = None,
    images_root: Path | None = None,
    resamples: int = 1000,
    method: str = "spearman",
    interactive: bool = False,
) -> tuple[str, dict[str, Any], dict[str, pd.DataFrame]]:
    """The report of a scores table: per-system means with intervals, a box plot per metric, with
    judgements (``meta``) the agreement table, its figure and the metric-vs-metric matrices
    (``versus``), then the story ``cards``. Returns (the HTML, the plotly figures by name, the
    paper tables by name), every figure captioned with ``description`` (the signature's line).
    The HTML's figures are static SVG drawn here (:mod:`vst_core.viz.svg`, a few kB each); with
    ``interactive`` they are plotly's, its JavaScript (4.8 MB) inline once."""
    columns = [c for c in table_columns() if c in table and table[c].notna().any()]
    sections = []
    summary = system_summary(table, columns, resamples)
    # each exported table says what its numbers are (frame.attrs["caption"]): the coefficient, the interval, N
    summary.attrs["caption"] = (
        f"mean [95% bootstrap interval, {resamples} resamples of {'image sequences' if 'sequence' in table else 'stories'}] (N stories)"
        if resamples > 0
        else "mean (N stories); no intervals were asked for"
    )
    sections.append(Section("Systems", table_html(summary, f"{summary.attrs['caption']}; {SMALL_N_NOTE}")))
    figures: dict[str, Any] = {}
    drawn: list[str] = []  # the static figures, in the figures' order
    if table.groupby("system").size().max() > 1:  # a box plot of one story per system shows nothing
        for column in [c for c in columns if direction_of(c) != "none"]:  # every ranked metric (not the first six)
            figures[f"per_system_{column}"] = caption_figure(_box(table, column), description)
            drawn.append(box_plot_svg(table, column))
    tables: dict[str, pd.DataFrame] = {"systems": summary}
    if meta is not None and len(meta.correlations):
        cells = correlation_cells(meta.correlations, method).rename(columns=aspect_label)
        cells.attrs["caption"] = (
            f"{METHODS.get(method, method)} [bootstrap 95% interval, {resampled_unit(meta.correlations)} resampled], "
            "* p < 0.05, (N stories)"
        )
        tables["agreement"] = cells
        figures["agreement"] = correlation_bars(meta.correlations, method, description)
        drawn.append(correlation_bars_svg(meta.correlations.assign(aspect=meta.correlations["aspect"].map(aspect_label)), method))
        html = table_html(cells, f"{cells.attrs['caption']}. {SMALL_N_NOTE}")
        if versus is not None and len(versus):
            for aspect in list(dict.fromkeys(versus["aspect"])):
                matrix = versus_matrix(versus[versus["aspect"] == aspect], meta.metrics)
                matrix.attrs["caption"] = (
                    f"{aspect_label(aspect)}: row − column of the correlation with people; "
                    "* PERM-BOTH permutation p < 0.05 (two-sided)"
                )
                tables[f"metric_vs_metric_{aspect}"] = matrix
                html += f"<h3>Metric vs metric: {html_text(aspect_label(aspect))}</h3>" + table_html(
                    matrix, matrix.attrs["caption"]
                )
        sections.append(Section("Agreement with people", html))
    if interactive:
        plots = figures_html(list(figures.values()))
    else:  # each figure drawn here, with the settings line under it
        plots = [
            f'<figure class="vst-static">{svg}<figcaption class="vst-caption">{html_text(description)}</figcaption></figure>'
            for svg in drawn
            if svg
        ]
    if plots:  # a report with nothing to draw (one story per system) has no Figures heading
        sections.append(Section("Figures", "".join(plots)))
    if cards:
        sections.append(
            Section(
                f"Stories ({len(cards)})",
                legend_section(metrics or sorted({m for r in cards for m in r.metrics}))
                + "".join(story_card_html(r, metrics or list(r.metrics), images_root) for r in cards),
            )
        )
    return report_html(title, sections, signature, description), figures, tables


def view_report(
    view: RunView,
    title: str,
    table: pd.DataFrame,
    rows: Sequence[int],
    *,
    meta: MetaReport | None = None,
    versus: pd.DataFrame | None = None,
    resamples: int = 1000,
    interactive: bool = False,
) -> str:
    """A page's report as one HTML file: ``table`` (the page's rows of ``view.table``), the story
    cards of ``rows`` (positions in ``view.table``, their evidence read from the view) with
    thumbnails from the view's image folder, and the view's signature (the scores files' for files);
    static figures, plotly's with ``interactive``."""
    recorded = view.recorded()
    sig: dict[str, Any] = {"scores": recorded[1] if recorded is not None else signature(view.settings, view.inputs)}
    description = view.footer()
    if meta is not None:
        sig["meta_eval"] = meta.signature
        description += f" · {meta.description}"
    html, _, _ = build_report(
        title,
        table,
        view.records_at(rows),
        sig,
        description,
        metrics=view.settings.metrics,
        meta=meta,
        versus=versus,
        images_root=view.root,
        resamples=resamples,
        interactive=interactive,
    )
    return html


def _box(table: pd.DataFrame, column: str) -> Any:
    """A box plot of ``column`` per system from the quartiles (what the Dataset page draws above
    its point limit; small enough for a file at any size)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for system, values in table.groupby("system", sort=True)[column]:
        v = values.dropna().to_numpy(dtype=float)
        if not v.size:
            continue
        q1, median, q3 = np.quantile(v, [0.25, 0.5, 0.75])
        low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        fig.add_trace(
            go.Box(
                name=plot_text(system), x=[plot_text(system)], q1=[q1], median=[median], q3=[q3], mean=[float(v.mean())],
                lowerfence=[float(v[v >= low].min())], upperfence=[float(v[v <= high].max())], boxpoints=False,
            )
        )  # fmt: skip
    fig.update_layout(
        showlegend=False, title=f"{plot_text(column)} per system", xaxis_title="system", yaxis_title=plot_text(column)
    )
    return fig


# ------------------------------------------------------------------------------ paper tables

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}

#: Characters outside ASCII written as LaTeX that pdflatex sets in any font encoding, with or
#: without ``inputenc`` (symbols in math mode, punctuation as its ASCII ligature, letters by name).
_LATEX_UNICODE = {
    "†": r"$^\dagger$",
    "‡": r"$^\ddagger$",
    "·": r"$\cdot$",
    "×": r"$\times$",
    "÷": r"$\div$",
    "−": "-",
    "±": r"$\pm$",
    "∓": r"$\mp$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "≠": r"$\neq$",
    "≈": r"$\approx$",
    "∞": r"$\infty$",
    "→": r"$\rightarrow$",
    "←": r"$\leftarrow$",
    "↔": r"$\leftrightarrow$",
    "⇒": r"$\Rightarrow$",
    "°": r"$^\circ$",
    "•": r"$\bullet$",
    "√": r"$\surd$",
    "∑": r"$\sum$",
    "µ": r"$\mu$",
    "¹": r"$^1$",
    "²": r"$^2$",
    "³": r"$^3$",
    "½": r"$\frac{1}{2}$",
    "¼": r"$\frac{1}{4}$",
    "¾": r"$\frac{3}{4}$",
    "—": "---",
    "–": "--",
    "‒": "--",
    "‐": "-",
    "‑": "-",
    "‘": "`",
    "’": "'",
    "‚": ",",
    "“": "``",
    "”": "''",
    "„": ",,",
    "«": "<<",
    "»": ">>",
    "‹": "<",
    "›": ">",
    "…": r"\ldots{}",
    "ß": r"\ss{}",
    "æ": r"\ae{}",
    "Æ": r"\AE{}",
    "œ": r"\oe{}",
    "Œ": r"\OE{}",
    "ø": r"\o{}",
    "Ø": r"\O{}",
    "ł": r"\l{}",
    "Ł": r"\L{}",
    "ı": r"\i{}",
    "ȷ": r"\j{}",
    "¡": r"\textexclamdown{}",
    "¿": r"\textquestiondown{}",
    "§": r"$\S$",
    "©": "(c)",
    "£": "GBP",
    "€": "EUR",
}
for _k, _v in list(_LATEX_UNICODE.items()):  # "«" must not become the escapes of "<"
    _LATEX_UNICODE[_k] = _v.replace("<", r"\textless{}").replace(">", r"\textgreater{}") if _v in ("<<", ">>", "<", ">") else _v

#: Greek letters with a math command of their name; the capitals that look like Latin ones are those.
_GREEK_COMMANDS = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi psi "
    "omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()
)
_GREEK_AS_LATIN = {"OMICRON": "o", "ALPHA": "A", "BETA": "B", "EPSILON": "E", "ZETA": "Z", "ETA": "H", "IOTA": "I", "KAPPA": "K",
                   "MU": "M", "NU": "N", "RHO": "P", "TAU": "T", "CHI": "X"}  # fmt: skip
#: Terms of the product's own captions written as a paper writes them (before the characters).
_LATEX_TERMS = {"τ-b": r"$\tau_b$", "τ-c": r"$\tau_c$"}
_LATEX_TERM = re.compile("(" + "|".join(map(re.escape, _LATEX_TERMS)) + ")")
#: Combining accents with the LaTeX accent command that sets them on a letter in any encoding.
_ACCENTS = {
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0308": '"', "\u0304": "=", "\u0306": "u",
    "\u0307": ".", "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c", "\u0323": "d", "\u0331": "b",
}  # fmt: skip


#: Characters that end a line or steer the text's direction: read as a space in a LaTeX cell.
_LATEX_SPACES = frozenset("\n\r\t\v\f\x85\u2028\u2029")


def _latex_char(ch: str) -> str:
    """One character outside ASCII as LaTeX that needs no ``inputenc`` or ``fontenc``: a symbol or
    a Greek letter in math mode, a Latin letter with its accent commands, else its code point as
    text (``[U+1F600]``), so the file always compiles and nothing is lost silently."""
    if ch in _LATEX_UNICODE:
        return _LATEX_UNICODE[ch]
    name = unicodedata.name(ch, "")
    if name.startswith(("GREEK SMALL LETTER ", "GREEK CAPITAL LETTER ")) and " WITH " not in name:
        letter = name.rsplit(" ", 1)[1]
        command = letter.lower() if "SMALL" in name else letter.capitalize()
        if name == "GREEK SMALL LETTER FINAL SIGMA":
            return r"$\varsigma$"
        if command in _GREEK_COMMANDS:
            return f"$\\{command}$"
        if letter in _GREEK_AS_LATIN:
            latin = _GREEK_AS_LATIN[letter]
            return latin.lower() if "SMALL" in name else latin.upper()
    if unicodedata.category(ch).startswith("Z"):
        return " "
    parts = unicodedata.normalize("NFD", ch)
    if len(parts) > 1 and parts[0].isascii() and parts[0].isalpha() and all(m in _ACCENTS for m in parts[1:]):
        out = {"i": r"\i{}", "j": r"\j{}"}.get(parts[0], parts[0]) if parts[1] not in "\u0327\u0323\u0331" else parts[0]
        for mark in parts[1:]:
            out = f"\\{_ACCENTS[mark]}{{{out}}}"
        return out
    compatible = unicodedata.normalize("NFKC", ch)  # ligatures, full-width forms, symbol variants: their letters
    if compatible != ch:
        return "".join(_LATEX_SPECIAL.get(c, c) if c.isascii() else _latex_char(c) for c in compatible if c.isprintable())
    return f"[U+{ord(ch):04X}]"


def latex_escape(text: object) -> str:
    """Text safe inside a LaTeX table cell, written in ASCII: the special characters escaped, line
    and paragraph separators as spaces, other control and direction-steering characters dropped,
    symbols and Greek letters as math (``ρ`` -> ``$\\rho$``, ``±`` -> ``$\\pm$``), accented letters
    by their accent commands, anything else by its code point; so a table compiles with pdflatex
    in a plain ``article``, with or without ``inputenc`` and ``fontenc``.

    >>> print(latex_escape("50% & x}"))
    50\\% \\& x\\}
    >>> print(latex_escape("Spearman ρ ≥ 0.5 ± 0.1, Kendall τ-c, café 😀"))
    Spearman $\\rho$ $\\geq$ 0.5 $\\pm$ 0.1, Kendall $\\tau_c$, caf\\'{e} [U+1F600]
    """
    out = []
    for k, piece in enumerate(_LATEX_TERM.split(str(text))):
        if k % 2:  # a term the split kept
            out.append(_LATEX_TERMS[piece])
            continue
        for ch in piece:
            if ch in _LATEX_SPACES:
                out.append(" ")
            elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
                continue  # NUL, ESC, bidi overrides, lone surrogates: nothing a table cell should hold
            elif ch.isascii():
                out.append(_LATEX_SPECIAL.get(ch, ch))
            else:
                out.append(_latex_char(ch))
    return "".join(out)


def latex_label(text: object) -> str:
    """A ``\\label`` key made of letters, digits and ``:._-`` only (a key is read raw by LaTeX, so
    escaping cannot make it safe): any other character becomes ``-``, and a key that changed gets
    8 hex digits of its text's digest, so two names never share a label.

    >>> latex_label("tab:metric_vs_metric_overall")
    'tab:metric_vs_metric_overall'
    >>> latex_label("tab:x}{y")
    'tab:x--y-286d78fa'
    """
    raw = str(text)
    safe = re.sub(r"[^A-Za-z0-9:._-]", "-", raw)
    return safe if safe == raw else f"{safe}-{hashlib.sha256(raw.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def _latex_row(cells: Sequence[object]) -> str:
    """One table row, its cells escaped; a row that starts with ``[`` starts with ``{}`` so that the
    rule or row end before it does not read the bracket as its optional argument."""
    row = " & ".join(latex_escape(c) for c in cells)
    return ("{}" if row.startswith("[") else "") + row + " \\\\"


def latex_table(cells: pd.DataFrame, caption: str, label: str = "tab:agreement") -> str:
    """A booktabs table (``\\toprule``, ``\\midrule``, ``\\bottomrule``) of text cells, the row
    labels first; every cell escaped."""
    columns = [cells.index.name or "", *cells.columns]
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        "\\begin{tabular}{l" + "l" * len(cells.columns) + "}",
        "\\toprule",
        _latex_row(columns),
        "\\midrule",
    ]
    for label_, row in cells.iterrows():
        lines.append(_latex_row([label_, *("" if pd.isna(v) else v for v in row)]))
    lines += [
        "\\bottomrule",
        "\\end{tabular}",
        f"\\caption{{{latex_escape(caption)}}}",
        f"\\label{{{latex_label(label)}}}",
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


#: Characters a Markdown renderer reads as markup inside a line (emphasis, code, raw HTML and
#: entities, links and images, strike-through, the cell bar), escaped with a backslash.
_MARKDOWN_SPECIAL = frozenset("\\`*_[]<>|!&~")
#: Characters that reorder how text is shown (bidirectional overrides and isolates, marks): dropped.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: Characters that start a block (a heading, a list, a quote, a rule) at the beginning of a line.
_MARKDOWN_LINE_START = frozenset("#+-=>")


def markdown_text(text: object, *, line: bool = True) -> str:
    """Text from a file as one line of Markdown that renders as that text: every inline markup
    character escaped with a backslash, a block marker at its start too (``line``: the text starts a
    line; a table cell does not), and line ends (CR, LF, U+2028 ...) and other control characters
    as spaces, so it never adds a row, a line or an element.

    >>> print(markdown_text("![x](http://a/b.png) <b>1</b>"))
    \\!\\[x\\](http://a/b.png) \\<b\\>1\\</b\\>
    >>> print(markdown_text("# not a heading"))
    \\# not a heading
    """
    chars = [" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in str(text) if ch not in _BIDI_CONTROLS]
    out = "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in chars)
    if line:  # leading spaces would make an indented code block, trailing ones a line break
        out = out.strip()
    stripped = out.lstrip()
    if line and stripped and (stripped[0] in _MARKDOWN_LINE_START or re.match(r"\d+[.)]", stripped)):
        at = len(out) - len(stripped)
        digits = re.match(r"\d+", stripped)
        cut = at + (digits.end() if digits else 0)
        out = out[:cut] + "\\" + out[cut:]
    if line:  # a heading's closing sequence: a run of # at the end, after a space
        out = re.sub(r"(\s)(#+)(\s*)$", lambda m: m.group(1) + "\\" + m.group(2) + m.group(3), out)
    return out


def markdown_table(cells: pd.DataFrame, caption: str) -> str:
    """A Markdown (pipe) table of text cells, the row labels first, then the caption; every cell
    and the caption through :func:`markdown_text`."""

    def cell(v: object) -> str:
        if isinstance(v, float) and pd.isna(v):
            return ""
        return markdown_text(v, line=False)

    header = [cells.index.name or "", *cells.columns]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for label_, row in cells.iterrows():
        lines.append("| " + " | ".join([cell(label_), *(cell(v) for v in row)]) + " |")
    return "\n".join(lines) + "\n\n" + markdown_text(caption) + "\n"


#: Human aspects whose words differ from their name in the judgements file.
ASPECT_WORDS = {"non_redundancy": "non-redundancy", "nonredundancy": "non-redundancy"}


def aspect_label(aspect: object) -> str:
    """How a human aspect is named in an export: its words when known, else its name with
    underscores as spaces.

    >>> aspect_label("non_redundancy"), aspect_label("visual_grounding"), aspect_label("overall")
    ('non-redundancy', 'visual grounding', 'overall')
    """
    name = str(aspect)
    return ASPECT_WORDS.get(name, name.replace("_", " "))


def once(text: str) -> str:
    """A line of ``·``-separated parts with each part once (a description joined from two that
    both name the scores' signature names it once).

    >>> once("scores sig 01 · 8 stories · meta-eval sig 02 · scores sig 01 · raters mean")
    'scores sig 01 · 8 stories · meta-eval sig 02 · raters mean'
    """
    return " · ".join(dict.fromkeys(part.strip() for part in text.split(" · ") if part.strip()))


def paper_exports(cells: pd.DataFrame, caption: str, label: str) -> dict[str, str]:
    """One table for a paper: ``{"tex": booktabs LaTeX, "md": Markdown}`` of text cells with its
    caption (the one builder the CLI and every page call)."""
    return {"tex": latex_table(cells, caption, label), "md": markdown_table(cells, caption)}


def agreement_exports(cells: pd.DataFrame, method: str, confidence: float, unit: str, description: str) -> dict[str, str]:
    """The agreement table (:func:`~vst_core.viz.tables.correlation_cells`) for a paper, aspects by
    their words; its caption says the coefficient, interval, what was resampled, N and the
    meta-evaluation's ``description`` (its signature and the scores')."""
    caption = (
        f"{METHODS.get(method, method)} with people [bootstrap {confidence:.0%} interval, {unit} resampled], "
        f"* p < 0.05, (N stories). {SMALL_N_NOTE} {once(description)}"
    )
    return paper_exports(cells.rename(columns=aspect_label), caption, "tab:agreement")


def versus_exports(matrix: pd.DataFrame, method: str, aspect: str, settings: str, description: str) -> dict[str, str]:
    """A metric-vs-metric matrix (:func:`~vst_core.analysis.meta_eval.versus.versus_matrix`) of one
    human ``aspect`` for a paper; its caption names the coefficient, the aspect by its words, the
    test's ``settings`` and the meta-evaluation's ``description``."""
    caption = (
        f"{METHODS.get(method, method)} with the human '{aspect_label(aspect)}' rating: row - column; "
        f"* permutation p < 0.05. {settings}. {once(description)}"
    )
    return paper_exports(matrix, caption, f"tab:metric-vs-metric-{aspect}")


#: What each table of :func:`build_report` is called in a paper's caption.
TABLE_TITLES = {"systems": "Systems", "agreement": "Agreement with people"}


def table_title(name: str) -> str:
    """A report table's name as a caption starts it.

    >>> table_title("metric_vs_metric_non_redundancy")
    'Metric vs metric, non-redundancy'
    """
    if name.startswith("metric_vs_metric_"):
        return f"Metric vs metric, {aspect_label(name.removeprefix('metric_vs_metric_'))}"
    return TABLE_TITLES.get(name, name)


def report_exports(tables: Mapping[str, pd.DataFrame], made_with: str) -> dict[str, str]:
    """Every table of a report (:func:`build_report`) for a paper: ``{"tex": ..., "md": ...}``,
    each caption its title, what its numbers are (``attrs["caption"]``) and, once, what made them."""
    made = once(made_with)
    tex, md = ["% needs \\usepackage{booktabs}\n"], []
    for name, table in tables.items():
        title, what = table_title(name), str(table.attrs.get("caption") or "")
        head, _, rest = what.partition(": ")
        if rest and head and aspect_label(head).lower() in title.lower():  # "grounding: ..." under a grounding title
            what = rest
        if SMALL_N_MARK in " ".join(map(str, table.to_numpy().ravel())) and SMALL_N_NOTE not in what:
            what = f"{what}. {SMALL_N_NOTE}" if what else SMALL_N_NOTE  # what the mark in its cells means
        what = what.rstrip(". ")
        caption = f"{title}: {what}. {made}" if what else f"{title}. {made}"
        tex.append(latex_table(table, caption, f"tab:{name}"))
        md.append(f"### {markdown_text(table_title(name))}\n\n" + markdown_table(table, caption))
    return {"tex": "\n".join(tex), "md": "\n".join(md)}


def leaderboard_cells(board: Leaderboard) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leaderboard as two tables of text cells for a paper: systems x metrics (``mean [low,
    high] #rank·cluster``, then dHM and human ratings), and the paired tests (``d [low, high]``,
    p and Holm's p, ``*`` where Holm's p < 0.05)."""
    glance = board.glance().set_index("system")

    def p_cell(p: float | None) -> str:
        return "—" if p is None else f"{p:.4f}"

    rows = []
    for t in board.pairs:
        interval = (
            f" [{t.ci_low:+.4f}, {t.ci_high:+.4f}]" if t.ci_low is not None and t.ci_high is not None else f" {SMALL_N_MARK}"
        )
        mark = "*" if t.p_holm is not None and t.p_holm < 0.05 else ""
        rows.append(
            {
                "metric": t.metric,
                "A − B": f"{t.system_a} − {t.system_b}",
                "N": f"{t.n:,}",
                "mean d": f"{t.mean_difference:+.4f}{interval}",
                "p": p_cell(t.p) + (f" ± {t.p_se:.4f}" if t.p is not None and t.p_se is not None else ""),
                "p (Holm)": p_cell(t.p_holm) + mark,
                "better": t.better or "—",
            }
        )
    pairs = pd.DataFrame(rows, columns=["metric", "A − B", "N", "mean d", "p", "p (Holm)", "better"]).set_index("metric")
    return glance, pairs


def leaderboard_exports(board: Leaderboard) -> dict[str, str]:
    """``leaderboard.tex`` (booktabs) and ``leaderboard.md``: the two tables of
    :func:`leaderboard_cells`, each with a caption that states the method and the signature."""
    glance, pairs = leaderboard_cells(board)
    glance = glance.rename(columns=lambda c: f"people: {aspect_label(c[8:])}" if str(c).startswith("people: ") else c)
    permutations = int(board.signature.get("permutations", board.pairs[0].permutations if board.pairs else 0))
    sig = f"compare sig {board.signature.get('id', '?')}"
    board_caption = (
        "Mean over the image sequences every system wrote for [95% bootstrap interval over sequences]; #rank by the "
        "metric's direction and significance cluster (a new letter where Holm's p against any system of the current "
        f"cluster is < 0.05: no two systems of one cluster differ significantly). {SMALL_N_NOTE} {sig}"
    )
    per_metric = board.signature.get("holm_family", "metric") == "metric"
    k = len(board.systems) * (len(board.systems) - 1) // 2
    family = f"the {k} pair{'s' if k != 1 else ''} of systems of each metric" if per_metric else f"all {len(board.pairs)} tests"
    pairs_caption = (
        f"Paired tests per sequence: mean difference d = A − B [95% paired bootstrap interval]; p ± its Monte-Carlo "
        f"standard error: paired approximate randomization, {permutations:,} sign flips (more where 0.05 was "
        f"within 3 standard errors), two-sided; * Holm's p < 0.05 over {family}. {sig}"
    )
    return {
        "leaderboard.tex": latex_table(glance, board_caption, "tab:leaderboard")
        + "\n"
        + latex_table(pairs, pairs_caption, "tab:pairwise"),
        "leaderboard.md": markdown_table(glance, board_caption) + "\n" + markdown_table(pairs, pairs_caption),
    }


#: The leaderboard's numbers as the Leaderboard page names them (its "Every number" table).
STANDING_WORDS = {"n": "N", "ci_low": "95% low", "ci_high": "95% high", "small_n": "small N"}


def leaderboard_standings(board: Leaderboard) -> pd.DataFrame:
    """One row per (metric, system), best first within a metric, as the Leaderboard page shows
    them: the cluster as its letter (A the best; empty for a descriptor), the columns by the page's
    words (``N``, ``95% low``, ``95% high``); numbers stay numbers (no interval below the minimum N:
    empty, with ``small N`` true where the page shows the mark)."""
    frame = board.standings_frame()
    letters = [None if pd.isna(c) else cluster_name(int(c)) for c in frame["cluster"]]
    return frame.assign(cluster=letters).rename(columns=STANDING_WORDS)


def leaderboard_csv(board: Leaderboard) -> dict[str, str]:
    """``leaderboard.csv`` (:func:`leaderboard_standings`) and ``pairwise.csv`` (the paired tests),
    each row with the compare signature's id and its whole JSON once
    (:func:`~vst_core.data.csv_out.frame_csv`)."""
    head = [f"compare sig {board.signature.get('id', '?')}", f"signature {json.dumps(board.signature, sort_keys=True)}"]
    return {
        "leaderboard.csv": frame_csv(leaderboard_standings(board), head),
        "pairwise.csv": frame_csv(board.pairs_frame(), head),
    }


def write_figure(fig: Any, stem: Path) -> list[Path]:
    """``stem``.svg and ``stem``.png through plotly's image export (kaleido with a Chrome or
    Chromium); raises RuntimeError saying why when it is not available."""
    written = []
    for suffix in ("svg", "png"):
        path = stem.with_suffix(f".{suffix}")
        try:
            fig.write_image(str(path), format=suffix)
        except (ImportError, ValueError, RuntimeError, OSError) as exc:
            raise RuntimeError(
                f"figure files need plotly's image export (the kaleido package and Chrome/Chromium): {exc}"
            ) from exc
        written.append(path)
    return written


__all__ = [
    "CSP",
    "Section",
    "build_report",
    "system_summary",
    "data_url",
    "figures_html",
    "latex_escape",
    "latex_table",
    "markdown_table",
    "markdown_text",
    "agreement_exports",
    "leaderboard_csv",
    "leaderboard_exports",
    "leaderboard_standings",
    "aspect_label",
    "once",
    "paper_exports",
    "report_exports",
    "versus_exports",
    "report_html",
    "story_card_html",
    "table_html",
    "view_report",
    "write_figure",
]
