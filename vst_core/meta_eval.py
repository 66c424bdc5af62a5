"""Agreement of automatic metrics with human judgements: pure functions over pandas/numpy.

Readers turn a judgements CSV (long, wide or pairwise) into tidy frames and report every row they
could not use; the statistics follow the papers: story- and system-level Spearman ρ, Pearson r and
Kendall τ-b/τ-c with bootstrap intervals (RoViST Table 1), pairwise ranking accuracy with ties
counted wrong, by agreement subset and ranking gap (Vrank Eq. 1-2, Fig. 3), correlations inside
low/high temporal-misalignment and noun-phrase-proportion bins (GROOVIST Fig. 3) and the
point-biserial correlation of each metric with binary error labels (Vrank Table 5).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from vst_core.metrics.baselines import BASELINES, baseline_scores

Method = Literal["spearman", "pearson", "kendall_b", "kendall_c"]
METHODS: dict[str, str] = {
    "spearman": "Spearman ρ",
    "pearson": "Pearson r",
    "kendall_b": "Kendall τ-b",
    "kendall_c": "Kendall τ-c",
}

#: Metric column -> (metric, field) of a score record; quality metrics, higher = better story.
METRIC_FIELDS: dict[str, tuple[str, str]] = {
    "GROOVIST": ("grounding", "score"),
    "CLIPScore": ("clipscore", "score"),
    "RoViST-VG": ("rovist_vg", "score"),
    "RoViST-C": ("coherence", "score"),
    "NR": ("redundancy", "score"),
}
METRIC_COLUMNS: tuple[str, ...] = tuple(METRIC_FIELDS)
#: Story descriptors used for the GROOVIST Fig. 3 bins, not metrics.
COVARIATE_FIELDS: dict[str, tuple[str, str]] = {
    "T": ("grounding", "temporal_misalignment"),
    "P": ("grounding", "np_proportion"),
}
COVARIATES: tuple[str, ...] = tuple(COVARIATE_FIELDS)

#: The VHED error taxonomy (Vrank Table 5): canonical name -> accepted column/aspect names.
ERROR_TAGS: dict[str, tuple[str, ...]] = {
    "grammar": ("gram", "grammar", "grammatical error", "grammar error"),
    "repetition": ("rep", "repetition", "repetitive"),
    "description in isolation": ("desc", "description", "description in isolation", "isolation"),
    "absurdity": ("abs", "absurd", "absurdity"),
    "event mismatch": ("event", "event mismatch"),
    "object mismatch": ("obj", "object", "object mismatch"),
}
_ERROR_ALIASES = {alias: tag for tag, aliases in ERROR_TAGS.items() for alias in aliases}
_ID_COLUMNS = {"story_id", "rater", "system", "sequence_id"}


class JudgementsError(ValueError):
    """A judgements file that cannot be read at all (wrong layout, no usable rows)."""


# --------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class MetaSettings:
    """Everything that can change a meta-evaluation number; hashed into its signature."""

    aggregate: Literal["mean", "median"] = "mean"
    methods: tuple[str, ...] = ("spearman", "pearson", "kendall_b", "kendall_c")
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    gap_edges: tuple[float, ...] | None = None  # None: quartiles of the observed gaps
    t_split: float = 1.0
    p_split: float | None = None  # None: the mode of P
    bin_method: str = "kendall_c"
    baselines: bool = True
    pair_aspect: str | None = None  # pairs from ratings: None = "overall" if judged, else the last aspect

    def __post_init__(self) -> None:
        if self.aggregate not in ("mean", "median"):
            raise ValueError(f"aggregate must be mean or median, not {self.aggregate!r}")
        unknown = [m for m in (*self.methods, self.bin_method) if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"unknown correlation method(s) {unknown}; choose from {', '.join(METHODS)}")
        if self.resamples < 0:
            raise ValueError("resamples must be >= 0 (0 turns bootstrap intervals off)")
        if not 0 < self.confidence < 1:
            raise ValueError("confidence must be between 0 and 1")
        if self.gap_edges is not None and (len(self.gap_edges) < 2 or list(self.gap_edges) != sorted(set(self.gap_edges))):
            raise ValueError("gap edges must be at least two increasing numbers")

    def signature(self, scores_ids: Iterable[str] = ()) -> dict[str, Any]:
        """These settings plus the signature ids of the scores they were applied to, hashed to an id."""
        payload = {"meta_settings": asdict(self), "scores_signatures": sorted(set(scores_ids))}
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]
        return {"id": digest, **payload}

    def describe(self, scores_ids: Iterable[str] = ()) -> str:
        ids = sorted(set(scores_ids))
        sig = self.signature(ids)
        return (
            f"meta-eval sig {sig['id']} · scores sig {'+'.join(ids) or 'none'} · raters {self.aggregate} · "
            f"bootstrap {self.resamples}× seed {self.seed} ({self.confidence:.0%})"
        )


# --------------------------------------------------------------------------------------------
# Reading judgements


@dataclass
class Judgements:
    """Human judgements in tidy form, with what was dropped and why."""

    ratings: pd.DataFrame  # story_id, rater, aspect, value (float), system
    errors: pd.DataFrame  # story_id, rater, error, value (0/1)
    pairs: pd.DataFrame  # sequence_id, better, worse, gap, agreement  (pairwise files only)
    layout: str
    problems: list[str] = field(default_factory=list)

    @property
    def aspects(self) -> list[str]:
        return list(dict.fromkeys(self.ratings["aspect"]))

    @property
    def error_tags(self) -> list[str]:
        return list(dict.fromkeys(self.errors["error"]))

    @property
    def story_ids(self) -> set[str]:
        ids = set(self.ratings["story_id"]) | set(self.errors["story_id"])
        if len(self.pairs):
            ids |= set(self.pairs["better"]) | set(self.pairs["worse"])
        return ids


def _error_tag(name: str) -> str | None:
    key = re.sub(r"[_\-]+", " ", name.strip().lower())
    key = re.sub(r"^(error|err)\s*[: ]\s*", "", key)
    return _ERROR_ALIASES.get(key)


def _read_table(source: str | Path | bytes | IO[Any]) -> pd.DataFrame:
    if isinstance(source, (str, Path)):
        raw = Path(source).read_bytes()
    elif isinstance(source, bytes):
        raw = source
    else:
        raw = source.read()
        raw = raw if isinstance(raw, bytes) else str(raw).encode()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JudgementsError(f"judgements file is not UTF-8 text ({exc})") from exc
    lines = text.splitlines()
    skipped = 0
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)  # comment header (e.g. a signature line of an export)
        skipped += 1
    if not lines:
        raise JudgementsError("judgements file is empty")
    try:
        frame = pd.read_csv(io.StringIO("\n".join(lines)), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise JudgementsError(f"judgements file is not a readable CSV ({exc})") from exc
    structural = {"story_id", "rater", "aspect", "value", "system", "sequence_id", "story_a", "story_b", "rank_a", "rank_b", "agreement"}
    names = [str(c).strip() for c in frame.columns]
    frame.columns = [n.lower() if n.lower() in structural else n for n in names]  # aspect names keep their case
    frame = frame.apply(lambda col: col.str.strip())
    frame.index = frame.index + skipped + 2  # index = line number in the file
    return frame


def _numeric(frame: pd.DataFrame, column: str, label: str, problems: list[str]) -> pd.Series:
    """The column as floats; empty cells and text are reported (with rows and examples) and become NaN."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce")
    empty = raw.eq("")
    text = values.isna() & ~empty
    if empty.any():
        problems.append(f"{label}: {int(empty.sum())} missing value(s); ignored")
    if text.any():
        lines = [int(i) for i in raw.index[text][:5]]
        examples = ", ".join(repr(str(v)) for v in raw[text].unique()[:3])
        problems.append(f"{label}: {int(text.sum())} non-numeric value(s) ({examples}; lines {lines}); ignored")
    return values


