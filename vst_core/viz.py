"""HTML and plotly builders from result records (no streamlit import)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from vst_core.config import Settings
from vst_core.data import StorySet
from vst_core.records import (
    FIELD_BY_COLUMN,
    FIELDS,
    CoherencePair,
    CoherenceScores,
    GroundingScores,
    RedundancyScores,
    StoryScores,
    fields_of,
)
from vst_core.signature import describe, signature, signature_id

INTER_COLOUR = "#fbd38d"  # repeats an earlier sentence
INTRA_COLOUR = "#feb2b2"  # repeats the previous n-gram window of the same sentence


def contribution_colour(c: float) -> str:
    """Diverging colour for a GROOVIST contribution: blue positive, red negative."""
    if c >= 0:
        return f"rgba(43, 108, 176, {min(1.0, 0.25 + c / 3):.2f})"
    return f"rgba(197, 48, 48, {min(1.0, 0.35 + -c):.2f})"


def _render(
    text: str, labels: list[list[str]], kinds: list[set[str]], phrase: list[int | None], phrase_info: list[tuple[str, str]]
) -> str:
    """Runs of characters with the same repeat labels and phrase, as nested highlighted spans."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and labels[j] == labels[i] and kinds[j] == kinds[i] and phrase[j] == phrase[i]:
            j += 1
        chunk = html.escape(text[i:j])
        if labels[i]:
            colour = INTRA_COLOUR if "intra" in kinds[i] else INTER_COLOUR
            title = html.escape(" | ".join(labels[i]), quote=True)
            chunk = (
                f'<mark class="vst-repeat" style="background:{colour};padding:0 1px;border-radius:3px" '
                f'title="{title}">{chunk}</mark>'
            )
        if phrase[i] is not None:
            colour, title = phrase_info[phrase[i]]  # type: ignore[index]
            chunk = (
                f'<span class="vst-np" data-phrase="{phrase[i]}" style="border-bottom:3px solid {colour};'
                f'padding-bottom:1px" title="{html.escape(title, quote=True)}">{chunk}</span>'
            )
        out.append(chunk)
        i = j
    return "".join(out)


def probability_colour(p: float) -> str:
    """Red (0) through amber (0.5) to green (1), as a CSS hsl colour."""
    return f"hsl({round(120 * max(0.0, min(1.0, p)))}, 70%, 42%)"


def coherence_chip(pair: CoherencePair, weakest: bool) -> str:
    """A small badge between sentences i and i+1 with P(i+1 follows i)."""
    p = pair.probability
    if p is None:
        return '<span class="vst-coh" title="not scored (empty sentence)" style="color:#a0aec0">·?·</span>'
    title = f"P(sentence {pair.to + 1} follows sentence {pair.from_ + 1}) = {p:.3f}"
    if pair.truncated:
        title += " (pair truncated to the model's maximum length)"
    mark = " ▼ weakest" if weakest else ""
    border = "2px solid #1a202c" if weakest else "none"
    return (
        f'<span class="vst-coh{" vst-weakest" if weakest else ""}" title="{html.escape(title, quote=True)}" '
        f'style="background:{probability_colour(p)};color:white;font-size:0.75em;padding:1px 6px;'
        f'border-radius:9px;border:{border};white-space:nowrap">{p:.2f}{mark}</span>'
    )


def story_html(
    sentences: Sequence[str],
    record: RedundancyScores | None,
    coherence: CoherenceScores | None = None,
    grounding: GroundingScores | None = None,
) -> str:
    """Story sentences as HTML: repeated spans highlighted (hover: what they repeat), noun phrases
    underlined by grounding contribution (hover: score, concreteness, matched image), and a
    coherence chip between consecutive sentences."""
    labels: list[list[list[str]]] = [[[] for _ in s] for s in sentences]
    kinds: list[list[set[str]]] = [[set() for _ in s] for s in sentences]
    for rep in (record.inter_repeats if record else None) or ():
        label = f"repeats sentence {rep.earlier + 1} (Jaccard {rep.jaccard:.2f})"
        for start, end in rep.spans:
            for c in range(start, min(end, len(sentences[rep.sentence]))):
                if label not in labels[rep.sentence][c]:
                    labels[rep.sentence][c].append(label)
                kinds[rep.sentence][c].add("inter")
    for intra in (record.intra_repeats if record else None) or ():
        label = f"repeats the previous window of this sentence (Jaccard {intra.jaccard:.2f})"
        for start, end in intra.spans:
            for c in range(start, min(end, len(sentences[intra.sentence]))):
                labels[intra.sentence][c].append(label)
                kinds[intra.sentence][c].add("intra")
    phrase: list[list[int | None]] = [[None for _ in s] for s in sentences]
    phrase_info: list[tuple[str, str]] = []
    for k, p in enumerate(grounding.phrases if grounding else ()):
        start, end = p.span
        sign = "grounded" if p.positive else "below θ"
        phrase_info.append(
            (
                contribution_colour(p.contribution),
                f"{p.text}: contribution {p.contribution:+.3f} ({sign}) · score {p.score:.3f} · "
                f"concreteness {p.weight:.2f} · matched image {p.image + 1}, {p.box_label or 'box'} {list(p.box)}",
            )
        )
        for c in range(start, min(end, len(sentences[p.sentence]))):
            phrase[p.sentence][c] = k
    pairs = {p.from_: p for p in (coherence.pairs if coherence else ())}
    weakest = coherence.weakest if coherence else None
    parts = []
    for k, sentence in enumerate(sentences):
        body = _render(sentence, labels[k], kinds[k], phrase[k], phrase_info)
        parts.append(f'<span class="vst-sentence" data-index="{k}"><sup style="color:#718096">{k + 1}</sup> {body}</span>')
        if k in pairs:
            parts.append(coherence_chip(pairs[k], weakest == k))
    return '<div class="vst-story" style="line-height:1.8">' + " ".join(parts) + "</div>"


