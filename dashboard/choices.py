"""What the sidebar asks for, as plain data, and the settings it means. No streamlit here, so the
mapping from widgets to :class:`~vst_core.config.Settings` is unit-tested on its own."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vst_core.config import DEFAULT_METRICS, Settings, SettingsError, available_metrics
from vst_core.contract import MetricSpec, Option, registry
from vst_core.data.access import PathNotAllowed, Want, confine, probe, shown
from vst_core.data.options import parse_regions
from vst_core.images.options import COMPONENT as IMAGE_COMPONENT
from vst_core.metrics.groovist.options import OPTIONS as GROOVIST_OPTIONS
from vst_core.models.hub import Phrased

DEFAULTS = Settings()
#: The image pipeline's options the sidebar's Grounding section asks for, by setting (their labels,
#: keys, defaults), read from their declarations without building the registry at import.
IMAGE: dict[str, Option] = {o.setting: o for o in IMAGE_COMPONENT.options}
#: GROOVIST's θ as declared (its presets, the slider's range, its label) and its penalty switch.
THETA: Option = next(o for o in GROOVIST_OPTIONS if o.setting == "theta")
PENALTY: Option = next(o for o in GROOVIST_OPTIONS if o.setting == "penalize")
THETA_LOW, THETA_HIGH = THETA.bounds or (0.0, 1.5)

SAMPLE = "Bundled sample"
UPLOAD_IMAGES = "Upload images + stories"
UPLOAD_FILE = "Upload a story file"
SCORES_FILE = "Scores JSONL (no model needed)"
SOURCES: tuple[str, ...] = (SAMPLE, UPLOAD_IMAGES, UPLOAD_FILE, SCORES_FILE)
SLIDER = "slider"
#: The key (and URL parameter) of the Grounding section's toggle, which turns on the CLIP metrics.
GROUNDING = "grounding"


@dataclass(frozen=True)
class Choices:
    """The sidebar's values; defaults are the :class:`Settings` defaults (plus every metric on)."""

    source: str = SAMPLE
    # the metrics' controls (options that are sliders or select boxes, :func:`controls`) by setting,
    # those not at their defaults; given as a mapping, kept as sorted pairs
    tuned: tuple[tuple[str, Any], ...] = ()
    coherence: bool = True
    coherence_model: str = ""  # RoViST-C's switch box ("": its Option's default pair model)
    grounding: bool = True
    clip_arch: str = str(IMAGE["clip_model"].default)
    clip_pretrained: str = str(IMAGE["clip_pretrained"].default or "")
    clip_checkpoint: str = ""
    clip_config: str = ""
    regions: str = str(IMAGE["regions"].default)
    extra_clip: bool = True
    # the metrics' model files as typed, by setting (each metric's model_fields: Vrank's folder turns vrank
    # on, RoViST-VG's checkpoint with a GloVe file rovist_vg); given as a mapping, kept as sorted pairs
    files: tuple[tuple[str, str], ...] = ()
    device: str = DEFAULTS.device
    theta_name: str = str(THETA.default)
    theta_value: float = 0.6
    penalize: bool = bool(PENALTY.default)
    concreteness: bool = True
    plugins: tuple[str, ...] = ()  # installed metrics (the vst_eval.metrics entry points) turned on

    def __post_init__(self) -> None:
        given = self.files
        pairs = given.items() if isinstance(given, Mapping) else given
        object.__setattr__(self, "files", tuple(sorted((str(k), str(v)) for k, v in pairs if v is not None and str(v).strip())))
        tuned = dict(self.tuned.items() if isinstance(self.tuned, Mapping) else self.tuned)
        defaults = {o.setting: o.default for o in controls().values()}
        kept = ((k, v) for k, v in tuned.items() if v is not None and (k not in defaults or v != defaults[k]))
        object.__setattr__(self, "tuned", tuple(sorted(kept)))

    def value(self, name: str) -> str:
        """A sidebar field's value: one of its own, or a metric's model file ('' when not given)."""
        if name in self.__dataclass_fields__:
            return str(getattr(self, name))
        return dict(self.files).get(name, "")

    def changed(self, **changes: Any) -> Choices:
        """A copy with some fields changed, a metric's model file among them."""
        grouped = {"files": dict(self.files), "tuned": dict(self.tuned)}
        for group in grouped:  # given whole: ``changed(files={...})``
            given = changes.pop(group, None)
            if given is not None:
                grouped[group].update(given.items() if isinstance(given, Mapping) else given)
        own = {k: v for k, v in changes.items() if k in self.__dataclass_fields__}
        by_key = {key: o.setting for key, o in controls().items()} | {o.setting: o.setting for o in controls().values()}
        for k, v in changes.items():
            if k not in own:  # a control by its setting or key, else a metric's model file
                grouped["tuned" if k in by_key else "files"][by_key.get(k, k)] = v
        return replace(self, **own, files=tuple(grouped["files"].items()), tuned=tuple(grouped["tuned"].items()))

    @property
    def theta(self) -> str:
        """A θ preset name, or the slider's number as text."""
        return str(self.theta_value) if self.theta_name == SLIDER else self.theta_name

    @property
    def clip_metrics(self) -> tuple[str, ...]:
        """The image metrics the grounding toggle turns on: the first built-in metric that needs CLIP
        (GROOVIST), and with ``extra_clip`` every other one that needs CLIP and no model of its own
        (in the registry's order), then each image metric with a model of its own whose fields are
        filled in (RoViST-VG's, COSMic's). An installed metric is turned on or off under "More
        metrics" (:func:`plugin_metrics`)."""
        own = model_metrics()
        clip = clip_builtins()
        return clip[: None if self.extra_clip else 1] + tuple(
            m for m, spec in own.items() if of_images(spec) and self.filled(spec)
        )

    def switched_on(self) -> tuple[str, ...]:
        """The metrics with a section of their own (:class:`~vst_core.contract.Switch`) whose toggle is on."""
        return tuple(name for name in registry().switched if getattr(self, name, False))

    def filled(self, spec: MetricSpec) -> bool:
        """Whether every required model field of a metric is filled in."""
        return all(self.value(f.setting).strip() for f in spec.showing.model_fields if f.required)


