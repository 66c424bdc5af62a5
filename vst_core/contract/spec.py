"""The contract a metric declares (:class:`MetricSpec`, its fields, settings and hooks), apart
from the registry that collects the specs (:mod:`vst_core.contract`), so the plugin checks
(:mod:`vst_core.contract.checks`) read it without importing the registry.

>>> MetricField("NR", "redundancy", "score", "repetition").direction
'higher'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeGuard, TypeVar, cast

from vst_core.contract.bench import Bench
from vst_core.contract.protocols import (
    GrounderLike,
    ImageEntryLike,
    Key,
    ModelsLike,
    PhraseLike,
    RegionModelLike,
    RunLike,
    SettingsLike,
    StorySetLike,
)
from vst_core.story import Story, StoryFields

if TYPE_CHECKING:
    import numpy as np

#: Which way is better for a number: up, down, or neither (a descriptor).
Direction = Literal["higher", "lower", "none"]
#: What computing a metric needs beyond the story's text: its ``images`` (and their regions), the
#: ``clip`` encoder, the whole image's CLIP vector beside its regions' (``image_vector``), ``idf`` weights fitted
#: over the story set before the chunks, the other stories of its ``sequence``, a ``model`` given
#: by the user's settings.
Need = Literal["images", "clip", "image_vector", "idf", "sequence", "model"]
#: A score card: label, value (None: undefined), hover text.
Card = tuple[str, "float | None", str]
#: The entry-point group other packages register metrics in.
ENTRY_POINT_GROUP = "vst_eval.metrics"
#: The built-in metrics (name -> module), in the order of tables, ``--help`` and the cards. The
#: names are known without importing anything, so default settings never build the registry.
BUILTIN_METRICS: dict[str, str] = {
    "redundancy": "vst_core.metrics.rovist_nr",
    "coherence": "vst_core.metrics.rovist_c",
    "grounding": "vst_core.metrics.groovist",
    "clipscore": "vst_core.metrics.clipscore",
    "rovist_vg": "vst_core.metrics.rovist_vg",
    "rovist_vg_clip": "vst_core.metrics.rovist_vg_clip",
    "vrank": "vst_core.metrics.vrank",
    "cosmic": "vst_core.metrics.cosmic",
    "judge": "vst_core.metrics.judge",
    "characters": "vst_core.metrics.characters",
    "char_alignment": "vst_core.metrics.character_alignment",
}
BUILTIN: tuple[str, ...] = tuple(BUILTIN_METRICS.values())
#: The metrics of a run that names none (text only, no model): also the ones every story card shows first.
DEFAULT_METRICS: tuple[str, ...] = ("redundancy",)
#: The settings of a run itself (:class:`vst_core.config.Settings`' fields; a test keeps the two
#: equal): what is computed, where and how fast. Every other setting is an :class:`Option` of a
#: metric or of a component (:data:`COMPONENTS`), and none may be named like one of these.
RUN_SETTINGS: frozenset[str] = frozenset({"metrics", "device", "batch_size", "workers", "options"})
#: The shared work the metrics read, each a module declaring ``COMPONENT`` (:class:`Component`) with
#: the options it owns: the text side (sentence splitter, spaCy pipeline) and the image pipeline
#: (CLIP, regions, preprocessing). Imported on first use, as the built-in metrics are.
COMPONENTS: dict[str, str] = {"text": "vst_core.text.options", "images": "vst_core.images.options"}
#: The commands of ``vst`` itself (:data:`vst_core.cli.COMMANDS`; a test keeps the two equal): no
#: metric's ``commands`` may take one.
CLI_COMMANDS: frozenset[str] = frozenset(
    {"bench", "cache", "compare", "dhm", "fetch-models", "import-scores", "meta-eval", "metrics", "report", "score", "study"}
)
#: The options of ``vst fetch-models`` itself (:mod:`vst_core.cli.models`): no metric's ``fetch`` may take one.
FETCH_FLAGS: frozenset[str] = frozenset({"--clip-model", "--clip-pretrained", "--detector", "--help"})
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")


class _HasMetrics(Protocol):
    @property
    def metrics(self) -> Mapping[str, Any]: ...


class StoryRecordLike(StoryFields, Protocol):
    """A story's record (:class:`vst_core.records.StoryScores`): the story (its ids, sentences and
    image references) and each metric's record under its name in ``metrics``; what a metric's
    :class:`Diagnostics` table reads. The drawing hooks are given the metric's own record instead."""

    @property
    def metrics(self) -> Mapping[str, Any]: ...


