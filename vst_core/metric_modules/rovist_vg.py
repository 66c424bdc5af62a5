"""RoViST-VG (Wang et al., 2022) with the authors' Region2Phrase model: each noun's best region
(ViT regions, GloVe nouns), an idf-weighted log-sum-exp S, Eq. 3 in (−1, 1).

Formula: :func:`vst_core.metrics.grounding.rovist_vg`; the model: :mod:`vst_core.models.rovist_vg`;
nouns: :mod:`vst_core.text.nouns`; computed by :class:`vst_core.grounding.grounder.Grounder`
(``rovist_vg_record``). Card: ``docs/metrics/rovist_vg.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vst_core.metric_spec import Card, MetricField, MetricSpec
from vst_core.records import RovistVGScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.scoring.story import ScoringRun

NAME = "rovist_vg"


def score(stories: Sequence[Story], run: ScoringRun) -> Mapping[tuple[str, str], Any]:
    return run.image_records(stories, lambda grounder, story, entries: grounder.rovist_vg_record(story, entries))


def identity(settings: Any) -> dict[str, str]:
    """The checkpoint, ViT, GloVe and idf table by digest, and the tagger that finds the nouns."""
    from vst_core.models.rovist_vg import vg_signature
    from vst_core.signature import rovist_vg_tagger_id
    from vst_core.text.public import splitter_name

    weights = vg_signature(
        settings.rovist_vg_checkpoint or "", settings.rovist_vg_vit, settings.glove_file or "", settings.rovist_vg_idf
    )
    return {"rovist_vg_weights": weights, "rovist_vg_tagger": rovist_vg_tagger_id(settings.spacy_model), "punkt": splitter_name()}


def caption(recorded: Mapping[str, Any]) -> str:
    return f"RoViST-VG {recorded.get('rovist_vg_weights')} regions {recorded.get('regions')} top{recorded.get('top_b')}"


def cards(story: Any) -> list[Card]:
    from vst_core.viz.story import rovist_vg_detail

    vg = story.metrics.get(NAME)
    return [("RoViST-VG", vg.score if vg else None, rovist_vg_detail(vg) if vg else "")]


def evidence(story: Any) -> tuple[str, str] | None:
    from vst_core.viz.story import rovist_vg_html

    vg = story.metrics.get(NAME)
    if vg is None or not vg.nouns:
        return None
    return f"RoViST-VG: {len(vg.nouns)} nouns and their best regions", rovist_vg_html(vg)


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-VG",
    description="RoViST-VG: the authors' Region2Phrase model (ViT regions, GloVe nouns); idf-weighted LogSumExp of each "
    "noun's best cosine, Eq. 3 in (-1, 1); needs --rovist-vg-model and --glove",
    record=RovistVGScores,
    fields=(
        MetricField("RoViST-VG", NAME, "score", "RoViST-VG (authors' model): Eq. 3 of the log-sum-exp S", report="RoViST-VG"),
        MetricField("RoViST-VG S", NAME, "lse", "RoViST-VG's idf-weighted log-sum-exp S, as the authors' vg_score returns"),
    ),
    needs=frozenset({"images", "model"}),
    settings=("rovist_vg_checkpoint", "rovist_vg_vit", "glove_file", "rovist_vg_idf", "regions", "top_b", "spacy_model"),
    card="docs/metrics/rovist_vg.md",
    score=score,
    load=lambda models: models.rovist_vg,
    identity=identity,
    caption=caption,
    cards=cards,
    evidence=evidence,
)
