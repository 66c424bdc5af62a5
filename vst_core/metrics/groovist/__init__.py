"""GROOVIST (Surikuchi et al., 2023): noun phrases grounded in image regions with CLIP, θ penalty,
concreteness weights; with temporal misalignment T and noun-phrase proportion P.

Formula: :mod:`vst_core.formulas.grounding`; wired here (:func:`image_record`; its record: :mod:`.record`) over the images, regions,
phrases and cached vectors the image metrics share (:class:`vst_core.images.grounder.Grounder`).
Card: ``docs/metrics/groovist.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vst_core.contract import (
    AgainKey,
    Bench,
    Card,
    Computing,
    GrounderLike,
    ImageEntryLike,
    MetricField,
    MetricSpec,
    Reading,
    Reaggregation,
    Region,
    SettingsLike,
    Showing,
    Signing,
    Tools,
)
from vst_core.data.index_lines import finite_number
from vst_core.metrics.groovist.html import LEGEND, marks
from vst_core.metrics.groovist.options import OPTIONS, groovist_settings
from vst_core.metrics.groovist.record import GroundingScores, PhraseMatch

if TYPE_CHECKING:
    import numpy as np

    from vst_core.data import Story

NAME = "grounding"


def image_record(grounder: GrounderLike, story: Story, entries: Sequence[ImageEntryLike]) -> GroundingScores:
    """GROOVIST over every region of every image (Eq. 1-2), with T and P (Eq. 3, 4): each phrase unit's
    best region, weighted (concreteness, idf or none), penalised below θ, tanh-bounded."""
    import numpy as np

    from vst_core.formulas.grounding import Misalignment, groovist_score, np_proportion, temporal_misalignment
    from vst_core.formulas.tokens import is_punctuation
    from vst_core.metrics.groovist.builders import grounding_scores
    from vst_core.text.phrases import token_texts

    s = groovist_settings(grounder.settings)
    regions = np.concatenate([e.region_emb for e in entries])
    owner = [k for k, e in enumerate(entries) for _ in e.boxes]
    boxes = [b for e in entries for b in e.boxes]
    units = grounder.units(grounder.phrases_of(story))
    best, best_cos = grounder.best_matches([u for u, _ in units], regions)
    g = groovist_score(best_cos, grounder.weights(units), s.theta_value, penalize=s.penalize, weight=s.weighting != "none")
    matched = [owner[j] for j in best.tolist()]
    notes = [e.note for e in entries if e.note]
    # a phrase's position is its sentence, or the image group its sentence belongs to (VWP's groups)
    groups = len(story.frame_texts)
    if groups <= len(story.images):
        misalignment = temporal_misalignment([story.frame_of(p.sentence) for _, p in units], matched, groups)
        if story.frames:
            notes.append(f"T per image group: {len(story.sentences)} sentences in {groups} groups")
    else:
        misalignment = Misalignment(None, tuple(None for _ in range(groups)))
        notes.append(
            f"more {'sentence groups' if story.frames else 'sentences'} than images: temporal misalignment T is undefined"
        )
    # a letters-or-digits token is a word without looking at each character
    n_words = sum(1 for sent in story.sentences for t in token_texts(sent) if t.isalnum() or not is_punctuation(t))
    return grounding_scores(
        g,
        units,
        best_cosines=[float(c) for c in best_cos],
        images=matched,
        boxes=[boxes[int(j)] for j in best],
        misalignment=misalignment,
        np_proportion=np_proportion(len(units), n_words),
        notes=notes,
        penalize=s.penalize,
    )


def from_score(value: float, note: str) -> GroundingScores:
    """An imported GROOVIST value is the unbounded one, as the authors release it; tanh is its score."""
    return GroundingScores(math.tanh(value), value, None, None, (), None, (), (note,))


def cards(grd: GroundingScores | None) -> list[Card]:
    """GROOVIST with its unbounded value, θ, T and P on hover; T on a card of its own."""
    from vst_core.viz.story import format_score

    detail = (
        (
            f"unbounded {format_score(grd.unbounded)} · θ {format_score(grd.theta, 4)} · "
            f"T {format_score(grd.temporal_misalignment)} · P {format_score(grd.np_proportion)}"
        )
        if grd
        else ""
    )
    return [
        ("GROOVIST", grd.score if grd else None, detail),
        ("T", grd.temporal_misalignment if grd else None, METRIC.fields[2].help),
    ]


def _again_key(settings: SettingsLike) -> AgainKey:
    """(θ, penalty, weights used): what GROOVIST's aggregation depends on."""
    g = groovist_settings(settings)
    return (g.theta_value, g.penalize, g.weighting != "none")


