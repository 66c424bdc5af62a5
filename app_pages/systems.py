"""Compare two systems: on the image sequences both wrote for, who scores higher per metric, how
the differences spread, and the sequences where they differ most (a click shows both stories)."""

from __future__ import annotations

import streamlit as st

from dashboard import loading
from dashboard.frame import downloads, page, story_table
from vst_core.analysis.intervals import SMALL_N_NOTE
from vst_core.analysis.leaderboard import PERMUTATIONS, RESAMPLES, with_tests
from vst_core.analysis.systems import paired_sequences, win_tie_loss
from vst_core.viz import differences_figure, export_csv, table_columns
from vst_core.viz.safe import code, md

#: Sequences listed in the "differ most" table (the CSV download has every one).
SHOWN_PAIRS = 200


def around_zero(values: list[float], margin: float = 0.08) -> list[float]:
    """An axis range holding the differences and 0 inside it, ``margin`` of the span beyond each
    end, so the dashed line at 0 has its tick (ticks fall on multiples of their step from 0).

    >>> around_zero([0.24, 0.28])
    [-0.0224, 0.3024]
    """
    low, high = min([*values, 0.0]), max([*values, 0.0])
    pad = margin * ((high - low) or 1.0)
    return [round(low - pad, 12), round(high + pad, 12)]


view = page("Compare two systems")
table = view.table
metrics = [c for c in table_columns() if c in table.columns and table[c].notna().any()]
systems = sorted(table["system"].unique())
if len(systems) < 2:
    st.info("The loaded stories come from one system: load a set with two or more to compare them.")
    st.stop()
left, right = st.columns(2)
a = left.selectbox("System A", systems, index=0, key="system_a", bind="query-params")
b = right.selectbox("System B", [s for s in systems if s != a], key="system_b", bind="query-params")
paired = paired_sequences(table, str(a), str(b), metrics)
st.markdown(f"**{len(paired)}** image sequences have a story by both {code(a)} and {code(b)}.")
if not len(paired):
    st.stop()
summary = with_tests(win_tie_loss(paired, metrics), loading.pair_tests(paired, view.key, str(a), str(b), tuple(metrics)))
st.caption(
    f"Wins, ties and losses of {md(a)} against {md(b)}: a win is a better score by the metric's direction (column "
    "*better*: higher, or lower for the repetition measures *inter* and *intra* and the misalignment *T*; a descriptor "
    f"such as *P* has none); a tie is equal within 1e-9. Differences are {md(a)} − {md(b)} as measured, with their "
    f"paired-bootstrap 95% interval ({RESAMPLES:,} resamples of the sequences), the paired approximate-randomization "
    f"p (two-sided: every one of the 2ᴺ sign flips when there are at most {PERMUTATIONS:,}, an exact p with p_se 0; "
    f"else {PERMUTATIONS:,} random ones, seed 0, more while α = 0.05 lies within 3 Monte-Carlo standard errors, "
    f"p_se) — Holm's family is one metric, as on the Leaderboard, so p_holm = p for one pair — and "
    f"the effect size d_z = mean / sd of the differences (column d_z † true below the minimum N); the Leaderboard page "
    f"ranks every system. {SMALL_N_NOTE}"
)
counts = ["wins", "ties", "losses"]  # none for a descriptor: shown as a dash, not "None"
st.dataframe(
    summary.round(4).astype(dict.fromkeys(counts, object)).fillna(dict.fromkeys(counts, "—")), hide_index=True, width="stretch"
)

metric = st.selectbox("Metric", metrics, key="system_metric")
if metric:
    known = paired.dropna(subset=[metric])
    figure = differences_figure(known[metric].tolist(), metric, str(a), str(b), view.footer(), known["sequence"].tolist())
    st.plotly_chart(figure.update_xaxes(range=around_zero(known[metric].tolist())), key="differences")
    ranked = paired.assign(_abs=paired[metric].abs()).sort_values("_abs", ascending=False).drop(columns="_abs")
    st.markdown("**Sequences where they differ most** · click a row to see both stories side by side in Inspect")
    st.caption(f"The {min(SHOWN_PAIRS, len(ranked)):,} largest of {len(ranked):,}; the download has every sequence.")
    story_table(
        ranked.head(SHOWN_PAIRS).round(4).assign(system_a=str(a), system_b=str(b)),
        "system_pairs",
        "story_a",
        also="story_b",
        system="system_a",
        also_system="system_b",
        column_order=list(ranked.columns),
    )
    downloads().download_button(
        "Download the comparison (CSV)",
        lambda: export_csv(paired, view.settings, view.inputs, recorded=view.recorded()),
        f"{a}-vs-{b}.csv",
        "text/csv",
        key="dl-systems",
        on_click="ignore",
        wrap=True,
    )
