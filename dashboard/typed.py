"""A story typed on the Inspect page, joined to a loaded image sequence: a story like any other,
``("typed", "typed-<sequence id>")``, with the sequence's images and named characters, scored under
the view's settings beside the sequence's stories. The loaded stories, their numbers and the other
pages stay as they are; the candidate's record carries the signature of its own run (the loaded
stories plus this one as its input)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import loading
from dashboard.choices import base_of
from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import Story, StorySet
from vst_core.data.readers import story_from_record
from vst_core.images.options import image_settings
from vst_core.records import StoryScores
from vst_core.scoring.reaggregate import reaggregate
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_records
from vst_core.viz import RunView

#: The system of a typed candidate: its story is ``(TYPED_SYSTEM, "typed-<sequence id>")``.
TYPED_SYSTEM = "typed"
#: What a metric scored for a typed story beside scores files must not need: those files' models are
#: never loaded, and a number of the whole set (idf, a sequence's pairs) would not be the files'.
NOT_FROM_FILES = frozenset({"model", "clip", "images", "image_vector", "idf", "sequence"})


def typed_story(text: str, sequence: Sequence[Story], root: Path, taken: Callable[[tuple[str, str]], bool]) -> Story | None:
    """The candidate ``text`` as a story of ``sequence`` (its first story's images and named
    characters; images checked under ``root``): system :data:`TYPED_SYSTEM`, id
    ``typed-<sequence id>`` (``-2``, ``-3``… when ``taken`` says the loaded stories hold that key).
    ``|`` between sentences (one per image), else ``[SEP]`` groups or sentences split as a story
    file's text is; a text over the length limits is kept with its refusal as a problem, as a file's
    is. None for a blank text or an empty sequence.

    >>> trip = [Story.from_sentences(["A rocket."], story_id="s1", sequence_id="trip")]
    >>> s = typed_story("We flew. | The moon.", trip, Path("."), lambda key: False)
    >>> s.key, s.sentences, s.sequence_id
    (('typed', 'typed-trip'), ('We flew.', 'The moon.'), 'trip')
    >>> typed_story("We flew.", trip, Path("."), lambda key: key == ("typed", "typed-trip")).story_id
    'typed-trip-2'
    """
    if not text.strip() or not sequence:
        return None
    first = sequence[0]
    story_id, number = f"typed-{first.sequence_id}", 1
    while taken((TYPED_SYSTEM, story_id)):
        number += 1
        story_id = f"typed-{first.sequence_id}-{number}"
    record: dict[str, Any] = {
        "story_id": story_id,
        "system": TYPED_SYSTEM,
        "sequence_id": first.sequence_id,
        "images": list(first.images),
    }
    if "|" in text:
        record["sentences"] = [part.strip() for part in text.split("|") if part.strip()]
    else:
        record["text"] = text.strip()
    story = story_from_record(record, root=root, fallback_id=story_id)
    return replace(story, characters=first.characters) if first.characters else story


@dataclass(frozen=True)
class Typed:
    """A typed candidate scored: its story, its record, the settings it ran under, and what it was
    scored beside (``context``: words for the page) and without (``left_out``: metric titles)."""

    story: Story
    record: StoryScores
    settings: Settings
    context: str
    left_out: tuple[str, ...] = ()


def scored(view: RunView, sequence_id: str, text: str) -> Typed | None:
    """The candidate ``text`` joined to the view's sequence ``sequence_id`` and scored (cached by the
    view's content key, the sequence and the text): for a set scored here, under the view's settings
    with the models the frame loaded, over every loaded story plus this one (so idf and a sequence's
    pairs are fitted as for the others); for scores files, over the sequence's stories plus this one
    with the files' metrics that need no model (the others are named in ``left_out``; ValueError
    when none is left). None for a blank text."""
    if not text.strip():
        return None
    return _scored(view, view.key, sequence_id, text)


@st.cache_data(show_spinner="Scoring your story…", max_entries=16)
def _scored(_view: RunView, key: str, sequence_id: str, text: str) -> Typed | None:
    rows = [int(r) for r in _view.sequences()[sequence_id]]
    sequence = [s for s in (_view.story(r) for r in rows) if s is not None]
    story = typed_story(text, sequence, _view.root, lambda k: _view.row_of(*k) is not None)
    if story is None:
        return None
    settings = _view.settings
    left_out: tuple[str, ...] = ()
    if _view.index is not None:  # scores files: no model runs, the set is the sequence
        specs = registry().specs
        kept = tuple(m for m in settings.metrics if m in specs and not specs[m].computing.needs & NOT_FROM_FILES)
        left_out = tuple(specs[m].title if m in specs else m for m in settings.metrics if m not in kept)
        if not kept:
            raise ValueError(f"each metric of the scores files needs a model, and none runs beside them ({', '.join(left_out)})")
        settings = settings.with_(metrics=kept)
        context = "this sequence's stories and this one"
        stories = sequence
    else:
        context = "the loaded stories and this one"
        stories = [s for s in (_view.story(r) for r in range(len(_view))) if s is not None]
    story_set = StorySet.of([*stories, story], _view.root, "typed")
    base = base_of(settings)
    image = image_settings(base)
    if image.regions == "csv" and registry().with_need("images") & set(base.metrics):
        loading.recheck(image.regions_file, "“Regions”")  # read again for this story: still inside the allowed folders
    record = next(score_records(story_set, base, [story], models=_models(base)))
    return Typed(story, reaggregate([record], base, settings)[0], settings, context, left_out)


def _models(settings: Settings) -> Models:
    """The models of ``settings`` as the frame loaded them (each cached once per process)."""
    return loading.loaded_models(settings)
