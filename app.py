"""The dashboard's frame: page config, the sidebar (drawn once, so its widgets keep their values on
every page), navigation between the pages, and the settings footer. Run with ``streamlit run app.py``."""

from __future__ import annotations

import os

import streamlit as st

from dashboard import frame, sidebar

#: A rater's link (``?rater=<token>``), or a server started for raters only (``VST_RATERS_ONLY=1``):
#: the rater page alone is registered, hidden from navigation; no sidebar, no data, no other page.
RATER = "rater" in st.query_params or os.environ.get("VST_RATERS_ONLY", "") not in ("", "0")

st.set_page_config(
    page_title="Rating stories" if RATER else "Visual story evaluation",
    page_icon="📖",
    layout="wide",
    initial_sidebar_state="collapsed" if RATER else "auto",
)
st.html(
    """<style>
    /* narrow screens (a laptop at 900 px with the sidebar open): story columns wrap two per row,
       and words are never cut in the middle */
    @media (max-width: 1200px) {
      .st-key-vst-cards [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
      .st-key-vst-cards [data-testid="stColumn"] { min-width: calc(50% - 1rem) !important; }
      [data-testid="stMainBlockContainer"] { padding-left: 1.5rem; padding-right: 1.5rem; }
      section[data-testid="stSidebar"] { width: 250px !important; min-width: 250px !important; }
    }
    /* the pages' names in the sidebar wrap onto a second line rather than end in "…" */
    [data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"],
    [data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"] p {
      white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
    [data-testid="stMain"] .stMarkdown p { word-break: normal; overflow-wrap: break-word; hyphens: none; }
    /* tabs wrap onto a second row rather than scroll out of sight; the selected one is underlined */
    [data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; overflow-x: visible; row-gap: 0.25rem; }
    </style>"""
)

if RATER:
    st.navigation([st.Page("app_pages/rate.py", title="Rating stories", default=True)], position="hidden").run()
    st.stop()

navigation = st.navigation(
    [
        st.Page("app_pages/inspect.py", title="Inspect a story", icon=":material/search:", default=True),
        st.Page("app_pages/dataset.py", title="Dataset", icon=":material/table_chart:"),
        st.Page("app_pages/agreement.py", title="Agreement with humans", icon=":material/insights:"),
        st.Page("app_pages/systems.py", title="Compare two systems", icon=":material/balance:"),
        st.Page("app_pages/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
        st.Page("app_pages/human_likeness.py", title="Human-likeness", icon=":material/diversity_3:"),
        st.Page("app_pages/compare.py", title="Compare with other scores", icon=":material/compare_arrows:"),
        st.Page("app_pages/study.py", title="Human study", icon=":material/how_to_reg:"),
    ]
)
choices, data = sidebar.render()
current = frame.build(choices, data)
frame.keep(current)
navigation.run()
if current.view is not None:
    st.divider()
    st.caption(frame.shown(current.view.footer()))
