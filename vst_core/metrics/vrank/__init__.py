"""Vrank (Hsu et al., 2022): a ranker trained on people's story rankings; every two stories of a
sequence compared in both orders, a story's score is its mean margin.

Everything the product knows of Vrank is in this package: the spec (here), its record
(:mod:`.record`), its margins (:mod:`.ranking`), the ranker (:mod:`.ranker`), its training
(:mod:`.train`) and ``vst train-vrank`` (:mod:`.command`), its pairs over the set before the chunks
(:mod:`.sets`) and its evidence (:mod:`.html`). Card: ``docs/metrics/vrank.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from vst_core.contract import (
    Card,
    Computing,
    Fetch,
    FetchArgument,
    FetchPlan,
    Key,
    MetricField,
    MetricSpec,
    ModelsLike,
    Option,
    Reading,
    SettingsLike,
    Showing,
    Signing,
    StorySetLike,
    Tools,
)
from vst_core.metrics.vrank.defaults import BASE_ENCODER
from vst_core.metrics.vrank.record import Preference, VrankScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.metrics.vrank.ranker import VrankModel

NAME = "vrank"


def identity(settings: SettingsLike) -> dict[str, str]:
    from vst_core.hashing import folder_signature

    return {"vrank_weights": folder_signature(settings.option("vrank_model"), "vrank")}


def model(models: ModelsLike) -> VrankModel:
    """The ranker of ``settings.option("vrank_model")`` (a ``vst train-vrank`` folder), loaded once per
    :class:`~vst_core.scoring.registry.Models` (or injected as ``Models(..., vrank=...)``)."""

    def build(m: ModelsLike) -> VrankModel:
        from vst_core.metrics.vrank.ranker import load_vrank

        return load_vrank(m.settings.option("vrank_model"), device=m.settings.device, batch_size=m.settings.batch_for(None))

    return models.own(NAME, build)


def together(
    story_set: StorySetLike,
    todo: Sequence[Story],
    settings: SettingsLike,
    models: ModelsLike,
    progress: Callable[[int], object] | None,
) -> Mapping[Key, VrankScores | str]:
    """Over the whole set, before the chunks (so a shard compares a story with the stories a single run would)."""
    from vst_core.metrics.vrank.sets import vrank_results

    return vrank_results(story_set, todo, model(models), progress)


def fetch_check(model: str) -> tuple[str, bool, Callable[[], str]]:
    """``vst fetch-models --vrank-base``: the encoder ``vst train-vrank`` starts from, whether its
    weights are cached, and a check that loads it and encodes a story pair."""
    from vst_core.models.fetch import SENTENCE_PAIRS
    from vst_core.models.hub import HF_WEIGHT_FILES, hub_file

    def encode() -> str:
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model)
        hidden = AutoModel.from_pretrained(model)(**tokenizer(*SENTENCE_PAIRS[0], return_tensors="pt")).last_hidden_state
        return f"loads and encodes a story pair ({hidden.shape[-1]}-dimensional [CLS])"

    return f"Vrank base encoder {model}", hub_file(model, HF_WEIGHT_FILES) is not None, encode


def cards(vr: VrankScores | None) -> list[Card]:
    """One card: the mean margin, with how many stories it is over and the model on hover."""
    tip = f"mean margin over {len(vr.preferences)} other stories of the sequence · {vr.model}" if vr else ""
    return [("Vrank", vr.score if vr else None, tip)]


def evidence(vr: VrankScores) -> tuple[str, str] | None:
    """The margin against each other story of the sequence (:func:`.html.vrank_html`)."""
    from vst_core.metrics.vrank.html import vrank_html

    if not vr.preferences:
        return None
    wins = sum(p.margin > 0 for p in vr.preferences)
    return f"Vrank: preferred to {wins} of {len(vr.preferences)} stories", vrank_html(vr)


def margins(vr: VrankScores) -> list[tuple[str, str, float]]:
    """Vrank's margin against each other story of the sequence (its preferences)."""
    return [(p.system, p.story_id, p.margin) for p in vr.preferences]


FETCH = Fetch(
    arguments=(
        FetchArgument(
            "--vrank-base",
            f"also fetch the encoder `train-vrank` starts from (default {BASE_ENCODER})",
            metavar="NAME",
            const=BASE_ENCODER,
        ),
    ),
    plan=lambda v: FetchPlan((fetch_check(str(v["vrank_base"])),) if v.get("vrank_base") else ()),
)


METRIC = MetricSpec(
    name=NAME,
    title="Vrank",
    description="Vrank: a ranker trained on human story rankings (vst train-vrank); every two stories of a sequence "
    "compared in both orders, a story's score is its mean margin; needs --vrank-model",
    record=VrankScores,
    fields=(
        MetricField(
            "Vrank", NAME, "score", "Vrank: mean predicted margin over the other stories of the sequence", report="Vrank"
        ),
    ),
    card="docs/metrics/vrank.md",
    computing=Computing(
        needs=frozenset({"sequence", "model"}),
        together=together,
        load=model,
    ),
    signing=Signing(
        identity=identity,
        options=(
            Option(
                "vrank_model",
                help="a folder written by `vst train-vrank`: compares every two stories of a sequence in both orders",
                kind="folder",
                label="Vrank model folder",
                required=True,
                signed=False,  # identity() signs the folder's digest
                metavar="DIR",
            ),
        ),
    ),
    showing=Showing(
        cards=cards,
        evidence=evidence,
    ),
    reading=Reading(margins=margins),
    tools=Tools(
        commands={"train-vrank": "vst_core.metrics.vrank.command"},
        fetch=FETCH,
        trained_folder="vrank_model",
    ),
)

__all__ = ["METRIC", "NAME", "Preference", "VrankScores"]
