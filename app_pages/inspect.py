"""Inspect page: one image sequence, its candidate stories side by side, with their evidence."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from PIL import Image

from dashboard import loading, typed
from dashboard.choices import story_widget_key
from dashboard.frame import page, shown
from vst_core.analysis.meta_eval.identity import ratings_of
from vst_core.contract import registry
from vst_core.data import Story
from vst_core.hashing import json_digest
from vst_core.metrics.character_alignment import crop_ref
from vst_core.records import StoryScores
from vst_core.scoring.story import completed
from vst_core.signature import recorded_inputs
from vst_core.viz import (
    annotated_story,
    draw_box,
    drawn_in_text,
    evidence_blocks,
    export_csv,
    export_json,
    legend_html,
    score_cards_html,
    scores_table,
    story_cards,
)
from vst_core.viz.report import aspect_label, view_report
from vst_core.viz.safe import code, md

#: Up to this many image sequences are offered in a list; more are typed or opened from the Dataset page.
MAX_LISTED = 2000

view = page(  # the marks of the metrics that ran only
    "Inspect a story",
    lambda v: f"{drawn_in_text(v.settings.metrics)}: hover for details. {legend_html(markdown=True, metrics=v.settings.metrics)}",
)
sequences = view.sequences()
names = list(sequences)
wanted, wanted_system = st.query_params.get("story"), st.query_params.get("system")
partner, partner_system = st.query_params.get("with"), st.query_params.get("with_system")
focus_rows = [
    r for r in ([view.find(wanted, wanted_system)] if wanted_system else view.rows_of_story(wanted or "")) if r is not None
]
link = json_digest([wanted_system, wanted])  # never joined: ids may hold any separator
if focus_rows and st.session_state.get("_focused") != link:  # a link to a story opens its sequence once
    st.session_state["_focused"] = link
    st.session_state["sequence"] = str(view.table["sequence"].iat[focus_rows[0]])
if wanted and not focus_rows:
    st.warning(
        f"No story {code(wanted)}" + (f" of system {code(wanted_system)}" if wanted_system else "") + " in the loaded stories."
    )
if st.session_state.get("sequence") not in sequences:
    st.session_state["sequence"] = names[0]
top, options = st.columns([3, 2])
if len(names) <= MAX_LISTED:
    sequence_id = top.selectbox("Image sequence", names, key="sequence", bind="query-params")
else:  # 100,000 options would be sent to the browser on every run: type or step instead
    sequence_id = top.text_input(
        f"Image sequence ({len(names):,}: type an id, or open one from the Dataset page)", key="sequence", bind="query-params"
    ).strip()
    if sequence_id not in sequences:
        st.warning(f"No image sequence {code(sequence_id)} in the loaded scores; showing the first.")
        sequence_id = names[0]
content_only = options.toggle(
    "Content-word repeats only",
    value=True,  # the demo view: the reference story does not look as busy as a repetitive one
    key="content_only",
    bind="query-params",
    help="display only: repeats of 'the', 'a', 'to', ... are not highlighted; the NR score still counts them",
)
with st.expander("Add a story of your own to this sequence", expanded=bool(st.session_state.get("typed_story"))):
    typed_text = st.text_area(
        "Your story, scored beside this sequence's stories with its images",
        key="typed_story",
        placeholder="We went to the beach. | The waves were huge. | ...",
        help="'|' between sentences (one per image), else sentences are split automatically. It joins the sequence picked "
        "above as a story of the system typed (its id: typed- and the sequence's id), scored under this view's settings; "
        "the loaded stories, their numbers, the other pages and the downloads below stay as they are. Empty the box to "
        "remove it",
    )
rows = [int(r) for r in sequences[sequence_id]]
pair_rows = [view.find(wanted, wanted_system), view.find(partner, partner_system)] if partner else []
if len(pair_rows) == 2 and all(r is not None and r in rows for r in pair_rows):
    if not st.toggle("Show every story of the sequence", key="whole_sequence"):
        rows = [r for r in rows if r in pair_rows]  # a pair from the Agreement page, side by side
        st.caption(f"The pair {code(wanted)} (people prefer it) and {code(partner)}, side by side.")
shown_records = [view.record(r) for r in rows]
stories = [(r, rec, view.story(r, rec)) for r, rec in zip(rows, shown_records, strict=True) if rec is not None]
human, human_label = loading.session_judgements(set(view.table["story"].iloc[rows]))
candidate: typed.Typed | None = None
try:
    candidate = typed.scored(view, sequence_id, typed_text)
except Exception as exc:  # a model or a regions file that fails for this story: said, the page goes on
    st.warning(f"Your story could not be scored: {shown(exc)}")
TYPED_ROW = -1  # the typed candidate's place among the rows: none of the view's


def images(stories: list[Story]) -> None:
    first = next((s for s in stories if s.images_ok), None)
    if first is None:
        st.info("No readable images for this sequence: grounding cannot be shown.")
        return
    for col, ref in zip(st.columns(max(len(first.images), 4)), first.images):  # one image is not drawn full width
        picture, _, why = shown_image(view.image_path(ref))
        if picture is None:
            col.caption(f"⚠️ {shown(why)}")
        else:
            col.image(picture, width="stretch")


def characters(stories: list[Story]) -> None:
    """The sequence's named characters, each with its crop (VWP's) under its name, above the stories
    that name them (where each is named: the cards' Characters and Character alignment evidence)."""
    first = next((s for s in stories if s.characters), None)
    if first is None:
        return
    st.caption("Named characters (crops as the story set gives them; where each is named: the cards' Characters evidence)")
    named = list(dict.fromkeys(first.characters))
    for col, (name, crop) in zip(st.columns(max(len(named), 6)), named):
        try:
            picture, _, why = shown_image(view.image_path(crop_ref(first, crop))) if crop else (None, (0, 0), "no crop given")
        except ValueError as exc:  # a crop named outside the story set's folder
            picture, why = None, str(exc)
        if picture is None:
            col.caption(f"**{md(name)}** · {shown(why)}")
        else:
            col.image(picture, width="stretch", caption=md(name))


def shown_image(path: Path) -> tuple[Image.Image | None, tuple[int, int], str | None]:
    try:
        mtime = loading.stamp(path)  # ctime too: a rewrite with its mtime restored is another image
    except OSError:
        return None, (0, 0), f"{path.name}: not found"
    return loading.thumbnail(str(path), mtime)


def outline(story: Story, image: int, box: tuple[float, ...], label: str, cosine: float) -> None:
    """A region (its box in the image's own pixels) outlined on the story's image ``image``, or why
    the image cannot be shown."""
    picture, size, why = shown_image(view.image_path(story.images[image]))
    if picture is None:
        st.caption(f"⚠️ {shown(why)}")
        return
    sx, sy = picture.width / size[0], picture.height / size[1]
    scaled = [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]
    st.image(draw_box(picture, scaled, label), width="stretch", caption=f"{md(label)}: best cosine {cosine:.3f}")


@st.fragment
def regions(story: Story, record: StoryScores) -> None:
    """The region an item of a metric matched (each spec's ``regions``: GROOVIST's noun phrases,
    RoViST-VG's nouns), outlined on its image on request (a pick reruns only this)."""
    if not story.images_ok:
        return
    for name, spec in registry().specs.items():
        found = record.metrics.get(name)
        if spec.showing.regions is None or found is None:
            continue
        try:
            what, items = spec.showing.regions(found)
        except Exception:  # an installed metric's hook that fails shows no picker; the page goes on
            continue
        items = [r for r in items if 0 <= r.image < len(story.images) and len(r.box) == 4]
        if not items:
            continue
        labels = [r.choice for r in items]
        key = story_widget_key(f"region-{name}", *story.key)
        pick = st.selectbox(f"Show the region a {what} matched", labels, index=None, key=key)
        if pick is not None:
            chosen = items[labels.index(pick)]
            outline(story, chosen.image, chosen.box, chosen.text, chosen.cosine)


def evidence(record: StoryScores) -> None:
    """Each metric's evidence block, as its module draws it: RoViST-VG's nouns and regions, Vrank's
    verdict against each other story, COSMic's sentence ratings, the judge's answers, a plugin's."""
    for title, body in evidence_blocks(record):
        with st.expander(md(title)):
            st.markdown(body, unsafe_allow_html=True)


def people(story_id: str, system: str) -> None:
    """The story's human ratings (mean ± spread over raters, N raters) when judgements are loaded."""
    shared = len(view.rows_of_story(story_id)) > 1  # then a rating must name its system
    ratings = ratings_of(human, story_id, system, shared=shared) if human is not None else []
    if ratings:
        text = " · ".join(f"{md(aspect_label(r.aspect))} {r.mean:.2f} ± {r.spread:.2f} ({r.n})" for r in ratings)
        st.caption(f"**People** ({human_label}): {text}")


def card(row: int, story: Story | None, record: StoryScores) -> None:
    focus = " ← selected" if row in focus_rows else ""
    st.markdown(f"**{md(record.system)}** · {code(record.story_id)}{focus}")
    st.markdown(score_cards_html(story_cards(record, view.settings.metrics)), unsafe_allow_html=True)
    people(record.story_id, record.system)
    st.markdown(
        annotated_story(record, content_only=content_only),
        unsafe_allow_html=True,
    )
    if story is not None:
        regions(story, record)
    evidence(record)
    for metric in record.metrics.values():
        notes = getattr(metric, "notes", ())
        for note in notes if isinstance(notes, (tuple, list)) else ():
            st.caption(shown(note))
    for message in record.problems:
        st.caption(f"⚠️ {shown(message)}")
    for message in record.warnings:  # what the reader found and scoring went on with (a group missing, an empty sentence)
        st.caption(f"ℹ️ {shown(message)}")


def typed_note(found: typed.Typed) -> None:
    """How the typed candidate was scored (its own signature), and its record to download."""
    left = f" · not scored here: {md(', '.join(found.left_out))} (scores files: no model runs)" if found.left_out else ""
    st.caption(f"Typed here, scored over {found.context} · sig {code(found.record.signature_id)}{left}")
    record = found.record
    st.download_button(
        "Download your story (JSON)",
        export_json([record], found.settings, recorded_inputs([record])),
        f"{record.story_id}.json",
        "application/json",
        key="dl-typed",
        on_click="ignore",
    )


images([s for _, _, s in stories if s is not None])
characters([s for _, _, s in stories if s is not None])
drawn = [*stories, *([(TYPED_ROW, candidate.record, candidate.story)] if candidate is not None else [])]
per_row = min(4 + (candidate is not None), max(2, len(drawn)))  # a typed story beside a sequence's four
with st.container(key="vst-cards"):  # on a narrow screen the cards wrap two per row (the frame's CSS)
    for start in range(0, len(drawn), per_row):
        for col, (row, record, story) in zip(st.columns(per_row), drawn[start : start + per_row]):
            with col.container(border=True):
                card(row, story, completed(record))
                if row == TYPED_ROW and candidate is not None:
                    typed_note(candidate)
if len(stories) < len(rows):
    st.warning(f"{len(rows) - len(stories)} stories of this sequence could not be read again from their files.")

records = [record for _, record, _ in stories]
table = scores_table(records, view.settings.metrics)
left, right = st.columns(2)
left.download_button(
    "Download this view (JSON)",
    export_json(records, view.settings, view.inputs, recorded=view.recorded()),
    f"{sequence_id}.json",
    "application/json",
    key="dl-json",
    on_click="ignore",
)
right.download_button(
    "Download this view (CSV)",
    export_csv(table, view.settings, view.inputs, recorded=view.recorded()),
    f"{sequence_id}.csv",
    "text/csv",
    key="dl-csv",
    on_click="ignore",
)
st.download_button(
    "Download this view (HTML report, opens offline)",
    lambda: view_report(view, f"Sequence {sequence_id}", view.table.iloc[rows], rows, resamples=0),
    f"{sequence_id}.html",
    "text/html",
    key="dl-report",
    help="one self-contained file: this sequence's stories as cards with their evidence and images, their scores, the signature",
    on_click="ignore",
)
