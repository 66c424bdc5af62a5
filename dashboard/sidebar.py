"""The sidebar, drawn once by the app's frame: where the stories come from and how to score them.
Widgets live in the entry point, so they keep their values across pages; the choices that make a
view (and the scores files named, never a model path) are bound to the URL, so a view can be shared by link."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from dashboard import loading, session
from dashboard.choices import (
    DEFAULTS,
    GROUNDING,
    IMAGE,
    PENALTY,
    SCORES_FILE,
    SLIDER,
    SOURCES,
    THETA,
    THETA_HIGH,
    THETA_LOW,
    UPLOAD_FILE,
    UPLOAD_IMAGES,
    Choices,
    boxed_metrics,
    clip_key,
    confined,
    controls,
    extra_clip_label,
    model_metrics,
    of_images,
    plugin_metrics,
    scores_paths,
    url_notices,
)
from dashboard.keys import LINK_NOTICES, MODEL_STATUS
from vst_core.config import settings_from_signature
from vst_core.contract import registry
from vst_core.data import MAX_UPLOAD_IMAGES, StorySet, story_set_from_upload
from vst_core.data.index import ScoresIndex
from vst_core.data.paths import IMAGE_SUFFIXES
from vst_core.hashing import json_digest
from vst_core.signature import describe_signature
from vst_core.viz.safe import md, say

URL: Literal["query-params"] = "query-params"


@dataclass
class Input:
    """The story set the sidebar loaded, or why not; records when it came from a scores file."""

    story_set: StorySet | None = None
    error: str | None = None
    index: ScoresIndex | None = None  # scores files: their numbers indexed, evidence read lazily
    root: Path | None = None  # the folder a scores file's image paths are relative to
    messages: list[str] = field(default_factory=list)
    link_notices: list[str] = field(default_factory=list)


#: Sidebar text fields kept across page switches, with every metric's model files (``model_fields``)
#: and the story typed on Inspect (``typed_story``, never in the URL); of the paths only the scores
#: files are bound to the URL (confined to the allowed folders like a typed one), the model files are
#: never read from a link.
KEPT_FIELDS = (
    "scores_path", "scores_images", "upload_stories", "clip_arch", "clip_pretrained", "clip_checkpoint", "clip_config",
    "regions", "typed_story",
)  # fmt: skip

IMAGE_TYPES = [suffix.lstrip(".") for suffix in IMAGE_SUFFIXES]


def _text_input(label: str, default: str, *, key: str, **kwargs: Any) -> str:
    """``st.text_input`` whose default is set in the session state once, not passed with a key the
    session state already holds (Streamlit then prints a warning on every fresh process)."""
    if key not in st.session_state:
        st.session_state[key] = default
    return str(st.text_input(label, key=key, **kwargs))


def render() -> tuple[Choices, Input]:
    """Draw the sidebar; its choices (server paths confined to the allowed folders) and the data it
    loaded, with a notice for each value of a link it could not take."""
    link = url_notices({key: st.query_params[key] for key in st.query_params})  # before the widgets drop them
    link = link or st.session_state.pop(LINK_NOTICES, [])  # carried over a rerun of the frame
    models = [f.setting for spec in boxed_metrics().values() for f in spec.showing.model_fields]
    boxes = [sw.setting for sw in registry().switched.values()]
    for key in (*KEPT_FIELDS, *boxes, *models):  # a page switch (a click in a table) would otherwise forget the typed paths
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    with st.sidebar:
        st.header("Data")
        source = str(st.radio("Story set", list(SOURCES), key="source", bind=URL))
        data = _data(source)
        if data.index is not None:  # the numbers come from the files: show their settings, ask nothing
            values: dict[str, Any] = {"source": source, **_from_files(data.index)}
        else:
            switches, grounding, more = _switches(), _grounding(), _plugins()
            files = {**switches.pop("files"), **grounding.pop("files"), **more.pop("files", {})}
            values = {"source": source, "tuned": _controls(), **switches, **grounding, **more, "files": files}
    choices, refused = confined(Choices(**values), session.roots())
    data.messages[:0] = [*link, *refused]
    data.link_notices = link
    return choices, data


def _files_key(files: list[UploadedFile], *extra: str) -> str:
    """A key for uploaded files: the ids Streamlit gives each upload (a new upload, a new id), so a
    rerun neither copies nor hashes the files' bytes."""
    return json_digest([[f.file_id, f.name, f.size] for f in files] + list(extra))


