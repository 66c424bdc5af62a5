"""A human-judgement study as plain data: its aspects, the stories shown, the items, the raters and
their answers (frozen dataclasses whose JSON round trip is exact), the study's signature, and the
limits a study file is held to.

A study is signed over everything a rater sees and answers (its protocol, aspects, instructions,
items, raters per item, seed and source), never its raters or when it was made, so adding or
revoking a rater keeps its signature and the answers already given.

>>> aspect = Aspect("clear", "Clear", "The story is clear.", ("no", "somewhat", "yes"))
>>> Aspect.from_json(aspect.to_json()) == aspect
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, get_args

from vst_core.hashing import json_digest
from vst_core.limits import _read_limit

__all__ = [
    "FORMAT",
    "LIKERT_ANCHORS",
    "PROTOCOLS",
    "VIST_EDIT_ASPECTS",
    "Answer",
    "Aspect",
    "GoldAnswer",
    "Item",
    "Presented",
    "Protocol",
    "Rater",
    "StoryShown",
    "Study",
    "StudyError",
    "study_limit",
]

Protocol = Literal["likert", "pairwise", "best-worst"]
PROTOCOLS: tuple[Protocol, ...] = get_args(Protocol)
#: What a study file says it is (its ``format``), and the version of its layout.
FORMAT = "vst-study"
VERSION = 1

#: The five points of VIST-Edit's agreement scale, low to high.
LIKERT_ANCHORS = ("Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree")


class StudyError(ValueError):
    """A study, a study file or an answer that cannot be used; the message says why."""


def study_limit(name: str, default: int) -> int | None:
    """The limit in environment variable ``name`` (a whole number; 0: none), else ``default``, read
    as :mod:`vst_core.limits` reads a story's."""
    import os

    return _read_limit(name, os.environ.get(name, ""), default)


#: At most this many items a study (``VST_MAX_STUDY_ITEMS``; 0: none): 20,000 ratings at 3 raters.
MAX_STUDY_ITEMS = 20_000
#: At most this many raters a study (``VST_MAX_STUDY_RATERS``).
MAX_STUDY_RATERS = 1_000
#: A study file larger than this many bytes is not read (``VST_MAX_STUDY_BYTES``).
MAX_STUDY_BYTES = 64 * 1024 * 1024
#: The longest instructions, in characters.
MAX_INSTRUCTIONS = 20_000
#: The longest label, question, anchor, title or name, in characters.
MAX_LABEL = 500


