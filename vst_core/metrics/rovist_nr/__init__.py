"""RoViST-NR (Wang et al., 2022): non-redundancy = 1 − mean(inter, intra), with the repeated spans.

Formula: :mod:`vst_core.formulas.redundancy`; one story: :func:`.batch.redundancy_of`;
``--no-spans`` (its option ``spans`` off): one vectorised pass (:func:`.batch.redundancy_without_spans`);
records from results: :mod:`.builders`.
Card: ``docs/metrics/rovist_nr.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from vst_core.contract import (
    Card,
    Computing,
    Key,
    MetricField,
    MetricSpec,
    Reading,
    RunLike,
    SettingsLike,
    Showing,
    Signing,
    StoryFields,
    Tools,
)
from vst_core.metrics.rovist_nr.bench import BENCH
from vst_core.metrics.rovist_nr.defaults import NAME, OPTIONS, ngram_of, spans_of, variant_of
from vst_core.metrics.rovist_nr.html import LEGEND, marks
from vst_core.metrics.rovist_nr.record import InterRepeat, IntraRepeat, RedundancyScores

if TYPE_CHECKING:
    from vst_core.data import Story


def score(stories: Sequence[Story], run: RunLike) -> Mapping[Key, RedundancyScores | str]:
    """NR of every story: with repeated spans, or without them in one pass (the option ``spans`` off)."""
    from vst_core.metrics.rovist_nr.batch import redundancy_of, redundancy_without_spans

    s = run.settings
    if not spans_of(s):
        return redundancy_without_spans([x for x in stories if not x.is_empty], s)
    out: dict[Key, RedundancyScores | str] = {}
    for story in stories:
        try:
            out[story.key] = redundancy_of(story, ngram_of(s), variant_of(s))
        except Exception as exc:  # this story's reason; the others are scored
            out[story.key] = f"{type(exc).__name__}: {exc}"
    return out


def identity(settings: SettingsLike) -> dict[str, str]:
    """The reference variant reads the story with NLTK's Punkt and word rules: which ones."""
    from vst_core.text.public import splitter_name

    return {"punkt": splitter_name()} if variant_of(settings) == "reference" else {}


def caption(recorded: Mapping[str, object]) -> str:
    return f"NR {recorded.get('nr_variant')} n={recorded.get('nr_ngram')}"


def from_score(value: float, note: str) -> RedundancyScores:
    return RedundancyScores(value, None, None, "imported", 4, (note,))


def cards(nr: RedundancyScores | None) -> list[Card]:
    """One card: NR, with inter and intra on hover."""
    from vst_core.viz.story import format_score

    tip = f"inter {format_score(nr.inter)} · intra {format_score(nr.intra)}" if nr is not None else ""
    return [("NR", nr.score if nr is not None else None, tip)]


def complete(nr: RedundancyScores, story: StoryFields) -> RedundancyScores | None:
    """The NR record ``nr`` of ``story`` with the repeated spans a ``--no-spans`` run left out, recomputed
    from the story's sentences (the same numbers; the note on spans past the cap kept); other records, and that of a
    story over the length limits (:func:`vst_core.config.story_limit_reason`), as they are."""
    from dataclasses import replace

    from vst_core.config import story_limit_reason
    from vst_core.data import Story
    from vst_core.formulas.redundancy import CAPPED
    from vst_core.metrics.rovist_nr.batch import RESPLIT_NOTE, redundancy_of
    from vst_core.metrics.rovist_nr.builders import NO_SPANS_NOTE

    if nr.inter_repeats is not None or NO_SPANS_NOTE not in nr.notes or nr.variant == "imported":
        return nr
    if story_limit_reason(story.sentences) is not None:
        return nr
    spans = redundancy_of(
        Story(story.story_id, story.sequence_id, story.system, tuple(story.sentences), tuple(story.images)), nr.n, nr.variant
    )
    kept = [x for x in nr.notes if x != NO_SPANS_NOTE]
    return replace(
        nr,
        notes=tuple(kept + [x for x in spans.notes if (x == RESPLIT_NOTE or CAPPED in x) and x not in kept]),
        inter_repeats=spans.inter_repeats,
        intra_repeats=spans.intra_repeats,
    )


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-NR",
    description="RoViST-NR non-redundancy: 1 - mean(inter-, intra-sentence Jaccard), with repeated spans",
    record=RedundancyScores,
    fields=(
        MetricField("NR", NAME, "score", "RoViST-NR: 1 − mean(inter, intra)", report="NR", dhm="R", bounds=(0.0, 1.0)),
        MetricField(
            "inter", NAME, "inter", "repetition across sentences: mean Jaccard with earlier sentences", direction="lower"
        ),
        MetricField(
            "intra",
            NAME,
            "intra",
            "repetition within a sentence: mean Jaccard of consecutive n-gram windows",
            direction="lower",
        ),
    ),
    card="docs/metrics/rovist_nr.md",
    computing=Computing(score=score),
    signing=Signing(
        settings=("splitter",),
        options=OPTIONS,
        identity=identity,
        caption=caption,
    ),
    showing=Showing(
        cards=cards,
        marks=marks,
        legend=LEGEND,
        in_text="non-redundancy with the spans that repeat",
        complete=complete,
    ),
    reading=Reading(
        aliases=("r", "rovist-nr"),
        from_score=from_score,
    ),
    tools=Tools(bench=BENCH),
)

__all__ = ["METRIC", "NAME", "InterRepeat", "IntraRepeat", "RedundancyScores"]
