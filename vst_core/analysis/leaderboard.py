"""Which system is better: a leaderboard of every system on every metric, and paired tests between
systems (as SacreBLEU's ``--paired-bs`` / ``--paired-ar`` and the WMT metrics tasks do, over the
image sequences every compared system wrote for).

Per metric, the stories are paired by image sequence: a system's value on a sequence is the mean of
its stories there, and only the sequences where *every* compared system has a value of that metric
enter (so each metric has its own N, the same for every system). Then

    mean             the mean over those sequences, with a percentile bootstrap interval
                     (sequences resampled, the same draws for every system)
    rank             1 = best by the metric's direction (:func:`~vst_core.records.direction_of`:
                     lower is better for ``inter``, ``intra``, ``T``); none for a descriptor (``P``)
    cluster          systems sorted best first; a system opens a new cluster when its paired test
                     against any system of the current cluster gives ``p_holm < alpha``, so no two
                     systems of one cluster differ significantly (a chain of small steps, each not
                     significant, no longer joins two systems that differ)
    d = a − b        per sequence; mean difference, its paired-bootstrap interval, a paired
                     approximate-randomization p-value (two-sided: ``|mean(s·d)| ≥ |mean(d)|`` for
                     random signs ``s``; p = (1 + hits) / (1 + permutations), with its Monte-Carlo
                     standard error, permutations added while α is within 3 SE), Holm-adjusted
                     p over a stated family (``family``: the pairs of one metric by default, or every
                     test of the result), and the effect size d_z = mean(d) / sd(d) (ddof 1)

Intervals follow :mod:`vst_core.analysis.intervals` (none below its minimum N). Each test's random
stream is seeded by ``seed``, the metric and the two systems' names (in either order), so a pair's
p-value and interval do not depend on which other systems are compared.

>>> t = pd.DataFrame({"story": list("abcdef"), "sequence": list("xxyyzz"), "system": ["h", "m"] * 3, "NR": [0.9, 0.7, 0.8, 0.8, 0.9, 0.6]})
>>> board = leaderboard(t, metrics=["NR"], resamples=0, permutations=999)
>>> [(s.system, s.rank, round(s.mean, 3)) for s in board.standings]
[('h', 1, 0.867), ('m', 2, 0.7)]
>>> round(board.pairs[0].mean_difference, 3), board.pairs[0].n
(0.167, 3)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.dhm import HUMAN_SYSTEMS, bootstrap, dhm_report
from vst_core.analysis.dhm_aspects import ASPECTS, columns, dhm_aspects
from vst_core.analysis.intervals import SMALL_N_MARK, has_interval
from vst_core.analysis.paired_tests import (
    ALPHA,
    FAMILIES,
    PERMUTATION_BUDGET,
    PERMUTATION_CAP,
    PERMUTATIONS,
    RESAMPLES,
    PairTest,
    PendingTest,
    PermutationBudget,
    adjusted,
    holm,
    paired_test,
    paired_tests,
    pending_test,
    permutation_p,
    with_tests,
)
from vst_core.contract import Direction, registry
from vst_core.records import direction_of


@dataclass(frozen=True, slots=True)
class Standing:
    """One system on one metric: mean over the ``n`` paired sequences, its interval (None below the
    minimum N or with no resamples), rank and cluster (None for a descriptor)."""

    metric: str
    system: str
    direction: Direction
    n: int
    mean: float
    ci_low: float | None
    ci_high: float | None
    rank: int | None
    cluster: int | None


@dataclass(frozen=True, slots=True)
class Rating:
    """A system's mean human rating of one aspect over its ``n`` rated stories, with its interval."""

    system: str
    aspect: str
    n: int
    mean: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True, slots=True)