def clip_builtins() -> tuple[str, ...]:
    """The built-in metrics that need CLIP and no model of their own, in the registry's order: the
    first (GROOVIST) comes with the grounding toggle, the others with “Also …” (:func:`extra_clip_label`);
    one that needs images beyond the story's own (character alignment, the characters' crops) is
    offered by name under "More metrics", off by default."""
    own, installed = model_metrics(), {s.name for s in registry().plugins}
    beside = {
        s.name for s in registry().specs.values() if s.computing.image_refs is not None
    }  # offered by name: crops of characters
    return tuple(
        m
        for m in available_metrics()
        if m in registry().with_need("clip") and m not in own and m not in installed and m not in beside
    )


def extra_clip_label() -> str:
    """The label of the checkbox that adds the other CLIP metrics, by their titles.

    >>> extra_clip_label()
    'Also CLIPScore and RoViST-VG (CLIP)'
    """
    return "Also " + " and ".join(registry().spec(m).title for m in clip_builtins()[1:])


def model_metrics() -> dict[str, MetricSpec]:
    """The metrics whose models the sidebar asks for by their files (a required one among their
    ``model_fields``: the metric is on when those are filled in), in the registry's order."""
    return {name: spec for name, spec in registry().specs.items() if any(f.required for f in spec.showing.model_fields)}


def boxed_metrics() -> dict[str, MetricSpec]:
    """The metrics with a box in the sidebar for a file of theirs (any ``model_fields``: those of
    :func:`model_metrics`, and metrics offered by name with an optional file, as the example
    plugin's stopword list), in the registry's order."""
    return {name: spec for name, spec in registry().specs.items() if spec.showing.model_fields}


def of_images(spec: MetricSpec) -> bool:
    """Whether a metric works on the images (its fields are drawn under Grounding, and it comes with it)."""
    return bool({"images", "clip"} & spec.computing.needs)