#: The record type of a metric (its spec's ``record``), which its hooks make and read.
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class MetricField:
    """One number of a record: table/CSV ``column``, where it lives, and how it is used.

    ``report`` is its name in meta-evaluation when it is a quality metric; ``covariate`` marks
    story descriptors (T, P) used to bin stories; ``direction`` says which way is better:
    ``higher``, ``lower`` (a repetition or misalignment) or ``none`` (a descriptor), and every
    comparison, ranking and highlight reads it (:func:`vst_core.records.direction_of`). ``dhm`` marks
    the number a dHM distance compares (:mod:`vst_core.analysis.dhm`): G, C or R (the paper's three
    aspects) or J (the rubric judge's, on request)."""

    column: str
    metric: str
    attr: str
    help: str
    report: str | None = None
    covariate: bool = False
    direction: Direction = "higher"
    dhm: Literal["G", "C", "R", "J"] | None = None
    #: The closed interval the number lies in by its definition (None: any finite number): a
    #: plugin's record or an imported score outside it is refused with the reason (:meth:`outside`).
    bounds: tuple[float, float] | None = None

    def outside(self, scores: object) -> str | None:
        """Why ``scores`` (a metric's record) holds this number outside :attr:`bounds`, or None.

        >>> from types import SimpleNamespace
        >>> f = MetricField("CLIPScore", "clipscore", "score", "h", bounds=(0.0, 2.5))
        >>> f.outside(SimpleNamespace(score=1e308)), f.outside(SimpleNamespace(score=2.5))
        ('CLIPScore = 1e+308 is outside [0, 2.5], the range it is defined on', None)
        """
        value = self.number(scores)
        if self.bounds is None or value is None or value != value:
            return None
        low, high = self.bounds
        slack = 1e-9 * max(1.0, abs(low), abs(high))  # float rounding at an end
        if low - slack <= value <= high + slack:
            return None
        return f"{self.column} = {value:g} is outside [{low:g}, {high:g}], the range it is defined on"

    def number(self, scores: object) -> float | None:
        """This field's number in a metric's record (``scores``), or None when it holds none."""
        value = getattr(scores, self.attr, None) if scores is not None else None
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)

    def value(self, record: _HasMetrics) -> float | None:
        return self.number(record.metrics.get(self.metric))


@dataclass(frozen=True, slots=True)
class ModelField:
    """A setting that names a file or folder a metric's model is read from, as it is asked for where
    there is no command line: the dashboard draws a text box labelled ``label`` (with ``help``), keeps
    what it names (a ``file`` or a ``folder``) inside the folders it may read; a model's message names
    the ``setting`` (:func:`vst_core.models.hub.option`), which the sidebar words as the box's
    ``label``. ``flag`` (the command line's option) is no longer read and stays so that installed
    metrics that give it keep working. The metric is on there when every
    ``required`` field of it is filled in. ``setting`` is a :class:`vst_core.config.Settings` field.

    >>> ModelField("vrank_model", "Vrank model folder", "folder", "--vrank-model").required
    True
    """

    setting: str
    label: str
    kind: Literal["file", "folder"]
    flag: str
    help: str = ""
    required: bool = True


#: A value a metric's own setting takes.
OptionValue = str | int | float | bool | None
#: How an :class:`Option` is given: text, a file or a folder (a path: the dashboard keeps it inside
#: the folders it may read), a whole number, a number, or on/off.
OptionKind = Literal["text", "file", "folder", "int", "float", "bool"]


def at_least_one(value: Any) -> str | None:
    """An ``Option.check`` for a count: why ``value`` is below 1, or None (None is left to the kind).

    >>> at_least_one(0), at_least_one(3)
    ('must be >= 1, got 0', None)
    """
    return None if value is None or value >= 1 else f"must be >= 1, got {value}"


