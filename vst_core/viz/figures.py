"""Plotly figures of a dataset and of a meta-evaluation, each captioned with its settings line.
Plotly renders a few tags (``<a href>``, ``<b>``, ``<br>``…) in titles, legends, tick labels,
annotations and hover texts: every text from the data is put there through
:func:`vst_core.viz.safe.plot_text`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.dhm_aspects import aspect_fields
from vst_core.analysis.intervals import MIN_INTERVAL_N
from vst_core.analysis.meta_eval import METHODS
from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.signature import Inputs, describe
from vst_core.viz.safe import plot_text, redact


def caption_figure(fig: Any, text: str, width: int = 100) -> Any:
    """Write the settings line on a figure, so a screenshot or export carries it (wrapped at ' · '
    so long signatures stay inside the figure; a typed model path by its last name only). It sits
    between the title and the plotting area, where nothing else is drawn: below the plot it met
    the axis title or tick labels turned by a narrow width, whatever offset was chosen."""
    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + len(part) < width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    title = 34 if fig.layout.title.text else 8
    fig.update_layout(
        margin={"t": title + 13 * len(lines) + 12},
        title={"y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 10}},
    )
    fig.add_annotation(
        text="<br>".join(plot_text(redact(line)) for line in lines),
        align="left",
        xref="paper",
        yref="paper",
        x=0,
        y=1,
        yshift=6,
        showarrow=False,
        font={"size": 10, "color": "#718096"},
        xanchor="left",
        yanchor="bottom",
    )
    return fig


#: Above this many stories a box plot sends its quartiles, not every point, to the browser.
MAX_BOX_POINTS = 5000


def system_figure(
    table: pd.DataFrame, column: str, settings: Settings, inputs: Inputs | None = None, *, caption: str | None = None
) -> Any:
    """Box plot of one metric per system, captioned with the settings signature. Up to
    :data:`MAX_BOX_POINTS` stories every point is drawn (hover names the story); above, each
    system's quartiles and 1.5·IQR whiskers are computed here and only they are sent."""
    import plotly.express as px
    import plotly.graph_objects as go

    if len(table) <= MAX_BOX_POINTS:
        labelled = table[["system", "story", column]].assign(
            system=table["system"].map(plot_text), story=table["story"].map(plot_text)
        )
        fig = px.box(labelled, x="system", y=column, points="all", hover_data=["story"], color="system")
        fig.update_layout(boxmode="overlay")  # one box per category, centred on it (colour is not a group)
    else:
        fig = go.Figure()
        for system, values in table.groupby("system", sort=True)[column]:
            v = values.dropna().to_numpy()
            if not len(v):
                continue
            q1, median, q3 = np.quantile(v, [0.25, 0.5, 0.75])
            low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
            fig.add_trace(
                go.Box(
                    name=plot_text(system), x=[plot_text(system)], q1=[q1], median=[median], q3=[q3], mean=[float(v.mean())],
                    lowerfence=[float(v[v >= low].min())], upperfence=[float(v[v <= high].max())],
                    hoverinfo="y", boxpoints=False,
                )
            )  # fmt: skip
        fig.update_layout(xaxis_title="system", yaxis_title=plot_text(column))
    fig.update_layout(
        showlegend=False,
        title=f"{plot_text(column)} per system" + (f" ({len(table):,} stories)" if len(table) > MAX_BOX_POINTS else ""),
    )
    return caption_figure(fig, caption or describe(settings, inputs))


# ---------------------------------------------------------------- meta-evaluation figures


def correlation_bars(table: pd.DataFrame, method: str, caption: str, min_n: int = MIN_INTERVAL_N) -> Any:
    """Grouped bars of one coefficient per metric and aspect, bootstrap intervals as error bars
    where N ≥ ``min_n`` (the tables' rule: below it an interval would look certain and mean nothing)."""
    import plotly.graph_objects as go

    part = table[(table["method"] == method)]
    fig = go.Figure()
    for aspect, rows in part.groupby("aspect", sort=False):
        enough = rows["n"].fillna(0) >= min_n
        fig.add_bar(
            name=plot_text(aspect),
            x=rows["metric"].map(plot_text),
            y=rows["value"],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (rows["ci_high"] - rows["value"]).where(enough),
                "arrayminus": (rows["value"] - rows["ci_low"]).where(enough),
            },
            hovertext=[
                f"N={n}" + (f" · {plot_text(u)}" if isinstance(u, str) else "") for n, u in zip(rows["n"], rows["undefined"])
            ],
        )
    fig.update_layout(
        barmode="group",
        title=f"{METHODS.get(method, method)} with human judgements (intervals where N ≥ {min_n})",
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
            name=plot_text(system),
            marker={"color": colour, "size": 9},
            hovertext=[plot_text(i) for i in rows.index],
            legendgroup=plot_text(system),
        )
        if rows[metric].nunique() >= 2:
            slope, intercept = np.polyfit(rows[metric].to_numpy(float), rows[aspect].to_numpy(float), 1)
            xs = np.array([rows[metric].min(), rows[metric].max()])
            fig.add_scatter(
                x=xs,
                y=slope * xs + intercept,
                mode="lines",
                line={"color": colour, "dash": "dot"},
                name=f"{plot_text(system)} trend",
                legendgroup=plot_text(system),
                showlegend=False,
            )
    m, a = plot_text(metric), plot_text(aspect)
    fig.update_layout(title=f"{m} vs human {a} (N={len(both)})", xaxis_title=m, yaxis_title=f"human {a}")
    return caption_figure(fig, caption)


