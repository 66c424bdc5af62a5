"""Typed scores records: the contract between scoring, the CLI, the dashboard and meta-evaluation.

A :class:`StoryScores` is one story's metadata, one typed record per metric it was scored with
(its story score and the evidence: phrases and regions, sentence pairs, repeated spans), per-metric
errors as data, warnings and the settings signature. On disk it is one JSON object per line of a
scores JSONL (``format`` 1, the layout of every earlier version); :meth:`StoryScores.to_json` writes
it, :func:`read_record` reads one back and turns whatever is wrong into reported problems.

Frozen stdlib dataclasses rather than pydantic: no new dependency, mypy checks every use of a
field, and validation is needed at one boundary only (JSON in), which :func:`decode` does from
the type hints with a path to the offending field. :data:`FIELDS` is the one registry of the
numbers a record carries, read by tables, cards, exports and meta-evaluation.

Longer than 400 lines on purpose: the record types, their registry and their reader are one
contract, changed together and read together.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Any, TypeVar, Union

from vst_core.metric_spec import Direction, MetricField, registry
from vst_core.metrics.variants import CoherenceContext, RecordedNRVariant
from vst_core.problems import Problem

#: Layout version written into every record; bumped when the layout changes.
SCORES_FORMAT = 1

Span = tuple[int, int]
T = TypeVar("T")


class RecordError(ValueError):
    """A JSON value that does not fit the record type; the message names the field."""


# --------------------------------------------------------------------------- metric records


@dataclass(frozen=True, slots=True)
class InterRepeat:
    """Words sentence ``sentence`` shares with the earlier sentence ``earlier`` (character spans)."""

    sentence: int
    earlier: int
    jaccard: float
    words: tuple[str, ...]
    spans: tuple[Span, ...]
    earlier_spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class IntraRepeat:
    """An n-gram window of a sentence overlapping the previous window (character spans)."""

    sentence: int
    jaccard: float
    words: tuple[str, ...]
    window: Span
    previous: Span
    spans: tuple[Span, ...]


@dataclass(frozen=True, slots=True)
class RedundancyScores:
    """RoViST-NR = 1 − mean(inter, intra); repeats are None when a ``--no-spans`` run left them out."""

    score: float | None
    inter: float | None
    intra: float | None
    variant: RecordedNRVariant
    n: int
    notes: tuple[str, ...] = ()
    inter_repeats: tuple[InterRepeat, ...] | None = None
    intra_repeats: tuple[IntraRepeat, ...] | None = None


@dataclass(frozen=True, slots=True)
class CoherencePair:
    """P(sentence ``to`` follows sentence ``from``); None where undefined."""

    from_: int = field(metadata={"json": "from"})
    to: int
    probability: float | None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class CoherenceScores:
    """RoViST-C: mean transition probability; ``weakest`` is the index of the lowest pair."""

    score: float | None
    pairs: tuple[CoherencePair, ...]
    weakest: int | None
    model: str
    notes: tuple[str, ...] = ()
    context: CoherenceContext = "pair"  # "prefix": P(sentence i+1 follows sentences 1..i)


@dataclass(frozen=True, slots=True)
class PhraseMatch:
    """One noun phrase (or noun) and the region it matched best."""

    text: str
    surface: str
    sentence: int
    span: Span
    best_cosine: float
    score: float
    image: int
    box: tuple[float, ...]
    box_label: str | None
    weight: float
    contribution: float
    positive: bool


@dataclass(frozen=True, slots=True)
class GroundingScores:
    """GROOVIST: ``score`` = tanh(``unbounded``); T and P with it (GROOVIST Eq. 3, 4)."""

    score: float | None
    unbounded: float | None
    theta: float | None  # None for a score imported without its evidence
    temporal_misalignment: float | None
    misalignment_per_sentence: tuple[float | None, ...]
    np_proportion: float | None
    phrases: tuple[PhraseMatch, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClipScoreScores:
    """CLIPScore: mean of 2.5 · max(cos(sentence i, image i), 0) over the ``pairs``."""

    score: float | None
    pairs: tuple[float, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NounMatch:
    noun: str
    best_cosine: float
    idf: float


@dataclass(frozen=True, slots=True)
class RovistVGClipScores:
    """RoViST-VG's aggregation of CLIP similarities (``rovist_vg_clip``): ``score`` = 2/(1+exp(−0.5·lse)) − 1."""

    score: float | None
    lse: float | None
    nouns: tuple[NounMatch, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NounRegion:
    """One noun of RoViST-VG and its best region: image index, box, cosine, idf weight; ``known``
    False when GloVe lacks the word and ``unk``'s vector stood in (the authors' fallback)."""

    noun: str
    sentence: int
    best_cosine: float
    idf: float
    image: int
    box: tuple[float, ...]
    box_label: str | None = None
    known: bool = True


@dataclass(frozen=True, slots=True)
class RovistVGScores:
    """RoViST-VG with the authors' model: ``lse`` the S their ``vg_score`` returns (idf-weighted
    log-sum-exp of each noun's best cosine), ``score`` Eq. 3 = 2/(1+exp(−S/2)) − 1 in (−1, 1)."""

    score: float | None
    lse: float | None
    nouns: tuple[NounRegion, ...]
    notes: tuple[str, ...] = ()
    model: str = ""  # checkpoint, ViT and GloVe digests
    tagger: str = ""  # which POS tagger found the nouns


@dataclass(frozen=True, slots=True)
class Preference:
    """Vrank's verdict on this story against another story of its image sequence: ``margin`` =
    (f(this, other) − f(other, this)) / 2, the predicted ranking gap in both orders averaged;
    > 0 means Vrank prefers this story."""

    system: str
    story_id: str
    margin: float


@dataclass(frozen=True, slots=True)
class VrankScores:
    """Vrank (Hsu et al., 2022) on one story: ``score`` the mean margin over the other stories of
    its image sequence (None when it has none), one :class:`Preference` per other story."""

    score: float | None
    preferences: tuple[Preference, ...]
    notes: tuple[str, ...] = ()
    model: str = ""  # the model folder's name and weights digest


@dataclass(frozen=True, slots=True)
class CosmicSentence:
    """COSMic's rating of sentence ``index`` (with image ``index``) against the reference
    sentence ``index``; ``label`` and ``reference_label`` are the coherence labels used
    (Visible, Subjective, Story, Meta), ``labels_from`` says whether they were given or predicted."""

    index: int
    rating: float | None
    label: str
    reference_label: str
    reference: str
    labels_from: str = "predicted"


@dataclass(frozen=True, slots=True)
class CosmicScores:
    """COSMic's recipe on a story: ``score`` the mean sentence rating, against the reference story
    ``reference`` (``system:story_id``) of the same sequence."""

    score: float | None
    sentences: tuple[CosmicSentence, ...]
    reference: str = ""
    notes: tuple[str, ...] = ()
    model: str = ""


@dataclass(frozen=True, slots=True)
class JudgeAspect:
    """A rubric judge's answer on one aspect (G-Eval's rule, :mod:`vst_core.metrics.judge`):
    ``score`` = Σ k·p(k) of ``distribution`` p(1..5), both averaged over the rubric's
    ``paraphrases`` (each paraphrase's score kept; ``spread`` their standard deviation), ``mass``
    the rating tokens' share of the next-token distribution, ``images`` whether the model saw the
    story's images."""

    aspect: str
    score: float | None
    distribution: tuple[float, ...]
    paraphrases: tuple[float, ...]
    spread: float | None = None
    mass: float | None = None
    images: bool = False


@dataclass(frozen=True, slots=True)
class JudgeScores:
    """A rubric judge on one story: ``score`` the ``overall`` aspect, the four standard aspects'
    scores as numbers (the registry's columns), ``aspects`` every answer they are read from,
    ``without_images`` the same model's answers with the images left out (when it was run with
    them), ``rationale`` text the model generated (greedy decoding), shown, never scored."""

    score: float | None
    aspects: tuple[JudgeAspect, ...]
    overall: float | None = None
    grounding: float | None = None
    coherence: float | None = None
    non_redundancy: float | None = None
    without_images: tuple[JudgeAspect, ...] = ()
    rationale: str | None = None
    model: str = ""  # name@weights digest
    template: str = ""  # name-vN@sha256
    notes: tuple[str, ...] = ()

    def aspect(self, name: str, images: bool | None = None) -> JudgeAspect | None:
        """The answer on aspect ``name`` (from ``without_images`` when ``images`` is False and the
        main answers saw the images)."""
        pool = self.without_images if images is False and self.without_images else self.aspects
        return next((a for a in pool if a.aspect == name), None)


MetricScores = (
    RedundancyScores
    | CoherenceScores
    | GroundingScores
    | ClipScoreScores
    | RovistVGClipScores
    | RovistVGScores
    | VrankScores
    | CosmicScores
    | JudgeScores
)

#: Metric name (as in settings and on disk) -> its record type: from the registry
#: (:func:`vst_core.metric_spec.registry`), built-in and installed metrics alike.
METRIC_TYPES: dict[str, type]
#: Earlier versions wrote the CLIP-based record under ``rovist_vg``; it is read as ``rovist_vg_clip``.
RENAMED_METRICS: dict[str, str] = {"rovist_vg": "rovist_vg_clip"}


# --------------------------------------------------------------------------- story record


@dataclass(frozen=True)
class StoryScores:
    """One line of a scores JSONL: a story, its metric records, errors as data, its signature."""

    story_id: str
    sequence_id: str
    system: str
    sentences: tuple[str, ...]
    images: tuple[str, ...] = ()
    metrics: Mapping[str, MetricScores] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    signature: Mapping[str, Any] = field(default_factory=dict)  # JSON as written by signature()
    problems: tuple[str, ...] = ()
    format: int = SCORES_FORMAT

    @property
    def redundancy(self) -> RedundancyScores | None:
        return _of_type(self.metrics, RedundancyScores)

    @property
    def coherence(self) -> CoherenceScores | None:
        return _of_type(self.metrics, CoherenceScores)

    @property
    def grounding(self) -> GroundingScores | None:
        return _of_type(self.metrics, GroundingScores)

    @property
    def clipscore(self) -> ClipScoreScores | None:
        return _of_type(self.metrics, ClipScoreScores)

    @property
    def rovist_vg(self) -> RovistVGScores | None:
        return _of_type(self.metrics, RovistVGScores)

    @property
    def rovist_vg_clip(self) -> RovistVGClipScores | None:
        return _of_type(self.metrics, RovistVGClipScores)

    @property
    def vrank(self) -> VrankScores | None:
        return _of_type(self.metrics, VrankScores)

    @property
    def cosmic(self) -> CosmicScores | None:
        return _of_type(self.metrics, CosmicScores)

    @property
    def judge(self) -> JudgeScores | None:
        return _of_type(self.metrics, JudgeScores)

    @property
    def signature_id(self) -> str | None:
        value = self.signature.get("id")
        return None if value is None else str(value)

    def with_metric(self, name: str, record: MetricScores) -> StoryScores:
        return replace(self, metrics={**self.metrics, name: record})

    def to_json(self) -> dict[str, Any]:
        """The JSON object of a scores JSONL line (``problems`` only when there are some)."""
        out: dict[str, Any] = {
            "format": self.format,
            "story_id": self.story_id,
            "sequence_id": self.sequence_id,
            "system": self.system,
            "sentences": list(self.sentences),
            "images": list(self.images),
            "metrics": {name: encode(record) for name, record in self.metrics.items()},
            "errors": dict(self.errors),
            "warnings": list(self.warnings),
            "signature": dict(self.signature),
        }
        if self.problems:
            out["problems"] = list(self.problems)
        return out


def _of_type(metrics: Mapping[str, object], kind: type[T]) -> T | None:
    """The record of type ``kind`` among a story's metrics (each metric has its own record type)."""
    return next((v for v in metrics.values() if type(v) is kind), None)


# --------------------------------------------------------------------------- registry


#: Every number of every metric's record, in registry order (each metric module declares its own).
FIELDS: tuple[MetricField, ...]
#: Table column -> its field.
FIELD_BY_COLUMN: dict[str, MetricField]


def __getattr__(name: str) -> Any:
    """The registry's views, read when asked (a metric installed later is seen after a reload)."""
    if name not in ("METRIC_TYPES", "FIELDS", "FIELD_BY_COLUMN"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    reg = registry()
    if name == "METRIC_TYPES":
        return reg.types
    if name == "FIELDS":
        return reg.fields
    if name == "FIELD_BY_COLUMN":
        return {f.column: f for f in reg.fields}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _by_column() -> dict[str, MetricField]:
    return {f.column: f for f in registry().fields}


def _by_report() -> dict[str, MetricField]:
    return {f.report: f for f in registry().fields if f.report}


#: Numbers outside the registry whose direction is known: the text-overlap baselines (higher is better).
OTHER_DIRECTIONS: dict[str, Direction] = {
    "BLEU": "higher",
    "ROUGE-L": "higher",
    "CIDEr": "higher",
    "METEOR": "higher",
    "dHM": "lower",
}


def direction_of(column: str) -> Direction:
    """Which way is better for a table column or report name: the registry's ``direction``, the
    baselines' ``higher``, else ``none`` (not a quality number).

    >>> direction_of("NR"), direction_of("inter"), direction_of("P"), direction_of("BLEU-4"), direction_of("sentences")
    ('higher', 'lower', 'none', 'higher', 'none')
    """
    field = _by_column().get(column) or _by_report().get(column)
    if field is not None:
        return field.direction
    for name, direction in OTHER_DIRECTIONS.items():
        if column == name or column.startswith(name + "-") or column.startswith(name + " "):
            return direction
    return "none"


def column_help(column: str) -> str | None:
    """What a table column means and which way is better, for a header's tooltip (None: not a metric).

    >>> column_help("inter")
    'repetition across sentences: mean Jaccard with earlier sentences (lower is better)'
    """
    field = _by_column().get(column)
    if field is None:
        return None
    way = {"higher": " (higher is better)", "lower": " (lower is better)", "none": " (a descriptor)"}[field.direction]
    return field.help + way


def fields_of(metrics: typing.Iterable[str]) -> list[MetricField]:
    """The registry rows of the metrics run, in registry order."""
    wanted = set(metrics)
    return [f for f in registry().fields if f.metric in wanted]


# --------------------------------------------------------------------------- JSON in and out


_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_JSON_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}


def encode(value: Any) -> Any:
    """A record (or any value inside one) as JSON data: dataclass -> object, tuple -> list."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple or kind is list:
        return [v if type(v) in _PLAIN else encode(v) for v in value]
    names = _JSON_NAMES.get(kind)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _JSON_NAMES[kind] = tuple((f.metadata.get("json", f.name), f.name) for f in fields(value))
    if names is not None:
        return {key: encode(getattr(value, name)) for key, name in names}
    if isinstance(value, (tuple, list)):
        return [v if type(v) in _PLAIN else encode(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def decode(kind: type[T], data: Any, where: str = "") -> T:
    """A record of type ``kind`` from JSON data; :class:`RecordError` names the first bad field.

    Missing fields with a default take it; fields the type does not know are ignored."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where or kind.__name__}: expected an object, got {type(data).__name__}")
    hints = _HINTS.get(kind) or _HINTS.setdefault(kind, typing.get_type_hints(kind))
    values: dict[str, Any] = {}
    for f in fields(kind):  # type: ignore[arg-type]
        key = f.metadata.get("json", f.name)
        path = f"{where}.{key}" if where else key
        if key in data:
            values[f.name] = _value(hints[f.name], data[key], path)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise RecordError(f"{path}: missing")
    return kind(**values)