@dataclass(frozen=True, slots=True)
class Option:
    """A setting a metric owns: declared here once, it is a ``vst score`` option (``flag``, by default
    ``--`` and the name with dashes), a keyword of :class:`vst_core.config.Settings` (kept in its
    ``options``), a sidebar box when it has a ``label`` (a ``file`` or ``folder`` is a model's file:
    the metric is on there when its ``required`` ones are filled in), and a part of the signature of
    every run of the metric when ``signed`` (a model's file is not: the metric's ``identity`` names it
    by its digest); ``while_set`` signs it only while that other option is set; ``signed="always"``
    signs it in every run, the metric's or not (as earlier versions signed a setting every run had,
    so the ids of their runs stay). ``check(value)`` says why a value cannot be used (None: it can);
    ``choices`` the values it may take. An on/off option's flag sets the opposite of its default
    (``--keep-repeated-pairs`` turns ``coherence_repeat_zero`` off). A number with ``bounds``, or a
    text with ``choices``, that has a ``label`` is a control in the metric's own sidebar section (a
    slider, a select box), bound to the URL under ``key`` (by default the setting's name).

    >>> o = Option("vrank_model", kind="folder", label="Vrank model folder", required=True, signed=False)
    >>> o.cli_flag, o.parse("runs/vrank"), Option("top_k", 5, kind="int").parse("7")
    ('--vrank-model', 'runs/vrank', 7)
    """

    setting: str
    default: OptionValue = None
    help: str = ""
    kind: OptionKind = "text"
    flag: str = ""
    label: str = ""
    required: bool = False
    signed: bool | Literal["always"] = True
    while_set: str = ""
    metavar: str = ""
    #: the values it may take (none: any of its kind)
    choices: tuple[str, ...] = ()
    #: an empty value means "not given" (None), as for a server's address left blank
    blank_is_unset: bool = False
    #: None is a value of its own beside a default that is not None (CLIP's pretrained tag: none, the
    #: weights coming from a checkpoint file)
    nullable: bool = False
    #: why a value cannot be used, said after the setting's name ("must be >= 1, got 0"), or None
    check: Callable[[Any], str | None] | None = None
    #: a number's range in the sidebar's slider (low, high); the command line takes any ``check`` allows
    bounds: tuple[float, float] | None = None
    #: the sidebar's key and URL parameter of a control (none: the setting's name)
    key: str = ""
    #: signed in every run with a metric that has one of these needs (a component's options: CLIP's
    #: weights in every run that loads CLIP), besides the runs of the metric that owns it
    needs: tuple[Need, ...] = ()
    #: the name earlier versions signed it under (``clip_model`` was ``clip_arch``): signatures keep
    #: it, so the ids of their runs stay, and a recorded signature's name is read back as this option
    signed_as: str = ""
    #: the value the flag given bare sets (``--nouns``: ``units`` "nouns"); an on/off option's is the
    #: other value than its default. None: the flag takes a value
    const: OptionValue = None
    #: named presets of a number (θ: VIST, AESOP, ...): the option's value is a preset's name or a
    #: number (the dashboard's θ control offers them, then a slider within ``bounds``)
    presets: tuple[tuple[str, float], ...] = ()
    #: the settings a value given on the command line or in a box stands for (``--regions FILE``:
    #: ``regions`` "csv" and ``regions_file`` FILE); None: the option's own value
    expand: Callable[[OptionValue], Mapping[str, OptionValue]] | None = None
    #: the value a signature records, from the run's settings (θ: the number its preset stands for;
    #: ``preprocess``: what ``auto`` resolves to); None: the option's value as set
    signed_value: Callable[[SettingsLike], OptionValue] | None = None

    @property
    def signed_name(self) -> str:
        """The option's name in a signature: ``signed_as`` or the setting's name."""
        return self.signed_as or self.setting

    @property
    def bare_value(self) -> OptionValue:
        """The value the flag given without a value sets (None: the flag takes one).

        >>> Option("penalize", True, kind="bool").bare_value, Option("units", "phrases", const="nouns").bare_value
        (False, 'nouns')
        """
        if self.const is not None:
            return self.const
        return (not self.default) if self.kind == "bool" else None

    @property
    def control_key(self) -> str:
        """The sidebar's key (and URL parameter) of the option's control: ``key`` or the setting's name."""
        return self.key or self.setting

    @property
    def is_control(self) -> bool:
        """Whether the option is a control of its metric's sidebar section: it has a ``label`` and is a
        number with ``bounds`` or a text with ``choices``.

        >>> Option("nr_ngram", 4, kind="int", label="n-gram window", bounds=(2, 8)).is_control
        True
        """
        return bool(self.label) and (
            (self.kind in ("int", "float") and self.bounds is not None) or (self.kind == "text" and bool(self.choices))
        )

    @property
    def cli_flag(self) -> str:
        """The command line's option: ``flag``, or ``--`` and the setting's name with dashes."""
        return self.flag or "--" + self.setting.replace("_", "-")

    def parse(self, text: str | None) -> OptionValue:
        """The value ``text`` (the command line's or a box's) stands for: None for none given; a number
        or on/off read by its kind (ValueError with the reason when it is none)."""
        if text is None or (self.blank_is_unset and not str(text).strip()):
            return None
        if self.kind in ("int", "float"):
            try:
                return int(text) if self.kind == "int" else float(text)
            except ValueError:
                words = "a whole number" if self.kind == "int" else "a number"
                raise ValueError(f"{self.setting} must be {words}, got {text!r}") from None
        if self.kind == "bool":
            if isinstance(text, bool):
                return text
            lowered = str(text).strip().lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(f"{self.setting} must be true or false, got {text!r}")
            return lowered in ("true", "1", "yes", "on")
        return text

    def refuse(self, value: Any) -> str | None:
        """Why ``value`` cannot be this option's (its kind, then ``check``), or None.

        >>> Option("top_k", 5, kind="int").refuse("7"), Option("top_k", 5, kind="int").refuse(7)
        ("top_k must be a whole number, got '7'", None)
        """
        wanted: dict[str, tuple[tuple[type, ...], str]] = {
            "int": ((int,), "a whole number"),
            "float": ((int, float), "a number"),
            "bool": ((bool,), "true or false"),
        }
        types, words = wanted.get(self.kind, ((str,), "text"))
        if value is None and self.default is not None and not self.nullable:  # unset is its default, never None
            return f"{self.setting} must be {words}, got None"
        if value is not None and (not isinstance(value, types) or (self.kind != "bool" and isinstance(value, bool))):
            return f"{self.setting} must be {words}, got {value!r}"
        if self.choices and value is not None and value not in self.choices:
            return f"{self.setting} must be {' or '.join(map(repr, self.choices))}, got {value!r}"
        reason = self.check(value) if self.check is not None else None
        return f"{self.setting} {reason}" if reason else None

    def model_field(self) -> ModelField | None:
        """The sidebar's box of a file or folder option with a ``label`` (None for any other)."""
        if self.kind not in ("file", "folder") or not self.label:
            return None
        return ModelField(self.setting, self.label, self.kind, self.cli_flag, self.help, self.required)


