"""Metrics of a story that need the other stories of its image sequence (each module's
``together``: Vrank's pairs in :mod:`vst_core.metrics.vrank.sets`, COSMic's reference story
in :mod:`vst_core.metrics.cosmic.sets`): the sequences of a set, and every such metric run.

They are computed once per run for the stories to score, before the chunks, from the whole set
(so a shard or a resumed run compares a story with the same stories a single run would), and
handed to :func:`vst_core.scoring.story.score_story` as finished records or error reasons."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from vst_core.config import Settings, story_limit_reason
from vst_core.contract import registry
from vst_core.data import Story, StorySet
from vst_core.records import MetricScores

if TYPE_CHECKING:
    from vst_core.scoring.registry import Models

Key = tuple[str, str]
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


def set_results(
    story_set: StorySet,
    todo: Sequence[Story],
    settings: Settings,
    models: Models,
    progress: Callable[[int], object] | None = None,
) -> SetResults:
    """Every set metric of ``settings`` (its module's ``together``) on the stories of ``todo``; a metric that fails as a whole
    gives each story the reason (the other metrics go on). ``progress(total)`` gives a bar advanced
    over a set metric's work (Vrank's ordered story pairs)."""
    out: SetResults = {}
    todo = [s for s in todo if story_limit_reason(s.sentences) is None]  # a story over a limit is refused, unread
    for name, spec in registry().specs.items():
        if name not in settings.metrics or spec.computing.together is None:
            continue
        try:
            part = dict(spec.computing.together(story_set, todo, settings, models, progress))
        except Exception as exc:  # the reason goes into every story's record, the run goes on
            part = {s.key: f"{type(exc).__name__}: {exc}" for s in todo if not s.is_empty}
        for key, value in part.items():
            out.setdefault(key, {})[name] = value
    return out
