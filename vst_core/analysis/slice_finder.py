"""Slice discovery: the slices of stories (one descriptor's value, or two descriptors' values
together) where a metric disagrees with people most, or where system A loses to system B most.

Descriptors come from the scores table (:func:`story_descriptors`): the number of sentences and
words, T and P (GROOVIST), the rubric judge's aspects and any other numeric column asked for, each
cut into quantile bins; the system; each input problem kind (has it or not). A slice is a list of
:class:`Condition` (a column in an interval, equal to a value, or holding a problem kind), so the
Dataset page re-applies it with :func:`apply_conditions`.

Two questions, each answered for every candidate slice of at least ``min_size`` items by grouped
sums (``numpy.bincount``: one pass per descriptor or pair, so 100,000 stories take seconds):

* ``metric`` vs people: effect = r_slice − r_all, Pearson r of the metric (oriented higher =
  better) with the human rating; the p-value compares the slice with the rest by Fisher's z,
  z = (atanh r_slice − atanh r_rest) / √(1/(n_slice−3) + 1/(n_rest−3)).
* system A vs B: per image sequence d = A − B (the metric oriented higher = better), descriptors
  of A's story; effect = mean(d | slice); the p-value compares the slice with the rest by Welch's t.

p-values are two-sided and adjusted over every candidate tested by Benjamini–Hochberg (the false
discovery rate, ``p_bh``); the slices shown carry a percentile bootstrap interval of the effect
(items of the slice resampled; for a correlation, r_all held fixed).

Slices where the effect is negative come first, ranked by ``bound``, the upper end of the
effect's simultaneous 95% interval over the K candidates tested (Bonferroni: z_K = Φ⁻¹(1 −
0.025/K); for a mean, effect + z_K·sd/√n; for a correlation, tanh(atanh r_slice + z_K/√(n − 3)) −
r_all; for a bad slice, the end nearest zero), most negative first: a slice is listed high when it
is surely bad after looking at every candidate, not when it is small; slices with an effect of 0
or more follow (a tight slice where A wins is never listed above a noisy one where A loses). Ranking
by the raw effect rewarded sub-slices: a part of a bad slice, cut smaller, has a more extreme
effect by chance (random quarters of a planted slice of 961 outranked it); a 95% bound per slice
still let a lucky quarter win, the simultaneous one widens with the search as chance winners
become likelier. It needs no prior (as shrinkage would) and, unlike ranking by p, does not put a
large mildly worse slice above a large much worse one.

>>> frame = pd.DataFrame({"words": [3, 5, 8, 13]})
>>> [c.label() for c in numeric_conditions(frame["words"], "words", 2)]
['words in [3, 6.5]', 'words in (6.5, 13]']
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from vst_core.analysis.meta_eval.identity import keyed_judgements, keys_of
from vst_core.analysis.meta_eval.judgements import Judgements
from vst_core.analysis.meta_eval.ratings import aggregate
from vst_core.records import direction_of

#: Fewest items a proposed slice may have (and its rest, for the test).
MIN_SLICE = 30
#: Quantile bins a numeric descriptor is cut into.
BINS = 4
#: Descriptors read from the scores table when present (numbers, binned by quantiles).
NUMERIC_DESCRIPTORS = (
    "sentences",
    "words",
    "T",
    "P",
    "judge overall",
    "judge grounding",
    "judge coherence",
    "judge non-redundancy",
)


@dataclass(frozen=True)
class Condition:
    """One part of a slice: ``column`` in [lo, hi] (``lo`` excluded unless ``closed``), equal to ``value``,
    or (``kind == "problem"``) holding the problem kind ``value``."""

    column: str
    kind: str  # "range" | "equals" | "problem"
    value: str = ""
    lo: float = -math.inf
    hi: float = math.inf
    closed: bool = False

    def label(self) -> str:
        if self.kind == "range":
            return f"{self.column} in {'[' if self.closed else '('}{self.lo:g}, {self.hi:g}]"
        if self.kind == "problem":
            return f"problem {self.value}"
        return f"{self.column} = {self.value}"

    def mask(self, table: pd.DataFrame) -> np.ndarray:
        """Which rows of ``table`` meet the condition (a row without the column's value does not)."""
        if self.kind == "problem":
            if "problems" not in table:
                return np.zeros(len(table), dtype=bool)
            text = "," + table["problems"].fillna("").astype(str) + ","
            return text.str.contains("," + self.value + ",", regex=False).to_numpy()
        if self.column not in table:
            return np.zeros(len(table), dtype=bool)
        if self.kind == "equals":
            return (table[self.column].astype(str) == self.value).to_numpy()
        values = descriptor_values(table, self.column)
        return ((values >= self.lo) if self.closed else (values > self.lo)) & (values <= self.hi)


def descriptor_values(table: pd.DataFrame, column: str) -> np.ndarray:
    """A numeric descriptor's values (``words``: whitespace-separated tokens of ``text``), NaN where absent."""
    if column == "words" and "words" not in table and "text" in table:
        return table["text"].fillna("").astype(str).str.split().str.len().to_numpy(dtype=float)
    return pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)


