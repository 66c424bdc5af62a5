"""The statistics of agreement with humans, as the papers define them: story- and system-level
Spearman ρ, Pearson r and Kendall τ-b/τ-c with bootstrap intervals (RoViST Table 1), pairwise ranking
accuracy with ties counted wrong by agreement subset and ranking gap (Vrank Eq. 1-2, Fig. 3),
correlations inside low/high T and P bins (GROOVIST Fig. 3), and point-biserial correlations with
binary error labels (Vrank Table 5)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from vst_core.analysis.intervals import has_interval
from vst_core.analysis.meta_eval.settings import GAP_DECIMALS, METHODS, MetaSettings
from vst_core.records import direction_of

# --------------------------------------------------------------------------------------------
# Correlations


@dataclass(frozen=True)
class Correlation:
    """One coefficient with its p-value, N and bootstrap interval; ``undefined`` says why it is
    absent. ``infinite`` and ``unlabelled``: the pairs left out of N for an infinite value, or for
    no group label (a pair with a NaN is a missing value, left out and not counted)."""

    method: str
    value: float | None
    p: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    undefined: str | None = None
    infinite: int = 0
    unlabelled: int = 0


def _coefficient(method: str, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if method == "spearman":
        res = stats.spearmanr(x, y)
    elif method == "pearson":
        res = stats.pearsonr(x, y)
    elif method == "kendall_b":
        res = stats.kendalltau(x, y, variant="b")
    else:
        res = stats.kendalltau(x, y, variant="c")
    return float(res.statistic), float(res.pvalue)


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (x * y).sum(axis=1) / np.where(denom > 0, denom, 1), np.nan)


def _kendall_matrices(x: np.ndarray, y: np.ndarray, variant: str) -> tuple[np.ndarray, ...]:
    """S = sign(xa - xb)·sign(ya - yb), and for τ-b the tie indicators E_x = [xa == xb], E_y."""
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    if variant == "b":
        return sx * sy, (sx == 0).astype(float), (sy == 0).astype(float)
    return (sx * sy,)


def _kendall_resampled(
    matrices: tuple[np.ndarray, ...], x: np.ndarray, y: np.ndarray, counts: np.ndarray, variant: str
) -> np.ndarray:
    """Kendall τ-b or τ-c of every resample given as a row of ``counts`` (how often each original
    pair was drawn). With ``matrices`` from :func:`_kendall_matrices`, a resample with counts c has
    P - Q = cᵀSc/2 and x-tied pairs (cᵀE_x c - Σc)/2; the same formulas as scipy's."""
    con = 0.5 * np.einsum("ra,ra->r", counts @ matrices[0], counts)
    m = counts.sum(axis=1)
    if variant == "b":
        pairs = m * (m - 1) / 2
        tx = 0.5 * (np.einsum("ra,ra->r", counts @ matrices[1], counts) - m)
        ty = 0.5 * (np.einsum("ra,ra->r", counts @ matrices[2], counts) - m)
        denom = np.sqrt((pairs - tx) * (pairs - ty))
    else:
        drawn = counts > 0
        kx = np.array([np.unique(x[row]).size for row in drawn])
        ky = np.array([np.unique(y[row]).size for row in drawn])
        classes = np.minimum(kx, ky).astype(float)
        denom = np.where(classes > 1, m**2 * (classes - 1) / np.where(classes > 1, classes, 1) / 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, con / np.where(denom > 0, denom, 1), np.nan)