def _contents(files: list[UploadedFile]) -> list[tuple[str, bytes]]:
    return [(f.name, f.getvalue()) for f in files]


def _data(source: str) -> Input:
    if source == UPLOAD_IMAGES:
        files = st.file_uploader(
            f"Images of one sequence, in order (1-{MAX_UPLOAD_IMAGES})",
            type=IMAGE_TYPES,
            accept_multiple_files=True,
            key="upload_images",
        )
        text = st.text_area(
            "Candidate stories, one per line",
            key="upload_stories",
            placeholder="model-a: We went to the beach. | The waves were huge. | ...",
            help="optionally 'system: ' first; '|' between sentences (one per image), else sentences are split automatically",
        )
        if not files:
            return Input()
        story_set, messages = session.cached(
            _files_key(files, text), lambda folder: story_set_from_upload(_contents(files), text, folder)
        )
        return Input(story_set, messages=list(messages))
    if source == SCORES_FILE:
        return _scores()
    if source == UPLOAD_FILE:
        files = st.file_uploader(
            "Story set (JSON, JSONL, VIST, or a VWP table) with its images",
            type=["json", "jsonl", "csv", "tsv", "parquet", "zip", *IMAGE_TYPES],
            accept_multiple_files=True,
            key="upload",
            help="add the images the file names (several files, or one .zip keeping their folders) to see them and score grounding",
        )
        if not files:
            return Input()
        story_set, error, messages = session.cached(
            _files_key(files), lambda folder: loading.read_upload(_contents(files), folder)
        )
        return Input(story_set, error, messages=list(messages))
    return Input(*loading.story_file(str(loading.SAMPLE), loading.SAMPLE.stat().st_mtime))


def _scores() -> Input:
    """Scores JSONL files: uploaded (with their images), or paths inside the folders the server
    allows; several files are merged story by story, ``(system, story_id)``."""
    files = st.file_uploader(
        "Scores JSONL written by `vst score` or `vst import-scores`, with its images",
        type=["jsonl", "zip", *IMAGE_TYPES],
        accept_multiple_files=True,
        key="scores_upload",
        help="several scores files are merged per story and metric; add the images of the story file the "
        "scores were made from (several files, or a .zip keeping their folders)",
    )
    text = st.text_input(
        "…or scores files on this server",
        "",
        key="scores_path",
        bind=URL,
        help="inside the working directory or a folder allowed at start-up (`-- --data FOLDER`); several "
        "files separated by ';' are merged per story (system, story_id) and metric. Kept in the page's link, so "
        "a shared link reopens the same files (read only inside the allowed folders, as when typed)",
    ).strip()
    images_dir = st.text_input(
        "Folder of the story file (for images)",
        "",
        key="scores_images",
        bind=URL,
        help="images are looked up relative to the story file the scores were made from",
    ).strip()
    if files:
        folder_key = _files_key(files, "scores")
        paths, error, messages = session.cached(folder_key, lambda folder: loading.scores_upload(_contents(files), folder))
        if not paths:
            return Input(error=error, messages=list(messages))
        index, error = loading.scores_index(paths)
        return Input(error=error, index=index, root=paths[0].parent, messages=list(messages))
    if not text:
        return Input()
    paths, images, why = scores_paths(text, images_dir, session.roots())
    if why is not None or not paths:
        return Input(error=why or "no scores file named")
    index, error = loading.scores_index(paths)
    return Input(error=error, index=index, root=images or paths[0].parent)


