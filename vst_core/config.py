"""One typed settings object for a scoring run, and its reproducibility signature."""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from vst_core.contract import BUILTIN_METRICS, DEFAULT_METRICS, MetricSpec, registry
from vst_core.limits import MAX_STORY_CHARS as MAX_STORY_CHARS
from vst_core.limits import MAX_STORY_SENTENCES as MAX_STORY_SENTENCES
from vst_core.limits import story_limit_reason as story_limit_reason
from vst_core.limits import text_limit_reason as text_limit_reason

_log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """This product's cache folder: ``VST_CACHE_DIR``, else ``$XDG_CACHE_HOME/vst-eval`` (``~/.cache/vst-eval``)."""
    base = os.environ.get("VST_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "vst-eval")
    return Path(base)


__all__ = [
    "DEVICE_BATCH",
    "available_metrics",
    "Settings",
    "REFERENCE_SYSTEMS",
    "SettingsError",
    "parse_metrics",
]


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


#: Run settings in the signature of every run (the components' and metrics' options are signed by
#: their :class:`~vst_core.contract.Option`'s rule: :meth:`Settings.as_dict`).
ALWAYS_SIGNED: frozenset[str] = frozenset({"metrics"})
#: Run settings never in the signature: they change speed, not numbers.
UNSIGNED: frozenset[str] = frozenset({"options", "device", "batch_size", "workers"})


#: Model batch size on each device when ``batch_size`` is 0 (the default): on CUDA the size at which
#: the benchmark's CLIP forward is fastest (docs/performance.md), on a CPU 32 (larger batches gain
#: nothing there and hold more memory).
DEVICE_BATCH: dict[str, int] = {"cuda": 256, "cpu": 32}


@dataclass(frozen=True, init=False)
class Settings:
    """Everything that can change a score: the run (which metrics, where, how fast) and ``options``,
    every setting a component (the text side, the image pipeline) or a metric owns, each declared once
    as an :class:`~vst_core.contract.Option` and given as a keyword. Two runs with equal settings
    give equal numbers.

    >>> s = Settings(metrics=("grounding",), theta="AESOP", clip_model="ViT-L-14")
    >>> s.option("theta"), s.option("clip_model"), s.option("top_b"), s.options
    ('AESOP', 'ViT-L-14', 10, (('clip_model', 'ViT-L-14'), ('theta', 'AESOP')))
    """

    metrics: tuple[str, ...] = DEFAULT_METRICS
    device: str = "auto"
    batch_size: int = 0  # 0: by the device (DEVICE_BATCH: 256 on CUDA, 32 on a CPU)
    workers: int = 0  # image preprocessing threads; 0: one per core, at most 8
    # the options set, ((name, value), ...) sorted, those at their default left out; read with :meth:`option`
    options: tuple[tuple[str, Any], ...] = ()

    def __init__(
        self,
        metrics: tuple[str, ...] | list[str] | str = DEFAULT_METRICS,
        device: str = "auto",
        batch_size: int = 0,
        workers: int = 0,
        options: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
        **named: Any,
    ) -> None:
        given = dict(options.items() if isinstance(options, Mapping) else options)
        given.update(named)
        object.__setattr__(self, "metrics", parse_metrics(metrics))
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "batch_size", batch_size)
        object.__setattr__(self, "workers", workers)
        object.__setattr__(self, "options", _own_options(given))
        if self.device not in ("auto", "cpu", "cuda"):
            raise SettingsError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 0:
            raise SettingsError(f"batch_size must be >= 1 (or 0: by the device), got {self.batch_size}")
        if not isinstance(self.workers, int) or self.workers < 0:
            raise SettingsError(f"workers must be >= 0, got {self.workers}")
        for reason in _refused(self):
            raise SettingsError(reason)

    def option(self, name: str) -> Any:
        """A component's or a metric's setting (:class:`vst_core.contract.Option`): its value, or its default.

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

    def with_(self, **changes: Any) -> Settings:
        """A copy with some settings changed (validated again): run settings and options alike;
        ``options`` given whole replaces the options set.

        >>> Settings(theta="AESOP").with_(theta="VIST", device="cpu").options, Settings(top_b=3).with_(options=()).options
        ((), ())
        """
        run = {k: changes.pop(k) for k in [k for k in changes if k in _FIELDS and k != "options"]}
        values = {f: getattr(self, f) for f in _FIELDS if f != "options"}
        given = changes.pop("options", None)  # options given whole replace the set ones
        kept = dict(self.options) if given is None else dict(given.items() if isinstance(given, Mapping) else given)
        return Settings(**{**values, **run}, options={**kept, **changes})

    def batch_for(self, device: str | None) -> int:
        """The model batch size on ``device`` (``cuda`` or ``cpu``): ``batch_size`` when set, else
        :data:`DEVICE_BATCH`'s; a device not known (None) counts as a CPU.

        >>> Settings().batch_for("cuda"), Settings().batch_for(None), Settings(batch_size=8).batch_for("cuda")
        (256, 32, 8)
        """
        return self.batch_size or DEVICE_BATCH.get(device or "cpu", DEVICE_BATCH["cpu"])

    def as_dict(self) -> dict[str, Any]:
        """What can change a score, for the signature (weights ids are added by
        :func:`vst_core.signature.signature`, which resolves the files): ``metrics``; each option of a
        component or a metric, set or at its default, under its signed name, when its rule signs it:
        a metric's signed options in the runs of that metric, or in every run (``signed="always"``:
        RoViST-NR's, signed in every run by earlier versions), an option with ``needs`` in every run
        with a metric that has one of them (a component's with none in every run); less one whose
        ``while_set`` option is unset, and the names a metric of the run lists in ``settings``.

        >>> sorted(Settings().as_dict())
        ['metrics', 'nr_ngram', 'nr_variant', 'spacy_model', 'splitter']
        """
        reg = registry()
        run = [reg.specs[m] for m in self.metrics if m in reg.specs]
        needs = {need for spec in run for need in spec.computing.needs}
        listed = {key for spec in run for key in spec.signing.settings}
        data: dict[str, Any] = {"metrics": list(self.metrics)}
        first: list[str] = []
        for name, (owner, option) in reg.options.items():
            own_run = any(owner is spec for spec in run)
            component = not isinstance(owner, MetricSpec)
            signed = bool(option.signed) and (
                option.signed == "always"
                or (own_run and not component)
                or bool(set(option.needs) & needs)
                or (component and not option.needs)
                or name in listed
            )
            if not signed or (option.while_set and self.option(option.while_set) is None):
                continue
            if option.signed == "always":
                first.append(option.signed_name)
            data[option.signed_name] = self.option(name) if option.signed_value is None else option.signed_value(self)
        # the order earlier versions wrote: the options signed in every run after ``metrics``
        order = ["metrics", *sorted(first)]
        return {**{k: data[k] for k in order}, **{k: v for k, v in data.items() if k not in order}}


_FIELDS = frozenset(Settings.__dataclass_fields__)


def metric_options() -> dict[str, tuple[Any, Any]]:
    """Every setting a component or a metric owns, by name: (its owner, its
    :class:`~vst_core.contract.Option`); the registry's."""
    return registry().options


def _own_options(given: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``options`` as stored: known names only (SettingsError naming the others), each value checked
    by its option, those at their default left out, sorted by name."""
    if not given:
        return ()
    known = metric_options()
    unknown = sorted(k for k in given if k not in known)
    if unknown:
        formerly = registry().formerly_signed
        renamed = [f"{k} is now {formerly[k]}" for k in unknown if k in formerly]
        raise SettingsError(
            f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
            + (f" ({'; '.join(renamed)})" if renamed else "")
            + f"; the settings: {', '.join(sorted(known))}"
        )
    kept = []
    for name, value in sorted(given.items()):
        option = known[name][1]
        if isinstance(value, os.PathLike) and option.kind in ("file", "folder"):
            value = os.fspath(value)  # a pathlib.Path for a model's file or folder
        reason = option.refuse(value)
        if reason:
            raise SettingsError(reason)
        if value != option.default:
            kept.append((name, value))
    return tuple(kept)


def _refused(settings: Settings) -> list[str]:
    """Why ``settings`` cannot be used: the ``check`` hooks of the components and of the metrics whose
    options are set."""
    if not settings.options:  # every default goes together (and the registry is not built for them)
        return []
    reg = registry()
    known = reg.options
    specs = {owner.name: owner for name, _ in settings.options if isinstance(owner := known[name][0], MetricSpec)}
    owners: list[Any] = [c.check for c in reg.components.values()] + [spec.signing.check for spec in specs.values()]
    return [r for check in owners if check is not None for r in [check(settings)] if r]


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
    >>> s.option("nr_ngram"), s.option("theta"), found
    (3, 'VIST', ["theta='nonsense' (theta must be a number or one of VIST, AESOP, VWP, custom; got 'nonsense')"])
    """
    formerly = registry().formerly_signed  # recorded under the name an option is signed as: ``clip_arch``
    recorded = {formerly.get(k, k): v for k, v in (signature.get("settings") or {}).items()}
    known = _FIELDS | set(metric_options())
    values = {k: v for k, v in recorded.items() if k in known and k != "options"}
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
