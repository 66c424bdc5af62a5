"""Compare page: the loaded scores against another scores file, story by story (how a parity
profile is checked on one's own data: import the other scores with `vst import-scores`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import session
from dashboard.frame import page
from vst_core.compare import compare
from vst_core.data import load_records
from vst_core.hashing import text_digest
from vst_core.records import FIELDS
from vst_core.viz import comparison_scatter

view = page(
    "Compare with other scores",
    "The loaded stories' scores against another scores file (written by `vst score`, or by `vst import-scores` "
    "from released scores), matched by story id.",
)
upload = st.file_uploader("Other scores (JSONL)", type=["jsonl"], key="compare_upload")
if upload is None:
    st.info(
        "Upload a scores JSONL to compare with, e.g. `vst import-scores gt_test_R.csv --system reference --out theirs.jsonl`."
    )
    st.stop()
payload = upload.getvalue()
path = session.folder().path / "compare" / f"{text_digest(payload, 16)}.jsonl"  # removed with the session
path.parent.mkdir(parents=True, exist_ok=True)
path.write_bytes(payload)
theirs, problems = load_records(path)
if problems:
    with st.expander(f"{len(problems)} problem(s) in the uploaded file"):
        for problem in problems:
            st.warning(str(problem))
columns = [
    f.column for f in FIELDS if any(f.value(r) is not None for r in theirs) and any(f.value(r) is not None for r in view.records)
]
if not columns:
    st.info("The two files share no metric.")
    st.stop()
column = st.selectbox("Metric", columns, key="compare_column")
result = compare(view.records, theirs, column)
figures = result.figures()
equal = "-" if figures["equal"] is None else f"{figures['equal']:.2%}"
st.markdown(
    f"**{result.n}** stories in both · {result.only_ours} only here · {result.only_theirs} only in the upload · "
    f"equal to 1e-9: **{equal}**"
)
st.dataframe(pd.DataFrame([figures]), hide_index=True, width="stretch")
caption = f"other file sha256 {text_digest(payload, 12)} · {view.footer()}"
st.plotly_chart(comparison_scatter(result.ours, result.theirs, result.story_ids, column, caption), key="compare-scatter")
st.subheader("Largest differences", divider="gray")
for sid, ours, other in result.largest(10):
    st.page_link(
        "app_pages/inspect.py",
        label=f"{sid}: ours {ours:.6f} · theirs {other:.6f} · Δ {ours - other:+.6f}",
        query_params={"story": sid},
    )