def _from_files(index: ScoresIndex) -> dict[str, Any]:
    """The settings recorded in loaded scores files, shown instead of the controls (no model runs
    and nothing is re-scored: change them with `vst score`); the choices the frame ignores."""
    st.header("Settings")
    st.caption("From the scores file(s): every number is shown as it was computed or imported.")
    lines = []
    for sig in index.signatures.values():
        lines.append(f"- {say(describe_signature(sig), session.roots())}")  # names from the files
    st.markdown("\n".join(lines[:6]) + ("\n- …" if len(lines) > 6 else ""))
    recorded = settings_from_signature(index.first_signature())
    values: dict[str, Any] = {"tuned": {o.setting: recorded.option(o.setting) for o in controls().values()}, GROUNDING: False}
    values.update(dict.fromkeys(registry().switched, False))
    if len(index.phrases):  # the files keep every phrase's similarity: θ and the ablations apply again
        st.header("Grounding")
        values.update(_theta_controls(False, None, recorded.option("theta")))
        again = registry().reaggregated
        whose = md(registry().spec(again[0]).title) + " " if again else ""
        st.caption(
            f"θ, −P and −C are re-applied to the stored similarities of computed {whose}scores; imported ones stay as released."
        )
    return values


def _theta_controls(idle: bool, reason: str | None, recorded: str | None = None) -> dict[str, Any]:
    """θ (preset or slider) and the −P / −C ablations: re-applied to stored similarities, no model.
    ``recorded``: the θ a scores file was computed with, which the default entry keeps (so it is
    labelled with it, not with the default preset's name)."""
    values: dict[str, Any] = {}

    def label(name: str) -> str:
        if recorded is None or name != DEFAULTS.option("theta") or str(recorded) == DEFAULTS.option("theta"):
            return name
        try:
            value = float(recorded)
        except ValueError:
            return f"as the file: {recorded}"
        presets = [k for k, v in THETA.presets if abs(float(v) - value) < 1e-9]
        if presets and presets[0] == DEFAULTS.option("theta"):
            return name
        return f"as the file: {presets[0]} ({value:g})" if presets else f"as the file: {value:g}"

    values["theta_name"] = st.selectbox(
        THETA.label, [*dict(THETA.presets), SLIDER], key="theta_name", bind=URL, disabled=idle, help=reason, format_func=label
    )
    if values["theta_name"] == SLIDER:
        values["theta_value"] = st.slider(
            "θ",
            THETA_LOW,
            THETA_HIGH,
            0.6,
            0.005,
            key="theta_value",
            bind=URL,
            disabled=idle,
            help=reason or "re-renders from cached similarities",
        )
    values["penalize"] = st.checkbox(
        PENALTY.label, value=bool(PENALTY.default), key="penalize", bind=URL, disabled=idle, help=reason
    )
    values["concreteness"] = st.checkbox(
        "Concreteness weights (untick: ablation −C)", value=True, key="concreteness", bind=URL, disabled=idle, help=reason
    )
    return values


def _controls() -> dict[str, Any]:
    """Each metric's controls (:func:`dashboard.choices.controls`) under its title, in the registry's
    order: a select box for a text with choices, a slider for a number with bounds; their values
    by setting."""
    values: dict[str, Any] = {}
    titles = {o.setting: spec.title for spec in registry().specs.values() for o in spec.signing.options}
    shown = ""
    for key, o in controls().items():
        if titles[o.setting] != shown:
            shown = titles[o.setting]
            st.header(shown)
        if o.choices:
            first = o.choices.index(o.default) if o.default in o.choices else 0
            values[o.setting] = st.selectbox(o.label, list(o.choices), first, key=key, bind=URL, help=o.help or None)
            continue
        low, high = o.bounds or (0, 1)
        number = int if o.kind == "int" else float
        start = number(o.default if isinstance(o.default, (int, float)) else low)
        values[o.setting] = number(st.slider(o.label, number(low), number(high), start, key=key, bind=URL, help=o.help or None))
    return values


def _unavailable(model: str, key: str) -> str | None:
    """Why ``model`` could not load at the last try of this very request (None: it loads or untried)."""
    asked, reason = st.session_state.get(MODEL_STATUS, {}).get(model, ("", None))
    return reason if asked == key else None


def _model_toggle(model: str, key: str, label: str, purpose: str, off: str) -> bool:
    """The on/off toggle of ``model`` (bound to the URL): shown off and disabled, with the reason,
    while the request ``key`` is known not to load; whether the model is on."""
    why = _unavailable(model, key)
    if why:
        st.session_state[model] = False  # shown off, as it is
    on = st.toggle(
        label,
        value=why is None,  # off and disabled when the model does not load
        key=model,
        bind=URL,
        disabled=why is not None,
        help=f"unavailable: {say(why, session.roots())}" if why else purpose,
    )
    if why:
        st.caption(f"⚠️ Off: {off}")
    return bool(on) and why is None


