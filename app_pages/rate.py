"""The rater's page, reached only by a rater's own link (``?rater=<token>``): the items of their
plan one at a time (photos in order, each sentence under its photo; no score, no system), their
answer stored through :class:`vst_core.study.AnswerStore` and said saved only once committed.
A link that names no live rater shows one line and nothing else."""

from __future__ import annotations

import secrets
import time

import streamlit as st

from dashboard import study_show
from dashboard.frame import shown
from vst_core.study import AnswerStore, Item, Presented, Rater, Study, StudyError, find_study, plan_for, rater_for, studies_folder
from vst_core.viz.safe import md

NOT_VALID = "This link is not valid."
#: Session state: the plan's position shown, when each position was first shown, the last save.
AT = "_rate_at"
SHOWN_AT = "_rate_shown_at"
SAVED = "_rate_saved"
OWNER = "_rate_owner"


def _open() -> tuple[Study, Rater, AnswerStore, list[Presented], study_show.Resolver] | None:
    """The study, rater, store and plan the link's token names; None for any other link (a wrong,
    revoked or malformed token: a path, ``../``, markup are never compared)."""
    token = st.query_params.get("rater")
    found = find_study(token, studies_folder())
    rater = rater_for(found[0], token) if found is not None else None
    if found is None or rater is None:
        return None
    study, path = found
    return study, rater, AnswerStore.beside(path), plan_for(study, rater), study_show.photos_of(path, study)


opened = _open()
if opened is None:
    st.markdown(NOT_VALID)
    st.stop()
study, rater, store, plan, resolve = opened
if st.session_state.get(OWNER) != (study.signature, rater.name):  # another link opened in this session
    for name in (AT, SHOWN_AT, SAVED):
        st.session_state.pop(name, None)
    st.session_state[OWNER] = (study.signature, rater.name)
items: dict[str, Item] = {item.item_id: item for item in study.items}
answered = store.answered(study, rater)
done = [k for k, p in enumerate(plan) if p.item_id in answered]
if AT not in st.session_state or not 0 <= int(st.session_state[AT]) < len(plan):
    st.session_state[AT] = next((k for k, p in enumerate(plan) if p.item_id not in answered), 0)
at = int(st.session_state[AT])

st.html(study_show.STYLE)
st.title(md(study.title))
if study.instructions.strip():
    with st.expander("Instructions", expanded=not done):
        st.markdown(study_show.paragraphs(study.instructions))
if not plan:  # more raters than the items need: this rater was dealt none
    st.info("There is nothing for you to rate in this study. Thank you.")
    st.stop()
st.progress(len(done) / len(plan), text=f"Item {at + 1} of {len(plan)} · {len(done)} answered")
saved = st.session_state.pop(SAVED, None)
if saved:
    st.success(saved, icon=":material/check:")
if len(done) == len(plan):
    st.info("Every item is answered: thank you. You can still go back and change an answer.")

back, ahead, jump = st.columns([1, 1, 2], vertical_alignment="bottom")
if back.button("← Previous item", key="rate-back", disabled=at == 0):
    st.session_state[AT] = at - 1
    st.rerun()
if ahead.button("Next item →", key="rate-next", disabled=at >= len(plan) - 1):
    st.session_state[AT] = at + 1
    st.rerun()
picked = jump.selectbox(
    "Go to item",
    range(len(plan)),
    index=at,
    format_func=lambda k: f"Item {k + 1}" + (" · answered" if plan[k].item_id in answered else ""),
    key=f"rate-goto-{at}",
)
if picked is not None and picked != at:
    st.session_state[AT] = int(picked)
    st.rerun()

presented = plan[at]
item = items[presented.item_id]
previous = answered.get(item.item_id)
shown_at: dict[str, tuple[float, str]] = st.session_state.setdefault(SHOWN_AT, {})
# from when this item was shown; one request id per showing, so a submission run twice is stored once
started, request = shown_at.setdefault(f"{at}:{item.item_id}", (time.monotonic(), secrets.token_hex(8)))
if previous is not None:
    st.caption(f"You answered this item (revision {previous.revision}); a new answer replaces it.")