def own_controls() -> frozenset[str]:
    """The metrics the sidebar has its own controls for (or does not run: those not ``offered``, the
    judge's chat model per story belongs to `vst score`): RoViST-NR (always on), each metric with a
    section of its own (RoViST-C's), the built-in CLIP metrics and every metric asked for by its
    model's files; every other metric that can be computed is offered by name."""
    reg = registry()
    clip = {
        s.name
        for s in reg.specs.values()
        if "clip" in s.computing.needs and s not in reg.plugins and s.computing.image_refs is None
    }
    hidden = {name for name, s in reg.specs.items() if not s.showing.offered}
    return frozenset({*DEFAULT_METRICS, *reg.switched, *hidden, *clip, *model_metrics()})


def plugin_metrics() -> dict[str, str]:
    """The metrics the sidebar offers by name (installed packages', and any built-in without a
    control of its own): name -> title."""
    return {s.name: s.title for s in registry().specs.values() if s.computing.score is not None and s.name not in own_controls()}


def clip_key(arch: str, pretrained: str | None, checkpoint: str | None, config: str | None) -> str:
    """What identifies a CLIP request, from the sidebar's fields or the settings they make (blank
    fields count as absent, as :func:`settings_for` reads them)."""
    fields = (arch, pretrained or None, (checkpoint or "").strip() or None, (config or "").strip() or None)
    return "|".join(map(str, fields))


def settings_for(choices: Choices) -> Settings:
    """The settings the sidebar describes (SettingsError when they cannot be used)."""
    metrics = (
        DEFAULT_METRICS
        + choices.switched_on()
        + (choices.clip_metrics if choices.grounding else ())
        + tuple(m for m, spec in model_metrics().items() if not of_images(spec) and choices.filled(spec))
        + tuple(p for p in choices.plugins if p in plugin_metrics())
    )
    paths: dict[str, Any] = {
        f.setting: choices.value(f.setting).strip() or None for s in boxed_metrics().values() for f in s.showing.model_fields
    }
    paths = {k: v for k, v in paths.items() if v is not None or registry().options[k][1].default is None}  # empty: its default
    regions = parse_regions(choices.regions, DEFAULTS.option("regions"))
    return Settings(
        metrics=metrics,
        clip_model=choices.clip_arch,
        clip_pretrained=choices.clip_pretrained or None,
        clip_checkpoint=choices.clip_checkpoint.strip() or None,
        clip_config=choices.clip_config.strip() or None,
        theta=choices.theta,
        penalize=choices.penalize,
        weighting="concreteness" if choices.concreteness else "none",
        device=choices.device,
        regions=regions.kind,
        regions_file=regions.file,
        options=tuple(
            {
                **paths,
                **{sw.setting: box for sw in registry().switched.values() if (box := choices.value(sw.setting))},
                **dict(choices.tuned),
            }.items()
        ),
    )


def base_of(settings: Settings) -> Settings:
    """The settings models actually run with: those a metric re-aggregates from its records (GROOVIST's
    θ, penalty and weighting) at their defaults, applied afterwards by re-aggregating the stored
    similarities (:func:`vst_core.scoring.reaggregate.reaggregate`)."""
    found = registry().reaggregated
    return settings.with_(**{k: DEFAULTS.option(k) for k in (found[1].settings if found is not None else ())})


def settings_for_file(choices: Choices, recorded: Settings) -> Settings:
    """Settings recorded in a scores file, with the sidebar's θ / −P / −C applied on top (a θ left
    at the default preset keeps the file's)."""
    return recorded.with_(
        theta=choices.theta if choices.theta_name != DEFAULTS.option("theta") else recorded.option("theta"),
        penalize=choices.penalize,
        weighting=recorded.option("weighting") if choices.concreteness else "none",
    )