class SystemDistance:
    """A system's dHM (as ``vst dhm`` computes it, over its own ``n`` stories) with its interval."""

    system: str
    n: int
    dhm: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Leaderboard:
    """Every system on every metric, the paired tests between them, dHM and human ratings."""

    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    standings: tuple[Standing, ...]
    pairs: tuple[PairTest, ...]
    dhm: tuple[SystemDistance, ...] = ()
    ratings: tuple[Rating, ...] = ()
    signature: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    permutation_budget: dict[str, Any] = field(default_factory=dict)  # PermutationBudget.summary() of the run

    def standings_frame(self) -> pd.DataFrame:
        """One row per (metric, system), best first within a metric; ``small_n`` marks N below the minimum."""
        columns = ["metric", "direction", "rank", "cluster", "system", "n", "mean", "ci_low", "ci_high"]
        frame = pd.DataFrame([asdict(s) for s in self.standings], columns=columns)
        frame = frame.astype({"rank": "Int64", "cluster": "Int64"})
        return frame.assign(small_n=[not has_interval(int(n)) for n in frame["n"]])

    def pairs_frame(self) -> pd.DataFrame:
        """One row per test: the JSON fields of ``vst compare``; ``small_n`` marks N below the
        minimum of an interval (the effect size is then as unreliable)."""
        frame = pd.DataFrame([asdict(p) for p in self.pairs], columns=list(PairTest.__slots__))
        return frame.assign(small_n=[not has_interval(int(n)) for n in frame["n"]])

    def glance(self) -> pd.DataFrame:
        """One row per system, one column per metric: ``mean [low, high] #rank·cluster`` (4 decimals;
        :data:`~vst_core.analysis.intervals.SMALL_N_MARK` instead of the interval below the minimum N);
        then ``dHM`` and ``people: <aspect>`` (mean human rating) where known."""
        rows: dict[str, dict[str, str]] = {s: {"system": s} for s in self.systems}
        for s in self.standings:
            rows[s.system][s.metric] = cell(s)
        extra: list[str] = []
        for d in self.dhm:
            if d.dhm is not None:
                rows[d.system]["dHM"] = _value_cell(d.dhm, d.ci_low, d.ci_high, d.n)
                extra = ["dHM"]
        for r in self.ratings:
            name = f"people: {r.aspect}"
            rows[r.system][name] = _value_cell(r.mean, r.ci_low, r.ci_high, r.n)
            if name not in extra:
                extra.append(name)
        return pd.DataFrame(list(rows.values()), columns=["system", *self.metrics, *extra]).fillna("—")

    def _repr_html_(self) -> str:
        """In a notebook: the glance table (every system on every metric), every name from a file
        escaped by pandas, with the signature beneath."""
        sig = html.escape(str(self.signature.get("id", "")))
        return self.glance().to_html(index=False, escape=True) + f"<p><small>compare sig {sig}</small></p>"

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature,
            "notes": list(self.notes),
            "permutation_budget": dict(self.permutation_budget),
            "leaderboard": [asdict(s) for s in self.standings],
            "pairwise": [asdict(p) for p in self.pairs],
            "dhm": [asdict(d) for d in self.dhm],
            "human_ratings": [asdict(r) for r in self.ratings],
        }


def fixed(value: float, digits: int = 4) -> str:
    """``value`` with ``digits`` decimals, a value that rounds to zero written without a minus sign.

    >>> fixed(-0.00001), fixed(-0.5), fixed(0.12345)
    ('0.0000', '-0.5000', '0.1235')
    """
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _value_cell(mean: float, low: float | None, high: float | None, n: int) -> str:
    interval = f" [{fixed(low)}, {fixed(high)}]" if low is not None and high is not None else ""
    return f"{fixed(mean)}{interval}" + (f" {SMALL_N_MARK}" if not has_interval(n) else "")


def cell(s: Standing) -> str:
    """How a standing reads in a table: ``0.9123 [0.9001, 0.9244] #1·A`` (cluster as a letter;
    :data:`~vst_core.analysis.intervals.SMALL_N_MARK` in place of the interval below the minimum N).

    >>> cell(Standing("NR", "m", "higher", 5, 0.5, None, None, 2, 1))
    '0.5000 † #2·A'
    """
    place = f" #{s.rank}·{cluster_name(s.cluster)}" if s.rank is not None else ""
    return _value_cell(s.mean, s.ci_low, s.ci_high, s.n) + place


def cluster_name(cluster: int | None) -> str:
    """Clusters as letters, A the best: 1 -> A, 27 -> AA.

    >>> cluster_name(1), cluster_name(3), cluster_name(27)
    ('A', 'C', 'AA')
    """
    if cluster is None:
        return "—"
    name, k = "", cluster
    while k > 0:
        k, r = divmod(k - 1, 26)
        name = chr(65 + r) + name
    return name


# --------------------------------------------------------------------------- the leaderboard


def sequence_matrix(table: pd.DataFrame, metric: str, systems: Sequence[str]) -> pd.DataFrame:
    """Sequences × systems: a system's mean ``metric`` over its stories of the sequence, kept only
    where every one of ``systems`` has a value (the paired sequences), sorted by sequence id."""
    part = table[table["system"].isin(systems)]
    wide = part.pivot_table(index="sequence", columns="system", values=metric, aggfunc="mean", dropna=False)
    wide = wide.reindex(columns=list(systems)).dropna()
    return wide.sort_index()


