"""Building a study: the stories read from a story set or a scores file (every layout the product
reads), the stories drawn (by sequence, stratified by system, with a seed) or given as a list of
``(system, story_id)``, the items of the protocol made from them, gold items added and raters made.
The command line and the pages both build a study here, so the same choices give the same file.

>>> from vst_core.data import Story
>>> stories = [Story(f"{q}-{m}", q, m, ("One.", "Two.")) for q in ("s1", "s2", "s3") for m in ("a", "b")]
>>> study = new_study(stories, protocol="pairwise", sample=Sample(sequences=2), raters=3, seed=7, title="Pilot")
>>> len(study.items), study.raters_per_item, [s.system for s in study.items[0].stories]
(2, 3, ['a', 'b'])
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vst_core.hashing import file_digest
from vst_core.story import StoryFields
from vst_core.study.files import new_token
from vst_core.study.records import (
    VIST_EDIT_ASPECTS,
    Aspect,
    GoldAnswer,
    Item,
    Protocol,
    Rater,
    StoryShown,
    Study,
    StudyError,
    protocol_of,
)

if TYPE_CHECKING:
    from vst_core.records import StoryScores

__all__ = [
    "DEFAULT_RATERS_PER_ITEM",
    "GoldSpec",
    "Sample",
    "StudySource",
    "aspects_from_json",
    "gold_from_json",
    "new_study",
    "read_source",
    "read_sources",
    "stories_from_list",
]

#: Raters per item when none is given: VIST-Edit had five workers rate each story, VHED three rank
#: each set; three is the smallest number that has a majority and an agreement to measure.
DEFAULT_RATERS_PER_ITEM = 3


@dataclass(frozen=True)
class Sample:
    """Which stories a study shows: ``sequences`` image sequences drawn with the study's seed (all
    when None) among those where every system of ``systems`` (all when None) wrote a story, and in
    each the stories of those systems (so every system has as many items); or ``stories``, a given
    list of ``(system, story_id)`` (the pairs the Agreement page found, say), shown as listed."""

    sequences: int | None = None
    systems: tuple[str, ...] | None = None
    stories: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        if self.sequences is not None and self.sequences < 1:
            raise StudyError("draw at least one sequence")
        if self.systems is not None and len(set(self.systems)) != len(self.systems):
            raise StudyError("a system is named twice")


@dataclass(frozen=True)
class GoldSpec:
    """A gold (attention) item to add: its stories as ``(system, story_id)`` and the answer
    expected. Pairwise and best-worst answers may name a story by its system instead of its index:
    ``{"preferred": "reference"}``."""

    stories: tuple[tuple[str, str], ...]
    expected: Mapping[str, int | str]


@dataclass(frozen=True)
class StudySource:
    """Stories read for a study: the stories, what the study's ``source`` says of the file, the
    records when it was a scores file (for the live view's correlations) and what was odd."""

    stories: tuple[StoryFields, ...]
    source: dict[str, str]
    records: tuple[StoryScores, ...] = ()
    problems: tuple[str, ...] = ()


def read_source(path: str | Path) -> StudySource:
    """The stories of a story set (JSON, JSONL, VIST, VWP: what ``vst score`` reads) or of a scores
    file (what ``vst score`` writes), with the file's name, digest and kind, and a scores file's
    signature ids (StudyError naming a file of another kind, or one that cannot be read)."""
    from vst_core.data import load_records, read_story_set
    from vst_core.data.kinds import content_kind, not_what
    from vst_core.data.merge import merge_records
    from vst_core.data.types import StorySetError

    path = Path(path)
    if not path.is_file():
        raise StudyError(f"no file at {path}")
    kind = content_kind(path)
    source = {"file": path.name, "sha256": file_digest(path), "kind": "stories", "folder": str(path.resolve().parent)}
    if kind in ("judgements", "score table"):
        raise StudyError(not_what(path, kind, "stories") + "; a study is built from stories or a scores file")
    if kind == "scores":
        found, problems = load_records(path)
        records, conflicts = merge_records((r, path.name) for r in found)
        if not records:
            raise StudyError(f"{path} holds no score records" + (f" ({problems[0]})" if problems else ""))
        ids = sorted({r.signature_id for r in records if r.signature_id})
        source.update(kind="scores", signature_ids=",".join(ids))
        notes = tuple(str(p) for p in problems) + tuple(str(c) for c in conflicts[:3])
        return StudySource(tuple(records), _with_sharing(source, records), tuple(records), notes)
    try:
        stories = read_story_set(path, check_images=False)
    except StorySetError as exc:
        raise StudyError(str(exc)) from None
    kept = tuple(s for s in stories if not s.is_empty)
    if not kept:
        raise StudyError(f"{path} holds no stories")
    return StudySource(kept, _with_sharing(source, kept), (), tuple(str(p) for p in stories.problems))


def read_sources(paths: Sequence[str | Path]) -> StudySource:
    """:func:`read_source` of several files read as one (people's stories in one file, a model's in
    another: VWP's release and a model's JSONL). Their photos are relative to one folder, so the
    files must lie in one folder (StudyError otherwise); a story ``(system, story_id)`` in two files
    is taken from the first."""
    read = [read_source(p) for p in paths]
    if not read:
        raise StudyError("no source file given")
    if len(read) == 1:
        return read[0]
    folders = {r.source["folder"] for r in read}
    if len(folders) > 1:
        raise StudyError(
            "the source files lie in different folders, so their photos' paths cannot all be followed; put them in one"
        )
    stories = tuple(s for r in read for s in r.stories)
    source = {
        "file": ", ".join(r.source["file"] for r in read),
        "sha256": ", ".join(r.source["sha256"] for r in read),
        "kind": ", ".join(dict.fromkeys(r.source["kind"] for r in read)),
        "folder": read[0].source["folder"],
    }
    ids = sorted({i for r in read for i in r.source.get("signature_ids", "").split(",") if i})
    if ids:
        source["signature_ids"] = ",".join(ids)
    records = tuple(x for r in read for x in r.records)
    return StudySource(stories, _with_sharing(source, stories), records, tuple(p for r in read for p in r.problems))


def _with_sharing(source: dict[str, str], stories: Sequence[StoryFields]) -> dict[str, str]:
    """``source`` with ``shared_ids``: whether a story id belongs to several systems in the file
    (exports then name a story ``<story_id> (<system>)``, as meta-evaluation keys it)."""
    systems: dict[str, str] = {}
    shared = False
    for story in stories:
        if systems.setdefault(story.story_id, story.system) != story.system:
            shared = True
            break
    return {**source, "shared_ids": "yes" if shared else "no"}


def aspects_from_json(data: Any) -> tuple[Aspect, ...]:
    """Aspects from a JSON list of ``{"key", "label", "question", "anchors"}`` (anchors optional:
    the five points of agreement), or the name ``"vist-edit"``."""
    if data == "vist-edit":
        return VIST_EDIT_ASPECTS
    if not isinstance(data, list) or not data:
        raise StudyError('aspects are a JSON list of {"key", "label", "question", "anchors"} objects')
    out = []
    for entry in data:
        if not isinstance(entry, dict):
            raise StudyError("each aspect is an object with a key, a label and a question")
        key = entry.get("key")
        if not isinstance(key, str):
            raise StudyError("each aspect needs a key")
        label = entry.get("label", key)
        question = entry.get("question") or label
        anchors = entry.get("anchors")
        try:
            out.append(Aspect(key, label, question) if anchors is None else Aspect(key, label, question, tuple(anchors)))
        except TypeError as exc:
            raise StudyError(f"aspect {key}'s anchors are a list of texts ({exc})") from None
    return tuple(out)


def gold_from_json(data: Any) -> tuple[GoldSpec, ...]:
    """Gold items from a JSON list of ``{"stories": [[system, story_id], ...], "expected": {...}}``."""
    if not isinstance(data, list):
        raise StudyError('gold items are a JSON list of {"stories": [[system, story_id], ...], "expected": {...}}')
    out = []
    for n, entry in enumerate(data, start=1):
        try:
            stories = tuple((str(a), str(b)) for a, b in entry["stories"])
            expected = dict(entry["expected"])
        except (KeyError, TypeError, ValueError):
            raise StudyError(f"gold item {n} needs stories ([[system, story_id], ...]) and expected ({{...}})") from None
        out.append(GoldSpec(stories, expected))
    return tuple(out)


def stories_from_list(rows: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """``(system, story_id)`` from rows with ``system`` and ``story_id`` (a CSV's, a disagreements
    table's); a row naming ``better``/``worse`` keys is not read here (give the stories)."""
    out = []
    for n, row in enumerate(rows, start=1):
        system, story = row.get("system"), row.get("story_id")
        if not system or not story:
            raise StudyError(f"row {n} of the story list needs a system and a story_id")
        out.append((str(system), str(story)))
    return tuple(dict.fromkeys(out))


#: Control characters (C0 but tab, line feed and carriage return; DEL) in a story's text: shown as a space.
_CONTROLS = {c: " " for c in [*range(0, 9), 11, 12, *range(14, 32), 127]}


def _shown(story: StoryFields) -> StoryShown:
    """A story as shown: its text with control characters as spaces (a sentence from a file is
    shown as text whatever it holds; markup stays markup, escaped by the page)."""
    frames = tuple(getattr(story, "frames", ()) or ())
    sentences = tuple(str(s).translate(_CONTROLS) for s in story.sentences)
    return StoryShown(str(story.system), str(story.story_id), sentences, tuple(story.images), frames)


def new_study(
    stories: Iterable[StoryFields],
    *,
    protocol: str = "likert",
    aspects: Sequence[Aspect] = VIST_EDIT_ASPECTS,
    sample: Sample = Sample(),
    raters: int | Sequence[str] = DEFAULT_RATERS_PER_ITEM,
    raters_per_item: int | None = None,
    gold: Sequence[GoldSpec] = (),
    instructions: str = "",
    seed: int = 0,
    title: str = "",
    source: Mapping[str, str] | None = None,
    ties: bool = True,
    study_id: str = "study",
    created: str | None = None,
) -> Study:
    """A study of ``stories`` (:class:`~vst_core.data.Story`, scores records: anything with ids,
    a system, sentences and images) under ``protocol`` (likert, pairwise or best-worst).

    ``raters``: how many (named ``r1``, ``r2``, ...) or their names; each gets a secret token.
    ``raters_per_item`` defaults to the number of raters, at most :data:`DEFAULT_RATERS_PER_ITEM`.
    ``aspects`` are the Likert scales (pairwise and best-worst ask for the story preferred overall,
    and keep no aspects). ``ties``: whether a pairwise answer may be a tie. StudyError says what
    cannot be built (an unknown system or story, a sequence short of stories, too many items)."""
    chosen = protocol_of(protocol)
    every: dict[tuple[str, str], StoryFields] = {}
    for story in stories:
        every.setdefault((str(story.system), str(story.story_id)), story)
    if not every:
        raise StudyError("no stories to build a study from")
    drawn = _draw(list(every.values()), every, chosen, sample, seed)
    items = [Item(f"item-{n:04d}", groups[0].sequence_id, tuple(_shown(s) for s in groups)) for n, groups in enumerate(drawn, 1)]
    items += [_gold_item(n, spec, every, chosen, aspects) for n, spec in enumerate(gold, 1)]
    names = [f"r{n}" for n in range(1, raters + 1)] if isinstance(raters, int) else list(raters)
    if not names:
        raise StudyError("a study needs at least one rater")
    per_item = raters_per_item if raters_per_item is not None else min(len(names), DEFAULT_RATERS_PER_ITEM)
    if per_item > len(names):
        raise StudyError(f"{per_item} raters per item, but the study has {len(names)} raters")
    return Study(
        study_id=study_id,
        title=title or f"{chosen} study",
        instructions=instructions,
        protocol=chosen,
        aspects=tuple(aspects) if chosen == "likert" else (),
        ties=ties if chosen == "pairwise" else False,
        items=tuple(items),
        raters_per_item=per_item,
        raters=tuple(Rater(name, new_token()) for name in names),
        source=dict(source or {}),
        seed=seed,
        created=created if created is not None else datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _draw(
    stories: list[StoryFields],
    every: Mapping[tuple[str, str], StoryFields],
    protocol: Protocol,
    sample: Sample,
    seed: int,
) -> list[tuple[StoryFields, ...]]:
    """The stories of each item, in the file's order of their sequences."""
    if sample.stories is not None:
        return _given(sample.stories, every, protocol)
    systems = list(sample.systems or dict.fromkeys(str(s.system) for s in stories))
    known = set(str(s.system) for s in stories)
    unknown = [s for s in systems if s not in known]
    if unknown:
        raise StudyError(f"no story of system {unknown[0]!r} (systems: {', '.join(sorted(known))})")
    if protocol == "pairwise" and len(systems) < 2:
        raise StudyError("a pairwise study compares two systems or more; the stories have one")
    if protocol == "best-worst" and len(systems) < 3:
        raise StudyError(f"a best-worst study shows three or four systems' stories; there are {len(systems)}")
    by_sequence: dict[str, dict[str, StoryFields]] = {}
    for story in stories:
        by_sequence.setdefault(str(story.sequence_id), {}).setdefault(str(story.system), story)
    eligible = [q for q, have in by_sequence.items() if all(s in have for s in systems)]
    if not eligible:
        raise StudyError(f"no image sequence has a story of every system chosen ({', '.join(systems)})")
    rng = random.Random(seed)
    picked = eligible if sample.sequences is None or sample.sequences >= len(eligible) else rng.sample(eligible, sample.sequences)
    order = {q: n for n, q in enumerate(by_sequence)}
    out: list[tuple[StoryFields, ...]] = []
    for sequence in sorted(picked, key=order.__getitem__):
        have = by_sequence[sequence]
        if protocol == "likert":
            out += [(have[s],) for s in systems]
        elif protocol == "pairwise":
            out += [(have[a], have[b]) for a, b in itertools.combinations(systems, 2)]
        else:
            shown = systems if len(systems) <= 4 else sorted(rng.sample(systems, 4), key=systems.index)
            out.append(tuple(have[s] for s in shown))
    return out


def _given(
    keys: Sequence[tuple[str, str]], every: Mapping[tuple[str, str], StoryFields], protocol: Protocol
) -> list[tuple[StoryFields, ...]]:
    missing = [k for k in keys if k not in every]
    if missing:
        shown = ", ".join(f"{s}/{i}" for s, i in missing[:3])
        raise StudyError(f"{len(missing)} listed stories are not in the file (e.g. {shown}; system/story_id)")
    listed = [every[k] for k in dict.fromkeys(keys)]
    if protocol == "likert":
        return [(s,) for s in listed]
    groups: dict[str, list[StoryFields]] = {}
    for story in listed:
        groups.setdefault(str(story.sequence_id), []).append(story)
    out: list[tuple[StoryFields, ...]] = []
    for sequence, group in groups.items():
        if protocol == "pairwise":
            if len(group) < 2:
                raise StudyError(f"sequence {sequence!r} has one listed story; a pair needs two stories of one sequence")
            out += list(itertools.combinations(group, 2))
        else:
            if not 3 <= len(group) <= 4:
                raise StudyError(f"sequence {sequence!r} has {len(group)} listed stories; a best-worst item shows 3 or 4")
            out.append(tuple(group))
    return out


def _gold_item(
    n: int, spec: GoldSpec, every: Mapping[tuple[str, str], StoryFields], protocol: Protocol, aspects: Sequence[Aspect]
) -> Item:
    missing = [k for k in spec.stories if k not in every]
    if missing:
        raise StudyError(f"gold item {n}: story {missing[0][0]}/{missing[0][1]} is not in the file (system/story_id)")
    stories = [every[k] for k in spec.stories]
    systems = [str(s.system) for s in stories]
    expected: dict[str, int | str] = {}
    for name, value in spec.expected.items():
        if protocol != "likert" and isinstance(value, str) and value in systems:
            expected[name] = systems.index(value)  # a story named by its system: its index
        else:
            expected[name] = value
    if protocol == "likert":
        unknown = [k for k in expected if k not in {a.key for a in aspects}]
        if unknown:
            raise StudyError(f"gold item {n}: no aspect {unknown[0]!r}")
    return Item(f"gold-{n:02d}", str(stories[0].sequence_id), tuple(_shown(s) for s in stories), GoldAnswer(expected))