def read_judgements(source: str | Path | bytes | IO[Any]) -> Judgements:
    """Read a judgements CSV in any of the three layouts.

    * long: ``story_id, rater, aspect, value`` (``rater`` and ``system`` optional);
    * wide: ``story_id`` plus one column per aspect (``rater``, ``system``, ``sequence_id`` optional);
    * pairwise (VHED): ``story_a, story_b, rank_a, rank_b`` (``sequence_id``, ``agreement`` optional),
      lower rank = better.

    Aspects named after the VHED error taxonomy hold binary error labels. Exact duplicate rows,
    empty cells and text in numeric columns are dropped and reported in ``problems``.
    """
    frame = _read_table(source)
    problems: list[str] = []
    dupes = frame.duplicated()
    if dupes.any():
        problems.append(f"{int(dupes.sum())} duplicated row(s) (lines {[int(i) for i in frame.index[dupes][:5]]}); kept once")
        frame = frame[~dupes]
    columns = set(frame.columns)
    if {"story_a", "story_b", "rank_a", "rank_b"} <= columns:
        return _read_pairwise(frame, problems)
    if "story_id" not in columns:
        raise JudgementsError(
            f"no story_id column (columns: {', '.join(frame.columns)}); expected long "
            "(story_id, rater, aspect, value), wide (story_id, <aspect columns>) or pairwise "
            "(story_a, story_b, rank_a, rank_b) judgements"
        )
    if frame["story_id"].eq("").any():
        n = int(frame["story_id"].eq("").sum())
        problems.append(f"{n} row(s) without a story_id; ignored")
        frame = frame[frame["story_id"].ne("")]
    if {"aspect", "value"} <= columns:
        layout = "long"
        long = frame.copy()
        values = pd.Series(np.nan, index=frame.index)
        for aspect, rows in frame.groupby("aspect", sort=False):
            values[rows.index] = _numeric(frame.loc[rows.index], "value", f"aspect {aspect!r}", problems)
        long["value"] = values
    else:
        layout = "wide"
        aspects = [c for c in frame.columns if c not in _ID_COLUMNS]
        if not aspects:
            raise JudgementsError("wide judgements need at least one aspect column besides story_id")
        numeric = {a: _numeric(frame, a, f"column {a!r}", problems) for a in aspects}
        keep = [c for c in ("story_id", "rater", "system") if c in columns]
        long = pd.concat(
            [frame[keep].assign(aspect=a, value=numeric[a].to_numpy()) for a in aspects], ignore_index=True
        )
    if "rater" not in long:
        long["rater"] = None
    if "system" not in long:
        long["system"] = None
    long = long[["story_id", "rater", "aspect", "value", "system"]].copy()
    long["rater"] = long["rater"].replace("", None)
    long["system"] = long["system"].replace("", None)
    long = long[long["value"].notna()]
    tags = long["aspect"].map(_error_tag)
    errors = long[tags.notna()].assign(error=tags[tags.notna()])
    bad = ~errors["value"].isin([0, 1])
    if bad.any():
        problems.append(f"{int(bad.sum())} error label(s) not 0/1 ({', '.join(map(str, errors['value'][bad].unique()[:3]))}); ignored")
        errors = errors[~bad]
    ratings = long[tags.isna()].reset_index(drop=True)
    if ratings.empty and errors.empty:
        raise JudgementsError("no usable numeric judgements in the file" + (f" ({'; '.join(problems)})" if problems else ""))
    if ratings["rater"].notna().any():
        keys = ["story_id", "rater", "aspect"]
        clash = ratings.groupby(keys)["value"].nunique() > 1
        if clash.any():
            problems.append(f"{int(clash.sum())} (story, rater, aspect) cell(s) with conflicting values; averaged")
    for aspect, rows in ratings.groupby("aspect", sort=False):
        if rows["value"].nunique() == 1:
            problems.append(f"aspect {aspect!r} is constant ({rows['value'].iloc[0]:g}); its correlations are undefined")
    return Judgements(
        ratings=ratings,
        errors=errors[["story_id", "rater", "error", "value"]].reset_index(drop=True),
        pairs=_empty_pairs(),
        layout=layout,
        problems=problems,
    )


