"""Agreement with humans: how each metric agrees with human judgements of the loaded stories."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
import streamlit as st

from dashboard import loading
from dashboard.choices import with_options
from dashboard.frame import downloads, page, shown, story_table
from dashboard.keys import JUDGEMENTS
from vst_core.analysis.intervals import SMALL_N_NOTE
from vst_core.analysis.meta_eval import METHODS, MetaReport, MetaSettings, best_per_aspect
from vst_core.analysis.meta_eval.disagreements import pair_disagreements, story_disagreements
from vst_core.analysis.meta_eval.identity import keys_of
from vst_core.analysis.meta_eval.report import narrowed
from vst_core.analysis.meta_eval.stats import resampled_unit
from vst_core.analysis.meta_eval.versus import ALPHA, VERSUS_METHODS, VersusSettings, versus_matrix
from vst_core.contract import registry
from vst_core.data.csv_out import frame_csv
from vst_core.hashing import text_digest
from vst_core.learned.card import held_out_cells, read_card
from vst_core.models.hub import ModelLoadError
from vst_core.viz import (
    MIN_INTERVAL_N,
    bins_figure,
    correlation_bars,
    correlation_cells,
    error_heatmap,
    gap_accuracy_figure,
    metric_scatter,
    pairwise_cells,
)
from vst_core.viz.report import agreement_exports, versus_exports, view_report
from vst_core.viz.safe import md

view = page("Agreement with humans")

EXAMPLE = "Made-up example ratings (for trying the page)"
on_sample = bool(loading.SAMPLE_IDS & set(view.table["story"]))  # the example rates the sample's stories
options = [EXAMPLE, "Upload a judgements CSV"] if on_sample else ["Upload a judgements CSV"]
choice = st.radio("Human judgements", options, horizontal=True, key="judgements_source")
if choice == EXAMPLE:
    data = loading.SAMPLE_JUDGEMENTS.read_bytes()
    st.warning(
        "These ratings are **made up** for trying the page; they were not collected from people.", icon=":material/science:"
    )
else:
    upload = st.file_uploader(
        "Judgements CSV: long (story_id, rater, aspect, value), wide (story_id, one column per aspect) "
        "or pairwise (story_a, story_b, rank_a, rank_b[, agreement])",
        type=["csv"],
        key="judgements_upload",
    )
    if upload is not None:
        st.session_state["last_judgements"] = upload.getvalue()
    uploaded: bytes | None = st.session_state.get("last_judgements")
    if uploaded is None:
        st.info("Upload human judgements of the loaded stories (matched by story_id).")
        st.stop()
    data = uploaded

st.session_state[JUDGEMENTS] = data  # Inspect shows these ratings beside the scores
judgements, error = loading.judgements(data)
if judgements is None:
    st.error(f"Could not read the judgements: {shown(error)}")
    st.stop()
if judgements.problems:
    with st.expander(f"{len(judgements.problems)} note(s) on the judgements file", expanded=False):
        for problem in judgements.problems:
            st.warning(shown(problem))

with st.expander("Statistics settings"):
    a, b, c, d = st.columns(4)
    how: Literal["mean", "median"] = (
        "median" if a.radio("Combine raters by", ["mean", "median"], key="aggregate", horizontal=True) == "median" else "mean"
    )
    resamples = b.number_input("Bootstrap resamples", 0, 10000, 1000, step=100, key="resamples")
    seed = c.number_input("Seed", 0, 2**31 - 1, 0, key="seed")
    use_baselines = d.toggle("BLEU / ROUGE-L / CIDEr", value=True, key="baselines")
    use_meteor = use_baselines and d.toggle(
        "and METEOR", value=False, key="meteor", help="METEOR's Java scorer takes about 13 s to load on the first run"
    )
    e, f, g, h = st.columns(4)
    gaps = e.text_input("Ranking-gap bin edges (empty: quartiles)", "", key="gap_bins", placeholder="0, 0.1, 0.2, 0.3, 1")
    t_split = f.number_input("High misalignment: T ≥", 0.0, 10.0, 1.0, 0.05, key="t_split")
    p_text = g.text_input("High NP proportion: P > (empty: the mode)", "", key="p_split")
    pair_aspect = h.selectbox(
        "Order story pairs by",
        ["(default)", "mean", *judgements.aspects],
        key="pair_aspect",
        help="pairs built from ratings: every two stories of a sequence; default: 'overall' if judged, else the last aspect; mean: the mean of the aspects",
    )
try:
    settings = MetaSettings(
        aggregate=how,
        resamples=int(resamples),
        seed=int(seed),
        baselines=use_baselines,
        meteor=use_meteor,
        t_split=float(t_split),
        gap_edges=tuple(float(v) for v in gaps.split(",") if v.strip()) or None,
        p_split=float(p_text) if p_text.strip() else None,
        pair_aspect=None if pair_aspect == "(default)" else pair_aspect,
    )
except ValueError as exc:
    st.error(f"Settings: {shown(exc)}")
    st.stop()

key = view.key
signatures = loading.signature_ids(view, key)
cards: dict[str, tuple[str, dict[str, object]]] = {}  # learned metric's title -> (its report column, its card)
for spec in registry().specs.values():
    report_name = next((f.report for f in spec.fields if f.report), None)
    if not spec.tools.trained_folder or report_name is None or report_name not in view.table:
        continue
    option = registry().options[spec.tools.trained_folder][1]  # registration: one of the metric's own
    label = option.label or spec.tools.trained_folder
    folder = st.text_input(
        f"{label} (for its card: what it was trained on)",
        view.settings.option(spec.tools.trained_folder) or st.session_state.get(spec.tools.trained_folder) or "",
        key=f"meta_{spec.tools.trained_folder}",
        help=f"the folder {spec.title}'s training command wrote; its card names the training pairs, so pairs it saw are set apart",
    ).strip()
    try:
        loading.recheck_folder(folder, f"“{label}”")
        cards[spec.title] = (report_name, read_card(folder) if folder else {})
    except ValueError as exc:
        st.warning(shown(str(exc)))
        cards[spec.title] = (report_name, {})
trained = tuple(
    (column, tuple(str(x) for x in found))
    for column, card in cards.values()
    if isinstance(found := card.get("train_stories"), list) and found
)
full = loading.meta_report(view.table, key, signatures, data, settings, (), (), view, trained)
# one under the other: side by side, at 900 px each showed three chips of eleven
metrics = st.multiselect("Metrics", full.metrics, default=full.metrics, key="meta_metrics")
aspects = st.multiselect("Aspects", full.aspects, default=full.aspects, key="meta_aspects")
if not metrics or not aspects or (metrics, aspects) == (full.metrics, full.aspects):
    report = full
elif aspects == full.aspects:  # fewer metrics: the full report's cells, filtered (instant, same numbers)
    report = narrowed(full, metrics, settings)
else:
    report = loading.meta_report(view.table, key, signatures, data, settings, tuple(metrics), tuple(aspects), view, trained)

match = report.match
st.markdown(
    f"**{match['matched']}** of {match['judged']} judged stories matched the {match['scored']} scored ones · "
    f"{len(report.metrics)} metrics × {len(report.aspects)} aspects"
    + (f" · error labels: {', '.join(map(md, report.errors))}" if report.errors else "")
)
if match["judged_not_scored_count"] or match["scored_not_judged_count"]:
    with st.expander("Unmatched story ids"):
        st.write({"judged but not scored": match["judged_not_scored"], "scored but not judged": match["scored_not_judged"]})
for note in report.notes:
    st.caption(shown(note))
for problem in report.problems:
    st.warning(shown(problem))
for name, reason in report.unavailable.items():
    st.info(f"{md(name)} unavailable: {shown(reason)}")
if match["matched"] == 0 and not len(report.pairs):
    st.stop()

caption = f"{report.description} · {view.footer()}"


@st.fragment
def learned_workbench(report: MetaReport, cards: dict[str, tuple[str, dict[str, object]]]) -> None:
    """What each learned metric was trained on (its card), and every metric's accuracy on the pairs
    none of whose stories any of them saw in training."""
    st.subheader("Learned metrics: trained on what, and held out", divider="gray")
    shown_any = False
    for title, (_, card) in cards.items():
        if not card:
            st.info(
                f"{md(title)}'s pairs are judged by its own margins. Give its folder above to see what it was trained "
                "on and every metric's accuracy on the pairs it never saw."
            )
            continue
        shown_any = True
        found = card.get("split")
        split: dict[str, object] = found if isinstance(found, dict) else {}
        st.markdown(
            f"**{md(title)}** {shown(card.get('model', '?'))} · base {shown(card.get('base', '?'))} "
            f"({shown(card.get('base_weights', '?'))}) · trained on {shown(card.get('train_pairs', '?'))} pairs of "
            f"{shown(card.get('data', '?'))} (sha256 {shown(str(card.get('data_digest', '?'))[:12])}) · held out by "
            f"{shown(split.get('by', '?'))}: {shown(card.get('held_out_pairs', '?'))} pairs"
        )
        held = card.get("held_out")
        if isinstance(held, list) and held:
            st.caption("Its card: accuracy on its own held-out pairs, with 95% Wilson intervals.")
            st.dataframe(held_out_cells(held), width="stretch", hide_index=True)
    if not shown_any:
        return
    names = " or ".join(md(t) for t, (_, c) in cards.items() if c)
    if len(report.held_out):
        st.caption(f"Every metric on the judged pairs with no story {names} was trained on (the same pairs for each):")
        st.dataframe(pairwise_cells(report.held_out), width="stretch")
    else:
        st.caption(f"None of the judged pairs is free of {names}'s training stories.")


def disagreements(report: MetaReport) -> None:
    """For one metric and one human aspect: the stories ranked furthest from people, and the pairs
    ordered against them; a click opens the story (or the pair side by side) in Inspect."""
    x, y = st.columns(2)
    metric = x.selectbox("Metric", report.metrics, key="dis_metric")
    aspect = y.selectbox(
        "Human aspect",
        report.aspects,
        index=report.aspects.index("overall") if "overall" in report.aspects else 0,
        key="dis_aspect",
    )
    if not metric or not aspect:
        st.info("No metric and human aspect to compare.")
        return
    stories = story_disagreements(report.data, metric, aspect)
    st.markdown(f"**Stories ranked furthest from people** · {len(stories)} stories with both")
    st.caption(
        "Rank 1 = best; ties share their mean rank. rank_diff = metric rank − human rank: positive when the metric "
        "places the story lower than people do. Click a row to open the story in Inspect."
    )
    story_table(stories.round(4), "dis_stories", "story_id")
    pairs = pair_disagreements(report.pairs, report.data, metric)
    st.markdown(f"**Pairs {md(metric)} orders against people** · {len(pairs)} of {len(report.pairs)} pairs")
    st.caption(f"Pairs: {shown(report.pairs_source)}. Largest human gap first. Click a row to see both stories side by side.")
    ids = report.data["story"] if "story" in report.data else report.data.index.to_series()
    systems = report.data["system"] if "system" in report.data else None
    linked = pairs.assign(
        better_story=pairs["better"].map(ids), worse_story=pairs["worse"].map(ids),
        better_system=pairs["better"].map(systems) if systems is not None else None,
        worse_system=pairs["worse"].map(systems) if systems is not None else None,
    )  # fmt: skip
    story_table(
        linked.round(4),
        "dis_pairs",
        "better_story",
        also="worse_story",
        system="better_system",
        also_system="worse_system",
        column_order=list(pairs.columns),
    )
    downloads("downloads-disagreements").download_button(
        "Disagreeing stories (CSV)",
        frame_csv(stories, [report.description]),
        "disagreements.csv",
        "text/csv",
        key="dl-disagreements",
        on_click="ignore",
        wrap=True,
    )


def _significance_colours(frame: pd.DataFrame) -> Any:
    """The matrix, green where the row's metric is significantly better than the column's, red where worse."""
    return frame.style.map(
        lambda v: (
            "background-color:#c6f6d5"
            if v.endswith("*") and v.startswith("+")
            else "background-color:#fed7d7"
            if v.endswith("*") and v.startswith("-")
            else ""
        )
    )


def metric_vs_metric(report: MetaReport) -> None:
    """Is one metric's agreement with people significantly higher than another's on the same stories?"""
    if len(report.metrics) < 2:
        st.info("Two or more metrics are needed to compare metrics with each other.")
        return
    x, y, z = st.columns(3)
    method = str(x.selectbox("Coefficient", list(VERSUS_METHODS), format_func=lambda m: METHODS[m], key="vs_method"))
    permutations = int(y.number_input("Permutations", 1000, 100000, 1000, step=1000, key="vs_permutations"))
    aspect = z.selectbox("Aspect", report.aspects, key="vs_aspect") if report.aspects else None
    versus = VersusSettings(method, permutations, int(seed), settings.confidence)
    table, accuracy = loading.metric_versus(report, key, str(report.signature["id"]), versus)
    st.caption(
        f"Cell = row metric − column metric; * permutation p < {ALPHA:g} (PERM-BOTH, two-sided). Every metric is "
        f"oriented so that higher = better. {shown(versus.describe())}."
    )
    stopped = int(table["stopped_early"].sum()) + int(accuracy["stopped_early"].sum()) if len(table) or len(accuracy) else 0
    if stopped:
        st.info(
            f"The permutation budget of {versus.permutation_budget or 0:,} draws was reached: {stopped} test(s) stopped early "
            "(column stopped_early), each p with the Monte-Carlo standard error of the permutations it drew."
        )
    if aspect is not None and len(table):
        part = table[table["aspect"] == aspect]
        st.markdown(f"**{METHODS[method]} with the human '{md(aspect)}' rating**")
        st.dataframe(_significance_colours(versus_matrix(part, report.metrics)), width="stretch")
        matrix = versus_exports(versus_matrix(part, report.metrics), method, aspect, versus.describe(), report.description)
        st.dataframe(part.drop(columns=["aspect"]).round(4), hide_index=True, width="stretch")
    if len(accuracy):
        st.markdown(f"**Pairwise accuracy** on {len(report.pairs)} judged pairs (ties wrong; judged by story scores)")
        st.dataframe(_significance_colours(versus_matrix(accuracy, report.metrics)), width="stretch")
        st.dataframe(accuracy.round(4), hide_index=True, width="stretch")
    both = pd.concat([table.assign(kind="correlation"), accuracy.assign(kind="pairwise accuracy")], ignore_index=True)
    row = downloads("downloads-versus")
    if aspect is not None and len(table):
        row.download_button(
            "Matrix (LaTeX, booktabs)",
            matrix["tex"],
            "metric_vs_metric.tex",
            "text/x-tex",
            key="dl-versus-latex",
            on_click="ignore",
            wrap=True,
        )
        row.download_button(
            "Matrix (Markdown)",
            matrix["md"],
            "metric_vs_metric.md",
            "text/markdown",
            key="dl-versus-markdown",
            on_click="ignore",
            wrap=True,
        )
    row.download_button(
        "Metric vs metric (CSV)",
        frame_csv(both, [report.description, versus.describe()]),
        "metric_vs_metric.csv",
        "text/csv",
        key="dl-versus",
        on_click="ignore",
        wrap=True,
    )


def download(row: Any, name: str, label: str) -> None:
    """One of the report's CSV tables, as a button in a tab's row of downloads."""
    row.download_button(label, report.csv(name), f"{name}.csv", "text/csv", key=f"dl-{name}", on_click="ignore", wrap=True)


tabs = st.tabs(
    [
        "Correlations",
        "Disagreements",
        "Metric vs human",
        "Pairwise ranking",
        "T / P bins",
        "Error labels",
        "Raters",
        "Metric vs metric",
    ]
)
with tabs[0]:
    if not len(report.correlations):
        st.info("No ratings to correlate with (a pairwise file gives pairwise accuracy only; see that tab).")
    method = str(st.selectbox("Coefficient", list(settings.methods), format_func=lambda m: METHODS[m], index=3, key="method"))
    best = best_per_aspect(report.correlations, method)
    cells = correlation_cells(report.correlations, method)
    st.caption(
        f"{METHODS[method]} [bootstrap {settings.confidence:.0%} interval, {resampled_unit(report.correlations)} "
        "resampled: the stories of one sequence are not independent], * p < 0.05, (N stories). "
        f"{SMALL_N_NOTE} "
        "Where two or more metrics are defined for an aspect, the best is highlighted."
    )
    st.dataframe(
        cells.style.apply(
            lambda col: [
                "background-color:#c6f6d5;font-weight:600" if m in best.get(str(col.name), set()) else "" for m in col.index
            ]
        ),
        width="stretch",
    )
    if len(report.correlations):
        st.plotly_chart(correlation_bars(report.correlations, method, caption, MIN_INTERVAL_N), key="bars")
    counted = report.system_correlations[report.system_correlations["method"] == method]["n"]
    systems = int(counted.max()) if len(counted) and counted.notna().any() else 0
    st.subheader(f"System level: means of {systems} systems", divider="gray")
    st.caption(
        "Each system's mean metric score against its mean human rating; N is the number of systems with both. "
        f"Intervals resample {resampled_unit(report.system_correlations)}"
        + (
            " (the system means recomputed on each resample)."
            if "sequence" in resampled_unit(report.system_correlations)
            else "."
        )
    )
    st.dataframe(correlation_cells(report.system_correlations, method), width="stretch")
    row = downloads("downloads-correlations")
    download(row, "agreement_with_humans", "Story-level table (CSV)")
    download(row, "system_level", "System-level table (CSV)")
    paper = agreement_exports(cells, method, settings.confidence, resampled_unit(report.correlations), report.description)
    row.download_button(
        "Story-level table (LaTeX, booktabs)",
        paper["tex"],
        "agreement.tex",
        "text/x-tex",
        key="dl-latex",
        on_click="ignore",
        wrap=True,
    )
    row.download_button(
        "Story-level table (Markdown)",
        paper["md"],
        "agreement.md",
        "text/markdown",
        key="dl-markdown",
        on_click="ignore",
        wrap=True,
    )
with tabs[1]:
    disagreements(report)
with tabs[2]:
    x, y = st.columns(2)
    metric = x.selectbox("Metric", report.metrics, key="scatter_metric")
    aspect = y.selectbox("Aspect", report.aspects, key="scatter_aspect")
    if metric and aspect:
        st.plotly_chart(metric_scatter(report.data, metric, aspect, caption), key="scatter")
    download(downloads("downloads-scatter"), "matched_data", "Matched scores and judgements (CSV)")
with tabs[3]:
    st.caption(
        f"Pairs: {shown(report.pairs_source)}; {len(report.pairs)} pairs. A pair is correct only if the metric scores the better story strictly higher."
    )
    if len(report.pairwise):
        st.dataframe(pairwise_cells(report.pairwise), width="stretch")
        if report.pairs["agreement"].notna().any():
            st.caption("agreement = k: k raters order the pair as the aggregate does (VHED keeps pairs with k ≥ 4 of 5).")
        st.plotly_chart(gap_accuracy_figure(report.pairwise, caption), key="gap")
    calibrated = report.tie_calibrated
    if len(calibrated):
        st.markdown("**With ties: WMT's tie calibration**")
        st.caption(
            "acc_eq (Deutsch, Foster and Freitag 2023, as WMT's mt-metrics-eval computes it): the people's ties join the "
            f"pairs ({int(calibrated['human_ties'].max())} tied pairs here); the metric ties a pair when its difference is "
            "at most ε, and a pair is right when both tie or both order it alike; ε is chosen to maximise the accuracy "
            "(accuracy_at_0: with ε = 0). vrank_accuracy: the rule above, on the ranked pairs only. A pairwise file's "
            "pairs have no ties, so ε only decides how the metric's own near-ties count."
        )
        st.dataframe(calibrated.round(4), hide_index=True, width="stretch")
    learned = {t: found for t, found in cards.items() if found[0] in report.metrics}
    if learned:
        learned_workbench(report, learned)
    row = downloads("downloads-pairwise")
    download(row, "pairwise_accuracy", "Pairwise accuracy (CSV)")
    if len(calibrated):
        download(row, "pairwise_tie_calibrated", "Pairwise accuracy with tie calibration (CSV)")
    download(row, "pairs", "The pairs, with gap and common raters (CSV)")
with tabs[4]:
    if len(report.bins):
        st.caption(
            f"GROOVIST Fig. 3: T ≥ {report.splits['T']:g} is high temporal misalignment; P > {report.splits['P'] or 0:.4g} "
            f"({'set by hand' if settings.p_split is not None else 'the mode of P'}) is high noun-phrase proportion. "
            f"Correlation with the human '{md(report.bins['aspect'].iloc[0])}' score."
        )
        st.plotly_chart(bins_figure(report.bins, caption), key="bins")
        st.dataframe(report.bins, hide_index=True, width="stretch")
    else:
        owner = next((registry().spec(f.metric) for f in registry().fields if f.column == "T"), None)
        said = f"{md(owner.title)}; run {md(owner.name)}" if owner else "a metric; run it"
        st.info(f"T and P come from {said} to see the bins.")
    if len(report.bins):
        download(downloads("downloads-bins"), "bins", "Bins (CSV)")
with tabs[5]:
    if len(report.error_correlations):
        st.plotly_chart(error_heatmap(report.error_correlations, caption), key="errors")
        st.dataframe(report.error_correlations, hide_index=True, width="stretch")
    else:
        st.info(
            "No binary error labels (grammar, repetition, description in isolation, absurdity, event or object mismatch) in the judgements."
        )
    download(downloads("downloads-errors"), "error_correlations", "Error correlations (CSV)")
with tabs[6]:
    st.caption("Krippendorff's α (interval) per aspect")
    st.dataframe(report.agreement, hide_index=True, width="stretch")
    download(downloads("downloads-raters"), "inter_rater", "Inter-rater agreement (CSV)")

with tabs[7]:
    metric_vs_metric(report)

for spec in registry().specs.values():  # a metric's own section (the rubric judge's biases), from its evidence
    column = next((f.column for f in spec.fields if f.report), None)
    if spec.showing.diagnostics is None or column is None or column not in view.table:
        continue
    diagnostics = spec.showing.diagnostics
    st.subheader(md(diagnostics.title), divider="gray")
    scored_rows = [i for i, ok in enumerate(view.table[column].notna()) if ok][: diagnostics.limit]
    try:
        rows = diagnostics.table(view.records_at(scored_rows))
    except Exception as exc:  # an installed metric's table that fails says why; the page goes on
        st.warning(f"{md(spec.title)}: its table could not be made: {shown(f'{type(exc).__name__}: {exc}')}")
        rows = []
    if rows:
        st.dataframe(pd.DataFrame(rows).round(4), hide_index=True, width="stretch")
    st.caption(diagnostics.caption.replace("{n}", str(len(scored_rows))).replace("{limit}", str(diagnostics.limit)))
    measure = diagnostics.measure
    if measure is None:
        continue
    sequences = list(dict.fromkeys(view.table["sequence"].iloc[scored_rows]))[: measure.limit]
    asked_rows = tuple(i for i in scored_rows if view.table["sequence"].iat[i] in set(sequences))
    with st.expander(f"{spec.title}: what the measurement asks", expanded=False):
        for name in measure.asks:  # registration: each one of the metric's own options
            box = registry().options[name][1]
            st.text_input(box.label or name, key=f"measure_{spec.name}_{name}", help=box.help)
    if st.button(measure.label.replace("{sequences}", str(len(sequences))), key=f"measure_{spec.name}"):
        given = {name: str(st.session_state.get(f"measure_{spec.name}_{name}") or "") for name in measure.asks}
        asked, notice = with_options(view.settings, given, spec.title)
        if notice:
            st.warning(shown(notice))
        try:
            found = loading.measured(view, key, asked_rows, asked, spec.name)
        except (ModelLoadError, ValueError, OSError) as exc:
            st.warning(f"{md(spec.title)}'s model is not available here: {shown(str(exc))}")
        else:
            st.dataframe(found.round(4), hide_index=True, width="stretch")
            st.caption(measure.caption)  # the metric's own words (its code's, not a file's)


def agreement_report() -> str:
    """The page's HTML report: the judged stories' means, the agreement, the matrices, the first judged stories' cards."""
    judged = [i for i, k in enumerate(keys_of(view.table)) if k in set(report.data.index)]
    versus = loading.metric_versus(report, key, str(report.signature["id"]), VersusSettings(seed=int(seed)))[0]
    return view_report(view, "Agreement with humans", view.table.iloc[judged], judged[:8], meta=report, versus=versus)


downloads().download_button(
    "Report (HTML, opens offline)",
    agreement_report,
    "agreement_report.html",
    "text/html",
    key="dl-agreement-report",
    help="one self-contained file: the agreement table and figure, the metric-vs-metric matrices, "
    "the cards of the first judged stories with their evidence, the signature",
    on_click="ignore",
    wrap=True,
)
st.divider()
st.caption(f"{shown(report.description)} · judgements sha256 {text_digest(data, 12)}")
