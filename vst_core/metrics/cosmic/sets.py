"""COSMic over a story set, before the chunks: each story of a sequence rated against the
sequence's reference story (:func:`reference_of`), the reference's own record saying so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vst_core.config import REFERENCE_SYSTEMS
from vst_core.contract import Key, SettingsLike, StorySetLike
from vst_core.data import Story
from vst_core.metrics.cosmic.record import CosmicScores
from vst_core.scoring.sets import sequences_of

if TYPE_CHECKING:
    from vst_core.metrics.cosmic.rater import CosmicModel
    from vst_core.models.protocols import ImageTextEncoder

#: Note of the reference story's COSMic record: it is what the others are rated against.
REFERENCE_NOTE = "this is the reference story of its sequence: COSMic rates the other stories against it"


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
    story_set: StorySetLike, todo: Sequence[Story], settings: SettingsLike, model: CosmicModel, clip: ImageTextEncoder
) -> dict[Key, CosmicScores | str]:
    """COSMic on every story of ``todo`` against its sequence's reference story (see
    :func:`reference_of`); a story without a reference gets the reason instead."""
    from vst_core.metrics.cosmic.rater import cosmic_records

    wanted = {s.key for s in todo}
    jobs: list[tuple[Story, Story]] = []
    out: dict[Key, CosmicScores | str] = {}
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
