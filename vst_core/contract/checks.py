"""What registration refuses of an installed metric (:func:`check_plugin`): a spec that would be
ambiguous beside the others, or a record the JSON reader could not read back
(:func:`readable_record`). The registry (:mod:`vst_core.contract`) leaves such a metric out
with the reason; the other metrics keep working."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import is_dataclass
from typing import Any, Literal, Union

from vst_core.contract.bench import BENCH_FLAGS, BENCH_PHASES
from vst_core.contract.dashboard_keys import DASHBOARD_KEY_PREFIXES, DASHBOARD_KEYS
from vst_core.contract.spec import (
    CLI_COMMANDS,
    FETCH_FLAGS,
    GROUP_OF,
    NAME_PATTERN,
    OTHER_DIRECTIONS,
    RUN_SETTINGS,
    Component,
    MetricSpec,
    Need,
    OptionKind,
    is_legend_entry,
)

#: Column names a story table already has: no metric field may take one.
RESERVED_COLUMNS: frozenset[str] = frozenset(
    {"story", "sequence", "system", "sentences", "text", "error", "problems", "images", "story_id", "sequence_id"}
)


def _others(name: str) -> bool:
    return any(name == o or name.startswith(o + "-") or name.startswith(o + " ") for o in OTHER_DIRECTIONS)


@dataclasses.dataclass(frozen=True)
class Claim:
    """A plugin spec and what registration checks it against: the metrics registered before it
    (``taken``) and the components' options (``components``), with the names they hold."""

    spec: MetricSpec
    taken: Mapping[str, MetricSpec]
    components: Sequence[Component] = ()

    @functools.cached_property
    def names(self) -> set[str]:
        """Every name and alias of the metrics registered before."""
        return {n for s in self.taken.values() for n in (s.name, *s.reading.aliases)}

    @functools.cached_property
    def own(self) -> set[str]:
        """The settings of the spec's own options."""
        return {o.setting for o in self.spec.signing.options}


#: A rule of registration: raises ValueError or TypeError with the reason a spec is refused.
Rule = Callable[[Claim], None]


def _name(c: Claim) -> None:
    """The name: lower-case words, nobody's name or alias; each alias lower-case and untaken."""
    spec = c.spec
    if not NAME_PATTERN.fullmatch(spec.name):
        raise ValueError(f"metric name {spec.name!r} must be lower-case letters, digits and _ (at most 40)")
    if spec.name in c.names:
        owner = next(s.module for s in c.taken.values() if spec.name in (s.name, *s.reading.aliases))
        raise ValueError(f"the name {spec.name!r} is taken by {owner}")
    for alias in spec.reading.aliases:
        if alias in c.names or alias == spec.name or alias != alias.strip().lower() or not alias:
            raise ValueError(f"alias {alias!r} is taken or not lower-case")


def _record(c: Claim) -> None:
    """The record: a dataclass type of its own that the JSON reader can read back."""
    if not (isinstance(c.spec.record, type) and is_dataclass(c.spec.record)):
        raise TypeError("record must be a dataclass type")
    if any(s.record is c.spec.record for s in c.taken.values()):
        raise ValueError(f"record type {c.spec.record.__name__} is another metric's")
    readable_record(c.spec.record)


def _fields(c: Claim) -> None:
    """At least one field; each of this metric, reading an attribute its record has, with a known
    direction; columns and report names nobody's (the table's own, the baselines', dHM included)."""
    spec = c.spec
    if not spec.fields:
        raise ValueError("a metric declares at least one field")
    used = {n for s in c.taken.values() for f in s.fields for n in (f.column, f.report) if n}
    attrs = set(spec.record.__dataclass_fields__)
    for f in spec.fields:
        if f.metric != spec.name:
            raise ValueError(f"field {f.column!r} names metric {f.metric!r}, not {spec.name!r}")
        for label in (f.column, f.report):
            if label is None:
                continue
            if not isinstance(label, str) or not label.strip() or label in RESERVED_COLUMNS or _others(label):
                raise ValueError(f"column {label!r} is reserved (the table's own columns, the baselines, dHM)")
            if label in used:
                raise ValueError(f"column {label!r} is another metric's")
        used.update(n for n in {f.column, f.report} if n)
        if f.attr not in attrs:
            raise ValueError(f"field {f.column!r} reads {f.attr!r}, which {spec.record.__name__} lacks")
        if f.direction not in ("higher", "lower", "none"):
            raise ValueError(f"field {f.column!r}: direction must be higher, lower or none")
    if spec.reading.main_value not in attrs:
        raise ValueError(f"main_value {spec.reading.main_value!r} is not a field of {spec.record.__name__}")