@dataclass(frozen=True)
class Switch:
    """The dashboard's own section for a metric whose model is named by one text setting (a keyword,
    a hub name or a path; not a file box): under ``header``, a text box ``box`` for ``setting``
    (with ``help``) and an on/off toggle ``label``led, with ``purpose`` as its help and ``off`` said
    when the model does not load. ``loads`` are the settings its model is loaded with (what keeps
    a loaded model for reuse; a message naming one is said in the box's terms); ``flags`` the CLI
    options of those settings (no longer read, kept for installed metrics that give them);
    ``path(value)`` the part of the box's value read as a path ('' for a keyword or a
    name), which the dashboard keeps inside the folders it may read. The toggle's key (and URL
    parameter) is the metric's name, the box's the setting's; both are
    :class:`dashboard.choices.Choices` fields.

    >>> Switch("Coherence", "coherence_model", "Pair model", "Score sentence pairs").path("bert-nsp")
    'bert-nsp'
    """

    header: str
    setting: str
    box: str
    label: str
    help: str = ""
    purpose: str = ""
    off: str = ""
    loads: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    path: Callable[[str], str] = str.strip


#: One model ``vst fetch-models`` checks: (its name, whether its files are cached already, a check
#: that loads it and uses it once -> what it did; raises ``ModelLoadError`` when it is missing or broken).
FetchCheck = tuple[str, bool, Callable[[], str]]


@dataclass(frozen=True)
class FetchArgument:
    """One option a metric adds to ``vst fetch-models``: its ``flag``; an on/off ``switch``, or a value
    (``metavar``) with a ``default``; with a ``const`` the flag may be given bare and then takes it
    (``--vrank-base`` alone: the default base encoder).

    >>> FetchArgument("--rovist-vg-model", "the checkpoint", metavar="FILE").dest
    'rovist_vg_model'
    """

    flag: str
    help: str
    metavar: str = ""
    default: OptionValue = None
    const: OptionValue = None
    switch: bool = False

    @property
    def dest(self) -> str:
        """The name its value is given under (the flag's words joined by ``_``)."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class FetchPlan:
    """What ``vst fetch-models`` checks of a metric: its models (:data:`FetchCheck`), lines said as
    notes, and folders to copy to an offline machine (what the variable is -> where)."""

    checks: tuple[FetchCheck, ...] = ()
    notes: tuple[str, ...] = ()
    folders: Mapping[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class Fetch:
    """A metric's part of ``vst fetch-models``: its ``arguments``, and ``plan(values)`` what to check
    given their values (``{dest: value}``; every argument is there, None when not given)."""

    arguments: tuple[FetchArgument, ...]
    plan: Callable[[Mapping[str, OptionValue]], FetchPlan]


#: The settings a re-aggregation depends on, as it compares them: GROOVIST's (θ, penalty, weights).
AgainKey = tuple[float | bool | str, ...]


@dataclass(frozen=True)
class Reaggregation(Generic[R]):
    """How a metric is computed again with no model when only some settings change, from numbers its
    records keep for each of their items (GROOVIST: each phrase's best cosine and weight, under another
    θ, penalty or weighting).

    ``settings`` are those settings, ``what`` them in words; ``key(settings)`` what of them the numbers depend on (equal keys,
    equal numbers); ``refuse(base, wanted)`` why records scored under ``base`` cannot be re-aggregated
    to ``wanted`` (None: they can); ``record(record, key)`` one record again; ``items(json record)``
    the (value, weight) of each item the scores index keeps from a record read from a file ([] when
    the record keeps none); ``columns(values, weights, rows, n, key)`` the metric's table columns of
    ``n`` rows again at once (``rows[k]``: the row of item k; NaN for a row without items);
    ``provenance(key)`` what a signature records of it and ``describe(key)`` its words in footers.
    At most one metric of a registry has one (the scores index keeps one set of items per story):
    a package's metric has none."""

    settings: tuple[str, ...]
    what: str
    key: Callable[[SettingsLike], AgainKey]
    refuse: Callable[[SettingsLike, SettingsLike], str | None]
    record: Callable[[R, AgainKey], R]
    items: Callable[[object], list[tuple[float, float]]]
    columns: Callable[[np.ndarray, np.ndarray, np.ndarray, int, AgainKey], dict[str, np.ndarray]]
    provenance: Callable[[AgainKey], dict[str, float | bool | str]]
    describe: Callable[[AgainKey], str]


