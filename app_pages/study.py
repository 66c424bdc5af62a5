"""Human study: start a study of the loaded stories (the file ``vst study new`` writes, through the
same :mod:`vst_core.study` calls), hand out each rater's link and watch the answers come in: who
answered what and how fast, gold accuracy and who the exclusion rule leaves out, agreement between
raters, position bias and the metrics' agreement with the answers so far; the judgements exported
in the layouts ``vst meta-eval`` reads."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import loading, study_data, study_show
from dashboard.frame import Frame, downloads, shown
from dashboard.keys import FRAME, JUDGEMENTS
from vst_core.analysis.meta_eval import MetaSettings
from vst_core.analysis.meta_eval.disagreements import story_disagreements
from vst_core.data.csv_out import frame_csv
from vst_core.study import (
    PROTOCOLS,
    STUDY_SUFFIX,
    VIST_EDIT_ASPECTS,
    Answer,
    AnswerStore,
    ExclusionRule,
    LiveView,
    Sample,
    Study,
    StudyError,
    aspects_from_json,
    correlation_grid,
    export_study,
    gold_from_json,
    live_view,
    load_study,
    new_study,
    rater_link,
    revoke_rater,
    save_study,
    stories_from_list,
    studies_folder,
)
from vst_core.viz.safe import code, md

LIVE, NEW = "Live view", "New study"
#: Bootstrap draws of α's interval in the live view (``vst study status --resamples``' default).
RESAMPLES = 200
#: Session state: the study file just made (opened in the live view on the next run).
MADE = "_study_made"
PROTOCOL_NAMES = {
    "likert": "Likert: each story rated on each aspect",
    "pairwise": "Pairwise: which of two stories is better",
    "best-worst": "Best–worst: the best and the worst of 3–4 stories",
}
DRAWN, DISAGREEING = "Drawn by image sequence and system", "Disagreements found on the Agreement page"
INSTRUCTIONS = (
    "You will see photos (or film shots) in order with a short story written for them: under each photo, the part of "
    "the story written for it.\n\n"
    "Read the whole story, then answer. There are no right answers, except on a few check items."
)

st.title("Human study")
st.caption(
    "Start a study of the loaded stories, send each rater their own link, and watch the answers arrive. "
    f"Studies are kept in the server's studies folder ({code(studies_folder().name)}; set by VST_STUDIES)."
)
folder = studies_folder()
made = st.session_state.pop(MADE, None)
if made is not None:  # a study made on the run before: open it
    st.session_state["study-mode"] = LIVE
    st.session_state["study-open"] = made
mode = st.radio("Show", [LIVE, NEW], horizontal=True, key="study-mode", label_visibility="collapsed")


def aspect_rows() -> pd.DataFrame:
    """VIST-Edit's aspects as the editor starts with them (anchors low to high, joined by ``|``)."""
    return pd.DataFrame(
        [{"key": a.key, "label": a.label, "question": a.question, "anchors": " | ".join(a.anchors)} for a in VIST_EDIT_ASPECTS]
    )