def _ranks(means: np.ndarray, direction: Direction) -> list[int | None]:
    """1 = best; equal means share the better rank; a mean that is not a finite number (inf, NaN)
    is not ranked (None), so it is never first.

    >>> _ranks(np.array([0.5, np.inf, 0.7, np.nan]), "higher")
    [2, None, 1, None]
    """
    finite = np.isfinite(means)
    key = pd.Series(np.where(finite, -means if direction == "higher" else means, np.nan))
    return [int(r) if ok else None for r, ok in zip(key.rank(method="min"), finite, strict=True)]


def _place(ranks: list[int | None] | None, k: int) -> float:
    """Where system ``k`` is listed: by rank, an unranked one after every ranked one."""
    if ranks is None:
        return 0.0
    rank = ranks[k]
    return float("inf") if rank is None else float(rank)


def _means(values: np.ndarray) -> np.ndarray:
    """Each column's mean; a column of finite values whose sum overflows is averaged scaled to at
    most 1 (so 1e308 and 1e308 average to 1e308, not to infinity).

    >>> _means(np.array([[1e308, 1.0], [1e308, 3.0]])).tolist()
    [1e+308, 2.0]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        means = values.mean(axis=0)
    for k in np.flatnonzero(~np.isfinite(means) & np.isfinite(values).all(axis=0)):
        scale = float(np.abs(values[:, k]).max())
        means[k] = float((values[:, k] / scale).mean()) * scale
    return means


def _intervals(values: np.ndarray, resamples: int, seed: int, confidence: float) -> list[tuple[float, float] | None]:
    """:func:`bootstrap` intervals of each column's mean; a column of finite values whose interval
    overflows is resampled scaled to at most 1 (the same draws), one with a value that is not
    finite has none."""
    with np.errstate(over="ignore", invalid="ignore"):
        found = bootstrap(values, resamples, seed, confidence)
    for k, interval in enumerate(found):
        if interval is None or all(np.isfinite(interval)):
            continue
        if not np.isfinite(values[:, k]).all():
            found[k] = None
            continue
        scale = float(np.abs(values[:, k]).max())
        (scaled,) = bootstrap(values[:, k : k + 1] / scale, resamples, seed, confidence)
        found[k] = (scaled[0] * scale, scaled[1] * scale) if scaled is not None else None
    return found


def leaderboard(
    table: pd.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = ALPHA,
    family: str = "metric",
    human: Sequence[str] = HUMAN_SYSTEMS,
    ratings: pd.DataFrame | None = None,
    scores_signatures: Sequence[str] = (),
    judgements_digest: str = "",
    permutation_budget: int | None = PERMUTATION_BUDGET,
    progress: Callable[[int], Any] | None = None,
) -> Leaderboard:
    """The leaderboard of ``table`` (one row per story: ``story``, ``sequence``, ``system`` and the
    metric columns, as :func:`vst_core.viz.scores_table` and the scores index give it).

    ``systems``/``metrics`` default to all (metrics: the registry's columns with a value).
    Every pair of systems is tested on every metric with a direction, and ``p_holm`` is adjusted
    over each ``family``: the pairs of one metric (the default: a metric's verdicts do not depend on
    which other columns were loaded) or every test (``"all"``). dHM per system is added when some of ``human`` is among the systems
    and the scores have a dHM metric; ``ratings`` (one row per story, ``system`` and one column per
    aspect: :func:`story_ratings`) adds the mean human rating per system and aspect.

    Every test draws within one :class:`~vst_core.analysis.paired_tests.PermutationBudget` of
    ``permutation_budget`` draws (None: no limit); ``progress(total)`` may return a bar advanced
    per draw. The run's budget, what it drew and whether it was reached are in
    ``permutation_budget`` (and a note when reached; the budget is then signed too); a test it
    stopped says so (``stopped_early``).

    A system whose mean is not a finite number (an infinite value among its own) is not ranked and
    joins no cluster; a note says why. A mean whose sum overflows a float is taken over the values
    scaled to at most 1, so 1e308 averages to 1e308, not to infinity."""
    if systems is None:
        systems = sorted(str(s) for s in pd.unique(table["system"]))
    systems = [str(s) for s in systems]
    if metrics is None:
        metrics = [f.column for f in registry().fields if f.column in table and table[f.column].notna().any()]
    metrics = [m for m in metrics if m in table]
    if family not in FAMILIES:
        raise ValueError(f"unknown Holm family {family!r}: one of {', '.join(FAMILIES)}")
    # more permutations while alpha is near p: the same rule for every pair, whichever systems are compared,
    # so a pair's p is the Compare page's and does not move when a system joins
    thresholds = (alpha,)
    notes: list[str] = []
    standings: list[Standing] = []
    pending: list[PendingTest] = []
    order: dict[str, list[str]] = {}
    matrices = {metric: sequence_matrix(table, metric, systems).to_numpy(float) for metric in metrics}
    pairs = len(systems) * (len(systems) - 1) // 2
    budget = PermutationBudget(permutation_budget, progress)
    first = budget.first(permutations, sum(pairs for m, v in matrices.items() if len(v) and direction_of(m) != "none"))
    for metric, values in matrices.items():
        n = len(values)
        direction = direction_of(metric)
        if not n:
            notes.append(f"{metric}: no image sequence has a value from every compared system")
            continue
        means = _means(values)
        intervals = _intervals(values, resamples, seed, confidence)
        for i, a in enumerate(systems):
            for j in range(i + 1, len(systems)):
                if direction == "none":
                    continue
                b = systems[j]
                pending.append(
                    pending_test(
                        values[:, i] - values[:, j],
                        metric,
                        a,
                        b,
                        resamples=resamples,
                        permutations=permutations,
                        seed=seed,
                        confidence=confidence,
                        first=first,
                        budget=budget,
                    )
                )
        ranks = _ranks(means, direction) if direction != "none" else None
        ranked = sorted(range(len(systems)), key=lambda k: (_place(ranks, k), systems[k]))
        order[metric] = [systems[k] for k in ranked if ranks is None or ranks[k] is not None]
        for k in ranked:
            interval = intervals[k]
            low, high = interval if interval is not None else (None, None)
            rank = ranks[k] if ranks is not None else None
            standings.append(Standing(metric, systems[k], direction, n, float(means[k]), low, high, rank, None))
            if ranks is not None and rank is None:
                notes.append(f"{metric}: the mean of {systems[k]} is not a finite number ({means[k]}); it is not ranked")
    budget.extend([t.draws for t in pending if t.draws is not None], thresholds, PERMUTATION_CAP)
    budget.close()
    tests = adjusted([t.done() for t in pending], family)
    standings = _clustered(standings, tests, order, alpha)
    reached = budget.note()
    if reached is not None:
        notes.append(reached)
    payload = {
        "method": "paired by image sequence; percentile bootstrap over sequences; paired approximate randomization "
        "(sign flips of the differences, two-sided; permutations doubled while alpha is within 3 Monte-Carlo "
        f"SE of p, up to {PERMUTATION_CAP:,}); Holm over "
        + ("the pairs of each metric" if family == "metric" else "every pairwise test")
        + "; clusters: no two systems of one cluster differ at p_holm < alpha; d_z effect size",
        "holm_family": family,
        "systems": systems,
        "metrics": list(metrics),
        "resamples": resamples,
        "permutations": permutations,
        "seed": seed,
        "confidence": confidence,
        "alpha": alpha,
        "human_systems": [h for h in human if h in set(table["system"].astype(str))],  # those these stories have
        "scores_signatures": list(scores_signatures),
        "judgements": judgements_digest,
    }
    if budget.reached:  # it decided some p: signed (a run within its budget is signed as before there was one)
        payload["permutation_budget"] = permutation_budget
    from vst_core.hashing import json_digest

    signature = {"id": json_digest(payload, 12), **payload}
    distances = _dhm(table, systems, human, resamples, seed, confidence, notes)
    rated = _ratings(ratings, systems, resamples, seed, confidence) if ratings is not None else ()
    return Leaderboard(
        tuple(systems),
        tuple(m for m in metrics if m in order),
        tuple(standings),
        tuple(tests),
        distances,
        rated,
        signature,
        tuple(notes),
        budget.summary(),
    )


def _clustered(standings: list[Standing], tests: list[PairTest], order: dict[str, list[str]], alpha: float) -> list[Standing]:
    """Standings with their cluster: walking each metric's systems best first, a system opens a new
    cluster when its test against any member of the current cluster has ``p_holm < alpha``; so no
    two systems of one cluster differ significantly.

    >>> t = lambda a, b, p: PairTest("NR", a, b, 9, 0.0, None, None, p, p, None, None, 0)
    >>> s = [Standing("NR", x, "higher", 9, 0.0, None, None, k + 1, None) for k, x in enumerate("abcd")]
    >>> tests = [t("a", "b", 0.3), t("b", "c", 0.3), t("c", "d", 0.3), t("a", "c", 0.2), t("b", "d", 0.2), t("a", "d", 0.01)]
    >>> [x.cluster for x in _clustered(s, tests, {"NR": list("abcd")}, 0.05)]
    [1, 1, 1, 2]
    """
    from dataclasses import replace

    p = {(t.metric, frozenset((t.system_a, t.system_b))): t.p_holm for t in tests}
    clusters: dict[tuple[str, str], int] = {}
    for metric, ranked in order.items():
        if direction_of(metric) == "none":
            continue
        current, members = 1, list[str]()
        for system in ranked:
            found = [p.get((metric, frozenset((m, system)))) for m in members]
            if any(v is not None and v < alpha for v in found):
                current, members = current + 1, list[str]()
            members.append(system)
            clusters[(metric, system)] = current
    return [replace(s, cluster=clusters.get((s.metric, s.system))) for s in standings]


def _dhm(
    table: pd.DataFrame,
    systems: Sequence[str],
    human: Sequence[str],
    resamples: int,
    seed: int,
    confidence: float,
    notes: list[str],
) -> tuple[SystemDistance, ...]:
    """dHM of each compared system against the ``human`` ones (none when they are absent, or the
    scores have no dHM metric); the report's partial-dHM note joins ``notes``."""
    present = [h for h in human if h in set(table["system"].astype(str))]
    named = columns()
    if not present or not any(named[a] in table and table[named[a]].notna().any() for a in ASPECTS):
        return ()
    report = dhm_report(
        table, human_systems=present, resamples=resamples, seed=seed, confidence=confidence, aspects=dhm_aspects(table)
    )
    if report.note:
        notes.append(report.note)
    found = {s.system: s for s in report.systems}
    out = []
    for system in systems:
        s = found.get(system)
        if s is None:
            continue
        interval = s.interval["dHM"]
        out.append(SystemDistance(system, s.n, s.mean["dHM"], *(interval if interval else (None, None))))
    return tuple(out)


def _ratings(ratings: pd.DataFrame, systems: Sequence[str], resamples: int, seed: int, confidence: float) -> tuple[Rating, ...]:
    """Mean human rating per system and aspect over its rated stories, with bootstrap intervals."""
    out = []
    aspects = [c for c in ratings.columns if c != "system"]
    for system in systems:
        part = ratings[ratings["system"].astype(str) == system]
        for aspect in aspects:
            values = pd.to_numeric(part[aspect], errors="coerce").dropna().to_numpy(float)
            if not len(values):
                continue
            (interval,) = bootstrap(values.reshape(-1, 1), resamples, seed, confidence)
            low, high = interval if interval else (None, None)
            out.append(Rating(system, str(aspect), len(values), float(values.mean()), low, high))
    return tuple(out)


def story_ratings(table: pd.DataFrame, judgements: Any, how: str = "mean") -> pd.DataFrame:
    """One row per rated story of ``table``: its ``system`` and the raters' ``how`` per aspect,
    joined by the meta-evaluation's keys (a story is (system, story_id)); error labels left out."""
    from vst_core.analysis.meta_eval.identity import keyed_judgements, keys_of
    from vst_core.analysis.meta_eval.ratings import aggregate

    ids = table[["story", "system"]].astype(str).reset_index(drop=True)
    keyed, _ = keyed_judgements(judgements, ids)
    human = aggregate(keyed, how)
    aspects = [a for a in keyed.aspects if a in human.columns]
    keys = keys_of(ids)
    joined = human[aspects].reindex(keys.to_numpy())
    joined.insert(0, "system", ids["system"].to_numpy())
    return joined[joined[aspects].notna().any(axis=1)].reset_index(drop=True) if aspects else joined.iloc[0:0]


__all__ = [
    "ALPHA",
    "FAMILIES",
    "PERMUTATION_BUDGET",
    "PERMUTATION_CAP",
    "PERMUTATIONS",
    "RESAMPLES",
    "Leaderboard",
    "PairTest",
    "PermutationBudget",
    "Rating",
    "Standing",
    "SystemDistance",
    "adjusted",
    "cell",
    "cluster_name",
    "holm",
    "leaderboard",
    "paired_test",
    "paired_tests",
    "permutation_p",
    "sequence_matrix",
    "story_ratings",
    "with_tests",
]
