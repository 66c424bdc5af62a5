"""Metrics of a story that need the other stories of its image sequence: the sequences of a set,
and COSMic (each story against the sequence's reference story); Vrank's pairs are its package's
(:mod:`vst_core.metric_modules.vrank.sets`).

They are computed once per run for the stories to score, before the chunks, from the whole set
(so a shard or a resumed run compares a story with the same stories a single run would), and
handed to :func:`vst_core.scoring.story.score_story` as finished records or error reasons."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from vst_core.config import REFERENCE_SYSTEMS, Settings
from vst_core.data import Story, StorySet
from vst_core.metric_spec import registry
from vst_core.records import CosmicScores, MetricScores

if TYPE_CHECKING:
    from vst_core.models.cosmic import CosmicModel
    from vst_core.models.protocols import ImageTextEncoder
    from vst_core.scoring.registry import Models

Key = tuple[str, str]
#: Note of the reference story's COSMic record: it is what the others are rated against.
REFERENCE_NOTE = "this is the reference story of its sequence: COSMic rates the other stories against it"
#: Per story, per set metric: its record, or the reason it has none.
SetResults = dict[Key, dict[str, MetricScores | str]]
#: One set metric's result per story: its record, or the reason it has none.
MetricResults = dict[Key, MetricScores | str]


def sequences_of(stories: Iterable[Story]) -> dict[str, list[Story]]:
    """Stories grouped by image sequence (a story without one is its own sequence), input order kept."""
    groups: dict[str, list[Story]] = defaultdict(list)
    for story in stories:
        groups[story.sequence_id or f"\0{story.system}\0{story.story_id}"].append(story)
    return dict(groups)


def reference_of(group: Sequence[Story], system: str | None) -> Story | None:
    """The reference story of a sequence: the one of ``system``, else of the first of
    :data:`REFERENCE_SYSTEMS` present (compared without case), else None."""
    by_system = {s.system.lower(): s for s in group if not s.is_empty}
    for name in (system,) if system else REFERENCE_SYSTEMS:
        found = by_system.get(name.lower())
        if found is not None:
            return found
    return None


def cosmic_results(
    story_set: StorySet, todo: Sequence[Story], settings: Settings, model: CosmicModel, clip: ImageTextEncoder
) -> MetricResults:
    """COSMic on every story of ``todo`` against its sequence's reference story (see
    :func:`reference_of`); a story without a reference gets the reason instead."""
    from vst_core.models.cosmic import cosmic_records

    wanted = {s.key for s in todo}
    jobs: list[tuple[Story, Story]] = []
    out: MetricResults = {}
    for group in sequences_of(story_set).values():
        reference = reference_of(group, settings.option("reference_system"))
        for story in group:
            if story.key not in wanted or story.is_empty:
                continue
            if reference is None:
                named = settings.option("reference_system") or " / ".join(REFERENCE_SYSTEMS)
                out[story.key] = f"COSMic needs a reference story: no story of system {named} in sequence {story.sequence_id!r}"
            elif story.key == reference.key:
                out[story.key] = CosmicScores(None, (), f"{story.system}:{story.story_id}", (REFERENCE_NOTE,), model.name)
            else:
                jobs.append((story, reference))
    if jobs:
        records = cosmic_records(jobs, model, clip, story_set.root)
        for story, _ in jobs:
            out[story.key] = records[story.key]
    return out


def set_results(
    story_set: StorySet,
    todo: Sequence[Story],
    settings: Settings,
    models: Models,
    progress: Callable[[int], object] | None = None,
) -> SetResults:
    """Every set metric of ``settings`` (its module's ``together``) on the stories of ``todo``; a metric that fails as a whole
    gives each story the reason (the other metrics go on). ``progress(total)`` gives a bar advanced
    over Vrank's ordered story pairs."""
    out: SetResults = {}
    for name, spec in registry().specs.items():
        if name not in settings.metrics or spec.together is None:
            continue
        try:
            part = dict(spec.together(story_set, todo, settings, models, progress))
        except Exception as exc:  # the reason goes into every story's record, the run goes on
            part = {s.key: f"{type(exc).__name__}: {exc}" for s in todo if not s.is_empty}
        for key, value in part.items():
            out.setdefault(key, {})[name] = value
    return out