def new_study_form(frame: Frame) -> None:
    """The choices of a new study, read from the widgets and handed to :func:`vst_core.study.new_study`."""
    view = frame.view
    if view is None:
        for error in frame.errors:
            st.error(shown(error))
        st.info(frame.empty_hint or "Load stories in the sidebar to start a study of them.")
        return
    stories = study_data.stories_of(view, view.key)
    systems = list(dict.fromkeys(str(s.system) for s in stories))
    st.markdown(f"**{len(stories)}** stories of **{len(systems)}** systems loaded ({md(view.footer())}).")
    left, right = st.columns(2)
    title = left.text_input("Title", "Story quality study", key="study-title")
    study_id = right.text_input(
        "Study id (its file name)",
        f"study-{datetime.now(UTC):%Y%m%d-%H%M}",
        key="study-id",
        help="letters, digits and _ - . : only",
    )
    protocol = str(st.radio("Protocol", list(PROTOCOLS), format_func=PROTOCOL_NAMES.__getitem__, key="study-protocol"))
    aspects = VIST_EDIT_ASPECTS
    ties = True
    if protocol == "likert":
        st.markdown("**Aspects** (VIST-Edit's six as a start; edit, add or remove rows; anchors low to high, `|` between)")
        if st.button("Back to VIST-Edit's six aspects", key="study-aspects-reset"):
            st.session_state.pop("study-aspects", None)
        edited = st.data_editor(aspect_rows(), num_rows="dynamic", hide_index=True, width="stretch", key="study-aspects")
        rows = [
            {
                "key": str(r["key"] or "").strip(),
                "label": str(r["label"] or "").strip(),
                "question": str(r["question"] or "").strip(),
                "anchors": [a.strip() for a in str(r["anchors"] or "").split("|") if a.strip()],
            }
            for r in edited.to_dict("records")
            if str(r.get("key") or "").strip()
        ]
        try:
            aspects = aspects_from_json(rows)
        except StudyError as exc:
            st.error(f"Aspects: {shown(exc)}")
            return
    elif protocol == "pairwise":
        ties = st.toggle("Ties allowed (“about the same”)", value=True, key="study-ties")

    st.markdown("**Stories to judge**")
    how = st.radio("Stories to judge", [DRAWN, DISAGREEING], key="study-sample", label_visibility="collapsed")
    if how == DRAWN:
        a, b = st.columns([1, 2])
        sequences = len({str(s.sequence_id) for s in stories})
        drawn = a.number_input("Image sequences", 1, max(sequences, 1), min(sequences, 10), key="study-sequences")
        chosen = b.multiselect(
            "Systems (every one's story of each sequence drawn)", systems, default=systems, key="study-systems"
        )
        sample = Sample(sequences=int(drawn), systems=tuple(chosen) or None)
    else:
        data: bytes | None = st.session_state.get(JUDGEMENTS)
        if data is None:
            st.info("Open the Agreement page with human judgements of these stories first; its disagreements are listed here.")
            return
        report = loading.meta_report(
            view.table,
            view.key,
            loading.signature_ids(view, view.key),
            data,
            MetaSettings(resamples=0, baselines=False),
            (),
            (),
            view,
        )
        if not report.metrics or not report.aspects:
            st.info("The judgements and the loaded scores have no metric and aspect in common.")
            return
        a, b, c = st.columns(3)
        metric = str(a.selectbox("Metric", report.metrics, key="study-dis-metric"))
        aspect = str(b.selectbox("Human aspect", report.aspects, key="study-dis-aspect"))
        found = story_disagreements(report.data, metric, aspect)
        if found.empty:
            st.info("No story has both a score and a rating for these.")
            return
        count = c.number_input("Stories (furthest from people first)", 1, len(found), min(len(found), 12), key="study-dis-n")
        listed = found.head(int(count))
        st.dataframe(listed.round(3), hide_index=True, width="stretch", key="study-dis-table")
        if protocol != "likert":
            st.caption("Every two listed stories of one image sequence make a pair; a best–worst item shows 3–4 of them.")
        try:
            sample = Sample(stories=stories_from_list(listed.to_dict("records")))
        except StudyError as exc:
            st.error(shown(exc))
            return

    st.markdown("**Raters**")
    a, b, c = st.columns(3)
    raters = int(a.number_input("Raters", 1, 1000, 3, key="study-raters"))
    names_text = b.text_area("Their names, one a line (empty: r1, r2, …)", "", key="study-names", height=100)
    names = [n.strip() for n in names_text.splitlines() if n.strip()]
    per_item = int(c.number_input("Raters per item", 1, 1000, min(3, len(names) or raters), key="study-per-item"))
    gold_text = st.text_area(
        "Gold (check) items as JSON: shown to every rater; a rater whose answers to them are too often wrong is "
        "left out by the exclusion rule (empty: none)",
        "",
        key="study-gold",
        placeholder=_gold_example(protocol, stories, aspects),
    )
    instructions = st.text_area("Instructions (shown to raters as plain text)", INSTRUCTIONS, key="study-instructions")
    seed = int(st.number_input("Seed (which sequences, and each rater's order)", 0, 2**31 - 1, 0, key="study-seed"))
    if not st.button("Create the study", type="primary", key="study-create"):
        return
    try:
        gold = gold_from_json(json.loads(gold_text)) if gold_text.strip() else ()
    except json.JSONDecodeError as exc:
        st.error(f"Gold items: not JSON ({shown(exc.msg)}, line {exc.lineno})")
        return
    except StudyError as exc:
        st.error(f"Gold items: {shown(exc)}")
        return
    try:
        study = new_study(
            stories,
            protocol=protocol,
            aspects=aspects,
            sample=sample,
            raters=names or raters,
            raters_per_item=per_item,
            gold=gold,
            instructions=instructions,
            seed=seed,
            title=title,
            source=study_data.source_of(view, loading.signature_ids(view, view.key)),
            ties=ties,
            study_id=study_id.strip(),
        )
        path = folder / f"{study.study_id}{STUDY_SUFFIX}"
        if path.exists():
            raise StudyError(f"a study {study.study_id} exists already; give another id")
        save_study(study, path, photos_from=view.root)
    except (StudyError, OSError) as exc:
        st.error(f"The study was not made: {shown(exc)}")
        return
    st.session_state[MADE] = path.name
    st.rerun()


