"""vst-eval: evaluate visual stories with the metrics of the papers, and show why.

>>> import vst_core as vst
>>> stories = vst.read_story_set("assets/sample/stories.jsonl")
>>> records = vst.score_stories(stories, metrics=["redundancy"])
>>> len(records), all(0 <= r.metrics["redundancy"].score <= 1 for r in records)
(8, True)

The names in ``__all__`` are the documented entry points, imported on first use (so
``import vst_core`` stays cheap); the pure formulas are in :mod:`vst_core.formulas`, the
statistics in :mod:`vst_core.analysis.meta_eval`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vst_core.analysis.dhm import DHMReport
    from vst_core.analysis.leaderboard import Leaderboard
    from vst_core.analysis.meta_eval import Judgements, MetaReport, MetaSettings, read_judgements
    from vst_core.api import (
        StoryView,
        compare,
        human_likeness,
        human_likeness_profile,
        meta_evaluate,
        read_scores,
        score_stories,
        scores_frame,
        show,
    )
    from vst_core.config import Settings
    from vst_core.contract import MetricField, MetricSpec, registry
    from vst_core.data import Story, StorySet, read_story_set
    from vst_core.formulas.grounding import THETA_PRESETS
    from vst_core.learned.pairs import grouped_split, pairs_of
    from vst_core.metrics.vrank.train import VrankConfig, train_vrank
    from vst_core.records import StoryScores
    from vst_core.scoring.registry import Models

_WHERE = {
    "compare": "vst_core.api",
    "Leaderboard": "vst_core.analysis.leaderboard",
    "human_likeness": "vst_core.api",
    "human_likeness_profile": "vst_core.api",
    "meta_evaluate": "vst_core.api",
    "read_scores": "vst_core.api",
    "score_stories": "vst_core.api",
    "scores_frame": "vst_core.api",
    "show": "vst_core.api",
    "StoryView": "vst_core.api",
    "THETA_PRESETS": "vst_core.formulas.grounding",
    "Settings": "vst_core.config",
    "Story": "vst_core.data",
    "StorySet": "vst_core.data",
    "read_story_set": "vst_core.data",
    "DHMReport": "vst_core.analysis.dhm",
    "Judgements": "vst_core.analysis.meta_eval",
    "MetaReport": "vst_core.analysis.meta_eval",
    "MetaSettings": "vst_core.analysis.meta_eval",
    "read_judgements": "vst_core.analysis.meta_eval",
    "Models": "vst_core.scoring.registry",
    "StoryScores": "vst_core.records",
    "VrankConfig": "vst_core.metrics.vrank.train",
    "train_vrank": "vst_core.metrics.vrank.train",
    "pairs_of": "vst_core.learned.pairs",
    "grouped_split": "vst_core.learned.pairs",
    "MetricSpec": "vst_core.contract",
    "MetricField": "vst_core.contract",
    "registry": "vst_core.contract",
}

__all__ = [
    "DHMReport",
    "Judgements",
    "Leaderboard",
    "MetaReport",
    "MetaSettings",
    "MetricField",
    "MetricSpec",
    "Models",
    "Settings",
    "Story",
    "StoryScores",
    "StorySet",
    "StoryView",
    "THETA_PRESETS",
    "VrankConfig",
    "compare",
    "grouped_split",
    "human_likeness",
    "human_likeness_profile",
    "meta_evaluate",
    "pairs_of",
    "read_judgements",
    "read_scores",
    "read_story_set",
    "registry",
    "score_stories",
    "scores_frame",
    "show",
    "train_vrank",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'vst_core' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The documented names only (not this module's own imports)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__") and n.endswith("__"))})
