"""What a metric is to the product, and the registry of metrics: built-in and installed.

A metric is one module that declares one :class:`MetricSpec`: its name (in ``--metrics`` and on
disk), title and description, its record type and the numbers it carries (:class:`MetricField`,
each with its direction), what it needs (images, CLIP, the other stories of its sequence, a
model), which settings change its numbers, how it is computed on a batch of stories, how its score
cards and its evidence are drawn, and its metric card. The CLI, the records reader, the scores
index, tables, meta-evaluation, exports and the pages read the list of metrics from here.

The built-in metrics are the modules of :data:`BUILTIN_METRICS` (``vst_core/metrics/``); another
package adds one by naming its spec in the ``vst_eval.metrics`` entry-point group::

    [project.entry-points."vst_eval.metrics"]
    lexical_variety = "vst_toy_metric:METRIC"

Modules are imported on first use (never when this module is imported), so the heavy parts of a
metric (models, images) load only when a run needs them. A plugin that cannot be loaded, or
declares a name, record type or column that is taken, is left out with the reason in
:attr:`Registry.problems`; the other metrics keep working.

>>> registry().spec("redundancy").title
'RoViST-NR'
>>> [f.column for f in registry().spec("redundancy").fields]
['NR', 'inter', 'intra']
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from vst_core.contract.bench import (
    BENCH_FLAGS,
    BENCH_PHASES,
    Bench,
    BenchConfigLike,
    BenchPhase,
    BenchRunLike,
    BenchSize,
    BenchValue,
    ReplicaRequest,
    SharedRun,
    rate,
)
from vst_core.contract.checks import check_plugin
from vst_core.contract.dashboard_keys import DASHBOARD_KEY_PREFIXES, DASHBOARD_KEYS
from vst_core.contract.protocols import (
    BoxLike,
    GrounderLike,
    ImageEntryLike,
    ImageTextEncoder,
    Key,
    PhraseLike,
    RegionModelLike,
    RunLike,
    StorySetLike,
    WordLike,
)
from vst_core.contract.spec import (
    BUILTIN,
    BUILTIN_METRICS,
    COMPONENTS,
    DEFAULT_METRICS,
    ENTRY_POINT_GROUP,
    NAME_PATTERN,
    OTHER_DIRECTIONS,
    RUN_SETTINGS,
    AgainKey,
    CaptionHook,
    Card,
    CardsHook,
    CompleteHook,
    Component,
    Computing,
    Diagnostics,
    Direction,
    EvidenceHook,
    Fetch,
    FetchArgument,
    FetchCheck,
    FetchPlan,
    IdentityHook,
    ImageRecordHook,
    ImportHook,
    LegendEntry,
    LoadHook,
    MarginsHook,
    Mark,
    MarksHook,
    MarkStyle,
    Measure,
    MetricField,
    MetricSpec,
    ModelField,
    ModelsLike,
    Need,
    Option,
    OptionKind,
    OptionValue,
    Reading,
    Reaggregation,
    Region,
    RegionModelHook,
    RegionsHook,
    ScoreHook,
    SetHook,
    SettingsCheckHook,
    SettingsLike,
    Showing,
    Signing,
    StoryRecordLike,
    SummaryHook,
    Switch,
    TextsHook,
    Tools,
    TransitionsHook,
    at_least_one,
    is_legend_entry,
    is_mark,
)
from vst_core.story import Story, StoryFields

_log = logging.getLogger(__name__)

__all__ = [
    "BENCH_FLAGS",
    "BENCH_PHASES",
    "Bench",
    "BenchConfigLike",
    "BenchPhase",
    "BenchRunLike",
    "BenchSize",
    "BenchValue",
    "ReplicaRequest",
    "SharedRun",
    "rate",
    "BoxLike",
    "GrounderLike",
    "ImageEntryLike",
    "ImageTextEncoder",
    "Key",
    "PhraseLike",
    "RunLike",
    "Story",
    "StoryFields",
    "StorySetLike",
    "WordLike",
    "BUILTIN",
    "BUILTIN_METRICS",
    "at_least_one",
    "DASHBOARD_KEY_PREFIXES",
    "DASHBOARD_KEYS",
    "DEFAULT_METRICS",
    "ENTRY_POINT_GROUP",
    "RUN_SETTINGS",
    "COMPONENTS",
    "Component",
    "NAME_PATTERN",
    "OTHER_DIRECTIONS",
    "AgainKey",
    "CaptionHook",
    "Card",
    "CardsHook",
    "CompleteHook",
    "Computing",
    "Diagnostics",
    "Direction",
    "EvidenceHook",
    "Fetch",
    "FetchArgument",
    "FetchCheck",
    "FetchPlan",
    "IdentityHook",
    "ImageRecordHook",
    "ImportHook",
    "LoadHook",
    "MarginsHook",
    "Measure",
    "MetricField",
    "MetricSpec",
    "ModelField",
    "ModelsLike",
    "Need",
    "Option",
    "OptionKind",
    "OptionValue",
    "Reaggregation",
    "Reading",
    "LegendEntry",
    "Mark",
    "is_legend_entry",
    "is_mark",
    "MarkStyle",
    "MarksHook",
    "Region",
    "RegionsHook",
    "RegionModelHook",
    "RegionModelLike",
    "Registry",
    "RegistryBusyError",
    "ScoreHook",
    "SetHook",
    "SettingsCheckHook",
    "SettingsLike",
    "Showing",
    "Signing",
    "StoryRecordLike",
    "SummaryHook",
    "Switch",
    "TextsHook",
    "Tools",
    "TransitionsHook",
    "registry",
    "reload",
]


@dataclass(frozen=True)
class Registry:
    """The metrics this installation knows, in order: the built-ins, then installed plugins by name."""

    specs: Mapping[str, MetricSpec]
    problems: tuple[str, ...] = ()
    #: the shared work the metrics read, with the options it owns (:data:`COMPONENTS`)
    components: Mapping[str, Component] = dataclasses.field(default_factory=dict)

    def spec(self, name: str) -> MetricSpec:
        return self.specs[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.specs)

    @property
    def fields(self) -> tuple[MetricField, ...]:
        return tuple(f for s in self.specs.values() for f in s.fields)

    @property
    def types(self) -> dict[str, type]:
        return {name: s.record for name, s in self.specs.items()}

    def named(self, name: str) -> MetricSpec | None:
        """The metric a released file or a long CSV names: its name or one of its aliases (any case)."""
        wanted = name.strip().lower()
        return next((s for s in self.specs.values() if wanted == s.name or wanted in s.reading.aliases), None)

    def in_use(self, metrics: Iterable[str]) -> list[MetricSpec]:
        """The specs of ``metrics`` that this registry knows, in registry order."""
        wanted = set(metrics)
        return [s for name, s in self.specs.items() if name in wanted]

    @functools.cached_property
    def formerly(self) -> frozenset[str]:
        """Every name an earlier version wrote a metric's records under (their ``formerly``)."""
        return frozenset(old for s in self.specs.values() for old in s.reading.formerly)

    def renamed(self, name: str, value: Mapping[str, Any]) -> str:
        """The metric a stored record belongs to: ``name``, unless an earlier version wrote another
        metric's record under it: a metric that lists ``name`` in ``formerly`` claims a record that
        has every field its record type requires and no key that only ``name``'s record type has.

        >>> registry().renamed("rovist_vg", {"score": 0.5, "lse": 1.0, "nouns": [], "notes": []})
        'rovist_vg_clip'
        >>> registry().renamed("rovist_vg", {"score": 0.5, "lse": 1.0, "nouns": [], "notes": [], "tagger": "spacy"})
        'rovist_vg'
        """
        if name not in self.formerly:
            return name
        own = self.specs.get(name)
        keys = set(value)
        for spec in self.specs.values():
            if name not in spec.reading.formerly:
                continue
            fields = dataclasses.fields(spec.record)
            required = {f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
            only_own = {f.name for f in dataclasses.fields(own.record)} - {f.name for f in fields} if own is not None else set()
            if required <= keys and not keys & only_own:
                return spec.name
        return name

    @functools.cached_property
    def options(self) -> dict[str, tuple[MetricSpec | Component, Option]]:
        """Every setting a component or a metric owns (:class:`Option`), by name: its owner and the
        option, the components' first; one named like a setting of the run (:data:`RUN_SETTINGS`)
        cannot be told apart from it and is left out (registration refuses a package's).

        >>> registry().options["clip_model"][0].name, registry().options["theta"][0].name
        ('images', 'grounding')
        """
        owned: list[tuple[MetricSpec | Component, Option]] = [(c, o) for c in self.components.values() for o in c.options]
        owned += [(s, o) for s in self.specs.values() for o in s.signing.options]
        return {o.setting: (owner, o) for owner, o in owned if o.setting not in RUN_SETTINGS}

    @functools.cached_property
    def formerly_signed(self) -> dict[str, str]:
        """The options signed under another name (:attr:`Option.signed_as`): that name -> the option's.

        >>> registry().formerly_signed["clip_arch"]
        'clip_model'
        """
        return {o.signed_as: name for name, (_, o) in self.options.items() if o.signed_as}

    @property
    def switched(self) -> dict[str, Switch]:
        """The metrics with a section of their own on the dashboard (:class:`Switch`), in order."""
        return {name: s.showing.switch for name, s in self.specs.items() if s.showing.switch is not None}

    def with_need(self, need: Need) -> frozenset[str]:
        """Names of the metrics that need ``need``."""
        return frozenset(name for name, s in self.specs.items() if need in s.computing.needs)

    @property
    def ranked(self) -> dict[str, MetricSpec]:
        """The metrics that judge pairs of stories themselves (their ``margins``), by the report name
        of their first reported field: meta-evaluation judges their pairs by those margins."""
        out = {}
        for spec in self.specs.values():
            report = next((f.report for f in spec.fields if f.report), None)
            if spec.reading.margins is not None and report is not None:
                out[report] = spec
        return out

    @property
    def reaggregated(self) -> tuple[str, Reaggregation] | None:
        """(name, ``reaggregate``) of the metric whose numbers are computed again from its records
        under other settings, if any: GROOVIST's under another θ, penalty or weighting."""
        return next(((s.name, s.computing.reaggregate) for s in self.specs.values() if s.computing.reaggregate is not None), None)

    @property
    def plugins(self) -> tuple[MetricSpec, ...]:
        return tuple(s for s in self.specs.values() if not s.module.startswith("vst_core."))


_lock = threading.Lock()
_current: Registry | None = None
_building = threading.local()


class RegistryBusyError(RuntimeError):
    """The registry was asked for while it is being built: a metric module asked for it when it loads."""


def registry() -> Registry:
    """The registry, built on first use (built-in modules, then the entry-point group). A metric
    module that asks for it while it loads (directly, or by importing a module that does) is left
    out with that reason instead of waiting forever."""
    global _current
    if _current is None:
        if getattr(_building, "active", False):
            raise RegistryBusyError(
                "the metric registry was asked for while a metric module loaded: import vst_core modules inside "
                "the hooks, not at the top of the module (only vst_core.contract and record types there)"
            )
        with _lock:
            if _current is None:
                _current = _build()
    return _current


def reload() -> Registry:
    """Build the registry again (after a package was installed into a running process)."""
    global _current
    with _lock:
        _current = _build()
    return _current


def _build() -> Registry:
    _building.active = True
    try:
        return _collect()
    finally:
        _building.active = False


def _collect() -> Registry:
    specs: dict[str, MetricSpec] = {}
    problems: list[str] = []
    components: dict[str, Component] = {}
    for name, module in COMPONENTS.items():
        component = importlib.import_module(module).COMPONENT
        if not isinstance(component, Component) or component.name != name:  # pragma: no cover - a module renamed
            raise RuntimeError(f"{module} declares no Component named {name!r}")
        components[name] = component
    for name, module in BUILTIN_METRICS.items():
        spec = _with_module(importlib.import_module(module).METRIC, module)
        if spec.name != name:  # pragma: no cover - a built-in module renamed without its entry here
            raise RuntimeError(f"{module} declares {spec.name!r}, listed as {name!r} in BUILTIN_METRICS")
        specs[name] = spec
    plugins: list[tuple[str, str, Callable[[], Any]]] = []
    try:
        found: Iterable[metadata.EntryPoint] = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # a damaged distribution's metadata: built-ins still work
        problems.append(f"metric plugins not read: {type(exc).__name__}: {exc}")
        found = ()
    for point in found:
        if point.value.startswith("vst_core."):
            continue  # this project's own modules are the built-ins above
        plugins.append((point.name, point.value, point.load))
    for label, where, load in sorted(plugins, key=lambda p: p[0]):
        try:
            spec = load()
            if callable(spec) and not isinstance(spec, MetricSpec):
                spec = spec()
            spec = _with_module(spec, where.split(":")[0])
            check_plugin(spec, specs, tuple(components.values()))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a broken plugin (sys.exit at import included) is left out with its reason
            message = f"metric plugin {label!r} ({where}) left out: {type(exc).__name__}: {exc}"
            _log.warning(message)
            problems.append(message)
            continue
        specs[spec.name] = spec
    return Registry(specs, tuple(problems), components)


def _with_module(spec: object, module: str) -> MetricSpec:
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"{module} gives a {type(spec).__name__}, not a MetricSpec")
    return dataclasses.replace(spec, module=module)