def _gold_example(protocol: str, stories: tuple[object, ...], aspects: tuple[object, ...]) -> str:
    """A placeholder gold item built from the first loaded story (what the box expects)."""
    first = stories[0] if stories else None
    key = [str(getattr(first, "system", "system")), str(getattr(first, "story_id", "story_id"))]
    if protocol == "likert":
        expected: dict[str, object] = {str(getattr(aspects[0], "key", "focused")): 5} if aspects else {}
        return json.dumps([{"stories": [key], "expected": expected}])
    if protocol == "pairwise":
        return json.dumps([{"stories": [key, ["other-system", key[1]]], "expected": {"preferred": key[0]}}])
    return json.dumps([{"stories": [key, ["b", "id"], ["c", "id"]], "expected": {"best": key[0], "worst": "c"}}])


def _studies() -> dict[str, Study | StudyError]:
    """Every study file of the folder by name: the study, or why it cannot be read."""
    found: dict[str, Study | StudyError] = {}
    try:
        stamped = sorted(((p.stat().st_mtime, p) for p in folder.glob(f"*{STUDY_SUFFIX}")), reverse=True)
    except OSError:
        stamped = []
    paths = [p for _, p in stamped]  # the newest first
    for path in paths:
        try:
            found[path.name] = load_study(path)
        except StudyError as exc:
            found[path.name] = exc
    return found


