"""The Python door: score stories, read scores back, compare with people, measure human-likeness.

Each function does what the command of the same job does, with the same numbers and the same
signature: :func:`score_stories` is ``vst score``, :func:`meta_evaluate` is ``vst meta-eval``,
:func:`human_likeness` is ``vst dhm``, :func:`compare` is ``vst compare``. Models are loaded once per call, or passed in
(``models=Models(settings, clip=..., coherence=...)``: CLIP, and a metric's own model by its name) to share them or to inject small ones.

>>> import vst_core as vst
>>> story = vst.Story.from_sentences(["We went to the beach.", "We went to the beach again."])
>>> record = vst.score_stories([story], metrics=["redundancy"])[0]
>>> round(record.metrics["redundancy"].score, 3)
0.583
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from vst_core.analysis.dhm import HUMAN_SYSTEMS, DHMReport, Pairing, dhm_report
from vst_core.analysis.leaderboard import (
    ALPHA,
    PERMUTATION_BUDGET,
    PERMUTATIONS,
    RESAMPLES,
    Leaderboard,
    leaderboard,
    story_ratings,
)
from vst_core.analysis.meta_eval import Judgements, MetaReport, MetaSettings, read_judgements, run_meta_eval
from vst_core.config import Settings, parse_metrics
from vst_core.data import Story, StorySet, load_records
from vst_core.data.merge import merge_records
from vst_core.models.hub import ModelLoadError, SettingValueError, python_words
from vst_core.problems import Problem
from vst_core.records import StoryScores
from vst_core.scoring.policy import RunReport, ScoredStories
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_records

__all__ = ["compare", "human_likeness", "meta_evaluate", "read_scores", "score_stories", "scores_frame"]

_log = logging.getLogger(__name__)


def _settings(settings: Settings | None, metrics: Iterable[str] | str | None) -> Settings:
    chosen = settings or Settings()
    return (
        replace(chosen, metrics=parse_metrics(list(metrics) if not isinstance(metrics, str) else metrics)) if metrics else chosen
    )


def score_stories(
    stories: StorySet | Iterable[Story],
    metrics: Iterable[str] | str | None = None,
    *,
    settings: Settings | None = None,
    models: Models | None = None,
    root: str | Path = ".",
    strict: bool = False,
) -> ScoredStories:
    """Score every story with ``metrics`` (or those of ``settings``; default RoViST-NR, RoViST-C
    and GROOVIST), as ``vst score`` does: chunks batched together, θ and idf fitted over the
    whole set, one record per story in input order, and the same policy
    (:mod:`vst_core.scoring.policy`): a metric whose model does not load is not run, the others
    are, each record names it in its ``errors``, and a warning is logged with the reason (also on
    the result's ``report``); with ``strict`` (or when no metric's model loads) its
    :class:`~vst_core.models.hub.ModelLoadError` is raised instead.

    Args:
        stories: a :class:`StorySet` (its image paths relative to its folder) or stories made in
            memory (image paths relative to ``root``).
        metrics: metric names (``redundancy``, ``coherence``, ``grounding``, ``clipscore``,
            ``rovist_vg``) or one comma-separated string.
        settings: every other setting (a paper preset, θ, models); ``metrics`` overrides its own.
        models: loaded or injected models to share between calls.
        strict: raise when a metric's model does not load instead of scoring the others.

    Returns:
        One :class:`StoryScores` per story (numbers, evidence, errors and the signature), as a
        list with the run's :class:`~vst_core.scoring.policy.RunReport` as ``report``: the
        metrics not run and why (``report.reasons(python_words)``), the metrics' summaries.

    >>> s = Story.from_sentences(["A dog ran.", "The dog ran home."], story_id="d")
    >>> scored = score_stories([s], "redundancy,vrank", settings=Settings(vrank_model="/nonexistent/vrank"))
    >>> [r.story_id for r in scored], list(scored.report.not_run), scored[0].errors["vrank"][:9]
    (['d'], ['vrank'], 'not run: ')
    """
    story_set = stories if isinstance(stories, StorySet) else StorySet.of(stories, root)
    chosen = _settings(settings, metrics)
    models = models or Models(chosen)
    report = RunReport()
    try:
        scored = ScoredStories(score_records(story_set, chosen, models=models, strict=strict, report=report), report)
    except (ModelLoadError, SettingValueError) as exc:  # the settings it names, as the Settings fields to pass
        exc.args = (exc.phrased(python_words),)
        raise
    for line in report.warnings(python_words):
        _log.warning("%s", line)
    return scored


def read_scores(*paths: str | Path) -> tuple[list[StoryScores], list[Problem]]:
    """The records of one or more scores files (``vst score`` or ``vst import-scores`` output),
    several lines of one ``(system, story_id)`` merged metric by metric (a computed value beats
    an imported one, else the first file wins); lines that cannot be read are returned as
    problems, never raised.
    """
    records: list[tuple[StoryScores, str]] = []
    problems: list[Problem] = []
    for path in paths:
        found, bad = load_records(path)
        records.extend((r, str(path)) for r in found)
        problems.extend(bad)
    merged, _conflicts = merge_records(records)
    return merged, problems


def scores_frame(records: Sequence[StoryScores], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per story (``story``, ``sequence``, ``system``, a column per number, ``text``,
    ``error``): the Dataset page's table. ``metrics`` defaults to every metric the records hold."""
    from vst_core.viz.tables import scores_table

    names = list(metrics) if metrics else list(dict.fromkeys(m for r in records for m in r.metrics))
    return scores_table(records, names)