def _value(hint: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None and type(None) in options:
            return None
        (inner,) = [o for o in options if o is not type(None)]
        return _value(inner, data, where)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{k}]") for k, v in enumerate(data))
        if len(data) != len(args):
            raise RecordError(f"{where}: expected {len(args)} values, got {len(data)}")
        return tuple(_value(a, v, f"{where}[{k}]") for k, (a, v) in enumerate(zip(args, data)))
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise RecordError(f"{where}: expected a finite number, got {data!r:.40}")
        return float(data)
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise RecordError(f"{where}: expected a whole number, got {data!r:.40}")
        return data
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        if data not in allowed or isinstance(data, bool):
            raise RecordError(f"{where}: expected one of {', '.join(map(repr, allowed))}, got {data!r:.40}")
        return data
    if hint in (str, bool):
        if not isinstance(data, hint):
            raise RecordError(f"{where}: expected {hint.__name__}, got {type(data).__name__}")
        return data
    if isinstance(hint, type) and is_dataclass(hint):
        return decode(hint, data, where)
    raise TypeError(f"no JSON decoder for {hint!r}")  # pragma: no cover - a record type the decoder lacks


#: Top-level fields every record of this format has; older ones are completed and reported.
EXPECTED_FIELDS = ("format", "sequence_id", "system", "images", "metrics", "errors", "warnings", "signature")


