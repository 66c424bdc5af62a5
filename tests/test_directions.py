"""Every comparison reads the metric's direction from the field registry: a lower-is-better number
(a repetition such as ``inter``, the misalignment T) wins when lower, agrees with people by a
negative coefficient, and ranks its lowest story first; a descriptor (P) has no winner."""

from __future__ import annotations

import doctest

import pandas as pd

import vst_core.analysis.systems
from vst_core.analysis.meta_eval.disagreements import pair_disagreements, story_disagreements
from vst_core.analysis.meta_eval.stats import _oriented, best_per_aspect, pairwise_accuracy
from vst_core.analysis.systems import win_tie_loss
from vst_core.contract import registry
from vst_core.records import direction_of


def test_every_registry_number_has_a_direction_and_the_repetitions_are_lower() -> None:
    assert {f.direction for f in registry().fields} <= {"higher", "lower", "none"}
    assert [direction_of(c) for c in ("NR", "inter", "intra", "T", "P")] == [
        "higher", "lower", "lower", "lower", "none"
    ]  # fmt: skip
    assert all(direction_of(f.report) == "higher" for f in registry().fields if f.report)  # every reported quality metric
    failed, tried = doctest.testmod(vst_core.analysis.systems)
    assert tried and not failed


def test_the_less_repetitive_system_wins_inter_and_a_descriptor_has_no_winner() -> None:
    paired = pd.DataFrame({"inter": [-0.4, -0.5, 0.1], "P": [0.1, 0.2, -0.1], "NR": [0.4, 0.5, -0.1]})
    rows = win_tie_loss(paired, ["inter", "P", "NR"]).set_index("metric")
    assert (rows.loc["inter", "wins"], rows.loc["inter", "losses"]) == (2, 1)
    assert (rows.loc["NR", "wins"], rows.loc["NR", "losses"]) == (2, 1)
    assert pd.isna(rows.loc["P", "wins"]) and rows.loc["P", "better"].startswith("—")


def test_meta_evaluation_reads_a_lower_is_better_metric_the_right_way_round() -> None:
    data = pd.DataFrame({"story": ["a", "b", "c"], "inter": [0.1, 0.5, 0.9], "overall": [5.0, 3.0, 1.0]}).set_index(
        "story", drop=False
    )
    ranks = story_disagreements(data, "inter", "overall")
    assert (ranks["rank_diff"] == 0).all()  # the least repetitive story is ranked first, as people rank it
    pairs = pd.DataFrame({"sequence_id": ["s", "s"], "better": ["a", "b"], "worse": ["c", "c"], "gap": [4.0, 2.0]})
    assert pair_disagreements(pairs, data, "inter").empty
    assert pairwise_accuracy(pairs, _oriented(data["inter"], "inter"))["accuracy"] == 1.0
    table = pd.DataFrame({"method": ["kendall"] * 2, "value": [-0.9, 0.5], "metric": ["inter", "NR"], "aspect": ["overall"] * 2})
    assert best_per_aspect(table, "kendall") == {"overall": {"inter"}}
