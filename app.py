"""Dashboard entry point and its Inspect page: one image sequence, its candidate stories side by
side, with their evidence. Run with ``streamlit run app.py``; the Dataset page is in ``pages/``."""

from __future__ import annotations

import streamlit as st
from PIL import Image

st.set_page_config(page_title="Visual story evaluation", page_icon="📖", layout="wide")

from dashboard import load_view  # noqa: E402 - after set_page_config
from vst_core.viz import (  # noqa: E402
    draw_box,
    export_csv,
    export_json,
    format_score,
    legend_html,
    score_cards_html,
    scores_table,
    story_html,
)

st.title("Inspect a story")
st.caption(
    "Non-redundancy (RoViST-NR) with the spans that repeat, the coherence (RoViST-C) of every sentence "
    "transition, and the grounding (GROOVIST) of every noun phrase: hover for details. " + legend_html(),
    unsafe_allow_html=True,
)
view = load_view()
if view is None:
    st.stop()

story_set, by_id = view.story_set, view.by_id()
sequences = story_set.sequences()
wanted = st.query_params.get("story")
default_sequence = by_id[wanted]["sequence_id"] if wanted in by_id else next(iter(sequences))
names = list(sequences)
sequence_id = st.selectbox("Image sequence", names, index=names.index(default_sequence), key="sequence")
st.query_params["sequence"] = sequence_id
stories = sequences[sequence_id]

first = next((s for s in stories if s.images_ok), None)
if first is not None:
    for col, ref in zip(st.columns(len(first.images)), first.images):
        col.image(str(story_set.image_path(ref)), width="stretch")
else:
    st.info("No readable images for this sequence: grounding cannot be shown.")

per_row = min(4, max(2, len(stories)))
for start in range(0, len(stories), per_row):
    for col, story in zip(st.columns(per_row), stories[start : start + per_row]):
        record = by_id[story.story_id]
        nr, coh, grd = (record["metrics"].get(m) for m in ("redundancy", "coherence", "grounding"))
        with col.container(border=True):
            focus = " ← selected" if story.story_id == wanted else ""
            st.markdown(f"**{story.system}** · `{story.story_id}`{focus}")
            cards = [("NR", "redundancy", nr and nr["score"], nr and f"inter {format_score(nr['inter'])} · intra {format_score(nr['intra'])}")]
            if "coherence" in view.settings.metrics:
                cards.append(("coherence", "coherence", coh and coh["score"], coh and f"mean P(next follows) · {coh['model']}"))
            if "grounding" in view.settings.metrics:
                cards.append(("GROOVIST", "grounding", grd and grd["score"], grd and (
                    f"unbounded {format_score(grd['unbounded'])} · θ {grd['theta']:.4f} · "
                    f"T {format_score(grd['temporal_misalignment'])} · P {format_score(grd['np_proportion'])}")))
                cards.append(("T", "grounding", grd and grd["temporal_misalignment"], "temporal misalignment (GROOVIST Eq. 3)"))
            for label, metric, tip in (("CLIPScore", "clipscore", "mean 2.5·max(cos(sentence i, image i), 0)"),
                                       ("RoViST-VG", "rovist_vg", "RoViST aggregation of CLIP similarities, not the RoViST-VG model")):
                if metric in view.settings.metrics:
                    cards.append((label, metric, record["metrics"].get(metric, {}).get("score"), tip))
            st.markdown(
                score_cards_html([
                    (label, "error", record["errors"][metric]) if metric in record["errors"]
                    else (label, format_score(value), help_text or "")
                    for label, metric, value, help_text in cards
                ]),
                unsafe_allow_html=True,
            )
            st.markdown(story_html(story.sentences, nr, coh, grd), unsafe_allow_html=True)
            if grd and grd["phrases"] and story.images_ok:
                labels = [f"{p['surface']} → image {p['image'] + 1} ({p['contribution']:+.2f})" for p in grd["phrases"]]
                pick = st.selectbox("Show the region a phrase matched", labels, index=None, key=f"np-{story.story_id}")
                if pick is not None:
                    p = grd["phrases"][labels.index(pick)]
                    with Image.open(story_set.image_path(story.images[p["image"]])) as im:
                        st.image(draw_box(im, p["box"], p["text"]), width="stretch", caption=f"{p['text']}: best cosine {p['best_cosine']:.3f}")
            for note in [*(nr or {}).get("notes", []), *(coh or {}).get("notes", []), *(grd or {}).get("notes", [])]:
                st.caption(note)
            for message in record.get("problems", []):
                st.caption(f"⚠️ {message}")

records = [by_id[s.story_id] for s in stories]
table = scores_table(records, view.settings.metrics)
left, right = st.columns(2)
left.download_button("Download this view (JSON)", export_json(records, view.settings), f"{sequence_id}.json", "application/json", key="dl-json")
right.download_button("Download this view (CSV)", export_csv(table, view.settings), f"{sequence_id}.csv", "text/csv", key="dl-csv")
st.divider()
st.caption(view.footer())