def legend_html() -> str:
    return (
        f'<span style="background:{INTER_COLOUR};padding:0 4px;border-radius:3px">repeats an earlier sentence</span> '
        f'<span style="background:{INTRA_COLOUR};padding:0 4px;border-radius:3px">repeats inside the sentence</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(2)}">grounded phrase</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(-0.5)}">phrase below θ</span>'
    )


def draw_box(image: Any, box: Sequence[float], label: str) -> Any:
    """A copy of a PIL image with ``box`` outlined and labelled."""
    from PIL import ImageDraw

    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(2, round(min(out.size) / 100))
    draw.rectangle(list(box), outline=(255, 215, 0), width=width)
    draw.rectangle([box[0], box[1], box[0] + 7 * len(label) + 6, box[1] + 14], fill=(255, 215, 0))
    draw.text((box[0] + 3, box[1] + 1), label, fill=(0, 0, 0))
    return out


def score_cards_html(cards: Sequence[tuple[str, str, str]]) -> str:
    """Compact score cards (label, value, hover text) that wrap in narrow columns."""
    items = "".join(
        f'<div class="vst-card" title="{html.escape(tip, quote=True)}" style="flex:1 1 70px;min-width:70px;'
        f'border:1px solid #e2e8f0;border-radius:6px;padding:2px 6px">'
        f'<div style="font-size:0.72em;color:#718096">{html.escape(label)}</div>'
        f'<div style="font-size:1.3em;font-weight:600">{html.escape(value)}</div></div>'
        for label, value, tip in cards
    )
    return f'<div style="display:flex;flex-wrap:wrap;gap:6px;margin-bottom:8px">{items}</div>'


def format_score(value: float | None, digits: int = 3) -> str:
    """A score for display; ``None`` (undefined) is shown as such, never as 0."""
    return "undefined" if value is None else f"{value:.{digits}f}"


def story_cards(record: StoryScores, metrics: Sequence[str]) -> list[tuple[str, str, str]]:
    """Score cards (label, value, hover text) of a story for the metrics run; an error shows as such."""
    nr, coh, grd = record.redundancy, record.coherence, record.grounding
    rows: list[tuple[str, str, float | None, str]] = [
        (
            "NR",
            "redundancy",
            nr.score if nr else None,
            f"inter {format_score(nr.inter)} · intra {format_score(nr.intra)}" if nr else "",
        ),
    ]
    if "coherence" in metrics:
        rows.append(("coherence", "coherence", coh.score if coh else None, f"mean P(next follows) · {coh.model}" if coh else ""))
    if "grounding" in metrics:
        detail = (
            (
                f"unbounded {format_score(grd.unbounded)} · θ {grd.theta:.4f} · "
                f"T {format_score(grd.temporal_misalignment)} · P {format_score(grd.np_proportion)}"
            )
            if grd
            else ""
        )
        rows.append(("GROOVIST", "grounding", grd.score if grd else None, detail))
        rows.append(("T", "grounding", grd.temporal_misalignment if grd else None, FIELD_BY_COLUMN["T"].help))
    for column in ("CLIPScore", "RoViST-VG"):
        f = FIELD_BY_COLUMN[column]
        if f.metric in metrics:
            rows.append((column, f.metric, f.value(record), f.help))
    return [
        (label, "error", record.errors[metric]) if metric in record.errors else (label, format_score(value), tip)
        for label, metric, value, tip in rows
    ]


