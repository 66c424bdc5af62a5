"""The view every page renders: the loaded stories scored under the sidebar's settings, with a
notice for each model that is off. The app's frame builds it once per run; a page calls
:func:`page` for its title, the notices and the view."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from dashboard import loading
from dashboard.choices import Choices, base_of, settings_for, settings_for_file, without, without_clip
from dashboard.sidebar import Input
from vst_core.config import CLIP_METRICS, Settings, settings_from_signature
from vst_core.models.device import resolve_device
from vst_core.models.hub import ModelLoadError
from vst_core.problems import Problem
from vst_core.reaggregate import reaggregate
from vst_core.records import StoryScores
from vst_core.viz import RunView

_KEY = "_vst_frame"


@dataclass
class Frame:
    """What the frame computed this run: the view (None without stories), notices, problems."""

    view: RunView | None
    notices: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    empty_hint: str | None = None


def _probe(settings: Settings, notices: list[str]) -> Settings:
    """Load the models the settings need; each one that cannot load is turned off with one notice."""
    if "coherence" in settings.metrics:
        try:
            loading.pair_scorer(settings.coherence_model, settings.device)
        except (ModelLoadError, ValueError) as exc:
            notices.append(f"Coherence is off: {exc}")
            settings = without(settings, ("coherence",))
    if CLIP_METRICS & set(settings.metrics):
        try:
            loading.clip_encoder(
                settings.clip_arch, settings.clip_pretrained, settings.clip_checkpoint, settings.clip_config, settings.device
            )
        except (ModelLoadError, ValueError, RuntimeError) as exc:
            notices.append(f"Grounding is off: {exc}")
            settings = without_clip(settings)
        if settings.regions == "csv" and not Path(settings.regions_file or "").is_file():
            notices.append(f"Regions file not found: {settings.regions_file}; the weight-free grid is used")
            settings = settings.with_(regions="grid", regions_file=None)
    return settings


def _score(data: Input, settings: Settings, notices: list[str]) -> tuple[list[StoryScores], Settings, Settings]:
    """(records, the settings they were made with, the settings shown): models run once per base setting."""
    assert data.story_set is not None
    base = base_of(settings)
    try:
        records = loading.score_all(data.story_set, data.story_set.digest(), base)
    except ModelLoadError as exc:  # e.g. the detector's weights: one notice, NR and coherence still run
        notices.append(f"Grounding is off: {exc}")
        base, settings = without_clip(base), without_clip(settings)
        records = loading.score_all(data.story_set, data.story_set.digest(), base)
    return records, base, settings


def build(choices: Choices, data: Input) -> Frame:
    """Score (cached) what the sidebar loaded under the settings it describes."""
    notices: list[str] = list(data.messages)
    settings = settings_for(choices)
    if data.records is not None:  # a scores file: everything comes from it, no model runs
        recorded = settings_from_signature(dict(data.records[0].signature)) if data.records else settings
        base, settings = recorded, settings_for_file(choices, recorded)
        records = data.records
    else:
        settings = _probe(settings, notices)
        if data.story_set is None:
            return Frame(
                None,
                notices,
                [data.error] if data.error else [],
                empty_hint=None
                if data.error
                else "Upload a story set (or images and stories) to begin, or pick the bundled sample.",
            )
        records, base, settings = _score(data, settings, notices)
    if data.story_set is None:
        return Frame(None, notices, [data.error] if data.error else [])
    records = reaggregate(records, base, settings)
    uses_models = data.records is None and bool({"coherence", "grounding"} & set(settings.metrics))
    view = RunView(
        story_set=data.story_set,
        records=records,
        settings=settings,
        device=resolve_device(settings.device) if uses_models else "none (no model in use)",
        recorded_id=data.records[0].signature_id if data.records and base == settings else None,
    )
    return Frame(view, notices, [data.error] if data.error else [], data.story_set.all_problems())


def keep(frame: Frame) -> None:
    st.session_state[_KEY] = frame


#: Problems listed one by one up to this many; more are summarised by kind in an expander.
SHOWN_PROBLEMS = 5


def _problems(problems: list[Problem]) -> None:
    """A few problems one by one; many as counts per kind with the list in an expander."""
    if len(problems) <= SHOWN_PROBLEMS:
        for problem in problems:
            (st.error if problem.severity == "error" else st.warning)(str(problem))
        return
    counts: dict[str, int] = {}
    for problem in problems:
        key = f"{problem.severity}: {problem.kind}"
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{n} × {key}" for key, n in sorted(counts.items()))
    st.warning(f"{len(problems)} problems in the input ({summary})", icon="⚠️")
    with st.expander("Every problem"):
        st.code("\n".join(str(p) for p in problems[:2000]) + ("\n…" if len(problems) > 2000 else ""), language=None)


def page(title: str, caption: str | None = None) -> RunView:
    """A page's title, the frame's notices and problems, and its view (the page stops without one)."""
    st.title(title)
    if caption:
        st.caption(caption, unsafe_allow_html=True)
    frame: Frame = st.session_state[_KEY]
    for notice in frame.notices:
        st.warning(notice, icon="⚠️")
    for error in frame.errors:
        st.error(error)
    _problems(frame.problems)
    if frame.view is None:
        if frame.empty_hint:
            st.info(frame.empty_hint)
        st.stop()
    return frame.view