def _empty_pairs() -> pd.DataFrame:
    return pd.DataFrame({"sequence_id": [], "better": [], "worse": [], "gap": [], "agreement": []})


def _read_pairwise(frame: pd.DataFrame, problems: list[str]) -> Judgements:
    rank_a = _numeric(frame, "rank_a", "column 'rank_a'", problems)
    rank_b = _numeric(frame, "rank_b", "column 'rank_b'", problems)
    agreement = _numeric(frame, "agreement", "column 'agreement'", problems) if "agreement" in frame else pd.Series(np.nan, frame.index)
    ok = rank_a.notna() & rank_b.notna()
    tie = ok & (rank_a == rank_b)
    if tie.any():
        problems.append(f"{int(tie.sum())} pair(s) with equal human ranks; removed (zero ranking gap, as in VHED)")
    ok &= ~tie
    a_better = rank_a < rank_b
    pairs = pd.DataFrame({
        "sequence_id": frame.get("sequence_id"),
        "better": np.where(a_better, frame["story_a"], frame["story_b"]),
        "worse": np.where(a_better, frame["story_b"], frame["story_a"]),
        "gap": (rank_a - rank_b).abs(),
        "agreement": agreement,
    })[ok].reset_index(drop=True)
    if pairs.empty:
        raise JudgementsError("no usable story pairs in the pairwise file" + (f" ({'; '.join(problems)})" if problems else ""))
    empty = pd.DataFrame({"story_id": [], "rater": [], "aspect": [], "value": [], "system": []})
    return Judgements(
        ratings=empty, errors=pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []}),
        pairs=pairs, layout="pairwise", problems=problems,
    )