#: A metric on a batch of stories: ``(stories, run) -> {(system, story_id): record or the reason
#: there is none}``; ``run`` is a :class:`~vst_core.contract.protocols.RunLike` (settings, models,
#: the story set's folder, the set metrics computed before the chunks, shared image results).
ScoreHook = Callable[[Sequence[Story], RunLike], Mapping[Key, R | str]]
#: An image metric of one story from the image work every image metric of a run shares: ``(grounder,
#: story, entries) -> record``; ``grounder`` (a :class:`~vst_core.contract.protocols.GrounderLike`)
#: chose the story's regions, encoded them and its texts (cached) and parsed its noun phrases, and
#: ``entries`` are its images. A metric with this hook needs no ``score``: it is scored through the
#: shared work (``RunLike.image_records``).
ImageRecordHook = Callable[[GrounderLike, Story, Sequence[ImageEntryLike]], R]
#: The texts an image metric embeds with CLIP beyond the story's phrase units, encoded with them
#: before any story is scored: ``(settings, story, noun phrases) -> texts``.
TextsHook = Callable[[SettingsLike, Story, Sequence[PhraseLike]], Iterable[str]]
#: Images an image metric needs beside the story's own, as the story names them (relative to the
#: set's folder): ``(story) -> refs``; each is encoded whole (no regions) before any story is scored,
#: and its entry is ``grounder.crop(ref)`` (the characters' crops).
ImageRefsHook = Callable[[Story], Sequence[str]]
#: A metric over the stories of a sequence together, computed once per run before the chunks from
#: the whole set: ``(story_set, todo, settings, models, progress) -> {(system, story_id): record or
#: the reason}`` for the stories of ``todo``. A metric with this hook needs no ``score``: each batch reads
#: its results back (``RunLike.set_records``).
SetHook = Callable[
    [StorySetLike, Sequence[Story], SettingsLike, ModelsLike, "Callable[[int], object] | None"], Mapping[Key, R | str]
]
#: A record holding only a score imported from another source: ``(value, note) -> record``.
ImportHook = Callable[[float, str], R]
#: Loads what computing the metric needs from the run's models (called before any work, so a missing
#: model is found up front); raises ``ModelLoadError`` with the reason.
LoadHook = Callable[[ModelsLike], object]
#: A model the grounder runs over each story's image regions in the same pass as CLIP (RoViST-VG's
#: own): ``(models) -> model``, loaded through ``ModelsLike.own``.
RegionModelHook = Callable[[ModelsLike], RegionModelLike]
#: The identity of what the metric's numbers depend on beyond the settings, for the signature:
#: ``(settings) -> {key: "name@digest"}`` (its weights, its tagger, its template).
IdentityHook = Callable[[SettingsLike], dict[str, str]]
#: Its part of a run's one-line description, from the signature's recorded settings alone (so a
#: footer and a record read back from a file say the same): ``(recorded settings) -> text``.
CaptionHook = Callable[[Mapping[str, Any]], str]
#: The score cards of a story for this metric: ``(its record, or None) -> [(label, value, tip)]``.
#: Called for every metric of the run on every story drawn: None when the story has no record of
#: the metric (its error, or a story it was not scored on), where a card shows no value or none is shown.
CardsHook = Callable[[R | None], list[Card]]
#: A metric's own judgement of a story against the others of its sequence: ``(the metric's record) ->
#: [(other system, other story id, margin)]``, margin > 0 when the story is preferred (Vrank's);
#: meta-evaluation judges the metric's pairs by them instead of by the difference of its scores.
MarginsHook = Callable[[R], "Iterable[tuple[str, str, float]]"]
#: What a run says of the metric when it ends: ``(models) -> (notes, failures)``, lines for the user
#: (its model calls, its cache) and one line per kind of failed call (any fails ``vst score --strict``).
SummaryHook = Callable[[ModelsLike], "tuple[list[str], list[str]]"]
#: The metric's record of a story with what a run left out and drawing needs filled in: ``(its record,
#: the story it is of) -> its record`` (RoViST-NR's repeated spans of a ``--no-spans`` run, from the
#: story's sentences); called only on a story that has a record of the metric.
CompleteHook = Callable[[R, StoryFields], R | None]
#: Why a run's settings cannot be used for this metric (its options together: the judge's server needs
#: the name it serves the model under): ``(settings) -> reason or None``; called when a
#: :class:`vst_core.config.Settings` is made with the metric's options set.
SettingsCheckHook = Callable[[SettingsLike], "str | None"]


#: A table's rows, each a mapping of column -> value.
Rows = Sequence[Mapping[str, object]]


