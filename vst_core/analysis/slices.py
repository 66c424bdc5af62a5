"""Slices of a scores table for error analysis: a metric's range, GROOVIST's T and P bins (as in
its Fig. 3: T ≥ 1 is high temporal misalignment, P above its mode is a high noun-phrase
proportion), a kind of input problem, the number of sentences. Every plot and table of the
Dataset page follows the slice."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from vst_core.analysis.meta_eval.stats import mode_split

#: GROOVIST's split of temporal misalignment (Fig. 3).
T_SPLIT = 1.0


@dataclass(frozen=True)
class Slice:
    """Which stories to keep; every field left at its default keeps all."""

    metric: str | None = None
    low: float = float("-inf")
    high: float = float("inf")
    t_bin: str = "all"  # all | high | low
    p_bin: str = "all"  # all | high | low
    problem: str | None = None  # a Problem.kind, or "none" for stories without problems
    min_sentences: int = 0
    max_sentences: int = 10**9


def p_split(table: pd.DataFrame) -> float | None:
    """The split of P: its mode (rounded to 3 decimals), as the meta-evaluation uses."""
    return mode_split(table["P"]) if "P" in table else None


def problem_kinds(table: pd.DataFrame) -> list[str]:
    """The kinds of input problem some story of ``table`` has (its ``problems`` column: kinds
    separated by commas), sorted."""
    if "problems" not in table:
        return []
    found = {k for value in table["problems"].dropna().unique() for k in str(value).split(",") if k}
    return sorted(found)


def apply_slice(table: pd.DataFrame, cut: Slice) -> pd.DataFrame:
    """The rows of ``table`` (:func:`vst_core.viz.scores_table`, with ``sentences`` and ``problems``
    columns) in the slice, all vectorised. A metric range drops stories where the metric is
    undefined; a T or P bin drops stories without grounding."""
    keep = pd.Series(True, index=table.index)
    if cut.metric and cut.metric in table:
        keep &= table[cut.metric].between(cut.low, cut.high)
    if cut.t_bin != "all" and "T" in table:
        keep &= table["T"] >= T_SPLIT if cut.t_bin == "high" else table["T"] < T_SPLIT
    split = p_split(table) if cut.p_bin != "all" else None
    if cut.p_bin != "all" and split is not None:
        keep &= table["P"] > split if cut.p_bin == "high" else table["P"] <= split
    if cut.problem is not None:
        problems = table["problems"].fillna("").astype(str) if "problems" in table else pd.Series("", index=table.index)
        if cut.problem == "none":
            keep &= problems == ""
        else:
            keep &= ("," + problems + ",").str.contains("," + cut.problem + ",", regex=False)
    if "sentences" in table:
        keep &= table["sentences"].between(cut.min_sentences, cut.max_sentences)
    return table[keep]