def _switches() -> dict[str, Any]:
    """A section for each metric with one of its own (its :class:`~vst_core.contract.Switch`: a
    text box naming its model and its toggle), then the boxes of the model files of the metrics
    that do not work on the images (their ``model_fields``)."""
    values: dict[str, Any] = {}
    for name, sw in registry().switched.items():
        st.header(sw.header)
        model = _text_input(sw.box, str(DEFAULTS.option(sw.setting)), key=sw.setting, help=sw.help or None)
        values[name] = _model_toggle(name, model, sw.label, sw.purpose, sw.off)
        values[sw.setting] = model
    return {**values, "files": _model_fields(images=False, idle=False)}


def _model_fields(*, images: bool, idle: bool) -> dict[str, str]:
    """A text box for each model file of the metrics that work on the images (or of the others),
    from their ``model_fields``: a metric is on when its required ones are filled in."""
    values: dict[str, str] = {}
    for spec in model_metrics().values():
        if of_images(spec) != images:
            continue
        for k, f in enumerate(spec.showing.model_fields):
            label = f"{f.label} (optional)" if k == 0 or not f.required else f.label
            values[f.setting] = _text_input(label, "", key=f.setting, disabled=idle, help=f.help or None)
    return values


def _plugins() -> dict[str, Any]:
    """The metrics without a control of their own: other packages' (``vst_eval.metrics`` entry
    points, on by default) and built-in ones such as character consistency (off by default: it
    needs stories with named characters); nothing is drawn when there is none."""
    from vst_core.contract import BUILTIN_METRICS

    found = plugin_metrics()
    if not found:
        return {}
    chosen = st.multiselect(
        "More metrics",
        list(found),
        default=[name for name in found if name not in BUILTIN_METRICS],
        format_func=lambda name: f"{found[name]} ({name})",
        key="plugins",
        help="metrics without a control of their own here: character consistency (for stories with named characters, "
        "as VWP's) and those other packages add (the vst_eval.metrics entry-point group; `vst metrics` lists them all)",
    )
    files = {  # an optional file of a metric offered here (the example plugin's stopword list)
        f.setting: _text_input(f"{f.label} (optional)", "", key=f.setting, disabled=name not in chosen, help=f.help or None)
        for name, spec in boxed_metrics().items()
        if name in found and name not in model_metrics()
        for f in spec.showing.model_fields
    }
    return {"plugins": tuple(chosen), "files": files}


def _grounding() -> dict[str, Any]:
    st.header("Grounding")
    values: dict[str, Any] = {
        IMAGE[name].control_key: _text_input(
            IMAGE[name].label + (" (JSON, optional)" if name == "clip_config" else ""),
            str(IMAGE[name].default or ""),
            key=IMAGE[name].control_key,
        )
        for name in ("clip_model", "clip_pretrained", "clip_checkpoint", "clip_config")
    }
    values[GROUNDING] = _model_toggle(
        GROUNDING,
        clip_key(values["clip_arch"], values["clip_pretrained"], values["clip_checkpoint"], values["clip_config"]),
        f"{registry().spec(GROUNDING).title} with CLIP",
        "noun phrases matched to image regions",
        "CLIP does not load (see the notice on the page). Give loadable CLIP fields above to use it.",
    )
    idle = not values[GROUNDING]
    reason = "grounding is off: θ, the penalty and the weighting change nothing" if idle else None
    values["regions"] = _text_input(
        IMAGE["regions"].label,
        str(IMAGE["regions"].default),
        key=IMAGE["regions"].control_key,
        disabled=idle,
        help="grid (ten weight-free proposals), detector (Faster R-CNN, needs its weights) or a regions CSV path",
    )
    values["extra_clip"] = st.checkbox(extra_clip_label(), value=True, key="extra_clip", bind=URL, disabled=idle)
    values["files"] = _model_fields(images=True, idle=idle)
    values["device"] = st.selectbox("Device", ["auto", "cpu", "cuda"], key="device", bind=URL)
    values.update(_theta_controls(idle, reason))
    return values