@dataclass(frozen=True)
class Measure:
    """A measurement a metric makes on request by asking its model (the judge's position bias): a
    button ``label``led (``{sequences}``: how many sequences it asks about), at most ``limit``
    sequences; ``asks`` its options a user may set beside the button (a box each, named by its
    ``label``; an empty box keeps the run's value); ``run(stories, root, settings) -> rows``, raising
    ``ModelLoadError`` (or ValueError, OSError) when the model cannot be had; ``caption`` under its table."""

    label: str
    run: Callable[[Sequence[Story], Path, SettingsLike], Rows]
    asks: tuple[str, ...] = ()
    caption: str = ""
    limit: int = 50


@dataclass(frozen=True)
class Diagnostics:
    """A section a metric adds to the Agreement page about itself: under ``title``, ``table(records)
    -> rows`` read from the evidence of at most ``limit`` of its records (no model), with ``caption``
    (``{n}``: how many records, ``{limit}``); and a :class:`Measure` that asks its model, if any."""

    title: str
    table: Callable[[Sequence[StoryRecordLike]], Rows]
    caption: str = ""
    limit: int = 2000
    measure: Measure | None = None


@dataclass(frozen=True)
class Region:
    """An item of a metric's record matched to a region of one of the story's images: what it is
    (``text``), the ``image`` (0-based), the ``box`` in that image's pixels, the ``cosine`` it
    matched with, and the line a picker shows for it (``choice``).

    >>> Region("dog", 1, (0.0, 0.0, 10.0, 8.0), 0.31, "dog → image 2").image
    1
    """

    text: str
    image: int
    box: tuple[float, ...]
    cosine: float
    choice: str


MarkStyle = Literal["highlight", "underline"]


@dataclass(frozen=True)
class Mark:
    """A span of a story's sentence that a metric marks in the text (``showing.marks``): sentence
    ``sentence`` (0-based), characters ``start:end``, drawn as a ``highlight`` (a background) or an
    ``underline`` of ``colour`` (CSS), ``title`` on hover (escaped when drawn), with the CSS class
    ``css`` and ``data-`` attributes ``data``. Highlights on the same characters join their titles
    and show the colour of the highest ``rank``; an underline replaces an earlier one there. A
    ``word`` mark (a repeat) is hidden by "content words only" when it spans a function word or
    punctuation.

    >>> Mark(0, 4, 7, "underline", "blue", "dog: 0.3", "vst-np", (("phrase", "0"),)).style
    'underline'
    """

    sentence: int
    start: int
    end: int
    style: MarkStyle
    colour: str
    title: str
    css: str = ""
    data: tuple[tuple[str, str], ...] = ()
    rank: int = 0
    word: bool = False


@dataclass(frozen=True)
class LegendEntry:
    """One line of the legend under a story: what a kind of mark means, drawn in its ``style`` and ``colour``."""

    label: str
    style: MarkStyle
    colour: str


def is_mark(value: object) -> TypeGuard[Mark]:
    """Whether ``value`` is a :class:`Mark` whose every field has its declared type (a plugin's mark
    that is not is left out when a story is drawn: drawing it could fail or say something else).

    >>> is_mark(Mark(0, 1, 3, "highlight", "red", "x")), is_mark(Mark(0, "1", 3, "highlight", "red", "x"))
    (True, False)
    """
    if not isinstance(value, Mark):
        return False
    for number in (value.sentence, value.start, value.end, value.rank):
        if not isinstance(number, int) or isinstance(number, bool):
            return False
    if not (isinstance(value.colour, str) and isinstance(value.title, str) and isinstance(value.css, str)):
        return False
    if value.style not in ("highlight", "underline") or not isinstance(value.word, bool) or not isinstance(value.data, tuple):
        return False
    return all(isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], str) and isinstance(d[1], str) for d in value.data)


def is_legend_entry(value: object) -> TypeGuard[LegendEntry]:
    """Whether ``value`` is a :class:`LegendEntry` whose fields have their declared types (registration
    refuses a legend with another; a story's legend leaves it out)."""
    return (
        isinstance(value, LegendEntry)
        and isinstance(value.label, str)
        and isinstance(value.colour, str)
        and value.style in ("highlight", "underline")
    )


#: What the metric marks in the story's sentences, from its record: ``(its record) -> [Mark]``
#: (RoViST-NR's repeated spans, GROOVIST's noun phrases by contribution).
MarksHook = Callable[[R], "Sequence[Mark]"]
#: The regions a metric's items matched, which a page outlines on the story's images on request:
#: ``(its record) -> (what an item is, [Region])`` (GROOVIST's: "phrase", each noun phrase's best region).
RegionsHook = Callable[[R], "tuple[str, Sequence[Region]]"]
#: What the metric draws between consecutive sentences of a story, from its record: ``(its record) ->
#: {k: HTML between sentence k and k+1}`` (RoViST-C's coherence chips); every text escaped.
TransitionsHook = Callable[[R], "Mapping[int, str]"]
#: The evidence of a story's record of this metric: ``(its record) -> (title, HTML) or None``, called
#: only on a story that has a record of the metric; every text from the record escaped
#: (:func:`vst_core.viz.safe.html_text`).
EvidenceHook = Callable[[R], "tuple[str, str] | None"]