def with_options(settings: Settings, given: Mapping[str, str], who: str) -> tuple[Settings, str | None]:
    """``settings`` with the metric's options typed in boxes (``given``: setting -> text; an empty box
    keeps the run's value), or unchanged with the reason when they cannot be used (a notice naming
    ``who``, never an exception).

    >>> with_options(Settings(), {"judge_endpoint": "http://127.0.0.1:8000/v1", "judge_served_model": ""}, "judge")[1]
    'judge: judge_endpoint needs judge_served_model (the model name the server serves)'
    """
    options = registry().options
    try:
        values = {k: options[k][1].parse(v.strip()) if k in options else v.strip() for k, v in given.items() if v.strip()}
        return (settings.with_(**values), None) if values else (settings, None)
    except (SettingsError, ValueError) as exc:  # a number or on/off box's text that is none, a refused value
        return settings, f"{who}: {exc}"


def without(settings: Settings, metrics: tuple[str, ...] | frozenset[str]) -> Settings:
    """``settings`` minus some metrics (a model that is not available)."""
    return settings.with_(metrics=tuple(m for m in settings.metrics if m not in metrics))


def without_clip(settings: Settings) -> Settings:
    """``settings`` without the metrics that need CLIP (RoViST-VG's own model does not)."""
    return without(settings, registry().with_need("clip"))


#: The sidebar fields that may name a server path and are not a metric's model files or boxes: their
#: label, the value used instead, and what they must name when they name something that exists (a
#: missing one is left to its loader, which says so, or takes the value as a model name).
_PATH_FIELDS: dict[str, tuple[str, str, Want]] = {
    "clip_pretrained": (IMAGE["clip_pretrained"].label, str(IMAGE["clip_pretrained"].default or ""), "any"),
    "clip_checkpoint": (IMAGE["clip_checkpoint"].label, "", "file"),
    "clip_config": (IMAGE["clip_config"].label, "", "file"),
    "regions": (IMAGE["regions"].label, str(IMAGE["regions"].default), "file"),
}


def path_fields() -> dict[str, tuple[str, str, Want]]:
    """Every sidebar field that may name a server path: label, the value used instead, what it must
    name; the metrics' own boxes (their :class:`~vst_core.contract.Switch`) first, then the
    sidebar's own fields, then the metrics' model files (their ``model_fields``)."""
    boxes: dict[str, tuple[str, str, Want]] = {
        sw.setting: (sw.box, str(DEFAULTS.option(sw.setting)), "any") for sw in registry().switched.values()
    }
    models = {f.setting: (f.label, "", f.kind) for s in boxed_metrics().values() for f in s.showing.model_fields}
    return {**boxes, **_PATH_FIELDS, **models}


_KEYWORDS = {"grid", "detector"}


def _path_part(field: str, value: str) -> str:
    """The part of a field's value that would be read as a path ('' for keywords and names)."""
    box = next((sw for sw in registry().switched.values() if sw.setting == field), None)
    if box is not None:
        return box.path(value)
    value = value.strip()
    if field == "regions":  # read as settings_for reads it: '' is the default (a keyword)
        return parse_regions(value, DEFAULTS.option("regions")).file or ""
    return "" if value in _KEYWORDS else value


def confined(choices: Choices, roots: Sequence[Path]) -> tuple[Choices, list[str]]:
    """The choices with every server path outside ``roots``, or one that exists but cannot be used
    (a folder for a file, a FIFO, no permission, a loop of links: see
    :func:`vst_core.data.access.probe`), replaced by the field's default, and a notice per refusal
    naming the sidebar field (see :func:`vst_core.data.access.confine`). Never raises."""
    notices: list[str] = []
    changes: dict[str, str] = {}
    for name, (label, default, kind) in path_fields().items():
        part = _path_part(name, choices.value(name))
        if not part:
            continue
        try:
            path = confine(part, roots, what=label)
            if name == "clip_config" and not part.lower().endswith(".json"):  # open_clip would register a whole folder
                raise PathNotAllowed(f"{label} {shown(part)} is not a .json file")
            why = probe(path, kind, missing_ok=True)
            if why is not None:
                raise PathNotAllowed(f"{label} {shown(part)} {why}")
        except PathNotAllowed as exc:
            notices.append(f"{exc}; “{label}” is back to {default or 'empty'}")
            changes[name] = default
    return choices.changed(**changes), notices


