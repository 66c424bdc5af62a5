"""Dataset page: every scored story in a table (one page of rows at a time), sliced for error
analysis, summaries per system; a click on any cell opens the story."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dashboard import loading
from dashboard.frame import downloads, page, story_table
from dashboard.keys import FOUND_SLICE
from vst_core.analysis.slice_finder import MIN_SLICE, apply_conditions
from vst_core.analysis.slices import T_SPLIT, Slice, apply_slice, p_split, problem_kinds
from vst_core.hashing import json_digest
from vst_core.records import column_help, direction_of
from vst_core.viz import export_csv, export_json, system_figure, table_columns
from vst_core.viz.report import view_report
from vst_core.viz.safe import md

#: Rows sent to the browser at once; the rest are a page away (100,000 rows would be ~50 MB).
PAGE_ROWS = 100
#: Most records the JSON download reads (each one's evidence is read from its file on demand).
MAX_JSON_RECORDS = 20_000
#: Story cards in the page's HTML report (the first stories of the page shown).
REPORT_CARDS = 8
#: Characters of the story text shown in the table (search looks at all of it).
SHOWN_TEXT = 160

view = page("Dataset")

table = view.table
numeric = [c for c in table_columns() if c in table.columns]
systems = sorted(table["system"].unique())
left, right = st.columns([3, 2])  # the systems' chips need the room (at 900 px, 2 of 4 showed in a narrower column)
chosen = left.multiselect("Systems", systems, default=systems, key=f"systems-{view.key[:12]}", wrap=True)  # per data set
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
        problem = e.selectbox("Input problems", ["(any)", "none", *problem_kinds(table)], key="slice_problem")
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
shown = apply_slice(table[table["system"].isin(chosen)] if len(chosen) < len(systems) else table, cut)
if search:
    shown = shown[shown["text"].str.lower().str.contains(search, regex=False)]
found_slice = st.session_state.get(FOUND_SLICE)
if found_slice and found_slice.get("view") == view.key[:12]:  # a slice the slice finder below proposed
    if found_slice["systems"]:
        shown = shown[shown["system"].isin(found_slice["systems"])]
    shown = apply_conditions(shown, found_slice["conditions"])
    x, y = st.columns([4, 1])
    x.info(f"Found slice: {md(found_slice['label'])} · {len(shown):,} stories")
    if y.button("Clear the found slice", key="clear_found_slice"):
        del st.session_state[FOUND_SLICE]
        st.rerun()

a, b, c = st.columns([2, 1, 1])
order = a.selectbox("Sort by", ["(file order)", *numeric, "sentences", "system", "story"], key="sort")
descending = b.toggle("Descending", value=False, key="descending", wrap=True)
pages = max(1, math.ceil(len(shown) / PAGE_ROWS))
arranged = json_digest([view.key, order, descending, chosen, search, repr(cut)])
if st.session_state.get("_arranged") != arranged:  # another order or filter starts again at page 1
    st.session_state["_arranged"] = arranged
    st.session_state["page"] = 1
number = int(c.number_input(f"Page (of {pages})", 1, pages, 1, key="page")) if pages > 1 else 1
ordered = shown if order == "(file order)" else shown.sort_values(order, ascending=not descending, kind="stable")
part = ordered.iloc[(number - 1) * PAGE_ROWS : number * PAGE_ROWS]
part = part.drop(columns=["problems"], errors="ignore").assign(text=part["text"].str.slice(0, SHOWN_TEXT))
first = (number - 1) * PAGE_ROWS + 1 if len(shown) else 0
st.caption(
    f"{len(shown):,} of {len(table):,} stories · rows {first:,}–{first + len(part) - 1:,} · click any cell of a row to "
    "inspect its story · sort with “Sort by” (a header click sorts this page only)"
)
story_table(
    part,
    "table",
    "story",
    modes=["single-row", "single-cell"],
    column_config={col: st.column_config.NumberColumn(format="%.3f", help=column_help(col)) for col in numeric},
)


@st.fragment
def per_system(shown: pd.DataFrame, numeric: list[str]) -> None:
    """One metric per system (choosing another reruns only this part) and every metric's mean and count."""
    metric = st.selectbox("Metric per system", numeric, key="metric")
    st.plotly_chart(system_figure(shown, metric, view.settings, view.inputs, caption=view.footer()), key="per-system")
    st.dataframe(shown.groupby("system")[numeric].agg(["mean", "count"]).round(3), width="stretch")


if numeric and len(shown):
    per_system(shown, numeric)