def _boxes(c: Claim) -> None:
    """Model fields name the metric's own options; a sidebar section of its own is the product's."""
    if any(f.setting not in c.own for f in c.spec.showing.model_fields) or c.spec.showing.switch is not None:
        raise ValueError(f"a model field names one of the metric's own options; a switch is {_held(c.taken, 'switch')}")


def _options(c: Claim) -> None:
    """Each option: lower-case words, no run setting, nobody's option or flag, a known kind, a default
    its own kind and check take, and a control the dashboard can draw (:func:`_check_control`)."""
    owned = [(s.name, o) for s in c.taken.values() for o in s.signing.options]
    owned += [(comp.name, o) for comp in c.components for o in comp.options]
    taken_options = {o.setting: name for name, o in owned}
    taken_flags = {o.cli_flag: name for name, o in owned}
    for o in c.spec.signing.options:
        if not NAME_PATTERN.fullmatch(o.setting):
            raise ValueError(f"option {o.setting!r} must be lower-case letters, digits and _ (at most 40)")
        if o.setting in RUN_SETTINGS:
            raise ValueError(f"option {o.setting!r} is a setting of every run")
        if o.setting in taken_options:
            raise ValueError(f"option {o.setting!r} is metric {taken_options[o.setting]!r}'s")
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", o.cli_flag) or o.cli_flag in taken_flags:
            raise ValueError(
                f"option flag {o.cli_flag!r} is not --lower-case-words, or it is metric {taken_flags.get(o.cli_flag)!r}'s"
            )
        if o.kind not in typing.get_args(OptionKind):
            raise ValueError(f"option {o.setting!r}: kind must be one of {', '.join(typing.get_args(OptionKind))}")
        if o.refuse(o.default) is not None:
            raise ValueError(f"option {o.setting!r}: its default is refused: {o.refuse(o.default)}")
        _check_control(o, c.spec, c.taken, c.components)


def _commands(c: Claim) -> None:
    """Its own vst commands and fetch-models options: lower-case words, none vst's or another metric's."""
    others = {command: s.name for s in c.taken.values() for command in s.tools.commands}
    for command in c.spec.tools.commands:
        if command in CLI_COMMANDS or command in others or not re.fullmatch(r"[a-z][a-z0-9-]{0,39}", command):
            raise ValueError(f"command {command!r} is vst's own or another metric's, or not lower-case words with -")
    used_fetch = {a.flag: s.name for s in c.taken.values() if s.tools.fetch is not None for a in s.tools.fetch.arguments}
    for a in c.spec.tools.fetch.arguments if c.spec.tools.fetch is not None else ():
        if not re.fullmatch(r"--[a-z][a-z0-9-]*", a.flag) or a.flag in FETCH_FLAGS or a.flag in used_fetch:
            owner = f"metric {used_fetch[a.flag]!r}'s" if a.flag in used_fetch else "the command's own"
            raise ValueError(f"fetch-models option {a.flag!r} is not --lower-case-words, or it is {owner}")


def _bench(c: Claim) -> None:
    """Its vst bench phases and sizes (:func:`_check_bench`)."""
    _check_bench(c.spec, c.taken)


def _drawing(c: Claim) -> None:
    """Its legend and the words a page says its marks with; what its measurement asks for and its
    trained folder are its own options."""
    showing = c.spec.showing
    if not isinstance(showing.legend, tuple) or not all(is_legend_entry(e) for e in showing.legend):
        raise ValueError("legend is a tuple of LegendEntry(label, 'highlight' or 'underline', colour)")
    if not isinstance(showing.in_text, str):
        raise ValueError("in_text is the words a page says the metric's marks with (a str)")
    measure = showing.diagnostics.measure if showing.diagnostics is not None else None
    if any(a not in c.own for a in (measure.asks if measure is not None else ())):
        raise ValueError("a measurement asks only for the metric's own options")
    if c.spec.tools.trained_folder and c.spec.tools.trained_folder not in c.own:
        raise ValueError(f"trained_folder {c.spec.tools.trained_folder!r} is not one of the metric's own options")