# --------------------------------------------------------------------------------------------
# Aggregation and inter-rater agreement


def aggregate(judgements: Judgements, how: str = "mean") -> pd.DataFrame:
    """One row per story: the ``how`` (mean or median) of its raters for every aspect, plus each
    error label by majority (flagged by at least half of the raters)."""
    ratings = judgements.ratings
    if ratings.empty:
        human = pd.DataFrame(index=pd.Index([], name="story_id"))
    else:
        human = ratings.pivot_table(index="story_id", columns="aspect", values="value", aggfunc=how, sort=False)
        human = human[judgements.aspects]
    if not judgements.errors.empty:
        votes = judgements.errors.pivot_table(index="story_id", columns="error", values="value", aggfunc="mean", sort=False)
        human = human.join((votes >= 0.5).astype(float).where(votes.notna()), how="outer")
    human.columns.name = None
    return human


def inter_rater(judgements: Judgements) -> pd.DataFrame:
    """Krippendorff's α (interval level) per aspect, with raters, stories and why it is undefined."""
    import krippendorff

    rows = []
    for aspect in judgements.aspects:
        part = judgements.ratings[judgements.ratings["aspect"] == aspect]
        row: dict[str, Any] = {"aspect": aspect, "alpha": None, "raters": 0, "stories": part["story_id"].nunique(), "note": ""}
        if part["rater"].isna().all():
            row["note"] = "undefined: no rater column, so raters cannot be told apart"
            rows.append(row)
            continue
        table = part.pivot_table(index="rater", columns="story_id", values="value", aggfunc="mean")
        row["raters"] = len(table)
        shared = int((table.notna().sum(axis=0) >= 2).sum())
        if len(table) < 2:
            row["note"] = "undefined: only one rater"
        elif shared == 0:
            row["note"] = "undefined: no story was rated by two raters"
        elif np.unique(table.to_numpy()[~np.isnan(table.to_numpy())]).size < 2:
            row["note"] = "undefined: every rating is the same value"
        else:
            row["alpha"] = float(krippendorff.alpha(reliability_data=table.to_numpy(), level_of_measurement="interval"))
            row["note"] = f"{shared} stories rated by two or more raters"
        rows.append(row)
    return pd.DataFrame(rows, columns=["aspect", "alpha", "raters", "stories", "note"])


# --------------------------------------------------------------------------------------------
# Correlations


@dataclass(frozen=True)
class Correlation:
    """One coefficient with its p-value, N and bootstrap interval; ``undefined`` says why it is absent."""

    method: str
    value: float | None
    p: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    undefined: str | None = None


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