def _is_bool(v: str) -> bool:
    return v in ("true", "false")


def _is_float_in(low: float, high: float) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        try:
            x = float(v)
        except ValueError:
            return False
        return math.isfinite(x) and low <= x <= high

    return check


def _is_int_in(low: int, high: int) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        return re.fullmatch(r"-?[0-9]{1,12}", v.strip()) is not None and low <= int(v) <= high

    return check


#: What each value bound to the URL may be (and each metric's own toggle, :func:`url_rules`);
#: anything else falls back to the widget's default.
URL_VALUES: dict[str, tuple[Callable[[str], bool], str]] = {
    "source": (lambda v: v in SOURCES, "one of the four story sources"),
    GROUNDING: (_is_bool, "true or false"),
    "extra_clip": (_is_bool, "true or false"),
    "penalize": (_is_bool, "true or false"),
    "concreteness": (_is_bool, "true or false"),
    "device": (lambda v: v in ("auto", "cpu", "cuda"), "auto, cpu or cuda"),
    "theta_name": (lambda v: v in (*dict(THETA.presets), SLIDER), f"one of {', '.join((*dict(THETA.presets), SLIDER))}"),
    "theta_value": (_is_float_in(THETA_LOW, THETA_HIGH), f"a number from {THETA_LOW:g} to {THETA_HIGH:g}"),
}


def url_rules() -> dict[str, tuple[Callable[[str], bool], str]]:
    """:data:`URL_VALUES`, each metric's controls (:func:`control_rule`) and the toggle of each
    metric with a section of its own (true or false)."""
    own = {key: control_rule(o) for key, o in controls().items()}
    return {**URL_VALUES, **own, **dict.fromkeys(registry().switched, (_is_bool, "true or false"))}


def controls() -> dict[str, Option]:
    """Every metric's controls in the sidebar, by their key (and URL parameter), in the registry's
    order: its options that are a number with bounds or a text with choices, with a label.

    >>> {key: controls()[key].setting for key in ("variant", "ngram")}  # RoViST-NR's
    {'variant': 'nr_variant', 'ngram': 'nr_ngram'}
    """
    return {o.control_key: o for spec in registry().specs.values() for o in spec.signing.options if o.is_control}


def control_rule(option: Option) -> tuple[Callable[[str], bool], str]:
    """What a control's value in a link may be: one of its choices, or a number within its bounds.

    >>> control_rule(controls()["ngram"])[1], control_rule(controls()["variant"])[0]("reference")
    ('a whole number from 2 to 8', True)
    """
    if option.choices:
        return (lambda v: v in option.choices, " or ".join(option.choices))
    low, high = option.bounds or (-math.inf, math.inf)
    if option.kind == "int":
        return (_is_int_in(int(low), int(high)), f"a whole number from {int(low)} to {int(high)}")
    return (_is_float_in(low, high), f"a number from {low:g} to {high:g}")


def url_notices(params: Mapping[str, str]) -> list[str]:
    """One notice per value in a link that the sidebar cannot take (the default is used instead)."""
    notices = []
    rules = url_rules()
    for key, value in params.items():
        rule = rules.get(key)
        if rule is not None and not rule[0](value):
            notices.append(f"The link value {key}={value[:40]!r} is not valid ({rule[1]}); the default is used")
    return notices


#: The sidebar control of each setting a model's message may name (besides each metric's own boxes,
#: :func:`sidebar_words`): (setting, value) first, then the setting alone.
SIDEBAR_CONTROLS: dict[tuple[str, str], str] = {
    ("clip_checkpoint", "PATH"): f"the sidebar's “{IMAGE['clip_checkpoint'].label}”",
    **{(name, ""): f"“{IMAGE[name].label}”" for name in ("clip_checkpoint", "clip_model", "clip_config", "regions")},
    ("clip_activation", "quickgelu"): f"a “{IMAGE['clip_model'].label}” ending in -quickgelu",
    ("clip_activation", "gelu"): f"a “{IMAGE['clip_model'].label}” without -quickgelu",
    ("device", "cpu"): "“Device” cpu",
    ("device", ""): "“Device”",
}