def _products(c: Claim) -> None:
    """What only the product's metrics hold: the grounder's region model, dHM's aspects, the scores
    index's re-aggregated items; and no ``formerly`` name in use."""
    spec = c.spec
    if spec.computing.region_model is not None:  # the grounder runs one region model
        raise ValueError(f"region_model is {_held(c.taken, 'region_model')} (the grounder runs its model over the regions)")
    for old in spec.reading.formerly:  # another metric's records are never read as this one's
        if old in c.names or old == spec.name:
            raise ValueError(f"formerly {old!r} is a name in use: only names no metric has any more can be read as this one's")
    if any(f.dhm for f in spec.fields):  # dHM's distances are the paper's (and one more, on request)
        aspects = ", ".join(f"{f.dhm} of {s.title}" for s in c.taken.values() for f in s.fields if f.dhm)
        raise ValueError(f"dhm aspects are the built-in metrics': {aspects or 'none here'}")
    if spec.computing.reaggregate is not None:  # the scores index keeps one metric's items
        raise ValueError(f"reaggregate is {_held(c.taken, 'reaggregate')} (the scores index keeps one metric's items)")


def _needs(c: Claim) -> None:
    """Known needs, covering its image hooks (``image_record``: images; ``texts``: images and CLIP)."""
    computing = c.spec.computing
    unknown = set(computing.needs) - set(typing.get_args(Need))
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; a metric may need {', '.join(typing.get_args(Need))}")
    if computing.image_record is not None and "images" not in computing.needs:
        raise ValueError("an image_record hook works on the story's images: declare needs={'images', ...}")
    if computing.texts is not None and not {"images", "clip"} <= computing.needs:
        raise ValueError("a texts hook is encoded by CLIP beside the regions: declare needs={'images', 'clip'}")


#: What registration checks of an installed metric, in order: each rule's docstring says what it refuses.
RULES: tuple[Rule, ...] = (_name, _record, _fields, _boxes, _options, _commands, _bench, _drawing, _products, _needs)


def check_plugin(spec: MetricSpec, taken: Mapping[str, MetricSpec], components: Sequence[Component] = ()) -> None:
    """Refuse a plugin spec that would be ambiguous or unreadable beside the metrics registered before
    it (``taken``) and the components' options: the first of :data:`RULES` it breaks raises with the reason.

    >>> from vst_core.contract import registry
    >>> [rule.__name__ for rule in RULES][:3]
    ['_name', '_record', '_fields']
    >>> check_plugin(registry().spec("redundancy"), registry().specs)
    Traceback (most recent call last):
    ...
    ValueError: the name 'redundancy' is taken by vst_core.metrics.rovist_nr
    """
    claim = Claim(spec, taken, components)
    for rule in RULES:
        rule(claim)


def readable_record(kind: type, seen: frozenset[type] = frozenset()) -> None:
    """Refuse a record type whose fields the JSON reader cannot read back: each field's hint must be
    str, int, float, bool, None, a Literal, a union with None, a tuple (``tuple[X, ...]`` or fixed)
    or another such dataclass.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Bad:
    ...     score: list[float]
    >>> readable_record(Bad)
    Traceback (most recent call last):
    ...
    TypeError: Bad.score: list[float] cannot be read back from JSON (use a tuple)
    """
    if kind in seen:
        return
    try:
        hints = typing.get_type_hints(kind)
    except Exception as exc:
        raise TypeError(f"{kind.__name__}: its type hints cannot be resolved ({exc})") from exc
    for f in dataclasses.fields(kind):
        _readable_hint(hints[f.name], f"{kind.__name__}.{f.name}", seen | {kind})


def _readable_hint(hint: Any, where: str, seen: frozenset[type]) -> None:
    origin = typing.get_origin(hint)
    if hint in (str, int, float, bool, type(None)) or origin is Literal:
        return
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            _readable_hint(option, where, seen)
        if len([o for o in typing.get_args(hint) if o is not type(None)]) != 1:
            raise TypeError(f"{where}: a union other than X | None cannot be read back from JSON")
        return
    if origin is tuple:
        for arg in typing.get_args(hint):
            if arg is not Ellipsis:
                _readable_hint(arg, where, seen)
        return
    if isinstance(hint, type) and is_dataclass(hint):
        readable_record(hint, seen)
        return
    shown = getattr(hint, "__name__", None) if origin is None else None
    raise TypeError(f"{where}: {shown or hint} cannot be read back from JSON (use a tuple)")


