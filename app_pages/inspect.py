"""Inspect page: one image sequence, its candidate stories side by side, with their evidence."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from PIL import Image

from dashboard import loading
from dashboard.frame import page
from vst_core.data import Story, StorySet
from vst_core.meta_eval.judgements import story_ratings
from vst_core.records import StoryScores
from vst_core.viz import draw_box, export_csv, export_json, legend_html, score_cards_html, scores_table, story_cards, story_html

view = page(
    "Inspect a story",
    "Non-redundancy (RoViST-NR) with the spans that repeat, the coherence (RoViST-C) of every sentence "
    "transition, and the grounding (GROOVIST) of every noun phrase: hover for details. " + legend_html(),
)
story_set, by_id = view.story_set, view.by_id()
sequences = story_set.sequences()
names = list(sequences)
wanted = st.query_params.get("story")
if wanted in by_id and st.session_state.get("_focused") != wanted:  # a link to a story opens its sequence once
    st.session_state["_focused"] = wanted
    st.session_state["sequence"] = by_id[wanted].sequence_id
if st.session_state.get("sequence") not in sequences:
    st.session_state["sequence"] = names[0]
top, options = st.columns([3, 2])
sequence_id = top.selectbox("Image sequence", names, key="sequence", bind="query-params")
content_only = options.toggle(
    "Content-word repeats only",
    key="content_only",
    bind="query-params",
    help="display only: repeats of 'the', 'a', 'to', ... are not highlighted; the NR score still counts them",
)
stories = sequences[sequence_id]
partner = st.query_params.get("with")
if wanted in by_id and partner in by_id and by_id[partner].sequence_id == sequence_id == by_id[wanted].sequence_id:
    if not st.toggle("Show every story of the sequence", key="whole_sequence"):
        stories = [s for s in stories if s.story_id in (wanted, partner)]  # a pair from the Agreement page, side by side
        st.caption(f"The pair `{wanted}` (people prefer it) and `{partner}`, side by side.")
human, human_label = loading.session_judgements(set(by_id))


def images(story_set: StorySet, stories: list[Story]) -> None:
    first = next((s for s in stories if s.images_ok), None)
    if first is None:
        st.info("No readable images for this sequence: grounding cannot be shown.")
        return
    for col, ref in zip(st.columns(max(len(first.images), 4)), first.images):  # one image is not drawn full width
        shown, _, why = shown_image(story_set.image_path(ref))
        if shown is None:
            col.caption(f"⚠️ {why}")
        else:
            col.image(shown, width="stretch")


def shown_image(path: Path) -> tuple[Image.Image | None, tuple[int, int], str | None]:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None, (0, 0), f"{path.name}: not found"
    return loading.thumbnail(str(path), mtime)


@st.fragment
def region(story: Story, record: StoryScores) -> None:
    """The region a chosen noun phrase matched, outlined on its image (a pick reruns only this)."""
    grounding = record.grounding
    if grounding is None or not grounding.phrases or not story.images_ok:
        return
    labels = [f"{p.surface} → image {p.image + 1} ({p.contribution:+.2f})" for p in grounding.phrases]
    pick = st.selectbox("Show the region a phrase matched", labels, index=None, key=f"np-{story.story_id}")
    if pick is not None:
        p = grounding.phrases[labels.index(pick)]
        shown, size, why = shown_image(story_set.image_path(story.images[p.image]))
        if shown is None:
            st.caption(f"⚠️ {why}")
            return
        sx, sy = shown.width / size[0], shown.height / size[1]
        box = [p.box[0] * sx, p.box[1] * sy, p.box[2] * sx, p.box[3] * sy]
        st.image(draw_box(shown, box, p.text), width="stretch", caption=f"{p.text}: best cosine {p.best_cosine:.3f}")


def people(story_id: str) -> None:
    """The story's human ratings (mean ± spread over raters, N raters) when judgements are loaded."""
    ratings = story_ratings(human, story_id) if human is not None else []
    if ratings:
        text = " · ".join(f"{r.aspect} {r.mean:.2f} ± {r.spread:.2f} ({r.n})" for r in ratings)
        st.caption(f"**People** ({human_label}): {text}")


def card(story: Story, record: StoryScores) -> None:
    focus = " ← selected" if story.story_id == wanted else ""
    st.markdown(f"**{story.system}** · `{story.story_id}`{focus}")
    st.markdown(score_cards_html(story_cards(record, view.settings.metrics)), unsafe_allow_html=True)
    people(story.story_id)
    st.markdown(
        story_html(story.sentences, record.redundancy, record.coherence, record.grounding, content_only=content_only),
        unsafe_allow_html=True,
    )
    region(story, record)
    for metric in (record.redundancy, record.coherence, record.grounding):
        for note in metric.notes if metric else ():
            st.caption(note)
    for message in record.problems:
        st.caption(f"⚠️ {message}")


images(story_set, stories)
per_row = min(4, max(2, len(stories)))
with st.container(key="vst-cards"):  # on a narrow screen the cards wrap two per row (the frame's CSS)
    for start in range(0, len(stories), per_row):
        for col, story in zip(st.columns(per_row), stories[start : start + per_row]):
            with col.container(border=True):
                card(story, by_id[story.story_id])

records = [by_id[s.story_id] for s in stories]
table = scores_table(records, view.settings.metrics)
left, right = st.columns(2)
left.download_button(
    "Download this view (JSON)",
    export_json(records, view.settings, view.inputs),
    f"{sequence_id}.json",
    "application/json",
    key="dl-json",
)
right.download_button(
    "Download this view (CSV)", export_csv(table, view.settings, view.inputs), f"{sequence_id}.csv", "text/csv", key="dl-csv"
)