def correlate(
    metric: Sequence[float] | np.ndarray | pd.Series,
    human: Sequence[float] | np.ndarray | pd.Series,
    methods: Sequence[str] = tuple(METHODS),
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Correlation]:
    """Spearman ρ, Pearson r, Kendall τ-b and τ-c of paired values (pairs with a NaN are left out),
    each with scipy's p-value, N and a percentile bootstrap interval. Fewer than 3 pairs or a
    constant side make a coefficient undefined, with the reason; nothing is filled with 0."""
    x = np.asarray(metric, dtype=float)
    y = np.asarray(human, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"metric and human values differ in length ({x.size} vs {y.size})")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
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
            out[method] = Correlation(method, None, None, n, undefined=reason)
            continue
        value, p = _coefficient(method, x, y)
        low = high = None
        if resamples > 0:
            boot = bootstrap_samples(method, x, y, resamples, seed)
            boot = boot[~np.isnan(boot)]
            if boot.size >= resamples / 2:
                tail = (1 - confidence) / 2 * 100
                low, high = (float(v) for v in np.percentile(boot, [tail, 100 - tail]))
        out[method] = Correlation(
            method, value, None if math.isnan(p) else p, n, low, high,
            None if low is not None or resamples == 0 else "bootstrap interval undefined: most resamples were constant",
        )
    return out


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
    ``tick`` is called after each metric × aspect cell (for a progress bar)."""
    frame = system_means(data, [*metrics, *aspects]) if level == "system" else data
    rows = []
    for metric in metrics:
        for aspect in aspects:
            if metric not in frame or aspect not in frame:
                continue
            results = correlate(
                frame[metric], frame[aspect], settings.methods,
                resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence,
            )
            for r in results.values():
                rows.append({"level": level, "metric": metric, "aspect": aspect, **asdict(r)})
            if tick is not None:
                tick()
    columns = ["level", "metric", "aspect", "method", "value", "p", "n", "ci_low", "ci_high", "undefined"]
    return pd.DataFrame(rows, columns=columns)


def best_per_aspect(table: pd.DataFrame, method: str, tolerance: float = 1e-9) -> dict[str, set[str]]:
    """The metrics with the highest coefficient per aspect (all of them when tied; undefined never win)."""
    part = table[(table["method"] == method) & table["value"].notna()]
    best: dict[str, set[str]] = {}
    for aspect, rows in part.groupby("aspect", sort=False):
        top = rows["value"].max()
        best[str(aspect)] = set(rows.loc[rows["value"] >= top - tolerance, "metric"])
    return best


# --------------------------------------------------------------------------------------------
# Pairwise ranking accuracy (Vrank Eq. 1-2)


def pairs_from_ratings(
    human: pd.Series, sequences: pd.Series, ratings: pd.DataFrame | None = None, aspect: str | None = None
) -> pd.DataFrame:
    """Every two stories of the same image sequence, the better one being the one humans rated
    higher; gap = |difference of the aggregated ratings|. Equal ratings give no pair (zero gap).
    With per-rater ``ratings``, agreement = how many raters order the pair as the aggregate does."""
    rows = []
    per_rater = None
    if ratings is not None and aspect is not None and ratings["rater"].notna().any():
        part = ratings[ratings["aspect"] == aspect]
        per_rater = part.pivot_table(index="story_id", columns="rater", values="value", aggfunc="mean")
    frame = pd.DataFrame({"h": human, "seq": sequences}).dropna()
    for seq, group in frame.groupby("seq", sort=False):
        ids = list(group.index)
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                ha, hb = group.at[a, "h"], group.at[b, "h"]
                if ha == hb:
                    continue
                better, worse = (a, b) if ha > hb else (b, a)
                agreement = np.nan
                if per_rater is not None and better in per_rater.index and worse in per_rater.index:
                    agreement = float((per_rater.loc[better] > per_rater.loc[worse]).sum())
                rows.append({"sequence_id": seq, "better": better, "worse": worse, "gap": abs(ha - hb), "agreement": agreement})
    return pd.DataFrame(rows, columns=["sequence_id", "better", "worse", "gap", "agreement"])


def pairwise_accuracy(pairs: pd.DataFrame, scores: Mapping[str, float] | pd.Series) -> dict[str, Any]:
    """Vrank Eq. 1-2: a pair is correct only if the metric scores the better story strictly higher;
    a tie counts as wrong. Pairs with a story the metric did not score are left out and counted."""
    s = pd.Series(scores, dtype=float)
    a = pairs["better"].map(s)
    b = pairs["worse"].map(s)
    known = a.notna() & b.notna()
    n = int(known.sum())
    correct = int((a[known] > b[known]).sum())
    ties = int((a[known] == b[known]).sum())
    return {
        "n": n, "correct": correct, "ties": ties, "missing": int((~known).sum()),
        "accuracy": correct / n if n else None,
    }


def gap_edges(gaps: pd.Series, bins: int = 4) -> list[float]:
    """Edges splitting the ranking gaps into ``bins`` groups of about equal size (quantiles)."""
    values = gaps.dropna().to_numpy(dtype=float)
    if values.size == 0:
        return []
    edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
    if edges.size == 1:
        return [float(edges[0]) - 1e-9, float(edges[0])]
    edges[0] -= 1e-9  # left-open bins must include the smallest gap
    return [float(e) for e in edges]


def pairwise_table(
    pairs: pd.DataFrame, data: pd.DataFrame, metrics: Sequence[str], edges: Sequence[float] | None = None
) -> pd.DataFrame:
    """Accuracy of every metric over all pairs, per agreement subset and per ranking-gap bin
    (Vrank Fig. 3); bins are right-closed intervals ``(lo, hi]`` over the given or quartile edges."""
    columns = ["metric", "group", "subset", "lo", "hi", "n", "correct", "ties", "missing", "accuracy"]
    if pairs.empty:
        return pd.DataFrame(columns=columns)
    edges = list(edges) if edges else gap_edges(pairs["gap"])
    groups: list[tuple[str, str, pd.DataFrame, float | None, float | None]] = [("all", "all pairs", pairs, None, None)]
    if pairs["agreement"].notna().any():
        for k, part in pairs.groupby("agreement", sort=True):
            groups.append(("agreement", f"agreement = {k:g}", part, float(k), float(k)))
    bins = pd.cut(pairs["gap"], bins=edges, right=True)
    for interval, part in pairs.groupby(bins, observed=False, sort=True):
        groups.append(("gap", f"gap ({interval.left:.3g}, {interval.right:.3g}]", part, float(interval.left), float(interval.right)))
    outside = int(bins.isna().sum())
    rows = []
    for metric in metrics:
        if metric not in data:
            continue
        for group, subset, part, lo, hi in groups:
            rows.append({"metric": metric, "group": group, "subset": subset, "lo": lo, "hi": hi, **pairwise_accuracy(part, data[metric])})
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
    op_hi, op_lo = (("≥", "<") if high_inclusive else (">", "≤"))
    rows = []
    for name, mask in ((f"low {covariate} ({op_lo} {split:.4g})", ~high & cov.notna()), (f"high {covariate} ({op_hi} {split:.4g})", high)):
        part = data[mask]
        for metric in metrics:
            if metric not in data or aspect not in data:
                continue
            r = correlate(part[metric], part[aspect], [method], resamples=0)[method]
            rows.append({"covariate": covariate, "bin": name, "metric": metric, "aspect": aspect, "method": method,
                         "value": r.value, "p": r.p, "n": r.n, "undefined": r.undefined})
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


# --------------------------------------------------------------------------------------------
# The whole report: the same numbers for the CLI and the page


@dataclass
class MetaReport:
    """Every table of a meta-evaluation, the match between scores and judgements, and the signature."""

    signature: dict[str, Any]
    description: str
    match: dict[str, Any]
    data: pd.DataFrame  # one row per matched story: ids, metric columns, covariates, human columns
    metrics: list[str]
    aspects: list[str]
    errors: list[str]
    agreement: pd.DataFrame
    correlations: pd.DataFrame
    system_correlations: pd.DataFrame
    pairs: pd.DataFrame
    pairs_source: str
    pairwise: pd.DataFrame
    bins: pd.DataFrame
    error_correlations: pd.DataFrame
    unavailable: dict[str, str]
    splits: dict[str, float | None]
    problems: list[str]

    def tables(self) -> dict[str, pd.DataFrame]:
        """The downloadable tables by file stem."""
        return {
            "agreement_with_humans": self.correlations,
            "system_level": self.system_correlations,
            "pairwise_accuracy": self.pairwise,
            "bins": self.bins,
            "error_correlations": self.error_correlations,
            "inter_rater": self.agreement,
            "matched_data": self.data.reset_index(),
        }

    def csv(self, name: str) -> str:
        """One table as CSV headed by comment lines with the signature that produced it."""
        return f"# {self.description}\n# signature {json.dumps(self.signature, sort_keys=True)}\n" + self.tables()[name].to_csv(index=False)

    def to_json(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return json.loads(frame.to_json(orient="records"))

        return {
            "signature": self.signature,
            "description": self.description,
            "match": self.match,
            "metrics": self.metrics,
            "aspects": self.aspects,
            "errors": self.errors,
            "inter_rater": records(self.agreement),
            "correlations": records(self.correlations),
            "system_correlations": records(self.system_correlations),
            "pairs_source": self.pairs_source,
            "pairwise_accuracy": records(self.pairwise),
            "bins": records(self.bins),
            "splits": self.splits,
            "error_correlations": records(self.error_correlations),
            "unavailable_baselines": self.unavailable,
            "problems": self.problems,
        }


def match_report(scored: Iterable[str], judged: Iterable[str], shown: int = 20) -> dict[str, Any]:
    """How many judged stories have scores, and which ids on either side have no partner."""
    scored_set, judged_set = set(scored), set(judged)
    both = scored_set & judged_set
    judged_only = sorted(judged_set - scored_set)
    scored_only = sorted(scored_set - judged_set)
    return {
        "matched": len(both), "judged": len(judged_set), "scored": len(scored_set),
        "judged_not_scored": judged_only[:shown], "judged_not_scored_count": len(judged_only),
        "scored_not_judged": scored_only[:shown], "scored_not_judged_count": len(scored_only),
    }


def score_frame(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per scored story (index story_id): sequence, system, metric columns and T, P."""
    rows = []
    for r in records:
        row: dict[str, Any] = {"story_id": str(r["story_id"]), "sequence_id": r.get("sequence_id"), "system": r.get("system")}
        for column, (metric, key) in {**METRIC_FIELDS, **COVARIATE_FIELDS}.items():
            if metric in r.get("metrics", {}):
                value = r["metrics"][metric].get(key)
                row[column] = np.nan if value is None else float(value)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["sequence_id", "system"]).rename_axis("story_id")
    frame = frame.drop_duplicates("story_id", keep="last").set_index("story_id")
    return frame.dropna(axis=1, how="all")


