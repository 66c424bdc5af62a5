"""Correlation intervals resample image sequences, not stories: the stories of one sequence share
their photos (and often their scores), so drawing them one by one makes intervals too narrow.
Checked against the coefficients of explicitly repeated data (scipy), and by coverage on synthetic
grouped data of known correlation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vst_core.analysis.meta_eval.settings import MetaSettings
from vst_core.analysis.meta_eval.stats import (
    _rowwise_kendall,
    correlate,
    correlation_table,
    counts_samples,
    group_counts,
    system_level_samples,
)

METHODS = ("pearson", "spearman", "kendall_b", "kendall_c")


def scipy_coefficient(method: str, x: np.ndarray, y: np.ndarray) -> float:
    if method == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if method == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    return float(stats.kendalltau(x, y, variant=method[-1]).statistic)


@pytest.mark.parametrize("method", METHODS)
def test_a_counted_resample_is_the_repeated_datas_coefficient(method: str) -> None:
    rng = np.random.default_rng(1)
    x = np.round(rng.normal(size=40), 1)  # ties on both sides
    y = np.round(x + rng.normal(size=40), 1)
    counts = rng.integers(0, 4, size=(25, 40)).astype(float)
    got = counts_samples(method, x, y, counts)
    for row, value in zip(counts, got, strict=True):
        idx = np.repeat(np.arange(40), row.astype(int))
        assert value == pytest.approx(scipy_coefficient(method, x[idx], y[idx]), abs=1e-10)


def test_group_counts_draw_whole_groups() -> None:
    groups = np.array(["s1", "s1", "s2", "s3", "s3", "s3"])
    counts = group_counts(groups, 500, np.random.default_rng(0))
    assert (counts[:, 0] == counts[:, 1]).all() and (counts[:, 3] == counts[:, 5]).all()
    per_group = counts[:, [0, 2, 3]]
    assert (per_group.sum(axis=1) == 3).all()  # three groups drawn per resample
    assert per_group.mean() == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("variant", ["b", "c"])
def test_rowwise_kendall_is_scipys(variant: str) -> None:
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=(30, 6)), 1)
    y = np.round(rng.normal(size=(30, 6)), 1)
    got = _rowwise_kendall(x, y, variant)
    want = [stats.kendalltau(a, b, variant=variant).statistic for a, b in zip(x, y, strict=True)]
    assert np.allclose(got, want, equal_nan=True)


def grouped_data(rng: np.random.Generator, sequences: int, per: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stories sharing a sequence effect u (variance 1) on both sides plus story noise (variance 1):
    x = u + e, y = u + f, so the stories' correlation is 0.5 but stories of one sequence agree."""
    u = np.repeat(rng.normal(size=sequences), per)
    x = u + rng.normal(size=u.size)
    y = u + rng.normal(size=u.size)
    return x, y, np.repeat(np.arange(sequences), per)


def coverage(by_sequence: bool, trials: int = 200) -> float:
    rng = np.random.default_rng(7)
    hits = 0
    for t in range(trials):
        x, y, groups = grouped_data(rng, 30, 5)
        r = correlate(x, y, ["pearson"], resamples=400, seed=t, confidence=0.9, groups=groups if by_sequence else None)["pearson"]
        assert r.ci_low is not None and r.ci_high is not None
        hits += r.ci_low <= 0.5 <= r.ci_high
    return hits / trials


def test_sequence_resampled_intervals_cover_and_story_resampled_ones_do_not() -> None:
    """90% intervals over 200 synthetic sets of 30 sequences × 5 stories (true ρ = 0.5)."""
    by_sequence, by_story = coverage(True), coverage(False)
    assert by_sequence >= 0.83  # the percentile bootstrap's own shortfall at 30 units
    assert by_story <= 0.80 and by_sequence - by_story >= 0.08


def table(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for s, shift in enumerate([0.0, 0.2, 0.4, 0.5]):
        for q in range(12):
            for _story in range(2):
                value = shift + rng.normal(0, 0.3) + 0.1 * (q % 3)
                rows.append({"system": f"sys{s}", "sequence_id": f"q{q}", "NR": value, "overall": value + rng.normal(0, 0.3)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("method", METHODS)
def test_system_level_resamples_recompute_the_system_means(method: str) -> None:
    data = table(np.random.default_rng(3))
    got = system_level_samples(data, "NR", "overall", [method], 20, seed=5)[method]
    counts = group_counts(data["sequence_id"].to_numpy(str), 20, np.random.default_rng(5))
    for row, value in zip(counts, got, strict=True):
        repeated = data.loc[np.repeat(data.index.to_numpy(), row.astype(int))]
        means = repeated.groupby("system")[["NR", "overall"]].mean()
        if len(means) < 4:
            assert np.isnan(value)
            continue
        assert value == pytest.approx(scipy_coefficient(method, means["NR"].to_numpy(), means["overall"].to_numpy()), abs=1e-10)


def test_the_table_says_what_it_resampled_and_keeps_the_old_way_as_a_choice() -> None:
    data = table(np.random.default_rng(4))
    by_sequence = correlation_table(data, ["NR"], ["overall"], MetaSettings(resamples=200), "system")
    assert set(by_sequence["resampled"]) == {"sequences"}
    assert by_sequence["ci_low"].notna().all()  # four systems, twelve sequences: an interval at system level
    by_item = correlation_table(data, ["NR"], ["overall"], MetaSettings(resamples=200, resample_unit="item"), "system")
    assert set(by_item["resampled"]) == {"systems"} and by_item["ci_low"].isna().all()  # four systems: no interval
    story = correlation_table(data, ["NR"], ["overall"], MetaSettings(resamples=200), "story")
    assert set(story["resampled"]) == {"sequences"}
    assert (
        story["value"].to_numpy()
        == by_item.pipe(lambda _: correlation_table(data, ["NR"], ["overall"], MetaSettings(resamples=0), "story"))[
            "value"
        ].to_numpy()
    ).all()
    assert MetaSettings().signature()["meta_settings"]["resample_unit"] == "sequence"
    with pytest.raises(ValueError, match="resample_unit"):
        MetaSettings(resample_unit="story")  # type: ignore[arg-type]


def test_a_system_without_values_does_not_take_every_interval_away() -> None:
    """A system with no rating is left out of the system-level coefficient; the resamples leave
    it out too (it made every resample incomplete, so no interval was ever given)."""
    data = table(np.random.default_rng(5))
    data.loc[data["system"] == "sys3", "overall"] = np.nan
    by_sequence = correlation_table(data, ["NR"], ["overall"], MetaSettings(resamples=200), "system")
    assert (by_sequence["n"] == 3).all() and by_sequence["ci_low"].notna().all(), by_sequence[["method", "undefined"]]