def apply_conditions(table: pd.DataFrame, conditions: Sequence[Condition]) -> pd.DataFrame:
    """The rows of ``table`` that meet every condition (a slice found by :func:`find_slices`)."""
    keep = np.ones(len(table), dtype=bool)
    for condition in conditions:
        keep &= condition.mask(table)
    return table[keep]


def numeric_conditions(values: pd.Series | np.ndarray, column: str, bins: int = BINS) -> list[Condition]:
    """Quantile bins of a numeric descriptor: the first closed on the left, the rest ``(lo, hi]``;
    equal quantiles merge (a descriptor with one value gives one bin)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return []
    edges = np.unique(np.quantile(v, np.linspace(0, 1, bins + 1)))
    if edges.size == 1:
        return [Condition(column, "range", lo=float(edges[0]), hi=float(edges[0]), closed=True)]
    return [
        Condition(column, "range", lo=float(lo), hi=float(hi), closed=k == 0)
        for k, (lo, hi) in enumerate(itertools.pairwise(edges))
    ]


@dataclass(frozen=True)
class Descriptor:
    """A descriptor's levels and each row's level (−1: none)."""

    name: str
    levels: tuple[Condition, ...]
    codes: np.ndarray


def story_descriptors(
    table: pd.DataFrame, numeric: Sequence[str] | None = None, *, bins: int = BINS, categorical: Sequence[str] = ("system",)
) -> list[Descriptor]:
    """Every descriptor the table has: numeric ones cut into ``bins`` quantile bins, ``categorical``
    columns by value (more than one value), and one has/has-not descriptor per input problem kind."""
    out = []
    for column in numeric if numeric is not None else NUMERIC_DESCRIPTORS:
        if column not in table and not (column == "words" and "text" in table):
            continue
        values = descriptor_values(table, column)
        levels = numeric_conditions(values, column, bins)
        if len(levels) < 2:
            continue
        edges = np.array([c.hi for c in levels[:-1]])
        codes = np.where(np.isfinite(values), np.searchsorted(edges, values, side="left"), -1)
        out.append(Descriptor(column, tuple(levels), codes.astype(np.int64)))
    for column in categorical:
        if column not in table:
            continue
        found = table[column].astype(str)
        uniques = sorted(found.unique())
        if len(uniques) < 2:
            continue
        codes = pd.Categorical(found, categories=uniques).codes.astype(np.int64)
        out.append(Descriptor(column, tuple(Condition(column, "equals", u) for u in uniques), codes))
    if "problems" in table:
        text = "," + table["problems"].fillna("").astype(str) + ","
        kinds = sorted({k for value in table["problems"].dropna().unique() for k in str(value).split(",") if k})
        for kind in kinds:
            has = text.str.contains("," + kind + ",", regex=False).to_numpy()
            out.append(Descriptor(f"problem {kind}", (Condition("problems", "problem", kind),), np.where(has, 0, -1)))
    return out


def _candidates(
    descriptors: Sequence[Descriptor], pairs: bool
) -> list[tuple[tuple[tuple[Condition, ...], ...], np.ndarray, int]]:
    """(the levels of each group, each row's group code (−1: none), the number of groups) for every
    descriptor alone and, with ``pairs``, every two descriptors together."""
    out: list[tuple[tuple[tuple[Condition, ...], ...], np.ndarray, int]] = [
        (tuple((c,) for c in d.levels), d.codes, len(d.levels)) for d in descriptors
    ]
    if pairs:
        for a, b in itertools.combinations(descriptors, 2):
            codes = np.where((a.codes >= 0) & (b.codes >= 0), a.codes * len(b.levels) + b.codes, -1)
            levels = tuple((x, y) for x in a.levels for y in b.levels)
            out.append((levels, codes, len(levels)))
    return out


def _grouped(codes: np.ndarray, size: int, *columns: np.ndarray) -> list[np.ndarray]:
    """Per group: the count, then the sum of each column (rows with code −1 left out)."""
    keep = codes >= 0
    c = codes[keep]
    return [np.bincount(c, minlength=size).astype(float), *(np.bincount(c, weights=x[keep], minlength=size) for x in columns)]


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (the false discovery rate): p_(i)·m/i, made monotone
    from the largest down, capped at 1; NaN stays NaN and is not counted."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    scaled = p[order] * m / np.arange(1, m + 1)
    out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


COLUMNS = ["slice", "size", "effect", "bound", "ci_low", "ci_high", "value", "overall", "p", "p_bh", "conditions"]
#: The two-sided level of the simultaneous interval whose end ranks the slices.
BOUND_LEVEL = 0.05


def _pearson_from_sums(
    n: np.ndarray, sx: np.ndarray, sy: np.ndarray, sxx: np.ndarray, syy: np.ndarray, sxy: np.ndarray
) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sy / n
        vx = sxx - sx * sx / n
        vy = syy - sy * sy / n
        r = cov / np.sqrt(vx * vy)
    return np.where((vx > 1e-12 * np.maximum(sxx, 1)) & (vy > 1e-12 * np.maximum(syy, 1)), np.clip(r, -1, 1), np.nan)


def _standardised(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``x`` scaled by its largest magnitude and centred on its mean where ``ok``, 0 elsewhere.

    >>> _standardised(np.array([1e9, 1e9 + 2.0, 7.0]), np.array([True, True, False])).tolist()
    [-1.0, 1.0, 0.0]
    """
    return _centred(x, ok)[0]


def _centred(x: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(v, centre, spread) with v = (x/2 − centre/2) / spread where ``ok`` (0 elsewhere), the
    centre about the mean of ``x`` and the spread the largest |x/2 − centre/2|, so ``x`` =
    2·spread·v + centre: halved, the values cannot overflow (±1e308), and centred before any
    rounding, nearby values (1e9 ± 1e-3) keep their differences exactly."""
    if not ok.any():
        return np.zeros_like(x), 0.0, 1.0
    top = float(np.abs(x[ok]).max())
    centre = float(np.mean(x[ok] / top)) * top if top > 0 else 0.0
    u = np.where(ok, x / 2 - centre / 2, 0.0)
    spread = float(np.abs(u).max())
    spread = spread if spread > 0 else 1.0
    return u / spread, centre, spread


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def metric_slices(
    table: pd.DataFrame,
    metric: str,
    human: str,
    descriptors: Sequence[Descriptor] | None = None,
    *,
    pairs: bool = True,
    min_size: int = MIN_SLICE,
    top: int = 20,
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The slices where ``metric`` agrees with the ``human`` rating least: effect = r_slice − r_all
    (Pearson, the metric oriented higher = better), most negative first, with Fisher's z p (slice vs
    rest), Benjamini–Hochberg over every candidate, and a bootstrap interval for the ``top`` shown."""
    x = table[metric].to_numpy(dtype=float) * (-1.0 if direction_of(metric) == "lower" else 1.0)
    y = table[human].to_numpy(dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    descriptors = list(descriptors) if descriptors is not None else story_descriptors(table)
    # r is unchanged by centring and scaling each column: sums of standardised values keep a slice's
    # variance from being the difference of two large sums (values of 1e9 ± 1e-3, or of 1e200)
    xs, ys = _standardised(x, ok), _standardised(y, ok)
    total_n = int(ok.sum())
    overall = _pearson(xs[ok], ys[ok])
    sums_all = np.array([total_n, xs.sum(), ys.sum(), (xs * xs).sum(), (ys * ys).sum(), (xs * ys).sum()])
    found: list[Candidate] = []
    for levels, codes, size in _candidates(descriptors, pairs):
        codes = np.where(ok, codes, -1)
        n, sx, sy, sxx, syy, sxy = _grouped(codes, size, xs, ys, xs * xs, ys * ys, xs * ys)
        rest = sums_all[:, None] - np.vstack([n, sx, sy, sxx, syy, sxy])
        r = _pearson_from_sums(n, sx, sy, sxx, syy, sxy)
        r_rest = _pearson_from_sums(*rest)
        nr = rest[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (np.arctanh(np.clip(r, -0.999999, 0.999999)) - np.arctanh(np.clip(r_rest, -0.999999, 0.999999))) / np.sqrt(
                1 / (n - 3) + 1 / (nr - 3)
            )
        p = 2 * stats.norm.sf(np.abs(z))
        with np.errstate(invalid="ignore", divide="ignore"):
            centre, scale = np.arctanh(np.clip(r, -0.999999, 0.999999)), 1 / np.sqrt(n - 3)
        for g in np.flatnonzero((n >= min_size) & (nr >= min_size) & np.isfinite(r) & np.isfinite(p)):
            found.append(
                (
                    levels[g],
                    float(n[g]),
                    float(r[g] - overall),
                    float(r[g]),
                    float(p[g]),
                    (float(centre[g]), float(scale[g]), True),
                )
            )
    out = _ranked(found, overall, top, lambda members, rng: _boot_corr(xs, ys, ok, members, overall, resamples, rng), table, seed)
    out.attrs["items"] = total_n  # stories with the metric and the rating: a slice and the rest need min_size each
    return out


#: A candidate slice: (conditions, size, effect, value, p, (centre, scale, is_correlation)): its bound
#: is centre + z·scale, through tanh and minus r_all for a correlation (see :func:`_bounds`).
Candidate = tuple[tuple[Condition, ...], float, float, float, float, tuple[float, float, bool]]


def _bounds(found: Sequence[Candidate], overall: float) -> np.ndarray:
    """Each candidate's ranking bound: the upper end of its simultaneous interval over all of
    ``found`` (Bonferroni, :data:`BOUND_LEVEL`)."""
    z = float(stats.norm.isf(BOUND_LEVEL / 2 / max(len(found), 1)))
    out = np.empty(len(found))
    for k, (_, _, _, _, _, (centre, scale, correlation)) in enumerate(found):
        out[k] = math.tanh(centre + z * scale) - overall if correlation else centre + z * scale
    return out


def _blocks(resamples: int, size: int) -> list[int]:
    """Rows of resamples per block, so that a block holds at most about 4 million draws."""
    step = max(1, 4_000_000 // max(size, 1))
    return [min(step, resamples - start) for start in range(0, resamples, step)]


def _boot_corr(
    x: np.ndarray, y: np.ndarray, ok: np.ndarray, members: np.ndarray, overall: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    idx = np.flatnonzero(members & ok)
    if resamples < 1 or idx.size < 3:
        return math.nan, math.nan
    found = []
    for rows in _blocks(resamples, idx.size):
        draws = idx[rng.integers(0, idx.size, size=(rows, idx.size))]
        a, b = x[draws], y[draws]
        a = a - a.mean(axis=1, keepdims=True)
        b = b - b.mean(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            found.append((a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1)))
    r = np.concatenate(found)
    r = r[np.isfinite(r)] - overall
    return (float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))) if r.size else (math.nan, math.nan)


def with_human(table: pd.DataFrame, judgements: Judgements, how: str = "mean") -> tuple[pd.DataFrame, list[str]]:
    """``table`` (rows with ``story`` and ``system``) with each judged aspect's aggregated rating as
    column ``human <aspect>`` (NaN for a story nobody rated), matched as meta-evaluation matches
    them; and the names of those columns."""
    keyed, _ = keyed_judgements(judgements, table)
    human = aggregate(keyed, how)
    keys = keys_of(table)
    out = table.copy(deep=False)
    names = []
    for aspect in judgements.aspects:
        if aspect in human:
            out[f"human {aspect}"] = keys.map(human[aspect]).to_numpy(dtype=float)
            names.append(f"human {aspect}")
    return out, names


def paired_differences(table: pd.DataFrame, metric: str, system_a: str, system_b: str) -> pd.DataFrame:
    """One row per image sequence both systems wrote for, with ``difference`` = A − B of the metric
    oriented higher = better, each system's value on a sequence being the mean of its stories there
    (the leaderboard's definition, :func:`vst_core.analysis.leaderboard.sequence_matrix`). The
    row's descriptors are A's: numbers averaged over A's stories of the sequence, anything else
    from its first; ``stories_a`` counts them."""
    from vst_core.analysis.systems import paired_sequences

    sign = -1.0 if direction_of(metric) == "lower" else 1.0
    mine = table[table["system"] == system_a]
    theirs = paired_sequences(table, system_a, system_b, [metric]).set_index("sequence")[metric]  # A − B, per-sequence means
    numeric = [
        c
        for c in mine.columns
        if c != "sequence" and pd.api.types.is_numeric_dtype(mine[c]) and not pd.api.types.is_bool_dtype(mine[c])
    ]
    grouped = mine.groupby("sequence", sort=False)
    out = grouped.first()
    out[numeric] = grouped[numeric].mean()
    out["stories_a"] = grouped.size()
    out = out.reset_index()
    out = out[out["sequence"].astype(str).isin(theirs.index)].copy()  # paired_sequences names sequences as text
    out["difference"] = sign * theirs.reindex(out["sequence"].astype(str)).to_numpy(dtype=float)
    return out[np.isfinite(out["difference"].to_numpy(dtype=float))].reset_index(drop=True)


def system_slices(
    paired: pd.DataFrame,
    descriptors: Sequence[Descriptor] | None = None,
    *,
    pairs: bool = True,
    min_size: int = MIN_SLICE,
    top: int = 20,
    resamples: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """The slices (of A's stories, :func:`paired_differences`) where A loses to B most: effect =
    mean(A − B) in the slice, most negative first, with Welch's t p (slice vs rest),
    Benjamini–Hochberg over every candidate, and a bootstrap interval for the ``top`` shown."""
    d = paired["difference"].to_numpy(dtype=float)
    descriptors = list(descriptors) if descriptors is not None else story_descriptors(paired, categorical=())
    overall = float(d.mean()) if d.size else math.nan
    # the sums are taken of v (:func:`_centred`): scaled (±1e308 cannot overflow) and centred, so a
    # slice's variance is not the difference of two large sums (1e9 ± 1e-3 keeps its 1e-3); t is
    # unchanged by both, and a slice's mean is centre + 2·spread·mean(v)
    v, centre, spread = _centred(d, np.isfinite(d))
    v = np.where(np.isfinite(d), v, d)  # a NaN difference stays NaN, as before
    total = np.array([v.size, v.sum(), (v * v).sum()])
    found: list[Candidate] = []
    for levels, codes, size in _candidates(descriptors, pairs):
        n, s, ss = _grouped(codes, size, v, v * v)
        nr, sr, ssr = total[:, None] - np.vstack([n, s, ss])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mean, mean_r = s / n, sr / nr
            var = np.maximum(ss - n * mean**2, 0.0) / (n - 1)
            var_r = np.maximum(ssr - nr * mean_r**2, 0.0) / (nr - 1)
            se2 = var / n + var_r / nr
            t = (mean - mean_r) / np.sqrt(se2)
            df = se2**2 / ((var / n) ** 2 / (n - 1) + (var_r / nr) ** 2 / (nr - 1))
            effect = centre + 2 * spread * mean
            se = 2 * spread * np.sqrt(var / n)
        p = 2 * stats.t.sf(np.abs(t), df)
        for g in np.flatnonzero((n >= min_size) & (nr >= min_size) & np.isfinite(p)):
            found.append(
                (levels[g], float(n[g]), float(effect[g]), float(effect[g]), float(p[g]), (float(effect[g]), float(se[g]), False))
            )
    out = _ranked(found, overall, top, lambda members, rng: _boot_mean(d, members, resamples, rng), paired, seed)
    out.attrs["items"] = int(d.size)  # image sequences both systems wrote for
    return out


def _boot_mean(d: np.ndarray, members: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[float, float]:
    v = d[members]
    if resamples < 1 or v.size == 0:
        return math.nan, math.nan
    means = np.concatenate([v[rng.integers(0, v.size, size=(rows, v.size))].mean(axis=1) for rows in _blocks(resamples, v.size)])
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def _ranked(
    found: list[Candidate],
    overall: float,
    top: int,
    interval: Callable[[np.ndarray, np.random.Generator], tuple[float, float]],
    table: pd.DataFrame,
    seed: int,
) -> pd.DataFrame:
    """The candidates with a negative effect first, each part by ``bound`` (:func:`_bounds`, most
    negative first; then the effect, then p), BH-adjusted over all of them, the ``top`` with intervals."""
    if not found:
        return pd.DataFrame(columns=COLUMNS)
    p_bh = benjamini_hochberg(np.array([f[4] for f in found]))
    bounds = _bounds(found, overall)
    order = sorted(range(len(found)), key=lambda i: (found[i][2] >= 0, bounds[i], found[i][2], found[i][4]))[:top]
    rng = np.random.default_rng(seed)
    rows = []
    for i in order:
        conditions, n, effect, value, p, _ = found[i]
        bound = float(bounds[i])
        members = np.ones(len(table), dtype=bool)
        for c in conditions:
            members &= c.mask(table)
        low, high = interval(members, rng)
        rows.append(
            {
                "slice": " & ".join(c.label() for c in conditions),
                "size": int(n),
                "effect": effect,
                "bound": bound,
                "ci_low": low,
                "ci_high": high,
                "value": value,
                "overall": overall,
                "p": p,
                "p_bh": float(p_bh[i]),
                "conditions": conditions,
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out.attrs["candidates"] = len(found)
    return out


__all__ = [
    "BINS",
    "MIN_SLICE",
    "Condition",
    "Descriptor",
    "apply_conditions",
    "benjamini_hochberg",
    "metric_slices",
    "numeric_conditions",
    "paired_differences",
    "story_descriptors",
    "system_slices",
    "with_human",
]
