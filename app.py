"""The dashboard's frame: page config, the sidebar (drawn once, so its widgets keep their values on
every page), navigation between the pages, and the settings footer. Run with ``streamlit run app.py``."""

from __future__ import annotations

import streamlit as st

from dashboard import frame, sidebar

st.set_page_config(page_title="Visual story evaluation", page_icon="📖", layout="wide")
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

navigation = st.navigation(
    [
        st.Page("app_pages/inspect.py", title="Inspect a story", icon=":material/search:", default=True),
        st.Page("app_pages/dataset.py", title="Dataset", icon=":material/table_chart:"),
        st.Page("app_pages/agreement.py", title="Agreement with humans", icon=":material/insights:"),
        st.Page("app_pages/systems.py", title="Compare two systems", icon=":material/balance:"),
        st.Page("app_pages/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
        st.Page("app_pages/human_likeness.py", title="Human-likeness", icon=":material/diversity_3:"),
        st.Page("app_pages/compare.py", title="Compare with other scores", icon=":material/compare_arrows:"),
    ]
)
choices, data = sidebar.render()
current = frame.build(choices, data)
frame.keep(current)
navigation.run()
if current.view is not None:
    st.divider()
    st.caption(frame.shown(current.view.footer()))
