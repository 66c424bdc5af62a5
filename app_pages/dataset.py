"""Dataset page: every scored story in a table, sliced for error analysis, summaries per system;
a click on any cell opens the story."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dashboard.frame import page, story_table
from vst_core.slices import T_SPLIT, Slice, apply_slice, p_split
from vst_core.viz import TABLE_COLUMNS, export_csv, export_json, scores_table, system_figure

view = page("Dataset")

table = scores_table(view.records, view.settings.metrics)
numeric = [c for c in TABLE_COLUMNS if c in table.columns]
systems = sorted(table["system"].unique())
kinds: dict[str, set[str]] = {s.story_id: {str(p.kind) for p in s.problems} for s in view.story_set}
left, right = st.columns([2, 3])
chosen = left.multiselect("Systems", systems, default=systems, key="systems")
search = right.text_input("Search the story text", "", key="search").strip().lower()


def slice_controls() -> Slice:
    """The slice the 'Slice' expander describes (every plot and table below follows it)."""
    with st.expander("Slice: metric range, T and P bins, input problems, length"):
        a, b, c = st.columns(3)
        defined = [m for m in numeric if table[m].notna().any()]
        metric = a.selectbox("Metric range of", ["(any)", *defined], key="slice_metric")
        low, high = -math.inf, math.inf
        if metric in defined:
            lo, hi = float(table[metric].min()), float(table[metric].max())
            if hi > lo:
                low, high = b.slider("Range", lo, hi, (lo, hi), key=f"slice_range_{metric}")
        grounded = "T" in table and table["T"].notna().any()
        split = p_split(table) if grounded else None
        t_bin = c.radio(
            f"T (≥ {T_SPLIT:g}: high misalignment)", ["all", "high", "low"], horizontal=True, key="slice_t", disabled=not grounded
        )
        d, e, f = st.columns(3)
        p_bin = d.radio(
            f"P (> {split:.3g}, its mode: high)" if split is not None else "P (needs grounding)",
            ["all", "high", "low"],
            horizontal=True,
            key="slice_p",
            disabled=split is None,
        )
        found = sorted({k for v in kinds.values() for k in v})
        problem = e.selectbox("Input problems", ["(any)", "none", *found], key="slice_problem")
        most = int(table["sentences"].max()) if len(table) else 1
        lengths = f.slider("Sentences", 0, max(most, 1), (0, max(most, 1)), key="slice_sentences")
    return Slice(
        metric=metric if metric in defined else None,
        low=low,
        high=high,
        t_bin=str(t_bin),
        p_bin=str(p_bin),
        problem=None if problem == "(any)" else str(problem),
        min_sentences=int(lengths[0]),
        max_sentences=int(lengths[1]),
    )


cut = slice_controls()
shown = apply_slice(table[table["system"].isin(chosen)], cut, kinds)
if search:
    shown = shown[shown["text"].str.lower().str.contains(search, regex=False)]
st.caption(f"{len(shown)} of {len(table)} stories · click any cell of a row to inspect its story · click a header to sort")
story_table(
    shown,
    "table",
    "story",
    modes=["single-row", "single-cell"],
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in numeric},
)


@st.fragment
def per_system(shown: pd.DataFrame, numeric: list[str]) -> None:
    """One metric per system (choosing another reruns only this part) and every metric's mean and count."""
    metric = st.selectbox("Metric per system", numeric, key="metric")
    st.plotly_chart(system_figure(shown, metric, view.settings, view.inputs), key="per-system")
    st.dataframe(shown.groupby("system")[numeric].agg(["mean", "count"]).round(3), width="stretch")


if numeric and len(shown):
    per_system(shown, numeric)

a, b = st.columns(2)
a.download_button("Download table (CSV)", export_csv(shown, view.settings, view.inputs), "scores.csv", "text/csv", key="dl-table")
b.download_button(
    "Download records (JSON)",
    export_json([r for r in view.records if r.story_id in set(shown["story"])], view.settings, view.inputs),
    "scores.json",
    "application/json",
    key="dl-records",
)
