"""Leaderboard: every system on every metric over the image sequences all of them wrote for, with
bootstrap intervals, ranks and significance clusters, and the paired tests between every two
systems; the numbers ``vst compare`` prints."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import loading
from dashboard.frame import downloads, page
from vst_core.analysis.dhm import HUMAN_SYSTEMS
from vst_core.analysis.intervals import SMALL_N_MARK, SMALL_N_NOTE
from vst_core.analysis.leaderboard import ALPHA, PERMUTATION_CAP, PERMUTATIONS, RESAMPLES, cluster_name
from vst_core.viz.report import leaderboard_csv, leaderboard_exports
from vst_core.viz.safe import md

view = page(
    "Leaderboard",
    "Which system is better: per metric, over the image sequences every compared system wrote for, each system's "
    "mean with a bootstrap interval, its rank by the metric's direction and its significance cluster; below, "
    "the paired tests between every two systems.",
)
systems = sorted(str(s) for s in view.table["system"].unique())
if len(systems) < 2:
    st.info("The loaded stories come from one system: load a set with two or more to rank them.")
    st.stop()
chosen = st.multiselect("Systems", systems, default=systems, key="board_systems")
with st.expander("Statistics settings"):
    a, b, c, d = st.columns(4)
    resamples = int(a.number_input("Bootstrap resamples", 0, 10000, RESAMPLES, step=100, key="board_resamples"))
    permutations = int(b.number_input("Permutations", 0, 100000, PERMUTATIONS, step=1000, key="board_permutations"))
    seed = int(c.number_input("Seed", 0, 2**31 - 1, 0, key="board_seed"))
    human = tuple(
        d.multiselect("Human stories (dHM)", systems, default=[s for s in systems if s in HUMAN_SYSTEMS], key="board_human")
    )
if len(chosen) < 2:
    st.info("Pick two systems or more.")
    st.stop()
judgements, label = loading.session_judgements(set(view.table["story"].astype(str)))
board = loading.board(
    view.table,
    view.key,
    loading.signature_ids(view, view.key),
    tuple(chosen),
    human,
    resamples,
    permutations,
    seed,
    judgements,
    judgements.digest if judgements is not None else "",
)
signed = f"compare sig {board.signature['id']} · {view.footer()}"

st.subheader("Every system on every metric", divider="gray")
st.caption(
    f"Mean over the image sequences every compared system wrote for (N per metric) [percentile bootstrap 95% interval, "
    f"{resamples:,} resamples of the sequences] · #rank by the metric's direction (lower is better for inter, intra "
    f"and T; a descriptor such as P is not ranked) · cluster: best first, a system opens a new cluster (A, B, …) when "
    f"its paired test against any system of the current cluster gives Holm-adjusted p < {ALPHA}, so no two systems of "
    f"one cluster differ significantly (the pairwise tests below give every pair). dHM: distance from the "
    f"human stories over each system's own stories (lower is more human-like)."
    + (f" People: mean rating over each system's rated stories ({md(label)})." if board.ratings else "")
    + f" {SMALL_N_NOTE}"
)
st.dataframe(board.glance(), hide_index=True, width="stretch", key="board_glance")
for message in board.notes:
    st.info(md(message))
with st.expander("Every number of the leaderboard"):
    numbers = board.standings_frame()  # as the CSV has them; shown with the glance's cluster letters and † marks
    numbers = numbers.assign(
        cluster=numbers["cluster"].map(lambda c: cluster_name(None if pd.isna(c) else int(c))),
        ci_low=[SMALL_N_MARK if small else v for v, small in zip(numbers["ci_low"], numbers["small_n"], strict=True)],
        ci_high=[SMALL_N_MARK if small else v for v, small in zip(numbers["ci_high"], numbers["small_n"], strict=True)],
    ).drop(columns=["small_n"])
    st.dataframe(
        numbers.rename(columns={"ci_low": "95% low", "ci_high": "95% high", "n": "N"}),
        hide_index=True,
        width="stretch",
        key="board_standings",
    )

st.subheader("Pairwise tests", divider="gray")
pairs = len(board.systems) * (len(board.systems) - 1) // 2
st.caption(
    f"d = A − B per sequence: mean difference with its paired-bootstrap 95% interval; p: paired approximate "
    f"randomization ({permutations:,} random sign flips of the differences, two-sided, seed {seed}, or every one of "
    f"the 2ᴺ flips when there are at most {permutations:,}: an exact p with p_se 0; doubled, up to "
    f"{PERMUTATION_CAP:,}, while {ALPHA} lay within 3 Monte-Carlo standard errors of p: column permutations; all "
    f"tests within {board.permutation_budget.get('budget') or 0:,} draws, "
    f"{board.permutation_budget.get('drawn', 0):,} drawn, a test the budget stopped marked stopped_early) "
    f"with its Monte-Carlo standard error p_se; p_holm: Holm over the {pairs} pair{'s' if pairs != 1 else ''} of "
    f"systems of each metric (the family: a metric's verdicts do not change with the other columns loaded); effect "
    f"size d_z = mean(d) / sd(d) († below the minimum N); —: not defined (no p below 2 sequences, no d_z without "
    f"spread); better: by the metric's direction. Two-sided p is twice WMT's one-sided p for the system ahead."
)
tests = board.pairs_frame()  # shown with † where N is below the minimum for an interval (the CSV keeps None)
small = tests["small_n"].tolist()
st.dataframe(
    tests.assign(
        **{c: [SMALL_N_MARK if v is None or pd.isna(v) else v for v in tests[c]] for c in ("ci_low", "ci_high")},
        effect_size=[
            "—" if v is None or pd.isna(v) else f"{v:.4f} {SMALL_N_MARK}" if s else f"{v:.4f}"
            for v, s in zip(tests["effect_size"], small, strict=True)
        ],
        **{c: ["—" if v is None or pd.isna(v) else v for v in tests[c]] for c in ("p", "p_holm", "p_se")},
    ).drop(columns=["small_n"]),
    hide_index=True,
    width="stretch",
    key="board_pairs",
)
tables = leaderboard_csv(board)  # the page's words and cluster letters, the signature's id on every row
st.caption(signed)
row = downloads()
row.download_button(
    "Leaderboard (CSV)",
    tables["leaderboard.csv"],
    "leaderboard.csv",
    "text/csv",
    key="dl-board",
    on_click="ignore",
    wrap=True,
)
row.download_button(
    "Pairwise tests (CSV)",
    tables["pairwise.csv"],
    "pairwise.csv",
    "text/csv",
    key="dl-pairs",
    on_click="ignore",
    wrap=True,
)
row.download_button(
    "Everything (JSON)",
    json.dumps(board.to_json(), ensure_ascii=False, indent=1),
    "compare.json",
    "application/json",
    key="dl-compare",
    on_click="ignore",
    wrap=True,
)
exports = leaderboard_exports(board)
row.download_button(
    "Both tables (LaTeX, booktabs)",
    exports["leaderboard.tex"],
    "leaderboard.tex",
    "text/plain",
    key="dl-board-tex",
    on_click="ignore",
    wrap=True,
)
row.download_button(
    "Both tables (Markdown)",
    exports["leaderboard.md"],
    "leaderboard.md",
    "text/markdown",
    key="dl-board-md",
    on_click="ignore",
    wrap=True,
)