def bootstrap_samples(method: str, x: np.ndarray, y: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The coefficient on ``resamples`` resamples of the (x, y) pairs drawn with replacement
    (``numpy.random.default_rng(seed)``); resamples where a side is constant give NaN."""
    rng = np.random.default_rng(seed)
    n = len(x)
    idx = rng.integers(0, n, size=(resamples, n))
    if method == "pearson":
        return _rowwise_pearson(x[idx], y[idx])
    if method == "spearman":
        return _rowwise_pearson(stats.rankdata(x[idx], axis=1), stats.rankdata(y[idx], axis=1))
    out = np.empty(resamples)
    if n > 1000:  # the n x n sign matrices cost more than scipy's O(n log n) per resample
        for k in range(resamples):
            xs, ys = x[idx[k]], y[idx[k]]
            out[k] = _coefficient(method, xs, ys)[0] if np.ptp(xs) > 0 and np.ptp(ys) > 0 else np.nan
        return out
    variant = method[-1]
    matrices = _kendall_matrices(x, y, variant)  # once, shared by every block
    step = max(1, int(4e7 // max(n * n, 1)))  # bound the (resamples x n) @ (n x n) work per block
    for start in range(0, resamples, step):
        block = idx[start : start + step]
        counts = np.zeros((len(block), n))
        np.add.at(counts, (np.repeat(np.arange(len(block)), n), block.ravel()), 1.0)
        out[start : start + step] = _kendall_resampled(matrices, x, y, counts, variant)
    return out


#: Rows of replicate counts held at once by a grouped bootstrap (resamples × pairs per block).
_COUNTS_BLOCK = 1 << 22


def group_counts(groups: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n) replicate counts of n items when their G groups are drawn with replacement
    (G draws per resample): item i counts as often as its group was drawn.

    >>> c = group_counts(np.array([0, 0, 1]), 4, np.random.default_rng(0))
    >>> c.shape, bool((c[:, 0] == c[:, 1]).all()), set(c.sum(axis=1) % 1) == {0.0}
    ((4, 3), True, True)
    """
    _, codes = np.unique(groups, return_inverse=True)
    size = int(codes.max()) + 1 if codes.size else 0
    drawn = rng.integers(0, max(size, 1), size=(resamples, size))
    per_group = np.zeros((resamples, size))
    np.add.at(per_group, (np.repeat(np.arange(resamples), size), drawn.ravel()), 1.0)
    return per_group[:, codes]


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r of every row's weighted pairs (x, y: (n,) or (R, n); w: (R, n) replicate counts):
    the coefficient of the data with each pair repeated w times."""
    total = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (w * x).sum(axis=1, keepdims=True) / total
        my = (w * y).sum(axis=1, keepdims=True) / total
        dx, dy = x - mx, y - my
        num = (w * dx * dy).sum(axis=1)
        denom = np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))
        return np.where(denom > 1e-12 * np.maximum(total[:, 0], 1), num / np.where(denom > 0, denom, 1), np.nan)


def _weighted_midranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(R, n): the midrank of each x_i in row r's data, where pair i is repeated w[r, i] times
    (scipy's ``rankdata`` of the repeated data, average method)."""
    values, inverse = np.unique(x, return_inverse=True)
    per_value = np.zeros((w.shape[0], values.size))
    np.add.at(per_value.T, inverse, w.T)
    below = np.cumsum(per_value, axis=1) - per_value
    return (below + (per_value + 1) / 2)[:, inverse]


def counts_samples(method: str, x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The coefficient of every resample given as replicate counts (R, n) of the pairs; NaN where a
    side is constant. Equal to the coefficient of the pairs repeated as counted."""
    if method == "pearson":
        return _weighted_pearson(x, y, counts)
    if method == "spearman":
        return _weighted_pearson(_weighted_midranks(x, counts), _weighted_midranks(y, counts), counts)
    variant = method[-1]
    if x.size > 1000:  # the n x n sign matrices cost more than scipy's O(n log n) per resample
        out = np.empty(len(counts))
        for k, row in enumerate(counts):
            idx = np.repeat(np.arange(x.size), row.astype(int))
            xs, ys = x[idx], y[idx]
            out[k] = _coefficient(method, xs, ys)[0] if xs.size > 1 and np.ptp(xs) > 0 and np.ptp(ys) > 0 else np.nan
        return out
    matrices = _kendall_matrices(x, y, variant)
    return _kendall_resampled(matrices, x, y, counts, variant)


def grouped_samples(method: str, x: np.ndarray, y: np.ndarray, groups: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The coefficient on ``resamples`` resamples that draw the groups of the pairs (image
    sequences) with replacement, every pair of a drawn group with it (the stories of one sequence
    are not independent). ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    step = max(1, _COUNTS_BLOCK // max(x.size, 1))
    parts = [
        counts_samples(method, x, y, group_counts(groups, min(step, resamples - start), rng))
        for start in range(0, resamples, step)
    ]
    return np.concatenate(parts) if parts else np.empty(0)


def correlate(
    metric: Sequence[float] | np.ndarray | pd.Series,
    human: Sequence[float] | np.ndarray | pd.Series,
    methods: Sequence[str] = tuple(METHODS),
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    groups: Sequence[Any] | np.ndarray | pd.Series | None = None,
) -> dict[str, Correlation]:
    """Spearman ρ, Pearson r, Kendall τ-b and τ-c of paired values (pairs with a NaN are left out),
    each with scipy's p-value, N and a percentile bootstrap interval (none below
    :data:`~vst_core.analysis.intervals.MIN_INTERVAL_N` resampled units: the one interval rule). Fewer than 3 pairs or a
    constant side make a coefficient undefined, with the reason; nothing is filled with 0.

    ``groups`` (one label per pair, e.g. its image sequence): the bootstrap draws groups, not pairs
    (:func:`grouped_samples`); without it, pairs are drawn (:func:`bootstrap_samples`).

    Left out of N and counted in each result: a pair with an infinite value (``infinite``: no
    coefficient can rank or average it) and, with ``groups``, a pair whose label is missing (None,
    NaN or empty text: ``unlabelled``; it belongs to no group the bootstrap could draw).

    >>> r = correlate([1, 2, 3, 4, float("inf")], [1, 3, 2, 4, 5], ["pearson"], resamples=0)["pearson"]
    >>> round(r.value, 2), r.n, r.infinite
    (0.8, 4, 1)
    """
    x = np.asarray(metric, dtype=float)
    y = np.asarray(human, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"metric and human values differ in length ({x.size} vs {y.size})")
    if groups is not None and len(groups) != x.size:
        raise ValueError(f"groups must give one label per pair ({len(groups)} labels for {x.size} pairs)")
    missing = np.isnan(x) | np.isnan(y)
    infinite = ~missing & (np.isinf(x) | np.isinf(y))
    given = None if groups is None else list(groups)
    unlabelled = (
        np.zeros(x.size, dtype=bool)
        if given is None
        else np.array([_no_label(g) for g in given], dtype=bool) & ~missing & ~infinite
    )
    keep = ~(missing | infinite | unlabelled)
    counts = {"infinite": int(infinite.sum()), "unlabelled": int(unlabelled.sum())}
    x, y = x[keep], y[keep]
    labels = (
        None
        if given is None
        else np.asarray(pd.Series([g for g, k in zip(given, keep, strict=True) if k], dtype=object).astype(str))
    )
    units = int(np.unique(labels).size) if labels is not None else int(x.size)
    n = int(x.size)
    reason = None
    if n < 3:
        reason = f"fewer than 3 stories with both values (N={n})"
    elif np.ptp(x) == 0:
        reason = f"the metric is constant ({x[0]:g}) on these stories"
    elif np.ptp(y) == 0:
        reason = f"the human score is constant ({y[0]:g}) on these stories"
    out: dict[str, Correlation] = {}
    for method in methods:
        if reason:
            out[method] = Correlation(method, None, None, n, undefined=reason, **counts)
            continue
        value, p = _coefficient(method, x, y)
        low = high = None
        if resamples > 0 and has_interval(units):
            boot = (
                bootstrap_samples(method, x, y, resamples, seed)
                if labels is None
                else grouped_samples(method, x, y, labels, resamples, seed)
            )
            low, high = _percentile_interval(boot, resamples, confidence)
        out[method] = Correlation(
            method,
            value,
            None if math.isnan(p) else p,
            n,
            low,
            high,
            None
            if low is not None or resamples == 0 or not has_interval(units)
            else "bootstrap interval undefined: most resamples were constant",
            **counts,
        )
    return out


def _no_label(label: object) -> bool:
    """Whether a group label is missing: None, NaN (or pandas' NA) or empty text.

    >>> [_no_label(v) for v in (None, float("nan"), " ", "q1", 0)]
    [True, True, True, False, False]
    """
    if isinstance(label, str):
        return not label.strip()
    try:
        return bool(pd.isna(label))
    except (TypeError, ValueError):  # a list or an array as a label: not missing
        return False


def _rowwise_kendall(x: np.ndarray, y: np.ndarray, variant: str) -> np.ndarray:
    """Kendall τ-b or τ-c of every row of (R, S) values (S small: systems), scipy's formulas."""
    sx = np.sign(x[:, :, None] - x[:, None, :])
    sy = np.sign(y[:, :, None] - y[:, None, :])
    con = (sx * sy).sum(axis=(1, 2)) / 2
    size = x.shape[1]
    if variant == "b":
        denom = np.sqrt((np.abs(sx).sum(axis=(1, 2)) / 2) * (np.abs(sy).sum(axis=(1, 2)) / 2))
    else:
        kx = 1 + (np.diff(np.sort(x, axis=1), axis=1) != 0).sum(axis=1)
        ky = 1 + (np.diff(np.sort(y, axis=1), axis=1) != 0).sum(axis=1)
        classes = np.minimum(kx, ky).astype(float)
        denom = np.where(classes > 1, size**2 * (classes - 1) / np.where(classes > 1, classes, 1) / 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, con / np.where(denom > 0, denom, 1), np.nan)


def system_level_samples(
    data: pd.DataFrame, metric: str, aspect: str, methods: Sequence[str], resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """System-level coefficients on ``resamples`` resamples of the image sequences (``sequence_id``):
    each resample draws the sequences with replacement, each system's mean metric and mean human
    score are taken over its stories of the drawn sequences (as often as drawn), and the
    coefficient is computed over those system means. ``numpy.random.default_rng(seed)``."""
    part = data[["system", "sequence_id", metric, aspect]].dropna(subset=["system"])
    # the systems the point estimate has: one with no value of either side would be NaN in every resample
    kept = part.groupby("system")[[metric, aspect]].mean().dropna().index
    part = part[part["system"].isin(kept)]
    systems, system_codes = np.unique(part["system"].astype(str), return_inverse=True)
    x, y = part[metric].to_numpy(float), part[aspect].to_numpy(float)
    has_x, has_y = ~np.isnan(x), ~np.isnan(y)
    x0, y0 = np.where(has_x, x, 0.0), np.where(has_y, y, 0.0)
    onehot = np.zeros((x.size, systems.size))
    onehot[np.arange(x.size), system_codes] = 1.0
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {m: [] for m in methods}
    step = max(1, _COUNTS_BLOCK // max(x.size, 1))
    for start in range(0, resamples, step):
        counts = group_counts(part["sequence_id"].astype(str).to_numpy(), min(step, resamples - start), rng)
        with np.errstate(invalid="ignore", divide="ignore"):
            mx = ((counts * x0) @ onehot) / ((counts * has_x) @ onehot)
            my = ((counts * y0) @ onehot) / ((counts * has_y) @ onehot)
        complete = ~(np.isnan(mx).any(axis=1) | np.isnan(my).any(axis=1))  # a system absent from a resample: undefined
        for method in methods:
            if method == "pearson":
                values = _rowwise_pearson(mx, my)
            elif method == "spearman":
                values = _rowwise_pearson(stats.rankdata(mx, axis=1), stats.rankdata(my, axis=1))
            else:
                values = _rowwise_kendall(mx, my, method[-1])
            out[method].append(np.where(complete, values, np.nan))
    return {m: np.concatenate(v) if v else np.empty(0) for m, v in out.items()}


def _percentile_interval(boot: np.ndarray, resamples: int, confidence: float) -> tuple[float | None, float | None]:
    """The percentile interval of the defined resamples; none when fewer than half are defined."""
    boot = boot[~np.isnan(boot)]
    if boot.size < resamples / 2 or not boot.size:
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(boot, [tail, 100 - tail]))
    return low, high


def system_means(data: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Mean of each column per system (stories without a value are left out of that mean)."""
    if "system" not in data or data["system"].isna().all():
        return pd.DataFrame(columns=list(columns))
    return data.groupby("system", sort=True)[list(columns)].mean()


def correlation_table(
    data: pd.DataFrame,
    metrics: Sequence[str],
    aspects: Sequence[str],
    settings: MetaSettings,
    level: Literal["story", "system"] = "story",
    tick: Callable[[], object] | None = None,
) -> pd.DataFrame:
    """Every metric × aspect × method (RoViST Table 1), story level or over system means;
    ``tick`` is called after each metric × aspect cell (for a progress bar).

    Intervals resample what is independent (``settings.resample_unit``): with ``"sequence"`` (the
    default, where ``data`` has ``sequence_id``) the image sequences, every story of a drawn
    sequence with it, at both levels (system level: the system means are recomputed on each
    resample), as the leaderboard does; with ``"item"`` the stories or the systems themselves.
    Column ``resampled`` names what was drawn."""
    by_sequence = settings.resample_unit == "sequence" and "sequence_id" in data
    frame = system_means(data, [*metrics, *aspects]) if level == "system" else data
    unit = "sequences" if by_sequence else ("systems" if level == "system" else "stories")
    rows = []
    for metric in metrics:
        for aspect in aspects:
            if metric not in frame or aspect not in frame:
                continue
            if level == "system" and by_sequence:
                results = _system_level(data, frame, metric, aspect, settings)
            else:
                results = correlate(
                    frame[metric],
                    frame[aspect],
                    settings.methods,
                    resamples=settings.resamples,
                    seed=settings.seed,
                    confidence=settings.confidence,
                    groups=frame["sequence_id"] if by_sequence else None,
                )
            for r in results.values():
                rows.append({"level": level, "metric": metric, "aspect": aspect, **asdict(r), "resampled": unit})
            if tick is not None:
                tick()
    columns = ["level", "metric", "aspect", "method", "value", "p", "n", "ci_low", "ci_high", "undefined", "resampled"]
    return pd.DataFrame(rows, columns=columns)


def resampled_unit(table: pd.DataFrame) -> str:
    """What the intervals of a correlation table resampled, in words (``image sequences``,
    ``stories``, ``systems``), from its ``resampled`` column; ``stories`` for an older table.

    >>> resampled_unit(pd.DataFrame({"resampled": ["sequences"]}))
    'image sequences'
    """
    found = [str(v) for v in dict.fromkeys(table["resampled"])] if "resampled" in table and len(table) else ["stories"]
    return " and ".join("image sequences" if v == "sequences" else v for v in found)


def _system_level(
    data: pd.DataFrame, means: pd.DataFrame, metric: str, aspect: str, settings: MetaSettings
) -> dict[str, Correlation]:
    """System-level coefficients over ``means`` with intervals from :func:`system_level_samples`
    (none below the minimum N of sequences, or where the coefficient itself is undefined)."""
    from dataclasses import replace

    results = correlate(means[metric], means[aspect], settings.methods, resamples=0)
    both = data[data[metric].notna() & data[aspect].notna()]
    sequences = int(both["sequence_id"].nunique())
    defined = [m for m, r in results.items() if r.value is not None]
    if settings.resamples == 0 or not defined:
        return results
    if not has_interval(sequences):
        return results
    boots = system_level_samples(data, metric, aspect, defined, settings.resamples, settings.seed)
    for method in defined:
        low, high = _percentile_interval(boots[method], settings.resamples, settings.confidence)
        why = None if low is not None else "bootstrap interval undefined: most resamples lacked a system or were constant"
        results[method] = replace(results[method], ci_low=low, ci_high=high, undefined=why)
    return results


def best_per_aspect(table: pd.DataFrame, method: str, tolerance: float = 1e-9) -> dict[str, set[str]]:
    """The metrics with the highest coefficient per aspect, oriented by each metric's direction (a
    lower-is-better metric agrees with people by a negative coefficient; all of them when tied;
    undefined never win); an aspect with fewer than two defined coefficients has no best (nothing to compare)."""
    part = table[(table["method"] == method) & table["value"].notna()]
    best: dict[str, set[str]] = {}
    for aspect, rows in part.groupby("aspect", sort=False):
        if len(rows) < 2:
            continue
        oriented = rows["value"] * rows["metric"].map(lambda m: -1.0 if direction_of(str(m)) == "lower" else 1.0)
        top = oriented.max()
        best[str(aspect)] = set(rows.loc[oriented >= top - tolerance, "metric"])
    return best


# --------------------------------------------------------------------------------------------
# Pairwise ranking accuracy (Vrank Eq. 1-2)


def pairs_from_ratings(
    human: pd.Series, sequences: pd.Series, ratings: pd.DataFrame | None = None, aspect: str | None = None
) -> pd.DataFrame:
    """Every two stories of the same image sequence, the better one being the one humans rated
    higher; gap = |difference of the aggregated ratings| rounded to :data:`GAP_DECIMALS`. Equal
    ratings give no pair. With per-rater ``ratings``: ``raters`` = raters who judged both stories,
    ``agreement`` = how many of them order the pair as the aggregate does (NaN with no common
    rater). ``aspect`` None uses every aspect's mean per rater."""
    rows = []
    per_rater = None
    if ratings is not None and ratings["rater"].notna().any():
        part = ratings if aspect is None else ratings[ratings["aspect"] == aspect]
        per_rater = part.pivot_table(index="story_id", columns="rater", values="value", aggfunc="mean")
    frame = pd.DataFrame({"h": human, "seq": sequences}).dropna()
    for seq, group in frame.groupby("seq", sort=False):
        ids = list(group.index)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                ha, hb = float(group.at[a, "h"]), float(group.at[b, "h"])
                gap = round(abs(ha - hb), GAP_DECIMALS)
                if gap == 0 or not np.isfinite(gap):
                    continue
                better, worse = (a, b) if ha > hb else (b, a)
                raters, agreement = _common_raters(per_rater, better, worse)
                rows.append(
                    {"sequence_id": seq, "better": better, "worse": worse, "gap": gap, "raters": raters, "agreement": agreement}
                )
    return pd.DataFrame(rows, columns=["sequence_id", "better", "worse", "gap", "raters", "agreement"])


def _common_raters(per_rater: pd.DataFrame | None, better: str, worse: str) -> tuple[float, float]:
    """(raters who judged both stories, how many of them rated ``better`` strictly higher); NaN without per-rater ratings."""
    if per_rater is None or better not in per_rater.index or worse not in per_rater.index:
        return np.nan, np.nan
    x, y = per_rater.loc[better], per_rater.loc[worse]
    both = x.notna() & y.notna()
    if not both.any():
        return 0.0, np.nan
    return float(both.sum()), float((x[both] > y[both]).sum())


def margins_of(margins: Mapping[tuple[str, str], float], first: Iterable[str], second: Iterable[str]) -> np.ndarray:
    """A pairwise metric's verdict m(a, b) on each pair (−m(b, a) when only that was asked; NaN
    when neither was): > 0 when it prefers the first story.

    >>> margins_of({("a", "b"): 0.3}, ["a", "b", "a"], ["b", "a", "c"]).tolist()
    [0.3, -0.3, nan]
    """
    return np.array(
        [margins.get((x, y), -margins[(y, x)] if (y, x) in margins else np.nan) for x, y in zip(first, second, strict=True)],
        float,
    )


def pairwise_accuracy(
    pairs: pd.DataFrame, scores: Mapping[str, float] | pd.Series, margins: Mapping[tuple[str, str], float] | None = None
) -> dict[str, Any]:
    """Vrank Eq. 1-2: a pair is correct only if the metric scores the better story strictly higher;
    a tie counts as wrong. Pairs with a story the metric did not score are left out and counted.

    ``margins`` are a pairwise metric's own verdicts, m(a, b) > 0 when it prefers a (Vrank's
    margins): a pair is then judged by m(better, worse) (or −m(worse, better)), not by the scores."""
    if margins is not None:
        m = pd.Series(margins_of(margins, pairs["better"], pairs["worse"]), index=pairs.index, dtype=float)
        known = m.notna()
        a, b = m, pd.Series(0.0, index=pairs.index)
    else:
        s = pd.Series(scores, dtype=float)
        a = pairs["better"].map(s)
        b = pairs["worse"].map(s)
        known = a.notna() & b.notna()
    n = int(known.sum())
    correct = int((a[known] > b[known]).sum())
    ties = int((a[known] == b[known]).sum())
    return {
        "n": n,
        "correct": correct,
        "ties": ties,
        "missing": int((~known).sum()),
        "accuracy": correct / n if n else None,
        "undefined": None if n else ("no pair has both stories scored" if len(pairs) else "no pairs in this subset"),
    }


def tie_calibrated_accuracy(delta: np.ndarray, human: np.ndarray) -> dict[str, Any]:
    """Pairwise accuracy with ties and tie calibration (Deutsch, Foster and Freitag 2023, "Ties
    Matter", as WMT's ``mt-metrics-eval`` computes ``acc_eq``): over pairs with the metric's
    difference ``delta`` (oriented: > 0 prefers the first story) and the people's verdict ``human``
    (+1 first better, −1 second better, 0 a tie), the metric ties a pair when |delta| ≤ ε, and a pair
    is right when both tie or both order it the same way. ε is chosen to maximise the accuracy
    (the smallest such ε), from 0 and every |delta|; without ties among the people, ε = 0 gives
    the Vrank rule except that a metric's exact tie is right only against a people's tie.

    >>> r = tie_calibrated_accuracy(np.array([0.5, 0.01, -0.2, 0.0]), np.array([1, 0, 1, 0]))
    >>> r["accuracy"], r["epsilon"], r["accuracy_at_0"]
    (0.75, 0.01, 0.5)
    """
    delta, human = np.asarray(delta, float), np.sign(np.asarray(human, float))
    keep = np.isfinite(delta) & np.isfinite(human)
    delta, human = delta[keep], human[keep]
    n = int(delta.size)
    out: dict[str, Any] = {
        "n": n,
        "human_ties": int((human == 0).sum()),
        "accuracy": None,
        "epsilon": None,
        "accuracy_at_0": None,
    }
    if not n:
        return out
    size = np.abs(delta)
    order = np.argsort(size, kind="stable")
    size, tie_ok = size[order], (human == 0)[order]
    ordered_ok = ((np.sign(delta) == human) & (human != 0))[order]
    cum_tie, cum_ordered = np.cumsum(tie_ok), np.cumsum(ordered_ok)
    last = np.r_[np.flatnonzero(np.diff(size) > 0), n - 1]  # the last pair of each distinct |delta|
    correct = cum_tie[last] + (cum_ordered[-1] - cum_ordered[last])
    candidates = size[last]
    if candidates[0] > 0:  # ε = 0 ties nothing when no difference is exactly 0
        candidates, correct = np.r_[0.0, candidates], np.r_[cum_ordered[-1], correct]
    best = int(np.argmax(correct))  # the first maximum: the smallest ε
    out.update(accuracy=float(correct[best]) / n, epsilon=float(candidates[best]), accuracy_at_0=float(correct[0]) / n)
    return out


def tied_pairs(human: pd.Series, sequences: pd.Series) -> pd.DataFrame:
    """Every two stories of the same image sequence that people rated equally (aggregated ratings
    equal to :data:`GAP_DECIMALS`): the pairs :func:`pairs_from_ratings` leaves out, as
    ``sequence_id, first, second``."""
    frame = pd.DataFrame({"h": human, "seq": sequences}).dropna()
    rows = []
    for seq, group in frame.groupby("seq", sort=False):
        ids = list(group.index)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                if round(abs(float(group.at[a, "h"]) - float(group.at[b, "h"])), GAP_DECIMALS) == 0:
                    rows.append({"sequence_id": seq, "first": a, "second": b})
    return pd.DataFrame(rows, columns=["sequence_id", "first", "second"])


def tie_calibration_table(
    pairs: pd.DataFrame,
    ties: pd.DataFrame,
    data: pd.DataFrame,
    metrics: Sequence[str],
    margins: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
) -> pd.DataFrame:
    """Per metric, :func:`tie_calibrated_accuracy` over the ranked ``pairs`` (better, worse) and
    the people's ``ties`` (first, second), beside the Vrank rule's accuracy on the ranked pairs."""
    columns = ["metric", "n", "human_ties", "accuracy", "epsilon", "accuracy_at_0", "vrank_accuracy"]
    rows = []
    for metric in metrics:
        if metric not in data:
            continue
        own = (margins or {}).get(metric)
        scores = _oriented(data[metric], metric)

        def delta(
            a: pd.Series, b: pd.Series, own: Mapping[tuple[str, str], float] | None = own, scores: pd.Series = scores
        ) -> np.ndarray:
            if own is not None:
                return margins_of(own, a, b)
            found: np.ndarray = (a.map(scores) - b.map(scores)).to_numpy(float)
            return found

        ranked = delta(pairs["better"], pairs["worse"]) if len(pairs) else np.empty(0)
        tied = delta(ties["first"], ties["second"]) if len(ties) else np.empty(0)
        result = tie_calibrated_accuracy(np.r_[ranked, tied], np.r_[np.ones(ranked.size), np.zeros(tied.size)])
        vrank = pairwise_accuracy(pairs, scores, own)["accuracy"] if len(pairs) else None
        rows.append({"metric": metric, **result, "vrank_accuracy": vrank})
    return pd.DataFrame(rows, columns=columns)


def gap_edges(gaps: pd.Series, bins: int = 4) -> list[float]:
    """Edges splitting the ranking gaps into ``bins`` groups of about equal size (quantiles, rounded
    as the gaps are); the first bin is closed on the left so it holds the smallest gap."""
    values = gaps.dropna().to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return []
    edges = np.unique(np.round(np.quantile(values, np.linspace(0, 1, bins + 1)), GAP_DECIMALS))
    if edges.size == 1:
        return [float(edges[0]), float(edges[0])]
    return [float(e) for e in edges]


def gap_bins(gaps: pd.Series, edges: Sequence[float]) -> list[tuple[str, pd.Series, float, float]]:
    """(label, member mask, lo, hi) per bin: ``[e0, e1]`` then ``(e_k, e_k+1]``, labelled by the true edges."""
    out = []
    for k, (lo, hi) in enumerate(zip(edges, edges[1:], strict=False)):
        first = k == 0
        mask = ((gaps >= lo) if first else (gaps > lo)) & (gaps <= hi)
        out.append((f"gap {'[' if first else '('}{lo:g}, {hi:g}]", mask, float(lo), float(hi)))
    return out


def pairwise_table(
    pairs: pd.DataFrame,
    data: pd.DataFrame,
    metrics: Sequence[str],
    edges: Sequence[float] | None = None,
    margins: Mapping[str, Mapping[tuple[str, str], float]] | None = None,
) -> pd.DataFrame:
    """Accuracy of every metric over all pairs, per agreement subset and per ranking-gap bin
    (Vrank Fig. 3); bins are right-closed intervals ``(lo, hi]`` over the given or quartile edges.
    A metric with ``margins`` (a pairwise metric's verdict per pair, see :func:`pairwise_accuracy`)
    is judged by them."""
    columns = ["metric", "group", "subset", "lo", "hi", "n", "correct", "ties", "missing", "accuracy", "undefined"]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    edges = list(edges) if edges else gap_edges(pairs["gap"])
    groups: list[tuple[str, str, pd.DataFrame, float | None, float | None]] = [("all", "all pairs", pairs, None, None)]
    if pairs["agreement"].notna().any():
        for k, part in pairs.groupby("agreement", sort=True):
            groups.append(("agreement", f"agreement = {k:g}", part, float(k), float(k)))
    if "raters" in pairs and pairs["raters"].eq(0).any():
        groups.append(("agreement", "no common rater", pairs[pairs["raters"].eq(0)], None, None))
    inside = pd.Series(False, index=pairs.index)
    for label, mask, lower, upper in gap_bins(pairs["gap"], edges):
        groups.append(("gap", label, pairs[mask], lower, upper))
        inside |= mask
    outside = int((~inside).sum())
    rows = []
    for metric in metrics:
        if metric not in data:
            continue
        for group, subset, part, lo, hi in groups:
            rows.append(
                {
                    "metric": metric,
                    "group": group,
                    "subset": subset,
                    "lo": lo,
                    "hi": hi,
                    **pairwise_accuracy(part, _oriented(data[metric], metric), (margins or {}).get(metric)),
                }
            )
    table = pd.DataFrame(rows, columns=columns)
    table.attrs["outside_bins"] = outside
    return table


# --------------------------------------------------------------------------------------------
# GROOVIST Fig. 3 bins and Vrank Table 5 error correlations


def mode_split(values: pd.Series, decimals: int = 3) -> float | None:
    """The most frequent value after rounding to ``decimals`` (the smallest if several are)."""
    v = values.dropna().round(decimals)
    if v.empty:
        return None
    counts = v.value_counts()
    return float(counts[counts == counts.max()].index.min())


def binned_correlations(
    data: pd.DataFrame,
    metrics: Sequence[str],
    aspect: str,
    covariate: str,
    split: float,
    method: str = "kendall_c",
    *,
    high_inclusive: bool = True,
) -> pd.DataFrame:
    """Correlation of every metric with ``aspect`` inside the low and the high bin of a covariate.

    GROOVIST Fig. 3: high temporal misalignment is ``T >= 1.0`` (``high_inclusive``); for the
    noun-phrase proportion the high bin is ``P > split`` (the mode by default)."""
    columns = ["covariate", "bin", "metric", "aspect", "method", "value", "p", "n", "undefined"]
    if covariate not in data or data[covariate].isna().all():
        return pd.DataFrame(columns=columns)
    cov = data[covariate]
    high = cov >= split if high_inclusive else cov > split
    op_hi, op_lo = ("≥", "<") if high_inclusive else (">", "≤")
    rows = []
    for name, mask in (
        (f"low {covariate} ({op_lo} {split:.4g})", ~high & cov.notna()),
        (f"high {covariate} ({op_hi} {split:.4g})", high),
    ):
        part = data[mask]
        for metric in metrics:
            if metric not in data or aspect not in data:
                continue
            r = correlate(part[metric], part[aspect], [method], resamples=0)[method]
            rows.append(
                {
                    "covariate": covariate,
                    "bin": name,
                    "metric": metric,
                    "aspect": aspect,
                    "method": method,
                    "value": r.value,
                    "p": r.p,
                    "n": r.n,
                    "undefined": r.undefined,
                }
            )
    return pd.DataFrame(rows, columns=columns)


def error_table(data: pd.DataFrame, columns: Sequence[str], errors: Sequence[str]) -> pd.DataFrame:
    """Point-biserial correlation of each metric (or human aspect) with each binary error label
    (Vrank Table 5); a negative value means stories with the error score lower."""
    rows = []
    for column in columns:
        for error in errors:
            if column not in data or error not in data:
                continue
            both = data[[column, error]].dropna()
            n = len(both)
            reason = None
            if n < 3:
                reason = f"fewer than 3 stories with both values (N={n})"
            elif both[error].nunique() < 2:
                reason = f"every story has {error} = {both[error].iloc[0]:g}"
            elif both[column].nunique() < 2:
                reason = f"{column} is constant on these stories"
            value = p = None
            if reason is None:
                res = stats.pointbiserialr(both[error].to_numpy(), both[column].to_numpy())
                value, p = float(res.statistic), float(res.pvalue)
            rows.append({"column": column, "error": error, "r_pb": value, "p": p, "n": n, "undefined": reason})
    return pd.DataFrame(rows, columns=["column", "error", "r_pb", "p", "n", "undefined"])


def _oriented(scores: pd.Series, metric: str) -> pd.Series:
    """``scores`` with higher = better: negated for a lower-is-better metric (its direction)."""
    return -scores if direction_of(metric) == "lower" else scores