@dataclass(frozen=True)
class Computing(Generic[R]):
    """How a metric is computed: what it ``needs`` beyond the text; ``score`` on a batch of stories
    (None: it is only read from files), or for an image metric ``image_record`` per story over the
    image work the image metrics share (with ``texts``, what it embeds beyond the phrase units, and
    ``image_refs``, the images beyond the story's own it needs whole vectors of); ``together`` over the
    stories of a sequence, before the chunks; ``load`` its models up front; ``region_model`` a model of
    its own the grounder runs over the image regions; ``reaggregate`` it again under other settings
    from what its records keep; ``summary`` what ``vst score`` says of it when the run ends."""

    needs: frozenset[Need] = frozenset()
    score: ScoreHook[R] | None = None
    image_record: ImageRecordHook[R] | None = None
    texts: TextsHook | None = None
    image_refs: ImageRefsHook | None = None
    together: SetHook[R] | None = None
    load: LoadHook | None = None
    region_model: RegionModelHook | None = None
    reaggregate: Reaggregation[R] | None = None
    summary: SummaryHook | None = None


@dataclass(frozen=True)
class Signing:
    """What a run of the metric signs and how it is named: the shared ``settings`` that change its
    numbers, its ``options`` (:class:`Option`: the settings it owns, each a flag, a keyword, maybe a
    sidebar box, and signed by its rule) and ``check`` why a run's values of them cannot be used; its
    ``version`` (a plugin's package version); ``identity`` its weights by digest and ``caption`` its
    words in footers."""

    settings: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    check: SettingsCheckHook | None = None
    version: str = ""
    identity: IdentityHook | None = None
    caption: CaptionHook | None = None


@dataclass(frozen=True)
class Showing(Generic[R]):
    """How a metric is drawn: its score ``cards`` (None: one per reported field) and ``evidence``
    block; what it draws between a story's sentences (``transitions``: RoViST-C's chips) and in them
    (``marks``: RoViST-NR's repeated spans, GROOVIST's noun phrases), their ``legend``, and ``in_text``,
    the words a page's introduction says it with ("the spans that repeat"); the image
    ``regions`` its items matched, outlined on request; ``complete``, what a run left out filled in
    before a story is drawn; its own Agreement section (``diagnostics``); the dashboard's boxes of its
    model's files (``model_fields``, with the boxes of its file options), its own sidebar section
    (``switch``: RoViST-C's pair model) and whether the dashboard ``offered`` to compute it. Each
    drawing hook is given the metric's own record of the story (``cards`` is given None when the
    story has none; the others are called only when it has one; ``complete`` is given the story too)."""

    cards: CardsHook[R] | None = None
    evidence: EvidenceHook[R] | None = None
    transitions: TransitionsHook[R] | None = None
    marks: MarksHook[R] | None = None
    legend: tuple[LegendEntry, ...] = ()
    in_text: str = ""
    regions: RegionsHook[R] | None = None
    complete: CompleteHook[R] | None = None
    diagnostics: Diagnostics | None = None
    model_fields: tuple[ModelField, ...] = ()
    switch: Switch | None = None
    offered: bool = True


@dataclass(frozen=True)
class Reading(Generic[R]):
    """How a metric's records are read and compared: ``main_value``, the attribute compared when two
    sources give the same story's metric; ``aliases``, other names of it in released score files
    (lower case: ``g``, ``groovist``); ``from_score``, a record of an imported score (None: it cannot
    be imported); ``formerly``, the names earlier versions wrote its records under; ``margins``, its
    own verdicts on pairs of stories (a ranker's), which meta-evaluation judges its pairs by."""

    main_value: str = "score"
    aliases: tuple[str, ...] = ()
    from_score: ImportHook[R] | None = None
    formerly: tuple[str, ...] = ()
    margins: MarginsHook[R] | None = None


@dataclass(frozen=True)
class Tools:
    """What a metric adds to the tools around scoring: its own ``vst`` ``commands`` (name -> module
    with ``add_parser(sub)`` and ``run(args)``: Vrank's ``train-vrank``), its options of ``vst
    fetch-models`` (``fetch``), and ``trained_folder``, the option naming the folder its training
    command wrote, whose card names the stories it was trained on (meta-evaluation sets them apart);
    ``bench``, its part of ``vst bench`` (its phases, their sizes, the shared runs it is scored in)."""

    commands: Mapping[str, str] = field(default_factory=dict)
    fetch: Fetch | None = None
    trained_folder: str = ""
    bench: Bench | None = None


#: The groups of a :class:`MetricSpec`, by attribute, and the group each of their fields is in
#: (``score`` is ``computing.score``): what registration names a hook by.
GROUPS: dict[str, type] = {"computing": Computing, "signing": Signing, "showing": Showing, "reading": Reading, "tools": Tools}
GROUP_OF: dict[str, str] = {f.name: g for g, kind in GROUPS.items() for f in fields(kind)}


