"""The view every page renders: the loaded stories scored under the sidebar's settings, with a
notice for each model that is off. The app's frame builds it once per run; a page calls
:func:`page` for its title, the notices and the view. Every notice, error and problem is shown
through :func:`shown` (no server folder, nothing rendered as markup)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import streamlit as st

from dashboard import loading, session
from dashboard.choices import (
    GROUNDING,
    Choices,
    base_of,
    clip_key,
    device_notice,
    in_sidebar_terms,
    settings_for,
    settings_for_file,
    sidebar_words,
    without,
    without_clip,
)
from dashboard.keys import FRAME, LINK_NOTICES, MODEL_STATUS
from dashboard.sidebar import Input
from vst_core.config import Settings, settings_from_signature
from vst_core.contract import registry
from vst_core.images.options import image_settings
from vst_core.models.device import resolve_device
from vst_core.models.hub import ModelLoadError
from vst_core.problems import Problem
from vst_core.scoring.policy import RunReport, worded
from vst_core.scoring.registry import unloadable_metrics
from vst_core.viz import RunView
from vst_core.viz.safe import CACHE, code, md, redact, say


def shown(message: object) -> str:
    """A message (a notice, a problem, a loader's error) as the page shows it: the server's folders
    left out (the full text logged once for whoever runs the dashboard), markdown escaped."""
    return say(message, session.roots())


@dataclass
class Frame:
    """What the frame computed this run: the view (None without stories), notices, problems."""

    view: RunView | None
    notices: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    empty_hint: str | None = None


def model_keys(settings: Settings) -> dict[str, str]:
    """What identifies each toggled model's request (its sidebar fields; the sidebar builds the same
    keys): each metric's own box (its :class:`~vst_core.contract.Switch`), and CLIP's fields for
    the Grounding toggle."""
    image = image_settings(settings)
    clip = clip_key(image.clip_model, image.clip_pretrained, image.clip_checkpoint, image.clip_config)
    boxes = {name: str(settings.option(sw.setting)) for name, sw in registry().switched.items()}
    return {**boxes, GROUNDING: clip}


def toggle_titles() -> dict[str, str]:
    """The words a notice names each toggle by: a metric's own section's header, and Grounding."""
    return {**{name: sw.header for name, sw in registry().switched.items()}, GROUNDING: "Grounding"}


def _probe(settings: Settings, notices: list[str], status: dict[str, tuple[str, str | None]]) -> Settings:
    """Load the models the settings need as a run does (:func:`unloadable_metrics`: CLIP once for
    every metric that needs it, then each metric's own), each through the dashboard's cache; a
    metric that cannot have its model is turned off with one notice naming the sidebar's controls
    (the Grounding toggle's for CLIP), in the sidebar's order, and a toggled one's reason kept in
    ``status``."""
    keys, reg = model_keys(settings), registry()
    switched, needs_clip = reg.switched, reg.with_need("clip")
    given: dict[str, Any] = {}

    def clip() -> None:
        given["clip"] = loading.clip_encoder(settings)

    def load(name: str) -> None:
        loading.metric_models(name, settings, given)

    found = unloadable_metrics(settings.metrics, load, clip=clip, catch=(Exception,))  # any loader's failure: the page goes on
    first = [m for m in settings.metrics if m in switched and m not in needs_clip]  # the sections above Grounding
    grounding = [GROUNDING] if needs_clip & set(settings.metrics) else []
    for name in [*first, *grounding, *[m for m in settings.metrics if m not in first]]:  # as the sidebar draws them
        error = found.clip if name == GROUNDING else found.metrics.get(name)
        if name != GROUNDING and error is not None and error is found.clip:
            continue  # off with Grounding, said once
        reason = in_sidebar_terms(error) if error is not None else None
        if name in switched or name == GROUNDING:
            status[name] = (keys[name], reason)
        if reason is not None:
            title = "Grounding" if name == GROUNDING else switched[name].header if name in switched else reg.spec(name).title
            notices.append(f"{title} is off: {reason}")
    settings = without_clip(settings) if found.clip is not None else settings
    settings = without(settings, tuple(found.metrics))
    if registry().with_need("images") & set(settings.metrics):
        image = image_settings(settings)
        if image.regions == "csv" and not Path(image.regions_file or "").is_file():
            notices.append(
                "The “Regions” file cannot be read; the weight-free grid is used. Give a regions CSV inside the "
                "folders this dashboard may read, or grid"
            )
            settings = settings.with_(regions="grid", regions_file=None)
    return settings


def _device(settings: Settings) -> str:
    """Where the settings' models run (torch asked only when a model is in use)."""
    uses_models = bool((registry().with_need("model") | registry().with_need("clip")) & set(settings.metrics))
    return resolve_device(settings.device) if uses_models else "none (no model in use)"


def _view(data: Input, settings: Settings, notices: list[str]) -> RunView:
    """The view of the loaded set under ``settings`` (cached: models run once per base setting, and
    the view, its records' digest included, is built once per set, settings and device), with what
    the run's report says as notices: a metric the run left out, a metric's failures."""
    assert data.story_set is not None
    key = data.story_set.digest()
    base = base_of(settings)
    try:
        view, report = loading.records_view(data.story_set, key, base, settings, _device(settings))
    except ModelLoadError as exc:  # e.g. the detector's weights: one notice, NR and coherence still run
        notices.append(f"Grounding is off: {exc}")
        base, settings = without_clip(base), without_clip(settings)
        view, report = loading.records_view(data.story_set, key, base, settings, _device(settings))
    notices.extend(said(report))
    return view


def said(report: RunReport) -> list[str]:
    """What a run's report says that the page shows as notices: each metric the run left out (its
    model did not load, the sidebar's words for its settings) and each failure its summary names.

    >>> from vst_core.scoring.policy import Said
    >>> said(RunReport(("redundancy",), {"vrank": "no folder"}, said=[Said("judge", ("42 calls",), ("no answer",))]))
    ['Vrank is off: no folder', 'no answer']
    """
    specs = registry().specs
    off = [f"{specs[m].title if m in specs else m} is off: {worded(why, sidebar_words)}" for m, why in report.not_run.items()]
    return [*off, *report.failures]


def _has_cuda() -> bool:
    import torch  # only for the choice cuda: a dashboard that runs no model on a GPU never loads torch

    return bool(torch.cuda.is_available())


def build(choices: Choices, data: Input) -> Frame:
    """Score (cached) what the sidebar loaded under the settings it describes."""
    notices: list[str] = list(data.messages) + list(registry().problems)  # installed metrics left out, and why
    if data.index is not None:  # scores files: the numbers from their index, no model runs
        return _indexed(choices, data, notices)
    if data.story_set is None:  # nothing loaded yet: no model is loaded, and none is said to be off
        return Frame(
            None,
            notices,
            [data.error] if data.error else [],
            empty_hint=None if data.error else "Upload a story set (or images and stories) to begin, or pick the bundled sample.",
        )
    device, device_message = device_notice(choices.device, _has_cuda)
    settings = settings_for(replace(choices, device=device))
    if device_message:
        notices.append(device_message)
    before: dict[str, tuple[str, str | None]] = dict(st.session_state.get(MODEL_STATUS, {}))
    status = dict(before)
    keys, titles = model_keys(settings), toggle_titles()
    for model, (asked, reason) in before.items():  # turned off in the sidebar for this reason
        if reason and asked == keys.get(model):
            notices.append(f"{titles.get(model, model)} is off: {reason}")
    settings = _probe(settings, notices, status)
    if status != before:  # the sidebar drew its controls without knowing: draw them again
        st.session_state[MODEL_STATUS] = status
        st.session_state[LINK_NOTICES] = data.link_notices
        st.rerun()
    return Frame(_view(data, settings, notices), notices, [data.error] if data.error else [], data.story_set.all_problems())


#: Stories whose images are checked when scores files load (the others', when they are shown).
PROBED_STORIES = 20

#: Conflicts between scores files listed by name on the page; more are counted.
SHOWN_CONFLICTS = 3


def _indexed(choices: Choices, data: Input, notices: list[str]) -> Frame:
    """The view of loaded scores files: settings as recorded (the metrics they hold), conflicts
    between files said once, unreadable lines as problems."""
    index = data.index
    assert index is not None
    recorded = settings_from_signature(index.first_signature())
    settings = settings_for_file(choices, recorded).with_(metrics=index.metrics or recorded.metrics)
    if index.conflicts:
        examples = "; ".join(str(c) for c in index.conflicts[:SHOWN_CONFLICTS])
        notices.append(
            f"{len(index.conflicts)} stories have a metric with different values in two sources. A computed value "
            f"is used over an imported one, else the first file's: {examples}"
        )
    view = loading.index_view(index, index.digest, str(data.root or Path(index.files[0].path).parent), settings, recorded)
    images = loading.image_probe(view, view.key, PROBED_STORIES)
    if images:
        notices.append(
            "Images the scores name were not found next to the story file they were made from: set “Folder of the "
            "story file” to that folder, or upload the images with the scores file (the first "
            f"{PROBED_STORIES} stories were checked; every story's images are checked when it is shown)"
        )
    return Frame(view, notices, [data.error] if data.error else [], [*index.problems, *images])


def keep(frame: Frame) -> None:
    st.session_state[FRAME] = frame


#: Problems listed one by one up to this many; more are summarised by kind in an expander.
SHOWN_PROBLEMS = 5


def _problems(problems: list[Problem]) -> None:
    """A few problems one by one; many as counts per kind with the list in an expander."""
    if len(problems) <= SHOWN_PROBLEMS:
        for problem in problems:
            (st.error if problem.severity == "error" else st.warning)(shown(problem))
        return
    counts: dict[str, int] = {}
    for problem in problems:
        key = f"{problem.severity}: {problem.kind}"
        counts[key] = counts.get(key, 0) + 1
    summary = ", ".join(f"{n} × {md(key)}" for key, n in sorted(counts.items()))
    st.warning(f"{len(problems)} problems in the input ({summary})", icon="⚠️")
    with st.expander("Every problem"):  # st.code shows its text as it is: only the folders are left out
        roots = session.roots()
        listed = "\n".join(redact(p, roots) for p in problems[:2000])
        st.code(listed + ("\n…" if len(problems) > 2000 else ""), language=None)


#: A parenthesis that only says which of the model cache's folders (one, or alternatives each ending
#: in one: "(<cache>/…/hub, or OpenAI's file in <cache>)"): every folder in it is the same one to a visitor.
_CACHE_ONLY = re.compile(rf"\s*\((?:[^(),]*{re.escape(CACHE)}(?:/…/[^\s(),]+)?(?:,\s*|\s+or\s+)?)+\)")


def with_code(message: str) -> str:
    """A notice for the page: the server's folders left out (as :func:`shown`), the model cache
    named by what it is, its `quoted` commands as code spans (the one fix to type, shown exactly)
    and the rest markdown-escaped."""
    text = _CACHE_ONLY.sub(" on the server", redact(message, session.roots())).replace(CACHE, "the server's model cache")
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: nothing is code
        return md(text)
    return "".join(md(p) if k % 2 == 0 else code(p) for k, p in enumerate(parts))


def _notices(notices: list[str]) -> None:
    """Each notice by its first sentence; the full texts (with the fix) in one expander, so a few
    notices never fill the first screen."""
    if not notices:
        return
    firsts = [n.split(". ")[0].rstrip(".") + "." for n in notices]
    st.warning("\n".join(f"- {with_code(f)}" for f in firsts), icon="⚠️")
    if any(f != n for f, n in zip(firsts, notices, strict=True)):
        with st.expander("Details and how to fix them"):
            for notice in notices:
                st.markdown(f"- {with_code(notice)}")


Clicks = Literal["single-row", "single-cell"]


def story_table(
    table: pd.DataFrame,
    key: str,
    story: str,
    also: str | None = None,
    modes: Clicks | list[Clicks] = "single-cell",
    *,
    system: str | None = "system",
    also_system: str | None = None,
    **options: Any,
) -> None:
    """A table where a click on a cell (or, with ``single-row`` in ``modes``, a row's box) opens
    that row's story (``story`` column, with its ``system`` column: ids may be shared between
    systems) in Inspect, the ``also`` story beside it; the sidebar's settings are kept."""
    event = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun", selection_mode=modes, key=key, **options)
    rows = [*event.selection.rows, *(int(cell[0]) for cell in event.selection.cells)] if event is not None else []
    if rows:
        row = table.iloc[rows[0]]
        # only the story: the parameters bound to sidebar widgets come back from their widgets' state
        # (setting one by hand is refused), and the sidebar keeps its typed fields over the switch
        params = story_link(str(row[story]), str(row[system]) if system in row else None)
        if also:
            params.update(story_link(str(row[also]), str(row[also_system]) if also_system in row else None, "with"))
        st.switch_page("app_pages/inspect.py", query_params=params)


def story_link(story_id: str, system: str | None, name: str = "story") -> dict[str, str]:
    """The link parameters of a story: ``story`` (or ``with``) and, when known, its system
    (``system`` / ``with_system``), since a story id alone may name several systems' stories."""
    params = {name: story_id}
    if system:
        params["system" if name == "story" else f"{name}_system"] = system
    return params


def downloads(key: str = "downloads") -> Any:
    """The one place a page (or a tab) puts its downloads: a row after everything else, its
    buttons side by side and wrapping onto another row where the page is narrow (give each button
    ``wrap=True`` so its label is never cut). ``key`` names the row (its element's class is
    ``st-key-vst-<key>``)."""
    return st.container(horizontal=True, key=f"vst-{key}", gap="small")


def page(title: str, caption: str | Callable[[RunView], str] | None = None) -> RunView:
    """A page's title, the frame's notices and problems, and its view (the page stops without one).
    A ``caption`` that depends on the view (a callable) is drawn under the title once the view is
    known."""
    st.title(title)
    later = st.empty() if callable(caption) else None
    if isinstance(caption, str) and caption:
        st.caption(caption, unsafe_allow_html=True)
    frame: Frame = st.session_state[FRAME]
    _notices(frame.notices)
    for error in frame.errors:
        st.error(with_code(error))  # a `quoted` command (the start-up option) shown exactly, copyable
    _problems(frame.problems)
    if frame.view is None:
        if frame.empty_hint:
            st.info(frame.empty_hint)
        st.stop()
    if later is not None and callable(caption):
        later.caption(caption(frame.view), unsafe_allow_html=True)
    return frame.view
