"""A human-likeness profile: dHM's distance generalised to any set of measures, each with its own
paired test against the human stories (not one number).

For a system s, the human stories H and a measure m, over the image sequences both wrote for
(each side's value on a sequence is the mean of its stories there, as the leaderboard pairs them):

    d_q        = m(s, q) − m(H, q)                         the signed difference per sequence
    difference = mean_q d_q, with its paired bootstrap interval and the paired
                 approximate-randomization p (two-sided, with its Monte-Carlo standard error;
                 :func:`vst_core.analysis.paired_tests.paired_test`), Holm over the system's measures
    distance   = mean_q |d_q|, with its bootstrap interval  (dHM's per-aspect distance, for any m)

For GROOVIST the distance is taken over tanh(G), as dHM takes it: the GROOVIST column is that
already, so its raw column is left out of the default measures (named explicitly, it is taken
through tanh too). A measure where a system is as
people are has a difference near 0 (and a distance near the humans' own spread between stories).

>>> t = pd.DataFrame({"story": list("abcd"), "sequence": ["q", "q", "r", "r"], "system": ["human", "m"] * 2, "NR": [0.9, 0.7, 0.8, 0.8]})
>>> p = human_likeness_profile(t, ["human"], ["NR"], resamples=0, permutations=0)
>>> p[["system", "measure", "n", "difference", "distance"]].round(3).to_dict("records")
[{'system': 'm', 'measure': 'NR', 'n': 2, 'difference': -0.1, 'distance': 0.1}]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from vst_core.analysis.dhm import bootstrap
from vst_core.analysis.paired_tests import (
    ALPHA,
    PERMUTATION_BUDGET,
    PERMUTATION_CAP,
    PERMUTATIONS,
    RESAMPLES,
    PermutationBudget,
    holm,
    pending_test,
)
from vst_core.analysis.systems import paired_sequences
from vst_core.records import direction_of

#: The columns of a profile table.
COLUMNS = [
    "system", "measure", "direction", "n", "system_mean", "human_mean", "difference", "ci_low", "ci_high",
    "distance", "distance_low", "distance_high", "p", "p_se", "p_holm", "permutations", "stopped_early",
]  # fmt: skip
#: The human side's name in the paired table.
HUMAN = "\x00human"


def human_likeness_profile(
    table: pd.DataFrame,
    human: Sequence[str],
    measures: Sequence[str] | None = None,
    *,
    systems: Sequence[str] | None = None,
    resamples: int = RESAMPLES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = ALPHA,
    permutation_budget: int | None = PERMUTATION_BUDGET,
) -> pd.DataFrame:
    """One row per (system, measure): the signed difference from the ``human`` systems' stories
    with its interval and paired test, and the distance mean |d| with its interval (module
    docstring). ``table``: one row per story (``story``, ``sequence``, ``system``, measure
    columns); ``measures`` default to every numeric column with a value. Every test draws within
    one :class:`~vst_core.analysis.paired_tests.PermutationBudget` of ``permutation_budget`` draws
    (None: no limit); a test it stops says so (``stopped_early``), and the table's
    ``attrs["permutation_budget"]`` holds the run's budget, what it drew and whether it was reached."""
    from vst_core.contract import registry

    if measures is None:
        measures = [f.column for f in registry().fields if f.column in table and table[f.column].notna().any()]
        if "GROOVIST" in measures:  # tanh of the raw score, which is dHM's G: one row, not the same twice
            measures = [m for m in measures if m != "GROOVIST raw"]
    measures = [m for m in measures if m in table]
    people = set(human)
    merged = table.assign(system=[HUMAN if s in people else str(s) for s in table["system"]])
    if "GROOVIST raw" in merged:  # dHM's G: the distance of tanh(G)
        merged = merged.assign(**{"GROOVIST raw": np.tanh(merged["GROOVIST raw"].astype(float))})
    others = [s for s in (systems or sorted(set(merged["system"]) - {HUMAN})) if s != HUMAN and s not in people]
    found: list[tuple[str, str, np.ndarray]] = []
    for system in others:
        paired = paired_sequences(merged, system, HUMAN, measures).sort_values("sequence", kind="stable")
        for measure in measures:
            d = paired[measure].dropna().to_numpy(float) if measure in paired else np.zeros(0)
            if len(d):
                found.append((system, measure, d))
    budget = PermutationBudget(permutation_budget)
    first = budget.first(permutations, len(found))
    pending = [
        pending_test(
            d, measure, system, "human", resamples=resamples, permutations=permutations, seed=seed,
            confidence=confidence, first=first, budget=budget,
        )
        for system, measure, d in found
    ]  # fmt: skip
    budget.extend([t.draws for t in pending if t.draws is not None], (alpha,), PERMUTATION_CAP)
    tests = [t.done() for t in pending]
    rows: list[dict[str, object]] = []
    for (system, measure, d), test in zip(found, tests, strict=True):
        (interval,) = bootstrap(np.abs(d).reshape(-1, 1), resamples, seed, confidence) if resamples > 0 else [None]
        own = merged[merged["system"] == system][measure].astype(float)
        theirs = merged[merged["system"] == HUMAN][measure].astype(float)
        rows.append(
            {
                "system": system,
                "measure": measure,
                "direction": direction_of(measure),
                "n": len(d),
                "system_mean": float(own.mean()),
                "human_mean": float(theirs.mean()),
                "difference": test.mean_difference,
                "ci_low": test.ci_low,
                "ci_high": test.ci_high,
                "distance": float(np.abs(d).mean()),
                "distance_low": interval[0] if interval else None,
                "distance_high": interval[1] if interval else None,
                "p": test.p,
                "p_se": test.p_se,
                "p_holm": None,
                "permutations": test.permutations,
                "stopped_early": test.stopped_early,
            }
        )
    for system in others:  # Holm over each system's measures
        mine = [k for k, (s, _, _) in enumerate(found) if s == system]
        for k, adjusted in zip(mine, holm([tests[k].p for k in mine]), strict=True):
            rows[k]["p_holm"] = adjusted
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.attrs["permutation_budget"] = budget.summary()
    return frame


__all__ = ["COLUMNS", "human_likeness_profile"]