def _check_bench(spec: MetricSpec, taken: Mapping[str, MetricSpec]) -> None:
    """A metric's ``vst bench`` phases and sizes: lower-case names, none of the command's own or
    another metric's."""
    benches = {s.name: s.tools.bench for s in taken.values() if s.tools.bench is not None}
    phases = {p.name: name for name, b in benches.items() for p in b.phases}
    flags = {z.flag: name for name, b in benches.items() for z in b.sizes}
    bench = spec.tools.bench
    if bench is None:
        return
    for k, phase in enumerate(bench.phases):
        earlier = [p.name for p in bench.phases[:k]]
        _untaken("bench phase", phase.name, phase.name, "lower_case_words", BENCH_PHASES, phases, earlier, spec.name)
        alien = [t for t in phase.targets if not t.startswith(f"{phase.name}_")]
        if alien:
            raise ValueError(f"bench phase {phase.name!r} has targets for figures not its own: {', '.join(alien)}")
    for k, size in enumerate(bench.sizes):
        earlier = [z.flag for z in bench.sizes[:k]]
        _untaken("bench size", size.flag, size.name, "--lower-case-words", BENCH_FLAGS, flags, earlier, spec.name)
        if isinstance(size.default, bool) or not isinstance(size.default, (int, float, str, tuple)):
            raise ValueError(f"bench size {size.flag!r}: a size is a count, seconds, a word or several counts")
        if size.choices and not isinstance(size.default, str):
            raise ValueError(f"bench size {size.flag!r}: only a word has choices")


def _held(taken: Mapping[str, MetricSpec], hook: str) -> str:
    """Whose ``hook`` (a group's field) is: the built-in metrics' that declare it, by title.

    >>> from vst_core.contract import registry
    >>> _held(registry().specs, "switch")
    "the built-in RoViST-C's"
    """
    group = GROUP_OF[hook]
    owners = [s.title for s in taken.values() if getattr(getattr(s, group), hook) is not None]
    return f"the built-in {' and '.join(owners)}'s" if owners else "the product's own"


def _untaken(
    what: str,
    key: str,
    name: str,
    words: str,
    shared: Collection[str],
    used: dict[str, str],
    earlier: Collection[str],
    metric: str,
) -> None:
    """Refuse ``key`` (a bench phase's name, a size's flag) when ``name`` is not lower-case words or
    the key is the command's own (``shared``), another metric's (``used``: key -> metric) or this
    metric's already (``earlier``)."""
    if key in earlier:
        used[key] = metric
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or key in shared or key in used:
        owner = f"metric {used[key]!r}'s" if key in used else "the command's own"
        raise ValueError(f"{what} {key!r} is not {words}, or it is {owner}")


def _check_control(o: Any, spec: MetricSpec, taken: Mapping[str, MetricSpec], components: Sequence[Component] = ()) -> None:
    """An option's sidebar control: finite bounds only on a number (low < high, the default within
    them), a default that is one of its choices or a number (the dashboard shows it as the command
    line runs it); the key of its box or control (``key`` or the setting's name; a model file's box,
    :attr:`MetricSpec.showing.model_fields`, is keyed by the setting) and the setting of an option with
    either, lower-case words that are no metric's name, none of the dashboard's own keys (:data:`DASHBOARD_KEYS`,
    :data:`DASHBOARD_KEY_PREFIXES`: its widgets, session names, link parameters and sidebar values,
    ``files`` and ``tuned`` among them) and no other option's key or setting; ``signed`` True or False ("always" keeps a built-in
    metric's earlier run ids: an installed metric's options are signed in its own runs, so
    installing it changes no other run's id)."""
    if o.signed not in (True, False):
        raise ValueError(f"option {o.setting!r}: signed is True or False (an installed metric signs its own runs)")
    if o.bounds is not None:
        low, high = o.bounds
        if o.kind not in ("int", "float") or not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"option {o.setting!r}: bounds (low, high) are a number's, finite, low below high")
        if isinstance(o.default, (int, float)) and not low <= o.default <= high:
            raise ValueError(f"option {o.setting!r}: its default {o.default!r} is outside its bounds {o.bounds}")
    if o.is_control and o.default is None:
        raise ValueError(f"option {o.setting!r}: a control's default is one of its choices or a number within its bounds")
    boxed = any(f.setting == o.setting for f in spec.showing.model_fields)  # a box keyed by the setting
    if not (o.key or o.label or boxed):  # no widget: a box or a control is keyed by key or setting
        return
    others = [p for s in taken.values() for p in s.signing.options if p.setting != o.setting]
    others += [p for c in components for p in c.options]
    others += [p for p in spec.signing.options if p.setting != o.setting]
    used = {p.control_key for p in others if p.is_control or p.key} | {p.setting for p in others}
    for key in dict.fromkeys((o.control_key, o.setting)):  # the sidebar's values go by the setting too
        if (
            not NAME_PATTERN.fullmatch(key)
            or key in taken
            or key == spec.name
            or key in used
            or key in DASHBOARD_KEYS
            or key.startswith(DASHBOARD_KEY_PREFIXES)
        ):
            raise ValueError(
                f"option {o.setting!r}: key {key!r} is not lower-case words, or a metric's name or key, or the dashboard's"
            )