def _refuse(base: SettingsLike, wanted: SettingsLike) -> str | None:
    had, want = groovist_settings(base).weighting, groovist_settings(wanted).weighting
    if want not in ("none", had):
        return f"weights {want!r} are not stored in records scored with {had!r}"
    return None


def _unpack(key: AgainKey) -> tuple[float, bool, bool]:
    """(θ, penalty, weights used) of a key :func:`_again_key` made."""
    theta, penalize, weight = key
    return float(theta), bool(penalize), bool(weight)


def _record_again(grounding: GroundingScores, key: AgainKey) -> GroundingScores:
    from vst_core.metrics.groovist.rescore import rescore_grounding

    theta, penalize, weight = _unpack(key)
    return rescore_grounding(grounding, theta, penalize=penalize, weight=weight)


def _items(value: object) -> list[tuple[float, float]]:
    """(best cosine, weight) of each phrase of a GROOVIST record read from a file; none unless every
    phrase has both."""
    phrases = value.get("phrases") if isinstance(value, dict) else None
    out = []
    for p in phrases if isinstance(phrases, list) else []:
        cosine, weight = (
            (finite_number(p.get("best_cosine")), finite_number(p.get("weight"))) if isinstance(p, dict) else (math.nan,) * 2
        )
        if math.isnan(cosine) or math.isnan(weight):
            return []
        out.append((cosine, weight))
    return out


def _columns(cosines: np.ndarray, weights: np.ndarray, rows: np.ndarray, n: int, key: AgainKey) -> dict[str, np.ndarray]:
    import numpy as np

    from vst_core.formulas.grounding import groovist_many

    theta, penalize, weight = _unpack(key)
    unbounded = groovist_many(cosines, weights, rows, n, theta, penalize=penalize, weight=weight)
    return {"GROOVIST raw": unbounded, "GROOVIST": np.tanh(unbounded)}


def _provenance(key: AgainKey) -> dict[str, float | bool | str]:
    theta, penalize, weight = key
    return {"theta": theta, "penalize": penalize, "weights": weight}


def _describe(key: AgainKey) -> str:
    theta, penalize, weight = key
    ablation = ("" if penalize else " -P") + ("" if weight else " -C")
    return f"GROOVIST re-applied to the stored similarities with θ {theta:.4g}{ablation}"


#: θ, the penalty and the weighting change no model's output: a record's phrases keep each best
#: cosine and weight, so GROOVIST is aggregated again from them (the dashboard's θ slider, scores files).
REAGGREGATION = Reaggregation(
    settings=("theta", "penalize", "weighting"),
    what="θ, the penalty and the weighting",
    key=_again_key,
    refuse=_refuse,
    record=_record_again,
    items=_items,
    columns=_columns,
    provenance=_provenance,
    describe=_describe,
)


def regions(record: GroundingScores) -> tuple[str, list[Region]]:
    """Each noun phrase's best region, with its contribution in the picker's line."""
    return "phrase", [
        Region(p.text, p.image, p.box, p.best_cosine, f"{p.surface} → image {p.image + 1} ({p.contribution:+.2f})")
        for p in record.phrases
    ]


METRIC = MetricSpec(
    name=NAME,
    title="GROOVIST",
    description="GROOVIST: noun phrases matched to image regions with CLIP, θ penalty, concreteness weights; "
    "also temporal misalignment T and noun-phrase proportion P",
    record=GroundingScores,
    fields=(
        MetricField("GROOVIST", NAME, "score", "GROOVIST, tanh-bounded", report="GROOVIST", bounds=(-1.0, 1.0)),
        MetricField("GROOVIST raw", NAME, "unbounded", "GROOVIST before tanh", dhm="G"),
        MetricField(
            "T", NAME, "temporal_misalignment", "temporal misalignment (GROOVIST Eq. 3)", covariate=True, direction="lower"
        ),
        MetricField("P", NAME, "np_proportion", "noun-phrase proportion (GROOVIST Eq. 4)", covariate=True, direction="none"),
    ),
    card="docs/metrics/groovist.md",
    computing=Computing(
        needs=frozenset({"images", "clip"}),
        image_record=image_record,
        load=lambda models: models.clip,
        reaggregate=REAGGREGATION,
    ),
    signing=Signing(options=OPTIONS),
    showing=Showing(
        cards=cards,
        marks=marks,
        legend=LEGEND,
        in_text="the grounding of every noun phrase",
        regions=regions,
    ),
    reading=Reading(
        main_value="unbounded",
        aliases=("g", "groovist"),
        from_score=from_score,
    ),
    tools=Tools(bench=Bench(runs=frozenset({"grounding", "warm", "memory", "e2e"}))),
)

__all__ = ["METRIC", "NAME", "REAGGREGATION", "GroundingScores", "PhraseMatch"]
