"""The human-likeness profile: dHM's distance for any measure, each with its paired test against
the human stories, checked against a plain pandas computation and the paired tests of the product."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vst_core.analysis.paired_tests import paired_test
from vst_core.analysis.profile import human_likeness_profile


def table(seed: int = 0, sequences: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(sequences):
        base = rng.normal(0.7, 0.1)
        for system, shift, stories in (("human", 0.0, 2), ("close", 0.001, 1), ("far", -0.2, 1)):
            for k in range(stories):
                rows.append(
                    {
                        "story": f"{system}-{q}-{k}",
                        "sequence": f"q{q:02d}",
                        "system": system,
                        "NR": base + shift + rng.normal(0, 0.02),
                        "char spread": rng.uniform(0, 1),
                        "GROOVIST raw": rng.normal(0.5, 0.3),
                    }
                )
    return pd.DataFrame(rows)


def test_each_measure_against_the_human_stories_as_pandas_computes_it() -> None:
    t = table()
    found = human_likeness_profile(t, ["human"], ["NR", "char spread", "GROOVIST raw"], resamples=500, permutations=2000)
    assert set(found["system"]) == {"close", "far"} and len(found) == 6
    for row in found.itertuples(index=False):
        values = t.assign(v=np.tanh(t[row.measure]) if row.measure == "GROOVIST raw" else t[row.measure])
        per = values.groupby(["sequence", "system"])["v"].mean().unstack()
        d = (per[row.system] - per["human"]).sort_index().to_numpy()
        assert row.n == len(d) == 40
        assert row.difference == pytest.approx(d.mean()) and row.distance == pytest.approx(np.abs(d).mean())
        test = paired_test(d, row.measure, row.system, "human", resamples=500, permutations=2000)
        assert row.p == test.p and row.ci_low == pytest.approx(test.ci_low)
        assert row.distance_low is not None and row.distance_low <= row.distance <= row.distance_high
    far = found[(found["system"] == "far") & (found["measure"] == "NR")].iloc[0]
    close = found[(found["system"] == "close") & (found["measure"] == "NR")].iloc[0]
    assert far["p"] < 0.001 and far["difference"] < -0.15 and close["p"] > 0.01
    assert far["p_holm"] >= far["p"] and found["direction"].tolist()[:2] == ["higher", "none"]


def test_several_human_systems_are_one_side_and_small_n_has_no_interval() -> None:
    t = table(1, sequences=5)
    t["system"] = t["system"].replace({"human": "reference"})
    t.loc[t.index % 2 == 0, "system"] = t.loc[t.index % 2 == 0, "system"].replace({"reference": "human"})
    found = human_likeness_profile(t, ["human", "reference"], ["NR"], resamples=200, permutations=200)
    assert set(found["system"]) == {"close", "far"} and (found["n"] == 5).all()
    assert found["distance_low"].isna().all() and found["ci_low"].isna().all()  # 5 sequences: below the interval rule


def test_the_command_and_the_library_give_the_same_profile(tmp_path: Path) -> None:
    """``vst dhm --profile --csv`` writes and prints the profile ``vst.human_likeness_profile`` gives."""
    import io
    import json

    import vst_core as vst
    from vst_core.cli import main

    src = tmp_path / "long.csv"
    rows = ["story_id,metric,value,system"]
    for k in range(12):
        rows += [f"s{k},G,{0.1 * k},reference", f"s{k},C,0.8,reference", f"s{k},R,{0.9 - 0.01 * k},reference"]
        rows += [f"s{k},G,{0.05 * k},model", f"s{k},C,{0.5 + 0.02 * k},model", f"s{k},R,0.7,model"]
    src.write_text("\n".join(rows) + "\n")
    scores = tmp_path / "imported.jsonl"
    assert main(["import-scores", str(src), "--long", "--out", str(scores)]) == 0
    out = tmp_path / "dhm.json"
    assert main(["dhm", str(scores), "--out", str(out), "--profile", "--csv", str(tmp_path / "csv"), "--pairing", "story"]) == 0
    records, _ = vst.read_scores(scores)
    want = vst.human_likeness_profile(records)
    written = pd.read_csv(tmp_path / "csv" / "profile.csv").drop(columns=["signature_id", "provenance"])
    pd.testing.assert_frame_equal(written, pd.read_csv(io.StringIO(want.to_csv(index=False))), check_dtype=False)
    assert [r["measure"] for r in json.loads(out.read_text())["profile"]] == list(want["measure"])


def test_the_default_measures_hold_groovist_once() -> None:
    """GROOVIST is tanh of its raw score, which is what dHM's G distance reads: with both columns
    there, the default profile shows one GROOVIST row, not the same numbers twice."""
    import pandas as pd

    from vst_core.analysis.profile import human_likeness_profile

    raw = [0.2, 0.9, 0.4, 1.3]
    t = pd.DataFrame(
        {"story": list("abcd"), "sequence": ["q", "q", "r", "r"], "system": ["human", "m"] * 2, "GROOVIST raw": raw}
    ).assign(GROOVIST=np.tanh(raw))
    found = human_likeness_profile(t, ["human"], resamples=0, permutations=0)
    assert list(found["measure"]) == ["GROOVIST"]