stories = [item.stories[k] for k in presented.order]
for k, shown_story in enumerate(stories):
    if len(stories) > 1:
        st.subheader(f"Story {study_show.LETTERS[k]}", divider="gray")
    study_show.story(shown_story, resolve, f"rate-{k}")


def save(value: dict[str, int | str]) -> None:
    """Store the answer; said saved (and the next item opened) only once the store committed it."""
    try:
        store.record(study, rater, presented, value, time.monotonic() - started, request=request)
    except StudyError as exc:
        st.error(f"Not saved: {shown(exc)}")
        return
    shown_at.pop(f"{at}:{item.item_id}", None)
    st.session_state[SAVED] = f"Saved your answer to item {at + 1}."
    now = {*answered, item.item_id}
    following = [k for k in range(at + 1, len(plan)) if plan[k].item_id not in now]
    st.session_state[AT] = following[0] if following else min(at + 1, len(plan) - 1)
    st.rerun()


st.divider()
if study.protocol == "likert":
    with st.form(f"rate-form-{at}", border=False, enter_to_submit=False):
        chosen: dict[str, int | None] = {}
        for aspect in study.aspects:
            scale = list(range(1, len(aspect.anchors) + 1))
            before = previous.value.get(aspect.key) if previous is not None else None
            chosen[aspect.key] = st.radio(
                f"**{md(aspect.label)}** · {md(aspect.question)}",
                scale,
                index=scale.index(before) if isinstance(before, int) and before in scale else None,
                format_func=lambda v, anchors=aspect.anchors: f"{v} {md(anchors[v - 1])}",
                horizontal=True,
                key=f"rate-{at}-{aspect.key}",
            )
        submitted = st.form_submit_button("Save answer", type="primary", key=f"rate-save-{at}")
    if submitted:
        missing = [a.label for a in study.aspects if chosen[a.key] is None]
        if missing:
            st.warning("Rate every aspect first: " + ", ".join(md(m) for m in missing))
        else:
            save({key: int(v) for key, v in chosen.items() if v is not None})
elif study.protocol == "pairwise":
    before = previous.value.get("preferred") if previous is not None else None
    st.markdown("**Which story is better?**" + (" Press 1 or 2" + (", or 3 for a tie." if study.ties else ".")))
    choices: list[tuple[str, int | str, str]] = [
        (f"Story A is better{' ✓' if before == presented.order[0] else ''}", presented.order[0], "1"),
        (f"Story B is better{' ✓' if before == presented.order[1] else ''}", presented.order[1], "2"),
    ]
    if study.ties:
        choices.append((f"About the same{' ✓' if before == 'tie' else ''}", "tie", "3"))
    row = st.container(horizontal=True, gap="small")
    for n, (label, value, key) in enumerate(choices):
        if row.button(label, key=f"rate-pick-{at}-{n}", shortcut=key, type="primary" if value == before else "secondary"):
            save({"preferred": value})
else:  # best-worst
    letters = [study_show.LETTERS[k] for k in range(len(stories))]
    with st.form(f"rate-form-{at}", border=False, enter_to_submit=False):
        where = {index: k for k, index in enumerate(presented.order)}
        roles: dict[str, str | None] = {}
        for role in ("best", "worst"):
            before = previous.value.get(role) if previous is not None else None
            roles[role] = st.radio(
                f"**{role.capitalize()} story**",
                letters,
                index=where.get(before) if isinstance(before, int) else None,
                horizontal=True,
                key=f"rate-{at}-{role}",
            )
        best, worst = roles["best"], roles["worst"]
        submitted = st.form_submit_button("Save answer", type="primary", key=f"rate-save-{at}")
    if submitted:
        if best is None or worst is None or best == worst:
            st.warning("Pick one best and one other story as the worst.")
        else:
            save({"best": presented.order[letters.index(best)], "worst": presented.order[letters.index(worst)]})
