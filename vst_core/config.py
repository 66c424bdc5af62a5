"""One typed settings object for a scoring run, and its reproducibility signature."""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vst_core.limits import MAX_STORY_CHARS as MAX_STORY_CHARS
from vst_core.limits import MAX_STORY_SENTENCES as MAX_STORY_SENTENCES
from vst_core.limits import story_limit_reason as story_limit_reason
from vst_core.limits import text_limit_reason as text_limit_reason
from vst_core.metric_spec import BUILTIN_METRICS, DEFAULT_METRICS, registry
from vst_core.metrics.grounding import THETA_PRESETS, resolve_theta
from vst_core.metrics.variants import GroundingProfile

_log = logging.getLogger(__name__)


#: Device nodes one of which a machine where CUDA can run has (Linux, WSL).
_GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")


def default_cache_dir() -> Path:
    """This product's cache folder: ``VST_CACHE_DIR``, else ``$XDG_CACHE_HOME/vst-eval`` (``~/.cache/vst-eval``)."""
    base = os.environ.get("VST_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "vst-eval")
    return Path(base)


__all__ = [
    "DEVICE_BATCH",
    "AVAILABLE_METRICS",
    "available_metrics",
    "CLIP_ENCODER_METRICS",
    "CLIP_METRICS",
    "IMAGE_METRICS",
    "THETA_PRESETS",
    "Settings",
    "REFERENCE_SYSTEMS",
    "SET_METRICS",
    "SettingsError",
    "parse_metrics",
]


#: Metrics this installation knows (built-in and installed), with a one-line description for
#: --help and the app: the registry's (:mod:`vst_core.metric_spec`).
AVAILABLE_METRICS: dict[str, str]
#: Metrics computed over the stories of a sequence together (pairs of stories, a reference story).
SET_METRICS: frozenset[str]
#: Metrics computed from a story's images and their regions.
IMAGE_METRICS: frozenset[str]
#: The metrics that load CLIP (its weights are in the signature).
CLIP_ENCODER_METRICS: frozenset[str]
#: Every image metric (the grounder computes them), RoViST-VG's model included.
CLIP_METRICS: frozenset[str]


def __getattr__(name: str) -> Any:
    """The registry's views by what the metrics need, read when asked."""
    if name not in ("AVAILABLE_METRICS", "SET_METRICS", "IMAGE_METRICS", "CLIP_METRICS", "CLIP_ENCODER_METRICS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    reg = registry()
    if name == "AVAILABLE_METRICS":
        return available_metrics()
    if name == "SET_METRICS":
        return reg.with_need("sequence")
    if name in ("IMAGE_METRICS", "CLIP_METRICS"):
        return reg.with_need("images")
    if name == "CLIP_ENCODER_METRICS":
        return reg.with_need("clip")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def available_metrics() -> dict[str, str]:
    """The metrics this installation can compute, with their descriptions (the registry's)."""
    return {n: s.description for n, s in registry().specs.items() if s.computing.score is not None}


#: Systems taken as the reference story of a sequence when ``reference_system`` is not set, in order.
REFERENCE_SYSTEMS: tuple[str, ...] = ("reference", "human", "gt", "ground_truth", "gold")

#: Libraries whose versions can change a score; recorded in every signature.
_VERSIONED_PACKAGES: tuple[str, ...] = ("vst-eval", "numpy", "spacy", "torch", "transformers", "open_clip_torch")


class SettingsError(ValueError):
    """Settings that cannot be used (unknown metric, bad n-gram size, ...)."""


def parse_metrics(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``"a,b"`` into a tuple of known metric names, in order, without duplicates."""
    names = value.split(",") if isinstance(value, str) else list(value)
    cleaned = tuple(dict.fromkeys(n.strip().lower() for n in names if n.strip()))
    if not cleaned:
        raise SettingsError("no metric given; available: " + ", ".join(available_metrics()))
    if set(cleaned) <= set(BUILTIN_METRICS):  # known without building the registry (default settings at import)
        return cleaned
    unknown = [n for n in cleaned if n not in available_metrics()]
    if unknown:
        raise SettingsError(
            f"unknown metric{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"available: {', '.join(available_metrics())}"
        )
    return cleaned


#: Settings in the signature of every run.
ALWAYS_SIGNED: frozenset[str] = frozenset({"metrics", "splitter", "spacy_model"})
#: Settings never in the signature: they change speed or shown text, not numbers, or they name a
#: model, file or server the signature names by its digest (``signature`` adds those ids).
UNSIGNED: frozenset[str] = frozenset(
    {
        "options",  # each metric's own settings: signed by their Option (signed, while_set) when the metric runs
        *("device", "batch_size", "workers"),
    }
)
#: Settings signed in every run with a metric that has one of the needs: the CLIP encoder's and the
#: image metrics' (θ and the ablations included), and the regions' with CLIP or the images.
SIGNED_WITH_NEED: dict[str, frozenset[str]] = {
    **dict.fromkeys(("clip_arch", "clip_pretrained", "clip_checkpoint", "clip_config", "clip_activation"), frozenset({"clip"})),
    **dict.fromkeys(
        ("theta", "penalize", "weighting", "units", "expressions", "grounding_profile", "preprocess"), frozenset({"clip"})
    ),
    **dict.fromkeys(("regions", "regions_file", "top_b", "whole_image"), frozenset({"clip", "images"})),
}


#: Model batch size on each device when ``batch_size`` is 0 (the default): on CUDA the size at which
#: the benchmark's CLIP forward is fastest (docs/performance.md), on a CPU 32 (larger batches gain
#: nothing there and hold more memory).
DEVICE_BATCH: dict[str, int] = {"cuda": 256, "cpu": 32}


@dataclass(frozen=True)
class Settings:
    """Everything that can change a score. Two runs with equal settings give equal numbers."""

    metrics: tuple[str, ...] = DEFAULT_METRICS
    splitter: Literal["punkt", "spacy"] = "punkt"  # sentences of a story given as one text (NLTK Punkt, as the public code)
    spacy_model: str | None = None  # None: first installed English pipeline
    clip_arch: str = "ViT-B-32"
    clip_pretrained: str | None = "openai"
    clip_checkpoint: str | None = None  # a local file instead of the pretrained tag
    clip_config: str | None = None  # open_clip model-config JSON registering clip_arch
    # auto: from the weights (OpenAI's files and tags: QuickGELU; a hub snapshot's open_clip_config.json);
    # a checkpoint file that does not say is refused for an architecture that exists with either activation
    clip_activation: Literal["auto", "gelu", "quickgelu"] = "auto"
    theta: str = "VIST"  # preset name (VIST, AESOP, VWP, custom) or a number
    regions: Literal["grid", "csv", "detector"] = "grid"
    regions_file: str | None = None
    top_b: int = 10
    whole_image: bool = False  # add the whole image to each image's regions
    penalize: bool = True  # GROOVIST ablation -P when False
    weighting: Literal["concreteness", "idf", "none"] = "concreteness"  # -C: none, -C +idf: idf
    units: Literal["phrases", "nouns"] = "phrases"  # nouns: the "nouns instead of NPs" replacement
    expressions: bool = False  # concreteness of whole phrases / multi-word expressions first
    # reference: the GROOVIST code's text side and crops (whole-phrase pronoun list, whitespace words with
    # WordNet noun lemmas, Pillow's rounding of boxes, its spaCy pipeline when installed)
    grounding_profile: GroundingProfile = "paper"
    # how region crops are resized for CLIP: "pil" (Pillow in worker threads, the GROOVIST code's pixels),
    # "device" (cut, resized and normalised as tensors on the model's device), "auto" (device on CUDA, pil
    # on a CPU, where Pillow is faster); the pixels differ slightly, so the signature records the choice
    preprocess: Literal["auto", "pil", "device"] = "auto"
    device: str = "auto"
    batch_size: int = 0  # 0: by the device (DEVICE_BATCH: 256 on CUDA, 32 on a CPU)
    workers: int = 0  # image preprocessing threads; 0: one per core, at most 8
    # the metrics' own settings (each metric's ``options``), the ones set: ((name, value), ...) sorted;
    # given as keywords (``Settings(vrank_model=DIR)``) or as a mapping, read with :meth:`option`
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        parse_metrics(self.metrics)
        object.__setattr__(self, "options", _own_options(self.options))
        for reason in _refused(self):
            raise SettingsError(reason)
        if self.device not in ("auto", "cpu", "cuda"):
            raise SettingsError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.batch_size < 0:
            raise SettingsError(f"batch_size must be >= 1 (or 0: by the device), got {self.batch_size}")
        if self.workers < 0:
            raise SettingsError(f"workers must be >= 0, got {self.workers}")
        if self.regions == "csv" and not self.regions_file:
            raise SettingsError("regions 'csv' needs regions_file")
        if self.top_b < 1:
            raise SettingsError(f"top_b must be >= 1, got {self.top_b}")
        try:
            resolve_theta(self.theta)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        if self.grounding_profile not in ("paper", "reference"):
            raise SettingsError(f"grounding_profile must be 'paper' or 'reference', got {self.grounding_profile!r}")
        if self.splitter not in ("punkt", "spacy"):
            raise SettingsError(f"splitter must be 'punkt' or 'spacy', got {self.splitter!r}")
        if self.clip_activation not in ("auto", "gelu", "quickgelu"):
            raise SettingsError(f"clip_activation must be auto, gelu or quickgelu, got {self.clip_activation!r}")
        if self.preprocess not in ("auto", "pil", "device"):
            raise SettingsError(f"preprocess must be auto, pil or device, got {self.preprocess!r}")
        if self.preprocess == "device" and self.grounding_profile == "reference":
            raise SettingsError(
                "the reference grounding profile crops and resizes with Pillow, as the GROOVIST code does; "
                "use preprocess 'pil' (or 'auto') with it"
            )

    @property
    def theta_value(self) -> float:
        return resolve_theta(self.theta)

    @property
    def image_preprocess(self) -> Literal["pil", "device"]:
        """The preprocessing a run uses: ``pil`` for the reference profile, the choice when one was
        made, else ``device`` where the models run on CUDA and ``pil`` on a CPU.

        >>> Settings(preprocess="device").image_preprocess, Settings(device="cpu").image_preprocess
        ('device', 'pil')
        """
        if self.grounding_profile == "reference":
            return "pil"
        if self.preprocess != "auto":
            return self.preprocess
        if self.device != "auto":
            return "device" if self.device == "cuda" else "pil"
        if not any(os.path.exists(node) for node in _GPU_NODES):
            return "pil"  # no NVIDIA device on this machine: CUDA cannot be there, and torch need not load to say so
        import torch  # where "auto" runs the models, as vst_core.models.device resolves it

        return "device" if torch.cuda.is_available() else "pil"

    def option(self, name: str) -> Any:
        """A metric's own setting (:class:`vst_core.metric_spec.Option`): its value, or its default.

        >>> Settings(vrank_model="runs/vrank").option("vrank_model"), Settings().option("clipscore_prompt")
        ('runs/vrank', 'A photo depicts ')
        """
        for key, value in self.options:
            if key == name:
                return value
        found = metric_options().get(name)
        if found is None:
            raise SettingsError(f"unknown setting {name!r}")
        return found[1].default

    if not TYPE_CHECKING:  # ``settings.vrank_model`` reads a metric's option, as earlier versions' field did

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") or name not in metric_options():
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            return self.option(name)

    def with_(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def batch_for(self, device: str | None) -> int:
        """The model batch size on ``device`` (``cuda`` or ``cpu``): ``batch_size`` when set, else
        :data:`DEVICE_BATCH`'s; a device not known (None) counts as a CPU.

        >>> Settings().batch_for("cuda"), Settings().batch_for(None), Settings(batch_size=8).batch_for("cuda")
        (256, 32, 8)
        """
        return self.batch_size or DEVICE_BATCH.get(device or "cpu", DEVICE_BATCH["cpu"])

    def as_dict(self) -> dict[str, Any]:
        """The fields that can change a score, for the signature (weights ids are added by
        :func:`vst_core.signature.signature`, which resolves the files): those of :data:`ALWAYS_SIGNED`,
        those a metric of the run lists in its spec's ``settings``, those of a need a metric of the
        run has (:data:`SIGNED_WITH_NEED`), less :data:`UNSIGNED`; and each signed option of a metric of
        the run (its ``Option``), set or at its default, less one whose ``while_set`` option is unset,
        and every option signed ``"always"`` (RoViST-NR's, signed in every run by earlier versions).

        >>> sorted(Settings().as_dict())
        ['metrics', 'nr_ngram', 'nr_variant', 'spacy_model', 'splitter']
        """
        specs = registry().specs
        run = [specs[m] for m in self.metrics if m in specs]
        always = [s for s in specs.values() if s not in run and any(o.signed == "always" for o in s.signing.options)]
        listed = {key for spec in run for key in spec.signing.settings}
        listed |= {o.setting for spec in always for o in spec.signing.options if o.signed == "always"}
        whiles = {o.setting: o.while_set for spec in run for o in spec.signing.options if o.while_set}
        needs = {need for spec in run for need in spec.computing.needs}
        values = {**{k: v for k, v in asdict(self).items() if k != "options"}, **self._all_options([*run, *always])}
        data = {
            key: value
            for key, value in values.items()
            if key not in UNSIGNED
            and (key in ALWAYS_SIGNED or key in listed or bool(SIGNED_WITH_NEED.get(key, frozenset()) & needs))
            and (key not in whiles or values.get(whiles[key]) is not None)
        }
        if "theta" in data:
            data["theta"] = self.theta_value
        if "preprocess" in data:
            data["preprocess"] = self.image_preprocess
        data["metrics"] = list(self.metrics)
        # the order earlier versions wrote (their fields first): the options signed in every run after
        # ``metrics``, so a run's signature is the same bytes as theirs, not only the same id
        every = {o.setting for spec in specs.values() for o in spec.signing.options if o.signed == "always"}
        first = ["metrics", *sorted(k for k in data if k in every)]
        return {**{k: data[k] for k in first}, **{k: v for k, v in data.items() if k not in first}}

    def _all_options(self, run: list[Any]) -> dict[str, Any]:
        """The options of the metrics of ``run``, each set or at its default (one that cannot be a
        metric's own, named like a shared setting, is not among them: the registry refuses it)."""
        known = metric_options()
        return {o.setting: self.option(o.setting) for spec in run for o in spec.signing.options if o.setting in known}


_FIELDS = frozenset(Settings.__dataclass_fields__)
_fields_init = Settings.__init__


def _init(self: Settings, *args: Any, **changes: Any) -> None:
    """``Settings(...)``: a keyword that is a metric's option goes into ``options``."""
    own = {k: changes.pop(k) for k in [k for k in changes if k not in _FIELDS]}
    if own:
        given = changes.get("options", ())
        changes["options"] = {**(dict(given) if given else {}), **own}
    _fields_init(self, *args, **changes)


Settings.__init__ = _init  # type: ignore[method-assign]


def metric_options() -> dict[str, tuple[Any, Any]]:
    """Every metric's own settings by name: (its spec, its :class:`~vst_core.metric_spec.Option`);
    the registry's, which leaves out a name every metric shares (a field of :class:`Settings`)."""
    return registry().options


def _own_options(given: Any) -> tuple[tuple[str, Any], ...]:
    """``options`` as stored: known names only (SettingsError naming the others), each value checked
    by its option, those at their default left out, sorted by name."""
    if not given:
        return ()
    pairs = dict(given.items() if isinstance(given, Mapping) else given)
    known = metric_options()
    unknown = sorted(k for k in pairs if k not in known)
    if unknown:
        raise SettingsError(
            f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"the metrics' own: {', '.join(sorted(known))}"
        )
    kept = []
    for name, value in sorted(pairs.items()):
        option = known[name][1]
        if isinstance(value, os.PathLike) and option.kind in ("file", "folder"):
            value = os.fspath(value)  # a pathlib.Path for a model's file or folder, as the fields took
        reason = option.refuse(value)
        if reason:
            raise SettingsError(reason)
        if value != option.default:
            kept.append((name, value))
    return tuple(kept)


def _refused(settings: Settings) -> list[str]:
    """Why the metrics whose options are set cannot run under ``settings`` (their ``check`` hooks)."""
    if not settings.options:
        return []
    known = metric_options()
    specs = {known[name][0].name: known[name][0] for name, _ in settings.options}
    return [r for spec in specs.values() if (check := spec.signing.check) is not None for r in [check(settings)] if r]


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def settings_from_signature(signature: dict[str, Any], problems: list[str] | None = None) -> Settings:
    """Settings recorded in a signature: fields this version does not know are ignored, a field
    whose value it cannot take keeps its default and is named in ``problems`` (and logged), so
    one bad field never resets the others.

    >>> found: list[str] = []
    >>> s = settings_from_signature({"settings": {"nr_ngram": 3, "theta": "nonsense"}}, found)
    >>> s.nr_ngram, s.theta, found
    (3, 'VIST', ["theta='nonsense' (theta must be a number or one of VIST, AESOP, VWP, custom; got 'nonsense')"])
    """
    known = _FIELDS | set(metric_options())
    values = {k: v for k, v in (signature.get("settings") or {}).items() if k in known and k != "options"}
    if "metrics" in values:
        values["metrics"] = tuple(m for m in values["metrics"] if m in available_metrics()) or DEFAULT_METRICS
    if "theta" in values and "preprocess" not in values:  # recorded before the choice existed: Pillow's pixels
        values["preprocess"] = "pil"
    if isinstance(values.get("theta"), (int, float)):
        values["theta"] = repr(float(values["theta"]))
    if isinstance(values.get("clip_checkpoint"), str) and "/file:" in values["clip_checkpoint"]:
        # a digest, not a path: keep it for display as the "pretrained" name
        values["clip_pretrained"] = "file:" + values["clip_checkpoint"].split("/file:", 1)[1]
        values["clip_checkpoint"] = None
    try:
        return Settings(**values)
    except (SettingsError, TypeError, ValueError):
        pass
    kept: dict[str, Any] = {}
    for name, value in values.items():
        try:
            Settings(**{**kept, name: value})
        except (SettingsError, TypeError, ValueError) as exc:
            note = f"{name}={value!r} ({exc})"
            _log.warning("recorded setting left at its default: %s", note)
            if problems is not None:
                problems.append(note)
            continue
        kept[name] = value
    return Settings(**kept)
