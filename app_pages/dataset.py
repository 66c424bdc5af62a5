"""Dataset page: every scored story in a table, summaries per system, a click opens the story."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.frame import page
from vst_core.viz import TABLE_COLUMNS, export_csv, export_json, scores_table, system_figure

view = page("Dataset")

table = scores_table(view.records, view.settings.metrics)
numeric = [c for c in TABLE_COLUMNS if c in table.columns]
systems = sorted(table["system"].unique())
left, right = st.columns([2, 3])
chosen = left.multiselect("Systems", systems, default=systems, key="systems")
search = right.text_input("Search the story text", "", key="search").strip().lower()
shown = table[table["system"].isin(chosen)]
if search:
    shown = shown[shown["text"].str.lower().str.contains(search, regex=False)]
st.caption(f"{len(shown)} of {len(table)} stories · click a row to inspect it · click a header to sort")
event = st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    on_select="rerun",
    selection_mode="single-row",
    key="table",
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in numeric},
)
rows = event.selection.rows if event is not None else []
if rows:  # open the story in Inspect, keeping the settings in the URL
    st.switch_page("app_pages/inspect.py", query_params={**st.query_params.to_dict(), "story": str(shown.iloc[rows[0]]["story"])})


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