def meta_evaluate(
    scores: Sequence[StoryScores] | pd.DataFrame,
    judgements: Judgements | str | Path | bytes,
    *,
    metrics: Sequence[str] | None = None,
    aspects: Sequence[str] | None = None,
    settings: MetaSettings | None = None,
    **options: Any,
) -> MetaReport:
    """How each metric agrees with people, as ``vst meta-eval``: story- and system-level
    correlations with bootstrap intervals, pairwise ranking accuracy, bins, inter-rater α.

    ``judgements`` is a file (any layout ``vst meta-eval`` reads) or its bytes; ``options`` are
    :class:`MetaSettings` fields (``resamples=0`` for no intervals, ``baselines=False``).
    """
    meta = replace(settings or MetaSettings(), **options) if options else settings or MetaSettings()
    if not isinstance(judgements, Judgements):
        judgements = read_judgements(judgements, aspects=aspects)
    return run_meta_eval(scores, judgements, meta, metrics=metrics, aspects=aspects)


def human_likeness(
    scores: Sequence[StoryScores] | pd.DataFrame,
    *,
    human: Sequence[str] = HUMAN_SYSTEMS,
    pairing: Pairing = "sequence",
    resamples: int = 1000,
    seed: int = 0,
    judge: bool = False,
) -> DHMReport:
    """dHM of every system against the human stories (``human`` systems), as ``vst dhm`` and the
    Human-likeness page compute it: over the distances the scores have (``report.note`` says when
    that is not the paper's three), with ``judge`` also the judge's."""
    return dhm_report(scores, human_systems=human, pairing=pairing, resamples=resamples, seed=seed, judge=judge)