def live(frame: Frame) -> None:
    """One study's links and live view."""
    studies = _studies()
    if not studies:
        st.info("No study in the studies folder yet: start one under “New study”.")
        return
    if st.session_state.get("study-open") not in studies:
        st.session_state["study-open"] = next(iter(studies))

    def label(name: str) -> str:
        found = studies[name]
        if isinstance(found, StudyError):
            return f"{name} (cannot be read)"
        return f"{found.title} · {found.study_id} · {found.protocol} · {found.created}"

    name = str(st.selectbox("Study", list(studies), format_func=label, key="study-open"))
    study = studies[name]
    if isinstance(study, StudyError):
        st.error(shown(study))
        return
    path = folder / name
    st.markdown(
        f"**{md(study.title)}** · {study.protocol} · {len(study.items)} items ({len(study.gold_items)} gold) · "
        f"{study.raters_per_item} raters per item · {len(study.raters)} raters · {code(study.signature)}"
    )
    source = study.source
    inputs = source.get("inputs", "")
    origin = md(source["file"]) if source.get("file") else f"the {md(source.get('kind', 'stories'))} loaded {md(inputs)}"
    scored = f" · scores {md(source['signature_ids'])}" if source.get("signature_ids") else ""
    st.caption(f"Stories from {origin}{scored} · made {md(study.created)}")
    links(study, path)
    st.html(study_show.STYLE)
    with st.expander("What a rater sees (the first item, in the study's order)"):
        item = study.items[0]
        for k, shown_story in enumerate(item.stories):
            if len(item.stories) > 1:
                st.markdown(f"**Story {study_show.LETTERS[k]}**")
            study_show.story(shown_story, study_show.photos_of(path, study), f"preview-{k}")
    a, b, c = st.columns(3)
    accuracy = float(a.number_input("Exclude raters whose gold accuracy is below", 0.0, 1.0, 0.5, 0.05, key="study-min-acc"))
    least = int(b.number_input("…over at least this many gold items", 1, 1000, 2, key="study-min-gold"))
    auto = c.toggle("Refresh every 10 s", value=True, key="study-refresh")
    rule = ExclusionRule(accuracy, least)
    scores, signature_ids = None, None
    view = frame.view
    if view is not None:
        keys = {s.key for i in study.items for s in i.stories}
        loaded = set(zip(view.table["system"].astype(str), view.table["story"].astype(str), strict=True))
        if keys & loaded:
            scores, signature_ids = view.table, list(loading.signature_ids(view, view.key))

    @st.fragment(run_every=10 if auto else None)
    def watched() -> None:
        answers = AnswerStore.beside(path).answers(study)
        try:
            found = live_view(study, answers, scores, rule=rule, n_boot=RESAMPLES, signature_ids=signature_ids)
        except StudyError as exc:
            st.error(shown(exc))
            return
        tables(study, found, scores is not None)
        exports(study, answers, rule)

    watched()


def links(study: Study, path: Path) -> None:
    """Each rater's own link, and a way to revoke one."""
    with st.expander(f"Rater links ({sum(not r.revoked for r in study.raters)} live)", expanded=True):
        own = study_show.base_url(st.context.url)
        typed = st.text_input("Address raters open (this dashboard's, as they reach it)", own, key="study-base")
        base = study_show.typed_base(typed)
        if base is None:
            st.warning(f"{code(typed)} is not an http(s) address with at most a path; the links use {code(own)}.")
            base = own
        table = pd.DataFrame(
            [{"rater": r.name, "link": "" if r.revoked else rater_link(base, r), "revoked": r.revoked} for r in study.raters]
        )
        st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            column_config={"link": st.column_config.LinkColumn("link", help="the rater's own page; keep it private")},
            key="study-links",
        )
        st.caption(
            "Each link opens only that rater's page. Send each rater their own; anyone holding a link can answer as that rater."
        )
        live = [r.name for r in study.raters if not r.revoked]
        if live:
            a, b = st.columns([2, 1])
            who = a.selectbox("Revoke the link of", live, key="study-revoke-who")
            if b.button("Revoke", key="study-revoke"):
                try:
                    save_study(revoke_rater(study, str(who)), path)
                except (StudyError, OSError) as exc:
                    st.error(shown(exc))
                else:
                    st.rerun()
        downloads("study-links-downloads").download_button(
            "Rater links (CSV)",
            frame_csv(table, [f"study {study.study_id} {study.signature}"]),
            f"{study.study_id}-links.csv",
            "text/csv",
            key="dl-study-links",
            on_click="ignore",
            wrap=True,
        )