@dataclass(frozen=True)
class MetricSpec(Generic[R]):
    """Everything the product needs to know about one metric: a narrow core, and the rest in typed
    groups.

    The core: ``name`` (in ``--metrics`` and on disk), ``title``, ``description``; ``record``, a frozen
    dataclass of JSON-able fields (str, int, float, bool, None, tuples, nested frozen dataclasses),
    read back by its type hints; ``fields``, its numbers (each ``MetricField.metric`` is ``name``);
    ``card``, its metric card (a path in this project, a URL for a plugin). The groups, each given
    by keyword: :class:`Computing` (``computing``), :class:`Signing` (``signing``), :class:`Showing`
    (``showing``), :class:`Reading` (``reading``) and :class:`Tools` (``tools``). Made, the spec
    holds what its options imply: each file or folder option with a ``label`` is a box of
    ``showing.model_fields``, each signed option a setting of ``signing.settings``, and an image
    metric (``image_record``, no ``score``) is scored through the image work the run shares.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Words:
    ...     score: float | None
    >>> spec = MetricSpec("nr", "NR", "d", Words, (MetricField("NR", "nr", "score", "h"),), reading=Reading(aliases=("r",)))
    >>> spec.reading.aliases, spec.computing.score is None
    (('r',), True)
    """

    name: str
    title: str
    description: str
    record: type[R]
    fields: tuple[MetricField, ...]
    _: KW_ONLY
    card: str = ""
    computing: Computing[R] = field(default_factory=Computing)
    signing: Signing = field(default_factory=Signing)
    showing: Showing[R] = field(default_factory=Showing)
    reading: Reading[R] = field(default_factory=Reading)
    tools: Tools = field(default_factory=Tools)
    module: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        sign, show, compute = self.signing, self.showing, self.computing
        known = {f.setting for f in show.model_fields}
        boxes = tuple(f for o in sign.options if (f := o.model_field()) is not None and f.setting not in known)
        if boxes:  # an option with a box is its model field
            object.__setattr__(self, "showing", replace(show, model_fields=show.model_fields + boxes))
        signed = tuple(o.setting for o in sign.options if o.signed and o.setting not in sign.settings)
        if signed:  # what a run of the metric signs: its signed options, declared once
            object.__setattr__(self, "signing", replace(sign, settings=sign.settings + signed))
        if compute.score is None and compute.image_record is not None:
            object.__setattr__(self, "computing", replace(compute, score=_ImageScore(compute.image_record, self.name)))
        elif compute.score is None and compute.together is not None:
            object.__setattr__(self, "computing", replace(compute, score=_SetScore(self.name)))

    def default_cards(self, record: R | None) -> list[Card]:
        """One card per reported field (or the first field) of ``record`` (None: no value), its help
        as the hover text."""
        shown = [f for f in self.fields if f.report] or list(self.fields[:1])
        return [(f.column, f.number(record), f.help) for f in shown]

    def cards_of(self, record: R | None) -> list[Card]:
        """A story's score cards for this metric, from its record of it (None: it has none)."""
        cards = self.showing.cards
        return cards(record) if cards is not None else self.default_cards(record)


@dataclass(frozen=True)
class _ImageScore(Generic[R]):
    """The ``score`` hook of an image metric: its ``image_record`` on each story of the batch, over the
    image work the run's image metrics share."""

    build: ImageRecordHook[R]
    metric: str

    def __call__(self, stories: Sequence[Story], run: RunLike) -> Mapping[Key, R | str]:
        return cast("Mapping[Key, R | str]", run.image_records(stories, self.build, metric=self.metric))


@dataclass(frozen=True)
class _SetScore(Generic[R]):
    """The ``score`` hook of a set metric: each story's record of the batch from the results its
    ``together`` computed over the whole set before the chunks."""

    metric: str

    def __call__(self, stories: Sequence[Story], run: RunLike) -> Mapping[Key, R | str]:
        return cast("Mapping[Key, R | str]", run.set_records(stories, self.metric))


@dataclass(frozen=True)
class Component:
    """Shared work the metrics read and the settings it owns (:data:`COMPONENTS`): its ``name`` and
    ``title`` (the command line's group of its options), its ``options`` (each an :class:`Option`,
    signed by its ``needs``: a component's option with none is signed in every run) and ``check``, why
    a run's values of them cannot be used together.

    >>> Component("text", "Text", (Option("splitter", "punkt", choices=("punkt", "spacy"), flag="--split"),)).options[0].cli_flag
    '--split'
    """

    name: str
    title: str
    options: tuple[Option, ...]
    check: SettingsCheckHook | None = None


#: Numbers outside the registry whose direction is known: the text-overlap baselines and dHM
#: (a column named so, or starting with one and a space or ``-``, is theirs).
OTHER_DIRECTIONS: dict[str, Direction] = {
    "BLEU": "higher",
    "ROUGE-L": "higher",
    "CIDEr": "higher",
    "METEOR": "higher",
    "dHM": "lower",
}
