"""A study's answers in the layouts the product reads (:func:`~vst_core.analysis.meta_eval.read_judgements`):
the long judgements layout (``story_id, system, rater, aspect, value``; likert answers, and each
best-worst answer as +1 best, -1 worst, 0 for the stories between) and the pairwise layout
(``story_a, story_b, rank_a, rank_b``: a pair's mean rank over its raters, 1 preferred, 2 not,
1.5 each for a tie). Gold items and excluded raters are left out.

A pair names its stories as meta-evaluation keys them
(:func:`~vst_core.analysis.meta_eval.identity.story_key`, ``<story_id> (<system>)``) when story ids
are shared between systems (the file the study came from said so, or two systems' stories in the
study share an id), else by their ids.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from vst_core.analysis.meta_eval.identity import story_key
from vst_core.study.records import Answer, StoryShown, Study

__all__ = ["BEST_WORST_ASPECT", "JUDGEMENT_COLUMNS", "PAIR_COLUMNS", "judgements_frame", "pairwise_frame", "story_name"]

JUDGEMENT_COLUMNS = ["story_id", "system", "sequence_id", "rater", "aspect", "value"]
PAIR_COLUMNS = ["story_a", "story_b", "rank_a", "rank_b", "sequence_id", "agreement", "raters", "system_a", "system_b"]
#: The aspect a best-worst answer is written under in the long layout.
BEST_WORST_ASPECT = "best_worst"


def shared_ids(study: Study) -> bool:
    """Whether the study names stories by meta-evaluation keys (see the module)."""
    if study.source.get("shared_ids") == "yes":
        return True
    seen: dict[str, str] = {}
    return any(seen.setdefault(s.story_id, s.system) != s.system for item in study.items for s in item.stories)


def story_name(study: Study, story: StoryShown, shared: bool | None = None) -> str:
    """How an export names ``story``: its id, or its key when ids are shared."""
    shared = shared_ids(study) if shared is None else shared
    return story_key(story.story_id, story.system) if shared else story.story_id


def _counted(study: Study, answers: Sequence[Answer], excluded: Collection[str]) -> list[Answer]:
    gold = {i.item_id for i in study.gold_items}
    return [a for a in answers if a.item_id not in gold and a.rater not in excluded and a.study_signature == study.signature]


def judgements_frame(study: Study, answers: Sequence[Answer], excluded: Collection[str] = ()) -> pd.DataFrame:
    """Likert and best-worst answers in the long layout, one row per (story, rater, aspect)."""
    rows = []
    for answer in _counted(study, answers, excluded):
        item = study.item(answer.item_id)
        if study.protocol == "likert":
            story = item.stories[0]
            for aspect in study.aspects:
                if aspect.key in answer.value:
                    rows.append(
                        (story.story_id, story.system, item.sequence_id, answer.rater, aspect.key, answer.value[aspect.key])
                    )
        elif study.protocol == "best-worst":
            for index, story in enumerate(item.stories):
                value = 1 if answer.value["best"] == index else -1 if answer.value["worst"] == index else 0
                rows.append((story.story_id, story.system, item.sequence_id, answer.rater, BEST_WORST_ASPECT, value))
    return pd.DataFrame(rows, columns=JUDGEMENT_COLUMNS)


def pairwise_frame(study: Study, answers: Sequence[Answer], excluded: Collection[str] = ()) -> pd.DataFrame:
    """Pairwise answers, one row per item answered: the mean rank of each story (lower is better),
    how many raters agree with the majority order (``agreement``) and how many answered."""
    by_item: dict[str, list[Answer]] = {}
    for answer in _counted(study, answers, excluded):
        by_item.setdefault(answer.item_id, []).append(answer)
    shared = shared_ids(study)
    rows = []
    for item in study.items:
        given = by_item.get(item.item_id)
        if not given or study.protocol != "pairwise":
            continue
        ranks = [
            (1.5, 1.5) if a.value["preferred"] == "tie" else (1.0, 2.0) if a.value["preferred"] == 0 else (2.0, 1.0)
            for a in given
        ]
        votes = [str(a.value["preferred"]) for a in given]
        majority = max(votes.count(v) for v in set(votes))
        a, b = item.stories
        rows.append(
            (
                story_name(study, a, shared),
                story_name(study, b, shared),
                sum(r[0] for r in ranks) / len(ranks),
                sum(r[1] for r in ranks) / len(ranks),
                item.sequence_id,
                majority,
                len(given),
                a.system,
                b.system,
            )
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)
