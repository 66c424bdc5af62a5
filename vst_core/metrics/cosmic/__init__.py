"""COSMic's recipe (Inan et al., 2021): sentence i with image i rated against the reference story's
sentence i by a model trained on people's ratings; the story's score is the mean rating.

The model: :mod:`.rater`; training: :mod:`.train`; over the set:
:func:`.sets.cosmic_results` (before the chunks). Card: ``docs/metrics/cosmic.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from vst_core.contract import (
    Card,
    Computing,
    Key,
    MetricField,
    MetricSpec,
    ModelsLike,
    Option,
    SettingsLike,
    Showing,
    Signing,
    StorySetLike,
    Tools,
)
from vst_core.metrics.cosmic.record import CosmicScores, CosmicSentence

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.metrics.cosmic.rater import CosmicModel

NAME = "cosmic"


def identity(settings: SettingsLike) -> dict[str, str]:
    from vst_core.hashing import folder_signature

    return {"cosmic_weights": folder_signature(settings.option("cosmic_model"), "cosmic")}


def model(models: ModelsLike) -> CosmicModel:
    """The rater of ``settings.option("cosmic_model")`` (a ``vst train-cosmic`` folder), loaded once per
    :class:`~vst_core.scoring.registry.Models` (or injected as ``Models(..., cosmic=...)``)."""

    def build(m: ModelsLike) -> CosmicModel:
        from vst_core.metrics.cosmic.rater import load_cosmic

        return load_cosmic(m.settings.option("cosmic_model"), device=m.settings.device)

    return models.own(NAME, build)


def together(
    story_set: StorySetLike,
    todo: Sequence[Story],
    settings: SettingsLike,
    models: ModelsLike,
    progress: Callable[[int], object] | None,
) -> Mapping[Key, CosmicScores | str]:
    """Over the whole set, before the chunks (so a shard compares a story with the stories a single run would)."""
    from vst_core.metrics.cosmic.sets import cosmic_results

    return cosmic_results(story_set, todo, settings, model(models), models.clip)


def cards(cm: CosmicScores | None) -> list[Card]:
    """One card: the mean rating, with the reference story and the model on hover."""
    tip = f"mean sentence rating against {cm.reference} · {cm.model}" if cm else ""
    return [("COSMic", cm.score if cm else None, tip)]


def evidence(cm: CosmicScores) -> tuple[str, str] | None:
    """Each sentence's rating against the reference's (:func:`.html.cosmic_html`)."""
    from vst_core.metrics.cosmic.html import cosmic_html

    if not cm.sentences:
        return None
    return f"COSMic: {len(cm.sentences)} sentences against the reference", cosmic_html(cm)


METRIC = MetricSpec(
    name=NAME,
    title="COSMic",
    description="COSMic recipe: sentence i with image i rated against the reference story's sentence i by a model "
    "trained with vst train-cosmic; needs --cosmic-model and a reference story per sequence",
    record=CosmicScores,
    fields=(
        MetricField(
            "COSMic",
            NAME,
            "score",
            "COSMic recipe: mean rating of sentence i against reference sentence i",
            report="COSMic",
            bounds=(0.0, 1.0),
        ),
    ),
    card="docs/metrics/cosmic.md",
    computing=Computing(
        needs=frozenset({"sequence", "clip", "model"}),
        together=together,
        load=lambda models: (models.clip, model(models)),  # CLIP's image vectors and its own folder
    ),
    signing=Signing(
        settings=("clip_model", "clip_pretrained", "clip_checkpoint"),
        identity=identity,
        options=(
            Option(
                "cosmic_model",
                help="a folder written by `vst train-cosmic`: rates sentence i with image i against the reference story's "
                "sentence i (a story of system reference or human in the same sequence)",
                kind="folder",
                label="COSMic model folder",
                required=True,
                signed=False,  # identity() signs the folder's digest
                metavar="DIR",
            ),
            Option(
                "reference_system",
                help="the system whose story of a sequence is the reference (default: the first of "
                "reference, human, gt, ground_truth, gold present)",
                metavar="NAME",
            ),
        ),
    ),
    showing=Showing(
        cards=cards,
        evidence=evidence,
    ),
    tools=Tools(commands={"train-cosmic": "vst_core.metrics.cosmic.command"}),
)

__all__ = ["METRIC", "NAME", "CosmicScores", "CosmicSentence"]
