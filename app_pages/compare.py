"""Compare page: the loaded scores against another scores file, story by story (how a parity
profile is checked on one's own data: import the other scores with `vst import-scores`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import loading, session
from dashboard.frame import page, shown, story_link
from vst_core.analysis.compare import compare
from vst_core.config import Settings, settings_from_signature
from vst_core.contract import registry
from vst_core.data import StorySet
from vst_core.hashing import text_digest
from vst_core.signature import describe, inputs_of
from vst_core.viz import comparison_scatter, scores_table
from vst_core.viz.safe import md

#: A second scores file of the bundled sample (its NR under the authors' reference profile).
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "assets/sample/scores_nr_reference.jsonl"
#: Most points the scatter sends to the browser.
MAX_POINTS = 5000
#: A metric with one of these needs is not computed again for the example (a model, or numbers that
#: depend on the whole set): the view's numbers are compared as they are.
WHOLE_SET_NEEDS = frozenset({"model", "clip", "images", "image_vector", "idf", "sequence"})

view = page(
    "Compare with other scores",
    "The loaded stories' scores against another scores file (written by `vst score`, or by `vst import-scores` "
    "from released scores), matched by story: (system, story id).",
)
upload = st.file_uploader("Other scores (JSONL)", type=["jsonl"], key="compare_upload")


example = upload is None and st.toggle(
    "Try it with the bundled example: the sample's RoViST-NR as the authors' code computes it",
    key="compare_example",
    help=f"`{EXAMPLE.relative_to(ROOT)}`, written by `vst score assets/sample/stories.jsonl --metrics redundancy "
    "--nr-variant reference`. The loaded stories' NR is computed again here with the example's own definition "
    "(reference), for this comparison only: the sidebar's settings, the other pages and the footer keep theirs. "
    "Pick the sidebar's definition under the metric to see where the two definitions part",
)
if upload is None and not example:
    st.info(
        "Upload a scores JSONL to compare with, e.g. `vst import-scores gt_test_R.csv --system reference --out theirs.jsonl`, "
        "or try the bundled example above."
    )
    st.stop()
payload = upload.getvalue() if upload is not None else EXAMPLE.read_bytes()
theirs_name = "the upload" if upload is not None else "the bundled example"
path = session.folder().path / "compare" / f"{text_digest(payload, 16)}.jsonl"  # removed with the session
path.parent.mkdir(parents=True, exist_ok=True)
if not path.exists():  # named by its content: written once, so its index is found again on every rerun
    path.write_bytes(payload)
index, error = loading.scores_index([path])
if index is None:
    st.error(shown(error or "the uploaded file holds no usable record"))
    st.stop()
theirs = index.table
if index.problems:
    with st.expander(f"{len(index.problems)} problem(s) in {theirs_name}"):
        for problem in index.problems[:200]:
            st.warning(shown(problem))
columns = [
    f.column for f in registry().fields if f.column in theirs and theirs[f.column].notna().any()
    and f.column in view.table and view.table[f.column].notna().any()
]  # fmt: skip
if not columns:
    st.info("The two files share no metric.")
    st.stop()
column = st.selectbox("Metric", columns, key="compare_column")


def as_the_example(column: str, recorded: Settings) -> tuple[pd.DataFrame, str]:
    """Our side of the bundled example: the loaded stories' ``column`` computed again, for this page
    only, under the example's own settings of its metric (``recorded``: RoViST-NR's definition) where
    they differ from the sidebar's and the metric needs no model; the sidebar's settings are never
    changed. (our table, the line that says how it was made)."""
    spec = registry().spec(next(f.metric for f in registry().fields if f.column == column))
    differ = [o for o in spec.signing.options if recorded.option(o.setting) != view.settings.option(o.setting)]
    if not differ or spec.computing.needs & WHOLE_SET_NEEDS:
        return view.table, view.footer()
    theirs_words = ", ".join(f"{o.label or o.setting} {recorded.option(o.setting)}" for o in differ)
    sidebar_words = ", ".join(f"{o.label or o.setting} {view.settings.option(o.setting)}" for o in differ)
    as_sidebar = st.radio(
        f"Our side's {spec.title}",
        [f"as the example computed it ({theirs_words})", f"as the sidebar has it ({sidebar_words})"],
        key="compare_ours",
        horizontal=True,
        help="computed again on this page only: the sidebar, the other pages and the footer keep the sidebar's settings",
    ).startswith("as the sidebar")
    if as_sidebar:
        st.info(
            f"The example holds {md(spec.title)} with {md(theirs_words)}; this side uses the sidebar's {md(sidebar_words)}, "
            "so the two differ on every story by design."
        )
        return view.table, view.footer()
    rows = np.flatnonzero(view.table["story"].isin(set(theirs["story"])).to_numpy())  # only the stories the example holds
    stories = [s for s in (view.story(int(r)) for r in rows) if s is not None]
    story_set = StorySet.of(stories, view.root, "compare")
    settings = view.settings.with_(metrics=(spec.name,), **{o.setting: recorded.option(o.setting) for o in differ})
    records = loading.score_all(story_set, story_set.digest(), settings)
    st.caption(
        f"Our side: the loaded stories' {md(spec.title)} computed again with the example's {md(theirs_words)}, for this "
        f"comparison only; the sidebar ({md(sidebar_words)}), the other pages and the footer keep theirs."
    )
    return scores_table(records, settings.metrics), describe(settings, inputs_of(story_set))


recorded = settings_from_signature(index.first_signature())
ours, ours_line = as_the_example(column, recorded) if example else (view.table, view.footer())
result = compare(ours, theirs, column)
if example and not result.n:
    st.info("The bundled example holds the bundled sample's stories: load the sample to compare with it.")
    st.stop()
figures = result.figures()
equal = "-" if figures["equal"] is None else f"{figures['equal']:.2%}"
st.markdown(
    f"**{result.n}** stories in both · {result.only_ours} only here · {result.only_theirs} only in {theirs_name} · "
    f"equal to 1e-9: **{equal}**"
    + (
        " · matched by story id alone (every id names one story in each file; the systems are named differently)"
        if result.matched_by == "story id"
        else ""
    )
)
st.dataframe(pd.DataFrame([figures]), hide_index=True, width="stretch")
caption = f"other file sha256 {text_digest(payload, 12)} · ours: {ours_line}"
picked = np.arange(result.n)
if result.n > MAX_POINTS:  # a fixed sample plus the largest differences: the browser gets MAX_POINTS points
    gaps = np.abs(np.array(result.ours) - np.array(result.theirs))
    picked = np.union1d(np.random.default_rng(0).choice(result.n, MAX_POINTS, replace=False), np.argsort(-gaps)[:100])
    caption = f"{len(picked):,} of {result.n:,} stories drawn (a fixed sample and the 100 largest differences) · {caption}"
st.plotly_chart(
    comparison_scatter(
        [result.ours[i] for i in picked], [result.theirs[i] for i in picked],
        [f"{result.systems[i]} · {result.story_ids[i]}" for i in picked], column, caption,
    ),
    key="compare-scatter",
)  # fmt: skip
st.subheader("Largest differences", divider="gray")
for system, sid, ours, other in result.largest(10):
    st.page_link(
        "app_pages/inspect.py",
        label=f"{md(system) + ' · ' if system else ''}{md(sid)}: ours {ours:.6f} · theirs {other:.6f} · Δ {ours - other:+.6f}",
        query_params=story_link(sid, system),
    )