def read_record(data: Any, *, line: int | None = None) -> tuple[StoryScores | None, list[Problem]]:
    """Validate one scores-JSONL object. A record without id or sentences is None with an error;
    a metric record that does not fit its type becomes an error entry of that metric; fields an
    older version did not write take defaults with a warning."""
    if not isinstance(data, Mapping) or data.get("story_id") in (None, ""):
        return None, [Problem("scores line without story_id; skipped", "line", line=line)]
    sid = str(data["story_id"])

    def problem(message: str, severity: typing.Literal["error", "warning"] = "error") -> Problem:
        return Problem(message, "line", severity, line=line, story_id=sid)

    if not isinstance(data.get("sentences"), list):
        return None, [problem("scores record without sentences; skipped")]
    try:
        sentences = _value(tuple[str, ...], data.get("sentences"), "sentences")
        images = _value(tuple[str, ...], data.get("images", []), "images")
    except RecordError as exc:
        return None, [problem(f"unusable scores record ({exc}); skipped")]
    problems: list[Problem] = []
    missing = [k for k in EXPECTED_FIELDS if k not in data]
    if missing or data.get("format") != SCORES_FORMAT:
        problems.append(
            problem(
                f"record from another version (format {data.get('format', 'none')}; missing {', '.join(missing) or 'nothing'})",
                "warning",
            )
        )
    errors = {str(k): str(v) for k, v in _mapping(data.get("errors")).items()}
    metrics: dict[str, MetricScores] = {}
    for name, value in _mapping(data.get("metrics")).items():
        if str(name) in RENAMED_METRICS and isinstance(value, Mapping) and "tagger" not in value:
            name = RENAMED_METRICS[str(name)]  # an earlier version's record, of the metric now named so
        kind = registry().types.get(str(name))
        if kind is None:
            problems.append(problem(f"unknown metric {str(name)!r} ignored", "warning"))
            continue
        try:
            metrics[str(name)] = decode(kind, value, f"metrics.{name}")
        except RecordError as exc:
            errors[str(name)] = f"unreadable record: {exc}"
            problems.append(problem(f"unreadable {name} record ({exc})"))
    signature = data.get("signature")
    record = StoryScores(
        story_id=sid,
        sequence_id=str(data.get("sequence_id") or sid),
        system=str(data.get("system") or "unknown"),
        sentences=sentences,
        images=images,
        metrics=metrics,
        errors=errors,
        warnings=tuple(str(w) for w in _list(data.get("warnings"))),
        signature=signature if isinstance(signature, Mapping) else {},
        problems=tuple(str(p) for p in _list(data.get("problems"))),
        format=SCORES_FORMAT,
    )
    return record, problems


def _mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
