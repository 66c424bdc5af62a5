"""Error analysis: where a metric disagrees with people, checked against rankings worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import ROOT, SAMPLE

from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.disagreements import pair_disagreements, story_disagreements
from vst_core.cli import main
from vst_core.data import load_records


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> object:
    out = tmp_path_factory.mktemp("dis") / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "redundancy", "--out", str(out), "--no-progress"]) == 0
    records, _ = load_records(out)
    judgements = read_judgements(ROOT / "assets/sample/human_example.csv")
    return run_meta_eval(records, judgements, MetaSettings(resamples=0, baselines=False))


def test_stories_where_nr_and_the_overall_rating_disagree_most(sample_report: object) -> None:
    # By hand: NR ranks home-ref 1, home-grounded 2, space-grounded 3, space-offtopic 4, space-ref 5,
    # home-offtopic 6, space-generic 7, home-generic 8. The made-up 'overall' means are 4.33 for
    # home-ref, space-grounded and space-ref (ranks 1-3: 2 each), 3.67 for home-grounded (4),
    # 1.67 for the two generic stories (5.5) and 1.33 for the two off-topic ones (7.5).
    table = story_disagreements(sample_report.data, "NR", "overall")  # type: ignore[attr-defined]
    expected = [
        ("space-offtopic", -3.5),
        ("space-ref", 3.0),
        ("home-generic", 2.5),
        ("home-grounded", -2.0),
        ("home-offtopic", -1.5),  # |1.5| tie: by story id
        ("space-generic", 1.5),
        ("home-ref", -1.0),
        ("space-grounded", 1.0),
    ]
    assert list(zip(table["story_id"], table["rank_diff"], strict=True)) == expected
    assert table.loc[0, "human_rank"] == 7.5 and table.loc[0, "metric_rank"] == 4.0


def test_pairs_the_metric_orders_against_people(sample_report: object) -> None:
    pairs = pair_disagreements(sample_report.pairs, sample_report.data, "NR")  # type: ignore[attr-defined]
    # space-ref (4.33) beats space-offtopic (1.33) by 3.0, but NR gives 0.9479 < 0.9513
    assert (pairs.loc[0, "better"], pairs.loc[0, "worse"], pairs.loc[0, "order"]) == ("space-ref", "space-offtopic", "reversed")
    assert pairs.loc[0, "gap"] == pytest.approx(3.0) and list(pairs["gap"]) == sorted(pairs["gap"], reverse=True)


def test_ties_and_missing_values() -> None:
    data = pd.DataFrame(
        {"m": [0.5, 0.5, 0.1, None], "h": [1.0, 3.0, 2.0, 5.0], "system": "s", "sequence_id": "q"}, index=["a", "b", "c", "d"]
    )
    table = story_disagreements(data, "m", "h")
    assert set(table["story_id"]) == {"a", "b", "c"}  # d has no metric score
    assert dict(zip(table["story_id"], table["metric_rank"], strict=True)) == {"a": 1.5, "b": 1.5, "c": 3.0}
    pairs = pd.DataFrame({"sequence_id": ["q", "q"], "better": ["b", "c"], "worse": ["a", "a"], "gap": [2.0, 1.0]})
    out = pair_disagreements(pairs, data, "m")
    assert list(out["order"]) == ["tied", "reversed"] and list(out["better"]) == ["b", "c"]
    assert story_disagreements(data, "nope", "h").empty and pair_disagreements(pairs, data, "nope").empty