@dataclass(frozen=True)
class RunView:
    """What the dashboard pages render: the loaded set, its score records and their settings."""

    story_set: StorySet
    records: list[StoryScores]
    settings: Settings
    device: str
    recorded_id: str | None = None  # signature id written in a loaded scores file, when shown as is

    def by_id(self) -> dict[str, StoryScores]:
        return {r.story_id: r for r in self.records}

    def footer(self) -> str:
        text = describe(self.settings)
        if self.recorded_id:
            text = text.replace(f"sig {signature_id(self.settings)}", f"sig {self.recorded_id} (from the scores file)", 1)
        return f"Settings: {text} · device: {self.device}"


#: Table column -> (metric, field) of a score record (from the one registry, :data:`FIELDS`).
TABLE_COLUMNS: dict[str, tuple[str, str]] = {f.column: (f.metric, f.attr) for f in FIELDS}


def scores_table(records: Sequence[StoryScores], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per story: ids, text, every number of the metrics run (NaN = undefined), errors."""
    columns = fields_of(metrics)
    rows = []
    for r in records:
        row: dict[str, Any] = {"story": r.story_id, "sequence": r.sequence_id, "system": r.system}
        for f in columns:
            value = f.value(r)
            row[f.column] = float("nan") if value is None else value
        row["text"] = " ".join(r.sentences)
        row["error"] = "; ".join(f"{k}: {v}" for k, v in r.errors.items())
        rows.append(row)
    return pd.DataFrame(rows, columns=["story", "sequence", "system", *(f.column for f in columns), "text", "error"])


def export_json(records: Sequence[StoryScores], settings: Settings) -> str:
    """The records with the signature that produced them, as one JSON document."""
    return json.dumps({"signature": signature(settings), "stories": [r.to_json() for r in records]}, ensure_ascii=False, indent=1)


def export_csv(table: pd.DataFrame, settings: Settings) -> str:
    """The table as CSV, headed by a comment line with the settings signature."""
    return f"# {describe(settings)}\n# signature {json.dumps(signature(settings), sort_keys=True)}\n" + table.to_csv(index=False)


def caption_figure(fig: Any, text: str, bottom: int = 110, y: float = -0.32, width: int = 160) -> Any:
    """Write the settings line under a figure, so a screenshot or export carries it (wrapped
    at ' · ' so long signatures stay inside the figure)."""
    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + len(part) < width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    fig.update_layout(margin={"t": 40, "b": bottom + 12 * (len(lines) - 1)})
    fig.add_annotation(
        text="<br>".join(lines),
        align="left",
        xref="paper",
        yref="paper",
        x=0,
        y=y,
        showarrow=False,
        font={"size": 10, "color": "#718096"},
        xanchor="left",
        yanchor="top",
    )
    return fig


def system_figure(table: pd.DataFrame, column: str, settings: Settings) -> Any:
    """Box plot of one metric per system, captioned with the settings signature."""
    import plotly.express as px

    fig = px.box(table, x="system", y=column, points="all", hover_data=["story"], color="system")
    fig.update_layout(showlegend=False, title=f"{column} per system")
    return caption_figure(fig, describe(settings))


# ---------------------------------------------------------------- meta-evaluation figures


def correlation_cells(table: pd.DataFrame, method: str) -> pd.DataFrame:
    """Metric × aspect grid of 'value [low, high]' strings for one method; 'undefined' when absent."""
    part = table[table["method"] == method]
    cells: dict[str, dict[str, str]] = {}
    for row in part.itertuples():
        if pd.isna(row.value):
            text = "undefined"
        else:
            text = f"{row.value:+.3f}"
            if not pd.isna(row.ci_low):
                text += f" [{row.ci_low:+.2f}, {row.ci_high:+.2f}]"
            if not pd.isna(row.p) and row.p < 0.05:
                text += " *"
        cells.setdefault(str(row.metric), {})[str(row.aspect)] = text
    aspects = list(dict.fromkeys(part["aspect"]))
    return pd.DataFrame.from_dict(cells, orient="index").reindex(columns=aspects).rename_axis("metric")


def pairwise_cells(pairwise: pd.DataFrame) -> pd.DataFrame:
    """Metric × subset grid of 'accuracy (N pairs)' strings; '–' where a subset has no pair."""
    part = pairwise[pairwise["group"] != "gap"]
    text = ["–" if pd.isna(a) else f"{a:.3f} ({n})" for a, n in zip(part["accuracy"], part["n"])]
    grid = part.assign(cell=text).pivot(index="metric", columns="subset", values="cell")
    return grid.reindex(index=list(dict.fromkeys(part["metric"])), columns=list(dict.fromkeys(part["subset"])))


def correlation_bars(table: pd.DataFrame, method: str, caption: str) -> Any:
    """Grouped bars of one coefficient per metric and aspect, bootstrap intervals as error bars."""
    import plotly.graph_objects as go

    from vst_core.meta_eval import METHODS

    part = table[(table["method"] == method)]
    fig = go.Figure()
    for aspect, rows in part.groupby("aspect", sort=False):
        fig.add_bar(
            name=str(aspect),
            x=rows["metric"],
            y=rows["value"],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": rows["ci_high"] - rows["value"],
                "arrayminus": rows["value"] - rows["ci_low"],
            },
            hovertext=[f"N={n}" + (f" · {u}" if isinstance(u, str) else "") for n, u in zip(rows["n"], rows["undefined"])],
        )
    fig.update_layout(
        barmode="group",
        title=f"{METHODS.get(method, method)} with human judgements",
        yaxis_title=METHODS.get(method, method),
        legend_title="aspect",
    )
    return caption_figure(fig, caption)


def metric_scatter(data: pd.DataFrame, metric: str, aspect: str, caption: str) -> Any:
    """Metric against the human score, one colour and one least-squares line per system."""
    import plotly.graph_objects as go

    fig = go.Figure()
    palette = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#4a5568", "#d69e2e", "#319795"]
    both = data[[metric, aspect, "system"]].dropna(subset=[metric, aspect]).assign(system=lambda d: d["system"].fillna("unknown"))
    for k, (system, rows) in enumerate(both.groupby("system", sort=True)):
        colour = palette[k % len(palette)]
        fig.add_scatter(
            x=rows[metric],
            y=rows[aspect],
            mode="markers",
            name=str(system),
            marker={"color": colour, "size": 9},
            hovertext=list(rows.index),
            legendgroup=str(system),
        )
        if rows[metric].nunique() >= 2:
            slope, intercept = np.polyfit(rows[metric].to_numpy(float), rows[aspect].to_numpy(float), 1)
            xs = np.array([rows[metric].min(), rows[metric].max()])
            fig.add_scatter(
                x=xs,
                y=slope * xs + intercept,
                mode="lines",
                line={"color": colour, "dash": "dot"},
                name=f"{system} trend",
                legendgroup=str(system),
                showlegend=False,
            )
    fig.update_layout(title=f"{metric} vs human {aspect} (N={len(both)})", xaxis_title=metric, yaxis_title=f"human {aspect}")
    return caption_figure(fig, caption)


def gap_accuracy_figure(pairwise: pd.DataFrame, caption: str) -> Any:
    """Pairwise ranking accuracy per ranking-gap bin (Vrank Fig. 3), one line per metric; 0.5 = chance."""
    import plotly.graph_objects as go

    part = pairwise[pairwise["group"] == "gap"]
    fig = go.Figure()
    for metric, rows in part.groupby("metric", sort=False):
        fig.add_scatter(
            x=rows["subset"].str.replace("gap ", "", regex=False),
            y=rows["accuracy"],
            mode="lines+markers",
            name=str(metric),
            hovertext=[f"N={n}, ties={t}" for n, t in zip(rows["n"], rows["ties"])],
        )
    fig.add_hline(y=0.5, line={"dash": "dash", "color": "#a0aec0"}, annotation_text="chance")
    fig.update_layout(
        title="Pairwise ranking accuracy by ranking gap (ties count as wrong)",
        xaxis_title="ranking gap bin",
        yaxis_title="accuracy",
        yaxis_range=[0, 1.05],
    )
    return caption_figure(fig, caption)


def bins_figure(bins: pd.DataFrame, caption: str) -> Any:
    """Correlation per metric inside the low and high bin of T and of P (GROOVIST Fig. 3)."""
    import plotly.express as px

    from vst_core.meta_eval import METHODS

    fig = px.bar(
        bins, x="bin", y="value", color="metric", barmode="group", facet_col="covariate", hover_data=["n", "p", "undefined"]
    )
    fig.update_xaxes(matches=None, title=None)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    method = METHODS.get(str(bins["method"].iloc[0]), "") if len(bins) else ""
    fig.update_layout(
        title=f"{method} with human {bins['aspect'].iloc[0] if len(bins) else ''} inside each bin", yaxis_title=method
    )
    return caption_figure(fig, caption)


def error_heatmap(errors: pd.DataFrame, caption: str) -> Any:
    """Point-biserial correlation of each metric or human aspect with each error label (Vrank Table 5)."""
    import plotly.express as px

    grid = errors.pivot_table(index="column", columns="error", values="r_pb", sort=False)
    fig = px.imshow(
        grid,
        text_auto=".2f",
        color_continuous_scale="RdBu",
        zmin=-1,
        zmax=1,
        aspect="auto",
        labels={"y": "metric or human aspect", "x": "error label", "color": "r_pb"},
    )
    fig.update_layout(title="Point-biserial correlation with error labels (negative: the error lowers the score)")
    return caption_figure(fig, caption, bottom=90, y=-0.18)
