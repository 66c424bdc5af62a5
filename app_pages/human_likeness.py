"""Human-likeness page: how far each system's stories are from people's on grounding, coherence and
repetition (dHM, Surikuchi et al. 2024), with the distributions and the stories that differ most."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import loading
from dashboard.frame import downloads, page, story_link
from vst_core.analysis.dhm import HUMAN_SYSTEMS
from vst_core.analysis.dhm_aspects import (
    ASPECTS,
    aspect_name,
    aspect_title,
    available_aspects,
    columns,
    dhm_aspects,
    partial_note,
)
from vst_core.analysis.intervals import SMALL_N_MARK, SMALL_N_NOTE, has_interval
from vst_core.data.csv_out import frame_csv
from vst_core.viz import distributions_figure
from vst_core.viz.safe import md

#: How each dHM aspect is headed: G compares tanh of GROOVIST's unbounded value, as released; J the
#: judge's overall score on [0, 1].
NAMES = {
    **{a: aspect_name(a) for a in ASPECTS},
    "G": aspect_name("G").removesuffix(")") + ", tanh)",
    "J": aspect_name("J").removeprefix("the ") + ", overall ((J − 1) / 4)",
}

view = page(
    "Human-likeness",
    "dHM: per system, the mean distance of its stories from the human stories of the same sequences on "
    "grounding |tanh G_h − tanh G_s|, coherence |C_h − C_s| and non-redundancy |R_h − R_s|, and their mean "
    "(Surikuchi et al., 2024). 0: as people write. Signed: system − human.",
)
systems = sorted(view.table["system"].unique())
left, middle, right = st.columns([3, 2, 2])
human = tuple(
    left.multiselect("Human stories are those of", systems, default=[s for s in systems if s in HUMAN_SYSTEMS], key="dhm_human")
)
pairing = middle.radio(
    "Pair a system story with",
    ["sequence", "story"],
    horizontal=True,
    key="dhm_pairing",
    format_func=lambda p: "every human story of its sequence" if p == "sequence" else "the human story of the same id",
)
resamples = int(right.number_input("Bootstrap resamples", 0, 5000, 1000, step=100, key="dhm_resamples"))
with_judge = "J" in available_aspects(view.table, extra=True) and st.toggle(
    f"Add {aspect_name('J')} as a fourth distance",
    key="dhm_judge",
    help=f"d_J = |J_h − J_s| with {aspect_name('J')}'s overall score mapped to [0, 1] as (J − 1) / 4; dHM is then the "
    "mean of four distances (not the paper's dHM)",
)
aspects = dhm_aspects(view.table, judge=with_judge)  # the rule vst dhm and vst.human_likeness follow
if not human:
    st.info("Pick the system whose stories are human (written by people) to compare the others with.")
    st.stop()


def cell(mean: float | None, interval: tuple[float, float] | None, n: int) -> str:
    if mean is None:
        return "undefined"
    if not has_interval(n):
        return f"{mean:.4f} {SMALL_N_MARK}"
    return f"{mean:.4f}" + (f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else "")


def profile_section() -> str | None:
    """Every measure against the human stories: dHM's distance for any measure, with its test; the
    profile's CSV for the page's downloads (None without one)."""
    found = loading.profile(view.table, view.key, human, resamples)
    st.subheader("Profile: every measure against the human stories", divider="gray")
    if found.empty:
        st.info("No other system shares an image sequence with the human stories on any measure.")
        return None
    st.caption(
        "Per system and measure, over the image sequences both it and the human stories have (each side's value on a "
        "sequence is the mean of its stories there): difference = mean of (system − human) [paired bootstrap 95% "
        f"interval, {resamples} resamples of the sequences], p: paired approximate randomization (two-sided, ± its "
        "Monte-Carlo standard error; exact, ± 0, where every one of the 2ᴺ sign flips is counted), p_holm over the system's measures; distance = mean |system − human| [bootstrap "
        f"interval], dHM's per-aspect distance for any measure ({md(aspect_title('G'))} over tanh, as dHM). Direction: which way the "
        f"measure is better (none: a descriptor, to compare with people, not to rank). N: sequences. {SMALL_N_NOTE}"
    )
    shown = found.assign(
        difference=[
            cell(d, (lo, hi) if lo is not None and not pd.isna(lo) else None, int(n))
            for d, lo, hi, n in zip(found["difference"], found["ci_low"], found["ci_high"], found["n"], strict=True)
        ],
        distance=[
            cell(d, (lo, hi) if lo is not None and not pd.isna(lo) else None, int(n))
            for d, lo, hi, n in zip(found["distance"], found["distance_low"], found["distance_high"], found["n"], strict=True)
        ],
        p=["—" if p is None or pd.isna(p) else f"{p:.4f} ± {se:.4f}" for p, se in zip(found["p"], found["p_se"], strict=True)],
        p_holm=["—" if p is None or pd.isna(p) else f"{p:.4f}" for p in found["p_holm"]],
    )[["system", "measure", "direction", "n", "human_mean", "system_mean", "difference", "distance", "p", "p_holm"]]
    st.dataframe(shown.rename(columns={"n": "N"}).round(4), hide_index=True, width="stretch", key="profile")
    head = [f"profile · {view.footer()}", f"human systems: {', '.join(human)}"]
    return frame_csv(found, head)


def download_row(profile: str | None, distances: Callable[[], str] | None = None) -> None:
    """The page's downloads, in one row at its end: the profile's CSV and dHM's distances."""
    row = downloads()
    if profile is not None:
        row.download_button(
            "Download the profile (CSV)",
            profile,
            "human_likeness_profile.csv",
            "text/csv",
            key="dl-profile",
            on_click="ignore",
            wrap=True,
        )
    if distances is not None:
        row.download_button(
            "Download the distances (CSV)", distances, "dhm_distances.csv", "text/csv", key="dl-dhm", on_click="ignore", wrap=True
        )