def run_meta_eval(
    records: Sequence[dict[str, Any]],
    judgements: Judgements,
    settings: MetaSettings = MetaSettings(),
    *,
    metrics: Sequence[str] | None = None,
    aspects: Sequence[str] | None = None,
    baselines: tuple[dict[str, dict[str, float]], dict[str, str]] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> MetaReport:
    """Join scores with judgements and compute every table of the report.

    ``baselines`` takes a precomputed :func:`~vst_core.metrics.baselines.baseline_scores` result
    (they depend on the story texts only); by default they are computed when the settings ask.
    ``progress(total)`` may return a bar with ``update(n)`` and ``close()``, advanced per
    metric × aspect cell of the two correlation tables."""
    problems = list(judgements.problems)
    scores = score_frame(records)
    unavailable: dict[str, str] = {}
    if settings.baselines:
        base, unavailable = baselines if baselines is not None else baseline_scores(records)
        if base:
            scores = scores.join(pd.DataFrame.from_dict(base, orient="index")[[b for b in BASELINES if b not in unavailable]])
    available = [m for m in (*METRIC_COLUMNS, *BASELINES) if m in scores]
    chosen = [m for m in (metrics or available) if m in available]
    missing_metrics = [m for m in (metrics or []) if m not in available]
    if missing_metrics:
        problems.append(f"metric(s) not in the scores: {', '.join(missing_metrics)}")
    human = aggregate(judgements, settings.aggregate)
    clash = [c for c in human.columns if c in scores.columns or c in ("sequence_id", "system")]
    if clash:
        human = human.rename(columns={c: f"{c} (human)" for c in clash})
        judgements = _renamed(judgements, {c: f"{c} (human)" for c in clash})
        problems.append(f"judged aspect(s) named like a score column, renamed: {', '.join(f'{c} -> {c} (human)' for c in clash)}")
    all_aspects = [a for a in judgements.aspects if a in human]
    chosen_aspects = [a for a in (aspects or all_aspects) if a in all_aspects]
    errors = [e for e in judgements.error_tags if e in human]
    match = match_report(scores.index, judgements.story_ids)
    if match["matched"] == 0:
        problems.append(
            f"none of the {match['judged']} judged story ids is in the scores "
            f"(e.g. {', '.join(match['judged_not_scored'][:3]) or '-'}); check that both use the same story_id"
        )
    elif match["judged_not_scored_count"]:
        problems.append(f"{match['judged_not_scored_count']} judged story id(s) have no scores and are left out")
    data = scores.join(human, how="inner")
    if "system" in data and judgements.ratings["system"].notna().any():
        known = judgements.ratings.dropna(subset=["system"]).drop_duplicates("story_id").set_index("story_id")["system"]
        data["system"] = data["system"].where(data["system"].notna(), known.reindex(data.index))
    sig_ids = sorted({str(r.get("signature", {}).get("id")) for r in records if r.get("signature")})
    signature = settings.signature(sig_ids)
    bar = progress(2 * len(chosen) * len(chosen_aspects)) if progress is not None else None
    tick = (lambda: bar.update(1)) if bar is not None else None
    try:
        correlations = correlation_table(data, chosen, chosen_aspects, settings, "story", tick)
        system_correlations = correlation_table(data, chosen, chosen_aspects, settings, "system", tick)
    finally:
        if bar is not None:
            bar.close()
    n_systems = data["system"].nunique() if "system" in data else 0
    if n_systems < 3 and chosen_aspects and len(data):
        problems.append(f"system-level correlations need at least 3 systems; the judged stories come from {n_systems}")
    pairs, pairs_source = _story_pairs(judgements, data, chosen_aspects, settings, problems)
    pairwise = pairwise_table(pairs, scores if len(judgements.pairs) else data, chosen, settings.gap_edges)
    if len(judgements.pairs):
        unknown = (~pairs["better"].isin(scores.index) | ~pairs["worse"].isin(scores.index)).sum()
        if unknown:
            problems.append(f"{int(unknown)} judged pair(s) name a story without scores; left out")
    bins, splits = _bins(data, chosen, chosen_aspects, settings)
    error_correlations = error_table(data, [*chosen, *chosen_aspects], errors)
    return MetaReport(
        signature=signature,
        description=settings.describe(sig_ids),
        match=match,
        data=data,
        metrics=chosen,
        aspects=chosen_aspects,
        errors=errors,
        agreement=inter_rater(judgements),
        correlations=correlations,
        system_correlations=system_correlations,
        pairs=pairs,
        pairs_source=pairs_source,
        pairwise=pairwise,
        bins=bins,
        error_correlations=error_correlations,
        unavailable=unavailable,
        splits=splits,
        problems=problems,
    )


def _story_pairs(
    judgements: Judgements, data: pd.DataFrame, aspects: list[str], settings: MetaSettings, problems: list[str]
) -> tuple[pd.DataFrame, str]:
    """The pairs to rank and where they come from: the pairwise file, else every two stories of a
    sequence ordered by ``settings.pair_aspect`` (default ``overall``, else the last aspect)."""
    if len(judgements.pairs):
        return judgements.pairs, "pairwise judgements file (lower rank = better)"
    if not aspects or "sequence_id" not in data:
        return _empty_pairs(), "none"
    aspect = settings.pair_aspect or ("overall" if "overall" in aspects else aspects[-1])
    if aspect not in data:
        problems.append(f"no aspect {aspect!r} to order pairs by; judged aspects: {', '.join(judgements.aspects)}")
        aspect = aspects[-1]
    pairs = pairs_from_ratings(data[aspect], data["sequence_id"], judgements.ratings, aspect)
    return pairs, f"every two stories of a sequence, ordered by the {settings.aggregate} '{aspect}' rating"


def _bins(
    data: pd.DataFrame, metrics: list[str], aspects: list[str], settings: MetaSettings
) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """GROOVIST Fig. 3 bins against the human ``grounding`` aspect (else the first), and the splits used."""
    splits: dict[str, float | None] = {"T": settings.t_split, "P": settings.p_split}
    frames = []
    aspect = "grounding" if "grounding" in aspects else (aspects[0] if aspects else None)
    if aspect is not None and "T" in data:
        frames.append(binned_correlations(data, metrics, aspect, "T", settings.t_split, settings.bin_method))
    if aspect is not None and "P" in data:
        splits["P"] = settings.p_split if settings.p_split is not None else mode_split(data["P"])
        if splits["P"] is not None:
            frames.append(binned_correlations(data, metrics, aspect, "P", splits["P"], settings.bin_method, high_inclusive=False))
    bins = pd.concat(frames, ignore_index=True) if frames else binned_correlations(data, [], "", "T", 1.0)
    return bins, splits


def _renamed(judgements: Judgements, names: dict[str, str]) -> Judgements:
    return Judgements(
        ratings=judgements.ratings.assign(aspect=judgements.ratings["aspect"].replace(names)),
        errors=judgements.errors.assign(error=judgements.errors["error"].replace(names)),
        pairs=judgements.pairs, layout=judgements.layout, problems=judgements.problems,
    )