def _text(value: Any, what: str, limit: int = MAX_LABEL, *, empty: bool = False) -> str:
    """``value`` as a string of at most ``limit`` characters without NUL or other C0 controls but
    tab and newline (StudyError otherwise)."""
    if not isinstance(value, str):
        raise StudyError(f"{what} must be text, not {type(value).__name__}")
    if not empty and not value.strip():
        raise StudyError(f"{what} is empty")
    if len(value) > limit:
        raise StudyError(f"{what} has {len(value):,} characters, over the limit of {limit:,}")
    bad = [c for c in value if (ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127]
    if bad:
        raise StudyError(f"{what} holds a control character ({bad[0]!r}); remove it")
    return value


def _key(value: Any, what: str) -> str:
    """A key (aspect key, item id, rater name): 1-100 characters of letters, digits, ``_ - . :``."""
    text = _text(value, what, 100)
    if not all(c.isalnum() or c in "_-.:" for c in text) or not text.isascii():
        raise StudyError(f"{what} {text!r} may hold only ASCII letters, digits and _ - . :")
    return text


@dataclass(frozen=True)
class Aspect:
    """One Likert scale: rated ``1..len(anchors)``, ``anchors`` low to high."""

    key: str
    label: str
    question: str
    anchors: tuple[str, ...] = LIKERT_ANCHORS

    def __post_init__(self) -> None:
        _key(self.key, "an aspect's key")
        _text(self.label, f"aspect {self.key}'s label")
        _text(self.question, f"aspect {self.key}'s question", MAX_INSTRUCTIONS)
        if not 2 <= len(self.anchors) <= 11:
            raise StudyError(f"aspect {self.key} has {len(self.anchors)} anchors; a scale has 2 to 11 points")
        for anchor in self.anchors:
            _text(anchor, f"an anchor of aspect {self.key}")

    @property
    def points(self) -> int:
        return len(self.anchors)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "question": self.question, "anchors": list(self.anchors)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Aspect:
        return cls(data["key"], data["label"], data["question"], tuple(data["anchors"]))


#: VIST-Edit's six aspects (Hsu et al. 2019, after the questions of Huang et al. 2016 as AREL asked
#: them), each a statement rated on the five points of :data:`LIKERT_ANCHORS`.
VIST_EDIT_ASPECTS: tuple[Aspect, ...] = (
    Aspect("focused", "Focused", "This story is focused."),
    Aspect("coherent", "Coherent", "The story is coherent: its sentences follow one another."),
    Aspect("share", "Would share", "I would share this story."),
    Aspect("human", "Sounds human", "This story sounds like it was written by a human."),
    Aspect("grounded", "Grounded", "This story directly reflects concrete entities in the photos."),
    Aspect("detailed", "Detailed", "This story provides detailed descriptions."),
)


@dataclass(frozen=True)
class StoryShown:
    """A story as a rater sees it: its text and its photos (paths or ids as its file gave them)."""

    system: str
    story_id: str
    sentences: tuple[str, ...]
    photos: tuple[str, ...] = ()
    frames: tuple[int, ...] = ()  # the photo each sentence belongs to (VWP's sentence groups); empty: sentence i, photo i

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "story_id": self.story_id,
            "sentences": list(self.sentences),
            "photos": list(self.photos),
            "frames": list(self.frames),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoryShown:
        return cls(
            str(data["system"]),
            str(data["story_id"]),
            tuple(data["sentences"]),
            tuple(data.get("photos", ())),
            tuple(data.get("frames", ())),
        )

    def photo_texts(self) -> tuple[str, ...]:
        """One text per photo: the sentences of each photo's group joined (the sentences themselves
        when the story has no groups).

        >>> StoryShown("m", "s", ("A.", "B.", "C."), ("1.jpg", "2.jpg"), (0, 0, 1)).photo_texts()
        ('A. B.', 'C.')
        """
        if not self.frames:
            return self.sentences
        groups: list[list[str]] = [[] for _ in range(max(max(self.frames) + 1, len(self.photos)))]
        for sentence, frame in zip(self.sentences, self.frames, strict=True):
            groups[frame].append(sentence)
        return tuple(" ".join(g) for g in groups)

    @property
    def key(self) -> tuple[str, str]:
        return (self.system, self.story_id)


@dataclass(frozen=True)
class GoldAnswer:
    """The expected answer of a gold (attention) item: likert ``{aspect: rating}``; pairwise
    ``{"preferred": index or "tie"}``; best-worst ``{"best": index, "worst": index}`` (indices into
    the item's stories)."""

    expected: dict[str, int | str]

    def to_json(self) -> dict[str, Any]:
        return dict(self.expected)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GoldAnswer:
        return cls(dict(data))


@dataclass(frozen=True)
class Item:
    """What one answer is about: one story (likert), two stories of one sequence (pairwise) or three
    or four (best-worst); ``gold`` when it is an attention item with an expected answer."""

    item_id: str
    sequence_id: str
    stories: tuple[StoryShown, ...]
    gold: GoldAnswer | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "sequence_id": self.sequence_id,
            "stories": [s.to_json() for s in self.stories],
            "gold": None if self.gold is None else self.gold.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Item:
        gold = data.get("gold")
        return cls(
            str(data["item_id"]),
            str(data["sequence_id"]),
            tuple(StoryShown.from_json(s) for s in data["stories"]),
            None if gold is None else GoldAnswer.from_json(gold),
        )


@dataclass(frozen=True)
class Rater:
    """A rater: a name the researcher reads and a secret token their link carries."""

    name: str
    token: str
    revoked: bool = False

    def __repr__(self) -> str:  # the token is a secret: never in a log or a traceback
        return f"Rater(name={self.name!r}, revoked={self.revoked})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "token": self.token, "revoked": self.revoked}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Rater:
        return cls(str(data["name"]), str(data["token"]), bool(data.get("revoked", False)))


@dataclass(frozen=True)
class Presented:
    """What a rater sees at step ``position`` of their plan: the item and its stories' order
    (indices into ``item.stories``, left first)."""

    item_id: str
    order: tuple[int, ...]
    position: int


@dataclass(frozen=True)
class Answer:
    """One acknowledged answer: who, which item, in what order it was shown, the value (story
    indices, never screen positions), how long it took and its revision (1 first, then one more
    for each change by the same rater)."""

    study_signature: str
    rater: str
    item_id: str
    presented: tuple[int, ...]
    value: dict[str, int | str]
    seconds: float
    answered_at: str
    revision: int

    def to_json(self) -> dict[str, Any]:
        return {
            "study_signature": self.study_signature,
            "rater": self.rater,
            "item_id": self.item_id,
            "presented": list(self.presented),
            "value": dict(self.value),
            "seconds": self.seconds,
            "answered_at": self.answered_at,
            "revision": self.revision,
        }


@dataclass(frozen=True)
class Study:
    """A study: what raters are shown and asked, who rates, and where its stories came from.

    ``instructions`` is the researcher's plain text or Markdown, shown escaped. ``source`` names the
    file the stories came from (its name and digest; a scores file's signature id)."""

    study_id: str
    title: str
    instructions: str
    protocol: Protocol
    aspects: tuple[Aspect, ...]
    ties: bool
    items: tuple[Item, ...]
    raters_per_item: int
    raters: tuple[Rater, ...]
    source: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    created: str = ""

    def __post_init__(self) -> None:
        _check(self)

    def _signed(self) -> dict[str, Any]:
        whole = self.to_json()
        for name in ("raters", "created", "signature", "format", "version"):
            whole.pop(name, None)
        return whole

    @cached_property
    def signature(self) -> str:
        """``study:<12 hex>`` over everything but the raters and when it was made."""
        return f"study:{json_digest(self._signed(), 12)}"

    @property
    def gold_items(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.gold is not None)

    def item(self, item_id: str) -> Item:
        """The item ``item_id`` (StudyError when the study has none)."""
        found = _items_by_id(self).get(item_id)
        if found is None:
            raise StudyError(f"study {self.study_id} has no item {item_id!r}")
        return found

    def rater(self, name: str) -> Rater | None:
        return next((r for r in self.raters if r.name == name), None)

    def with_raters(self, raters: Sequence[Rater]) -> Study:
        return replace(self, raters=tuple(raters))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "study_id": self.study_id,
            "title": self.title,
            "instructions": self.instructions,
            "protocol": self.protocol,
            "aspects": [a.to_json() for a in self.aspects],
            "ties": self.ties,
            "items": [i.to_json() for i in self.items],
            "raters_per_item": self.raters_per_item,
            "raters": [r.to_json() for r in self.raters],
            "source": dict(self.source),
            "seed": self.seed,
            "created": self.created,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Study:
        """The study a :meth:`to_json` dict holds (StudyError naming what is wrong)."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise StudyError(f'not a study file (no "format": "{FORMAT}")')
        if data.get("version") != VERSION:
            raise StudyError(f"a study file of version {data.get('version')!r}; this version reads {VERSION}")
        try:
            return cls(
                study_id=data["study_id"],
                title=data["title"],
                instructions=data["instructions"],
                protocol=data["protocol"],
                aspects=tuple(Aspect.from_json(a) for a in data["aspects"]),
                ties=bool(data["ties"]),
                items=tuple(Item.from_json(i) for i in data["items"]),
                raters_per_item=data["raters_per_item"],
                raters=tuple(Rater.from_json(r) for r in data["raters"]),
                source={str(k): str(v) for k, v in dict(data["source"]).items()},
                seed=data["seed"],
                created=str(data.get("created", "")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise StudyError(f"the study file lacks or mistypes a field ({type(exc).__name__}: {exc})") from None


_ITEM_INDEX: dict[int, tuple[Study, dict[str, Item]]] = {}


def _items_by_id(study: Study) -> dict[str, Item]:
    cached = _ITEM_INDEX.get(id(study))
    if cached is not None and cached[0] is study:
        return cached[1]
    index = {i.item_id: i for i in study.items}
    if len(_ITEM_INDEX) > 64:
        _ITEM_INDEX.clear()
    _ITEM_INDEX[id(study)] = (study, index)
    return index


def _check(study: Study) -> None:
    """Everything a study must be (StudyError naming the first thing that is not)."""
    _key(study.study_id, "the study id")
    _text(study.title, "the title")
    _text(study.instructions, "the instructions", MAX_INSTRUCTIONS, empty=True)
    if study.protocol not in PROTOCOLS:
        raise StudyError(f"unknown protocol {study.protocol!r}; choose from {', '.join(PROTOCOLS)}")
    if not isinstance(study.seed, int) or isinstance(study.seed, bool):
        raise StudyError("the seed must be a whole number")
    if study.protocol == "likert" and not study.aspects:
        raise StudyError("a likert study needs at least one aspect")
    keys = [a.key for a in study.aspects]
    if len(set(keys)) != len(keys):
        raise StudyError(f"two aspects share a key ({', '.join(k for k in keys if keys.count(k) > 1)})")
    items = study_limit("VST_MAX_STUDY_ITEMS", MAX_STUDY_ITEMS)
    if items is not None and len(study.items) > items:
        raise StudyError(f"{len(study.items):,} items, over the limit of {items:,} a study (VST_MAX_STUDY_ITEMS raises it)")
    if not study.items:
        raise StudyError("the study has no items")
    ids = [i.item_id for i in study.items]
    if len(set(ids)) != len(ids):
        raise StudyError("two items share an id")
    shown = {"likert": (1, 1), "pairwise": (2, 2), "best-worst": (3, 4)}[study.protocol]
    for item in study.items:
        _key(item.item_id, "an item id")
        if not shown[0] <= len(item.stories) <= shown[1]:
            raise StudyError(
                f"item {item.item_id} shows {len(item.stories)} stories; a {study.protocol} item shows {shown[0]}-{shown[1]}"
            )
        if len({s.key for s in item.stories}) != len(item.stories):
            raise StudyError(f"item {item.item_id} shows one story twice")
        for story in item.stories:
            _text(story.system, f"item {item.item_id}'s system")
            _text(story.story_id, f"item {item.item_id}'s story id")
            for sentence in story.sentences:
                _text(sentence, f"a sentence of item {item.item_id}", MAX_INSTRUCTIONS, empty=True)
            for photo in story.photos:
                _text(photo, f"a photo of item {item.item_id}", 4096)
            if story.frames and (
                len(story.frames) != len(story.sentences)
                or any(not isinstance(f, int) or f < 0 for f in story.frames)
                or list(story.frames) != sorted(story.frames)
            ):
                raise StudyError(f"item {item.item_id}: a story's frames are one non-decreasing photo index a sentence")
        if item.gold is not None:
            problem = value_problem(study, item, item.gold.expected, gold=True)
            if problem:
                raise StudyError(f"gold item {item.item_id}: {problem}")
    if not isinstance(study.raters_per_item, int) or study.raters_per_item < 1:
        raise StudyError("raters per item must be at least 1")
    raters = study_limit("VST_MAX_STUDY_RATERS", MAX_STUDY_RATERS)
    if raters is not None and len(study.raters) > raters:
        raise StudyError(f"{len(study.raters):,} raters, over the limit of {raters:,} (VST_MAX_STUDY_RATERS raises it)")
    names = [r.name for r in study.raters]
    if len(set(names)) != len(names):
        raise StudyError("two raters share a name")
    tokens = [r.token for r in study.raters]
    if len(set(tokens)) != len(tokens):
        raise StudyError("two raters share a token")
    for rater in study.raters:
        _key(rater.name, "a rater's name")
        if not token_shape(rater.token):
            raise StudyError(f"rater {rater.name}'s token is not a token (20-64 characters of A-Z a-z 0-9 _ -)")


def token_shape(token: Any) -> bool:
    """Whether ``token`` looks like a rater token: 20-64 URL-safe characters (nothing else is
    ever compared, so a path or a script in a link finds nothing).

    >>> token_shape("Zm9vYmFyYmF6cXV4cXV1eHg0"), token_shape("../../etc/passwd")
    (True, False)
    """
    return isinstance(token, str) and 20 <= len(token) <= 64 and token.isascii() and all(c.isalnum() or c in "-_" for c in token)


def value_problem(study: Study, item: Item, value: Mapping[str, Any], *, gold: bool = False) -> str | None:
    """Why ``value`` is not an answer to ``item`` under the study's protocol, or None.

    Likert: ``{aspect key: 1..points}`` for every aspect (a gold answer may name some);
    pairwise: ``{"preferred": 0 or 1}``, or ``"tie"`` when ties are allowed; best-worst:
    ``{"best": i, "worst": j}``, two different story indices."""
    if not isinstance(value, Mapping):
        return "an answer is a mapping of names to values"

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if study.protocol == "likert":
        scales = {a.key: a.points for a in study.aspects}
        unknown = sorted(set(value) - set(scales))
        if unknown:
            return f"no aspect {unknown[0]!r} in the study (aspects: {', '.join(scales)})"
        missing = [k for k in scales if k not in value]
        if missing and not gold:
            return f"aspect {missing[0]!r} is not rated"
        if gold and not value:
            return "a gold answer names at least one aspect"
        for key, v in value.items():
            if not whole(v) or not 1 <= v <= scales[key]:
                return f"aspect {key!r} is rated {v!r}; a rating is a whole number 1-{scales[key]}"
        return None
    n = len(item.stories)
    if study.protocol == "pairwise":
        if set(value) != {"preferred"}:
            return 'a pairwise answer is {"preferred": 0, 1 or "tie"}'
        v = value["preferred"]
        if v == "tie":
            return None if study.ties else "ties are not allowed in this study"
        if not whole(v) or not 0 <= v < n:
            return f"preferred is {v!r}; it is the index of a story of the item (0 or 1)"
        return None
    if set(value) != {"best", "worst"}:
        return 'a best-worst answer is {"best": index, "worst": index}'
    best, worst = value["best"], value["worst"]
    if not (whole(best) and whole(worst) and 0 <= best < n and 0 <= worst < n):
        return f"best and worst are indices of the item's {n} stories (0-{n - 1})"
    if best == worst:
        return "one story cannot be both the best and the worst"
    return None


def finite_seconds(seconds: Any) -> float:
    """``seconds`` as a finite float of at least 0 (StudyError otherwise)."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise StudyError(f"time taken {seconds!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise StudyError(f"time taken {seconds!r} is not a finite number of seconds of at least 0")
    return value


def canonical(value: Mapping[str, int | str]) -> str:
    """A value as canonical JSON (sorted keys), how the store keeps it."""
    return json.dumps(dict(value), sort_keys=True, separators=(",", ":"))


def protocol_of(text: str) -> Protocol:
    if text not in PROTOCOLS:
        raise StudyError(f"unknown protocol {text!r}; choose from {', '.join(PROTOCOLS)}")
    return text
