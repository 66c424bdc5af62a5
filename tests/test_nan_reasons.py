"""Every number meta-evaluation leaves out says why: no NaN without its reason, over generated
judgements (constant ratings, one rater, one story rated twice, raters who share no story)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.ratings import inter_rater

#: (table, the column of the number, the column of its reason)
NUMBERS = [
    ("agreement_with_humans", "value", "undefined"),
    ("system_level", "value", "undefined"),
    ("pairwise_accuracy", "accuracy", "undefined"),
    ("bins", "value", "undefined"),
    ("error_correlations", "r_pb", "undefined"),
]


def missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


ratings = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from("abc"), st.sampled_from(["overall", "focus"]), st.sampled_from([1, 2, 3, 3, 5])),
    min_size=1,
    max_size=40,
)


def judgements_csv(rows: list[tuple[int, str, str, int]], with_rater: bool) -> bytes:
    head = "story_id,system,rater,aspect,value\n" if with_rater else "story_id,system,aspect,value\n"
    body = "".join(f"s{s},{'m' if s % 2 else 'n'}," + (f"{r}," if with_rater else "") + f"{a},{v}\n" for s, r, a, v in rows)
    return (head + body).encode()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ratings, st.booleans(), st.lists(st.sampled_from([0.2, 0.5, 0.5, 0.9]), min_size=6, max_size=6))
def test_every_number_left_out_has_its_reason(rows: list[tuple[int, str, str, int]], with_rater: bool, nr: list[float]) -> None:
    judgements = read_judgements(judgements_csv(rows, with_rater), layout="long")
    table = pd.DataFrame(
        {
            "story": [f"s{k}" for k in range(6)],
            "sequence": [f"q{k // 2}" for k in range(6)],
            "system": ["m" if k % 2 else "n" for k in range(6)],
            "NR": nr,
            "coherence": np.linspace(0, 1, 6),
            "sentences": 5,
            "text": "a b c",
        }
    )
    report = run_meta_eval(table, judgements, MetaSettings(resamples=0, baselines=False), signature_ids=["x"])
    tables = report.tables()
    for name, number, reason in NUMBERS:
        frame = tables[name]
        for row in frame.to_dict(orient="records"):
            if missing(row[number]):
                assert isinstance(row[reason], str) and row[reason], (name, row)
    for row in tables["inter_rater"].to_dict(orient="records"):
        if missing(row["alpha"]):
            assert row["note"].startswith("undefined: "), row
        else:
            assert math.isfinite(row["alpha"])


def test_alpha_of_one_story_rated_twice_alike_is_undefined_with_its_reason() -> None:
    """Only stories rated by two raters enter α; when their ratings agree there is no expected
    disagreement and α is 0/0."""
    judgements = read_judgements(b"story_id,rater,overall\ns0,a,5\ns0,b,5\ns1,c,3\n")
    row = inter_rater(judgements).iloc[0]
    assert row["alpha"] is None and row["note"].startswith("undefined: every rating of the stories rated by two")