def human_likeness_profile(
    scores: Sequence[StoryScores] | pd.DataFrame,
    *,
    human: Sequence[str] = HUMAN_SYSTEMS,
    measures: Sequence[str] | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Every measure against the human stories, as ``vst dhm --profile`` and the Human-likeness
    page compute it (:func:`vst_core.analysis.profile.human_likeness_profile`): per system and
    measure the signed difference with its paired test and the distance mean |system − human|."""
    from vst_core.analysis.profile import human_likeness_profile as profile

    table = scores if isinstance(scores, pd.DataFrame) else scores_frame(list(scores))
    return profile(table, human, measures, resamples=resamples, seed=seed)


def compare(
    scores: Sequence[StoryScores] | pd.DataFrame,
    *,
    judgements: Judgements | str | Path | bytes | None = None,
    systems: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    human: Sequence[str] = HUMAN_SYSTEMS,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = ALPHA,
    permutation_budget: int | None = PERMUTATION_BUDGET,
) -> Leaderboard:
    """Which system is better, as ``vst compare`` and the Leaderboard page compute it: per metric,
    over the image sequences every system wrote for, each system's mean with its bootstrap interval,
    rank and significance cluster; every two systems' paired tests (mean difference with its
    interval, approximate-randomization p, Holm-adjusted p, d_z); dHM per system when ``human``
    stories are there; the mean human rating per system and aspect with ``judgements``.

    ``scores``: records (several of one story merged, as :func:`read_scores` does) or
    :func:`scores_frame`'s table. ``permutation_budget``: the permutations all the tests may draw
    together (``Leaderboard.permutation_budget`` says what they drew and whether it was reached).

    >>> import vst_core as vst
    >>> t = pd.DataFrame({"story": list("abcd"), "sequence": list("xxyy"), "system": ["h", "m"] * 2, "NR": [0.9, 0.7, 0.8, 0.6]})
    >>> board = vst.compare(t, resamples=0, permutations=999)
    >>> board.pairs[0].system_a, board.pairs[0].system_b, round(board.pairs[0].mean_difference, 3), board.pairs[0].better
    ('h', 'm', 0.2, 'h')
    """
    if isinstance(scores, pd.DataFrame):
        table = scores
        signatures: list[str] = list(scores.attrs.get("scores_signatures", []))
    else:
        records, _conflicts = merge_records((r, "records") for r in scores)
        table = scores_frame(records)
        signatures = sorted({str(r.signature.get("id")) for r in records if r.signature.get("id")})
    ratings, digest = None, ""
    if judgements is not None:
        found = judgements if isinstance(judgements, Judgements) else read_judgements(judgements)
        ratings, digest = story_ratings(table, found), found.digest
    return leaderboard(
        table,
        systems=systems,
        metrics=metrics,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        confidence=confidence,
        alpha=alpha,
        human=human,
        ratings=ratings,
        scores_signatures=signatures,
        judgements_digest=digest,
        permutation_budget=permutation_budget,
    )


class StoryView:
    """A scored story as a notebook shows it (``_repr_html_``): its score cards, then its sentences
    with repeated spans, grounded noun phrases and coherence chips marked, as the Inspect page draws
    them. Everything from the record is escaped."""

    def __init__(self, record: StoryScores, *, content_only: bool = True) -> None:
        self.record = record
        self.content_only = content_only

    def _repr_html_(self) -> str:
        from vst_core.viz.safe import html_text
        from vst_core.viz.story import annotated_story, evidence_blocks, score_cards_html, story_cards

        r = self.record
        head = f"<div style='font-weight:600'>{html_text(r.system)} · {html_text(r.story_id)}</div>"
        cards = score_cards_html(story_cards(r, list(r.metrics)))
        body = annotated_story(r, content_only=self.content_only)
        more = "".join(f"<details><summary>{html_text(title)}</summary>{block}</details>" for title, block in evidence_blocks(r))
        return f"<div class='vst-story'>{head}{cards}{body}{more}</div>"

    def __repr__(self) -> str:
        numbers = ", ".join(f"{k} {getattr(v, 'score', None)}" for k, v in self.record.metrics.items())
        return f"StoryView({self.record.system!r}, {self.record.story_id!r}: {numbers})"


def show(record: StoryScores, *, content_only: bool = True) -> StoryView:
    """A story's evidence drawn in a notebook cell, as the Inspect page draws it (``content_only``:
    repeats of function words such as "the" left unmarked, as the page's default).

    >>> s = Story.from_sentences(["A dog ran to the park.", "The dog ran to the park."], story_id="d")
    >>> view = show(score_stories([s], "redundancy")[0])
    >>> "repeats sentence 1" in view._repr_html_()
    True
    """
    return StoryView(record, content_only=content_only)