if not available_aspects(view.table):
    profile_csv = profile_section()
    st.info(
        "No story has a grounding, coherence or non-redundancy score: run those metrics, or load a scores file that has them."
    )
    download_row(profile_csv)
    st.stop()
if partial_note(aspects):
    st.warning(md(partial_note(aspects)) + ".", icon="⚠️")

report = loading.dhm(view.table, view.key, loading.signature_ids(view, view.key), human, pairing, resamples, aspects)
caption = f"dHM sig {report.signature['id']} · {view.footer()}"


rows = []
for s in report.systems:
    row: dict[str, object] = {"system": s.system, "N": s.n}
    for key in (*aspects, "dHM"):
        row[f"d_{key}" if key != "dHM" else "dHM"] = cell(s.mean[key], s.interval[key], s.n)
    for a in aspects:
        row[f"signed {a}"] = "undefined" if s.signed[a] is None else f"{s.signed[a]:+.4f}"
    row["left out"] = "; ".join(f"{v} {k}" for k, v in s.missing.items() if v) or "none"
    rows.append(row)
st.subheader("Per system", divider="gray")
st.caption(f"Mean over stories [bootstrap 95% interval over {resamples} resamples]; N stories compared. {SMALL_N_NOTE}")
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
if not report.systems:
    st.info("Every loaded story belongs to the human system(s): nothing to compare.")
    st.stop()

profile_csv = profile_section()

st.subheader("Distributions", divider="gray")
order = [*human, *(s.system for s in report.systems)]  # the human stories first, then the table's order
for a in aspects:
    column = view.table[columns()[a]]
    shown = np.tanh(column) if a == "G" else (column - 1.0) / 4.0 if a == "J" else column
    groups = {str(k): v.dropna().tolist() for k, v in shown.groupby(view.table["system"], sort=False)}
    values = {name: groups[name] for name in order if name in groups}
    st.plotly_chart(distributions_figure(values, a, caption), key=f"dist-{a}")

st.subheader("The stories that differ most", divider="gray")
boxes = st.columns(len(aspects))
for col, a in zip(boxes, aspects, strict=True):
    col.markdown(f"**{NAMES[a]}**")
    for top in report.largest(f"d_{a}", 5).itertuples(index=False):
        col.page_link(
            "app_pages/inspect.py",
            label=f"{md(top.system)} · {md(top.story_id)}: {getattr(top, f'd_{a}'):.3f}",
            query_params=story_link(str(top.story_id), str(top.system)),
            help=f"against {', '.join(map(md, report.humans_of(int(top.row))))}; signed {getattr(top, f'signed_{a}'):+.3f}",
        )

download_row(profile_csv, report.csv)