@st.fragment
def find_slices() -> None:
    """The slices where a metric disagrees with people most, or where one system loses to another
    most; a click opens the slice in the table above."""
    st.subheader("Find slices", divider="gray")
    question = st.radio(
        "Where", ["a metric disagrees with people", "system A loses to system B"], horizontal=True, key="find_question"
    )
    metrics = [m for m in numeric if table[m].notna().any() and direction_of(m) != "none"]
    if not metrics:
        st.info("No quality metric in the table.")
        return
    a, b, c, d = st.columns(4)
    metric = str(a.selectbox("Metric", metrics, key="find_metric"))
    min_size = int(c.number_input("Smallest slice", 5, 1_000_000, MIN_SLICE, key="find_min"))
    pairs = d.toggle("Pairs of descriptors", True, key="find_pairs", wrap=True)
    if question.startswith("a metric"):
        judgements, label = loading.session_judgements(set(table["story"].astype(str)))
        if judgements is None or not judgements.aspects:
            st.info("Load human ratings on the Agreement page to find where a metric disagrees with people.")
            return
        aspect = str(b.selectbox("Human aspect", judgements.aspects, key="find_aspect"))
        found = loading.found_slices(
            table, view.key, metric, (f"human {aspect}",), pairs, min_size, judgements, judgements.digest
        )
        systems: list[str] = []
        st.caption(
            f"Ratings: {label}. Effect = Pearson r of {md(metric)} with the human '{md(aspect)}' rating in the slice − over "
            "all stories; p: Fisher's z, slice against the rest."
        )
    else:
        if len(systems_all) < 2:
            st.info("Two systems are needed.")
            return
        x, y = b.columns(2)
        first = str(x.selectbox("A", systems_all, key="find_a"))
        second = str(y.selectbox("B", [s for s in systems_all if s != first], key="find_b"))
        found = loading.found_slices(table, view.key, metric, (first, second), pairs, min_size)
        systems = [first]
        st.caption(
            f"Per image sequence both wrote for: d = {md(first)} − {md(second)} on {md(metric)} (higher = better), "
            f"each system's value being the mean of its stories on the sequence (as on the Leaderboard); descriptors "
            f"of {md(first)}'s stories there. Effect = mean d in the slice; p: Welch's t, slice against the rest."
        )
    st.caption(
        f"Candidates: every descriptor (quantile bins of 4) and every two together with at least {min_size} items "
        f"({found.attrs.get('candidates', 0)} tested); p_bh: Benjamini–Hochberg over all of them; 95% bootstrap interval "
        "(1000 resamples). Ranked by bound, most negative first: the end nearest zero of the effect's interval that holds "
        "for every candidate at once (Bonferroni over those tested), so a slice ranks high when it is surely bad, not "
        "when it is small (by raw effect, random parts of a bad slice outrank it). Click a row to open the slice in the "
        "table above."
    )
    items = int(found.attrs.get("items", 0))
    if not found.attrs.get("candidates", 0):
        what = (
            "stories with both the metric and a rating" if question.startswith("a metric") else "image sequences both wrote for"
        )
        st.info(
            f"No slice could be tested: a slice and the rest both need at least {min_size} items, and there are "
            f"{items} {what}"
            + (
                f". Lower “Smallest slice” to {max(items // 2, 5)}, or load more stories."
                if items >= 10
                else ", too few to split (10 are needed at the smallest slice of 5): load more stories."
            )
        )
        return
    event = st.dataframe(
        found.drop(columns=["conditions"]).round(4),
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key="found_slices",
    )
    chosen_rows = event.selection.rows if event is not None else []
    if chosen_rows:
        row = found.iloc[chosen_rows[0]]
        st.session_state[FOUND_SLICE] = {
            "view": view.key[:12],
            "label": row["slice"],
            "conditions": list(row["conditions"]),
            "systems": systems,
        }
        st.rerun(scope="app")


systems_all = systems
find_slices()

rows = shown.index.to_numpy()
row = downloads()
row.download_button(
    "Download table (CSV)",
    lambda: export_csv(shown.drop(columns=["problems"], errors="ignore"), view.settings, view.inputs, recorded=view.recorded()),
    "scores.csv",
    "text/csv",
    key="dl-table",
    on_click="ignore",
    wrap=True,
)
row.download_button(
    "Download records (JSON)",
    lambda: export_json(view.records_at(rows), view.settings, view.inputs, recorded=view.recorded()),
    "scores.json",
    "application/json",
    key="dl-records",
    disabled=len(rows) > MAX_JSON_RECORDS,
    help=f"every record with its evidence; narrow the slice to at most {MAX_JSON_RECORDS:,} stories"
    if len(rows) > MAX_JSON_RECORDS
    else "every record of the slice with its evidence, read from the scores files",
    on_click="ignore",
    wrap=True,
)
row.download_button(
    "Report (HTML, opens offline)",
    lambda: view_report(view, "Dataset", shown, part.index.to_numpy()[:REPORT_CARDS]),
    "report.html",
    "text/html",
    key="dl-report",
    help=f"one self-contained file: the slice's per-system means with intervals, figures, the cards of the first "
    f"{REPORT_CARDS} stories on this page with their evidence and images, the signature",
    on_click="ignore",
    wrap=True,
)