def gap_accuracy_figure(pairwise: pd.DataFrame, caption: str) -> Any:
    """Pairwise ranking accuracy per ranking-gap bin (Vrank Fig. 3), one line per metric; 0.5 = chance."""
    import plotly.graph_objects as go

    part = pairwise[pairwise["group"] == "gap"]
    fig = go.Figure()
    for metric, rows in part.groupby("metric", sort=False):
        fig.add_scatter(
            x=rows["subset"].str.replace("gap ", "", regex=False).map(plot_text),
            y=rows["accuracy"],
            mode="lines+markers",
            name=plot_text(metric),
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

    texts = {
        c: bins[c].map(lambda v: plot_text(v) if isinstance(v, str) else v)
        for c in ("bin", "metric", "covariate", "undefined")
        if c in bins
    }
    fig = px.bar(
        bins.assign(**texts), x="bin", y="value", color="metric", barmode="group", facet_col="covariate",
        hover_data=["n", "p", "undefined"],
    )  # fmt: skip
    fig.update_xaxes(matches=None, title=None)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    method = METHODS.get(str(bins["method"].iloc[0]), "") if len(bins) else ""
    fig.update_layout(
        title=f"{method} with human {plot_text(bins['aspect'].iloc[0]) if len(bins) else ''} inside each bin", yaxis_title=method
    )
    return caption_figure(fig, caption)


def error_heatmap(errors: pd.DataFrame, caption: str) -> Any:
    """Point-biserial correlation of each metric or human aspect with each error label (Vrank Table 5)."""
    import plotly.express as px

    grid = errors.pivot_table(index="column", columns="error", values="r_pb", sort=False)
    grid = grid.rename(index=plot_text, columns=plot_text)
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
    return caption_figure(fig, caption)


def distributions_figure(values: dict[str, list[float]], aspect: str, caption: str) -> Any:
    """One metric's story scores per system, overlaid as densities (the picture dHM's paper uses):
    how a system's distribution sits against the human one."""
    import plotly.graph_objects as go

    fields = aspect_fields()  # the metric whose field each dHM aspect is; G compares tanh of it
    names = {a: registry().spec(f.metric).title + (" (tanh)" if a == "G" else "") for a, f in fields.items() if a != "J"}
    fig = go.Figure()
    every = np.concatenate([np.asarray(xs, dtype=float) for xs in values.values()]) if values else np.zeros(0)
    edges = np.histogram_bin_edges(every if len(every) else np.zeros(1), bins=30)
    for system, xs in values.items():  # binned here: 30 bars per system reach the browser, not every story
        counts, _ = np.histogram(np.asarray(xs, dtype=float), bins=edges)
        share = counts / max(len(xs), 1)
        fig.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=share,
                width=np.diff(edges),
                name=f"{plot_text(system)} (N={len(xs):,})",
                opacity=0.55,
            )
        )
    fig.update_layout(
        barmode="overlay",
        title=f"{plot_text(names.get(aspect, aspect))} per system",
        xaxis_title=plot_text(names.get(aspect, aspect)),
        yaxis_title="share of the system's stories",
        height=380,
    )
    return caption_figure(fig, caption)


def comparison_scatter(ours: Sequence[float], theirs: Sequence[float], ids: Sequence[str], column: str, caption: str) -> Any:
    """Our value against the other source's, one point per story, with the diagonal."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Scattergl(
            x=list(theirs),
            y=list(ours),
            mode="markers",
            text=[plot_text(i) for i in ids],
            marker={"size": 5, "opacity": 0.6},
            hovertemplate="%{text}<br>theirs %{x:.6f}<br>ours %{y:.6f}<extra></extra>",
        )
    )
    if len(ours):
        lo, hi = min(min(ours), min(theirs)), max(max(ours), max(theirs))
        fig.add_trace(
            go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"dash": "dot", "color": "#a0aec0"}, showlegend=False)
        )
    fig.update_layout(
        title=f"{plot_text(column)}: ours against the other scores",
        xaxis_title="other scores",
        yaxis_title="ours",
        height=420,
        showlegend=False,
    )
    return caption_figure(fig, caption)


def differences_figure(
    differences: Sequence[float], metric: str, a: str, b: str, caption: str, labels: Sequence[str] | None = None
) -> Any:
    """The per-sequence differences ``a − b`` of one metric with zero marked: a histogram, or one
    point per sequence (hover: its id) when there are fewer than 30."""
    import plotly.graph_objects as go

    values = list(differences)
    if len(values) < 30:
        trace = go.Scatter(
            x=values,
            y=[0.0] * len(values),
            mode="markers",
            marker={"size": 12, "color": "#2b6cb0", "opacity": 0.7},
            hovertext=[plot_text(label) for label in labels] if labels is not None else None,
        )
        y_title, y_axis = "", {"visible": False}
    else:  # binned here: 30 bars reach the browser, not one value per sequence
        counts, edges = np.histogram(np.asarray(values, dtype=float), bins=30)
        trace = go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges), marker_color="#2b6cb0")
        y_title, y_axis = "sequences", {}
    fig = go.Figure(trace)
    fig.add_vline(x=0, line_dash="dash", line_color="#718096")
    metric, a, b = plot_text(metric), plot_text(a), plot_text(b)
    fig.update_layout(
        title=f"{metric}: {a} − {b} per sequence (N={len(values)})",
        xaxis_title=f"{a} − {b} (right of 0: {a} scores higher)",
        yaxis_title=y_title,
        yaxis=y_axis,
        height=300 if len(values) < 30 else 360,
    )
    return caption_figure(fig, caption)