def sidebar_words(setting: str, placeholder: str = "") -> str:
    """The sidebar's words for a setting a model's message names (:func:`vst_core.models.hub.option`):
    the box of a metric's model file, a metric's own box, or the control of :data:`SIDEBAR_CONTROLS`.

    >>> sidebar_words("vrank_model", "DIR"), sidebar_words("coherence_model", "PATH")
    ('“Vrank model folder”', "the sidebar's “Pair model” (a local folder)")
    >>> sidebar_words("clip_activation", "quickgelu")
    'a “CLIP architecture” ending in -quickgelu'
    """
    for spec in boxed_metrics().values():
        for f in spec.showing.model_fields:
            if f.setting == setting:
                return f"“{f.label}”"
    for sw in registry().switched.values():
        if setting in (sw.setting, *sw.loads):
            return f"the sidebar's “{sw.box}” (a local folder)" if placeholder else f"“{sw.box}”"
    found = SIDEBAR_CONTROLS.get((setting, placeholder)) or SIDEBAR_CONTROLS.get((setting, ""))
    if found is not None:
        return found
    return f"the setting {setting}" + (f" ({placeholder})" if placeholder else "")


def in_sidebar_terms(error: BaseException) -> str:
    """An error as the sidebar says it: a model's message with each setting it names in the
    sidebar's words (:func:`sidebar_words`); any other error as it is.

    >>> from vst_core.models.hub import ModelLoadError, option
    >>> in_sidebar_terms(ModelLoadError(f"train one, then pass {option('vrank_model', 'DIR')}"))
    'train one, then pass “Vrank model folder”'
    """
    return error.phrased(sidebar_words) if isinstance(error, Phrased) else str(error)


def device_notice(device: str, cuda: bool | Callable[[], bool]) -> tuple[str, str | None]:
    """(the device to use, one notice) for the sidebar's choice on a machine with or without CUDA;
    ``cuda`` may be a check, called only for the choice ``cuda`` (so ``auto`` and ``cpu`` need no torch)."""
    if device == "cuda" and not (cuda() if callable(cuda) else cuda):
        return "cpu", "“Device” is cuda but this machine has no CUDA GPU: every model runs on the cpu"
    return device, None


def typed_paths(text: str) -> list[str]:
    """The paths of a field that takes several separated by ';', stripped, empty ones dropped."""
    return [part.strip() for part in text.split(";") if part.strip()]


def scores_paths(text: str, images: str, roots: Sequence[Path]) -> tuple[list[Path], Path | None, str | None]:
    """(the scores files, the images folder or None, why not) of the sidebar's typed fields: each
    ';'-separated scores path confined to ``roots`` and an existing regular file, the images folder
    (when given) confined and a folder. Never raises: every refusal or OS error is the message, which
    names the field and never a server folder; nothing is read here (see
    :func:`vst_core.data.scores_io.checked_scores` for the open)."""
    paths: list[Path] = []
    try:
        for part in typed_paths(text):
            path = confine(part, roots, what="scores file")
            why = probe(path)
            if why is not None:
                return [], None, f"scores file {why}: {shown(path.name)}"
            paths.append(path)
        folder = confine(images.strip(), roots, what="images folder") if images.strip() else None
    except PathNotAllowed as exc:
        return [], None, str(exc)
    why = probe(folder, "folder") if folder is not None else None
    if why is not None:
        return [], None, f"“Folder of the story file” {why}"
    return paths, folder, None


def story_widget_key(prefix: str, system: str, story_id: str) -> str:
    """A widget key for one story: ``prefix`` and a digest of ``(system, story_id)``, never the two
    joined (ids may hold any separator, so two stories could share a joined key)."""
    from vst_core.hashing import json_digest

    return f"{prefix}-{json_digest([system, story_id])[:16]}"