def tables(study: Study, found: LiveView, correlations: bool) -> None:
    """The live view's tables, each under the study's signature."""
    signed = f"{study.signature} · {found.answers} answers"
    st.subheader("Raters", divider="gray")
    st.dataframe(found.per_rater.round(3), hide_index=True, width="stretch", key="study-per-rater")
    excluded = ", ".join(md(r) for r in found.excluded) or "none"
    st.caption(f"{signed} · exclusion rule: {md(found.exclusion_rule)} · excluded: {excluded}")
    st.subheader("Items", divider="gray")
    st.dataframe(found.per_item.round(3), hide_index=True, width="stretch", key="study-per-item-table")
    st.caption(f"{signed} · answered: raters so far; median_seconds: from the item shown to the answer saved")
    st.subheader("Agreement between raters", divider="gray")
    st.dataframe(found.agreement.round(3), hide_index=True, width="stretch", key="study-agreement")
    interval = f"its 95% bootstrap interval over items (low, high; {RESAMPLES} resamples, seed {study.seed})"
    what = (
        f"Krippendorff's α (ordinal) per aspect with {interval}"
        if study.protocol == "likert"
        else f"Krippendorff's α (nominal) with {interval}, the share of rater pairs agreeing and Fleiss' κ"
    )
    st.caption(f"{signed} · {what}; excluded raters left out; gold items left out")
    if study.protocol != "likert":
        st.subheader("Position bias", divider="gray")
        st.dataframe(found.position_bias.round(3), hide_index=True, width="stretch", key="study-position")
        st.caption(f"{signed} · how often the story shown first won, against chance (two-sided binomial test; ties left out)")
    st.subheader("Metrics against the answers so far", divider="gray")
    if not correlations:
        st.info(
            "Load the stories or scores this study was made from in the sidebar to see the metrics' agreement with the answers."
        )
    elif found.correlations.empty:
        st.info("Not enough answers yet for a correlation.")
    else:
        scored = f"scores {md(found.scores_signature or 'of the loaded view')}"
        grid = correlation_grid(found.correlations)
        if not grid.empty:  # the one figure a researcher reads first, as vst meta-eval prints it
            st.dataframe(grid, hide_index=True, width="stretch", key="study-correlation-grid")
            st.caption(f"{signed} · {scored} · Spearman ρ of each metric with each aspect (N: stories or pairs with both)")
        st.dataframe(found.correlations.round(4), hide_index=True, width="stretch", key="study-correlations")
        st.caption(f"{signed} · {scored} · every coefficient with its p · N: stories (or pairs) with both")
    for note in found.notes:
        st.caption(shown(note))


def exports(study: Study, answers: list[Answer], rule: ExclusionRule) -> None:
    """The judgements (the layout ``vst meta-eval`` reads) and every export file, as downloads."""
    if not answers:
        st.caption("No answer yet: the exports appear with the first one.")
        return

    def written() -> dict[str, bytes]:
        with tempfile.TemporaryDirectory(prefix="vst-study-export-") as tmp:
            paths = export_study(study, answers, tmp, exclude=rule)
            return {p.name: p.read_bytes() for p in paths}

    try:
        files = written()
    except StudyError as exc:
        st.caption(shown(exc))
        return
    main = next(n for n in files if n.endswith(("-judgements.csv", "-pairwise.csv")))
    row = downloads("study-downloads")
    row.download_button(
        f"Judgements for vst meta-eval ({main.rsplit('-', 1)[-1]})",
        files[main],
        main,
        "text/csv",
        key="dl-study-judgements",
        on_click="ignore",
        wrap=True,
    )
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as zipped:
        for file_name, data in files.items():
            zipped.writestr(file_name, data)
    row.download_button(
        "Every export file (zip: judgements, raters, items, answers, provenance)",
        packed.getvalue(),
        f"{study.study_id}-exports.zip",
        "application/zip",
        key="dl-study-exports",
        on_click="ignore",
        wrap=True,
    )


frame_now: Frame = st.session_state[FRAME]
if mode == NEW:
    new_study_form(frame_now)
else:
    live(frame_now)
