"""dHM: hand-computed distances, the paper's numbers from the authors' released VIST scores
(their dHM.py transcribed here), imports of released and long files, the command line."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, ParityLog

from vst_core.analysis.dhm import dhm_report, pair, summarise
from vst_core.analysis.dhm_aspects import Triple
from vst_core.cli import main
from vst_core.data import load_records
from vst_core.data.importing import imported_records, read_long, read_released

DHM = ROOT / "tests" / "data" / "dhm"


def test_distances_on_a_hand_computed_pair() -> None:
    human = Triple("h", "seq", "reference", 1.0, 0.8, 0.9)
    model = Triple("m", "seq", "model", 0.0, 0.5, 0.95)
    (d,), missing = pair([model], [human])
    assert d.d["G"] == pytest.approx(math.tanh(1.0))  # |tanh(1) − tanh(0)|
    assert d.d["C"] == pytest.approx(0.3) and d.d["R"] == pytest.approx(0.05)
    assert d.d["dHM"] == pytest.approx((math.tanh(1.0) + 0.3 + 0.05) / 3)
    assert d.signed["C"] == pytest.approx(-0.3) and d.signed["R"] == pytest.approx(0.05)  # less coherent, less repetitive
    assert missing == {
        "system story without all three scores": 0,
        "no human story shares its sequence": 0,
        "every human story sharing its sequence lacks one of the three scores": 0,
    }


def test_sequence_pairing_averages_over_the_human_stories_and_counts_what_is_left_out() -> None:
    humans = [Triple("h1", "s", "reference", 0.0, 0.2, 0.5), Triple("h2", "s", "reference", 0.0, 0.6, 0.5)]
    models = [Triple("m", "s", "x", 0.0, 0.5, 0.5), Triple("n", "s", "x", 0.0, None, 0.5), Triple("o", "t", "x", 0.0, 0.5, 0.5)]
    found, missing = pair(models, humans, "sequence")
    assert [d.story_id for d in found] == ["m"] and found[0].humans == ("h1", "h2")
    assert found[0].d["C"] == pytest.approx((0.3 + 0.1) / 2)
    assert missing == {
        "system story without all three scores": 1,
        "no human story shares its sequence": 1,  # o: sequence t has no human story at all
        "every human story sharing its sequence lacks one of the three scores": 0,
    }
    lacking = [Triple("h3", "t", "reference", 0.0, None, 0.5)]
    assert pair(models[2:], lacking, "sequence")[1]["every human story sharing its sequence lacks one of the three scores"] == 1
    summary = summarise("x", found, missing, resamples=0)
    assert summary.n == 1 and summary.interval["dHM"] is None and summary.missing == missing


def _released(name: str, metric: str) -> Path:
    return DHM / f"vist_{name}_{metric}"


def _authors_dhm(tmp_path: Path) -> dict[str, float]:
    """The authors' dHM.py on their VIST release, transcribed: tanh of G, common story ids, means."""

    def g(path: Path) -> dict[str, float]:
        data = json.loads(gzip.decompress(path.read_bytes()))
        return {k: float(np.tanh(float(v))) for k, v in data.items() if v != "" and not math.isnan(float(v))}

    def cr(path: Path) -> dict[str, float]:
        rows = list(csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode())))[1:]
        return {r[0].strip(): float(r[1].strip()) for r in rows if not math.isnan(float(r[1].strip()))}

    h = [g(_released("gt_test", "G.json.gz")), cr(_released("gt_test", "C.csv.gz")), cr(_released("gt_test", "R.csv.gz"))]
    m = [
        g(_released("llava_vc_p3", "G.json.gz")),
        cr(_released("llava_vc_p3", "C.csv.gz")),
        cr(_released("llava_vc_p3", "R.csv.gz")),
    ]
    common = set.intersection(*(set(x) for x in h + m))
    d = [[abs(h[k][sid] - m[k][sid]) for sid in common] for k in range(3)]
    means = [float(np.mean(x)) for x in d]
    return {
        "G": means[0],
        "C": means[1],
        "R": means[2],
        "dHM": float(np.mean([(a + b + c) / 3 for a, b, c in zip(*d, strict=True)])),
        "N": len(common),
    }


def _import(tmp_path: Path) -> Path:
    out = tmp_path / "imported.jsonl"
    for name, system in (("gt_test", "reference"), ("llava_vc_p3", "llava")):
        files = []
        for metric in ("G.json", "C.csv", "R.csv"):
            plain = tmp_path / f"{name}_{metric}"
            plain.write_bytes(gzip.decompress(_released(name, metric + ".gz").read_bytes()))
            files.append(str(plain))
        assert main(["import-scores", *files, "--system", system, "--out", str(out), "--variant", "dHM release"]) == 0
    return out


@pytest.mark.slow  # 15,000 records
@pytest.mark.parity
def test_the_papers_numbers_from_the_released_vist_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], parity: ParityLog
) -> None:
    want = _authors_dhm(tmp_path)
    imported = _import(tmp_path)
    report_file = tmp_path / "dhm.json"
    assert (
        main(
            [
                "dhm",
                str(imported),
                "--out",
                str(report_file),
                "--pairing",
                "story",
                "--resamples",
                "200",
                "--csv",
                str(tmp_path / "csv"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "0.2079  0.1456  0.1193  0.1576" in printed  # the four numbers dHM.py prints for LLaVA on VIST
    (row,) = json.loads(report_file.read_text())["systems"]
    assert row["N"] == want["N"] == 4897
    for ours, theirs in (("d_G", "G"), ("d_C", "C"), ("d_R", "R"), ("dHM", "dHM")):
        assert row[ours] == pytest.approx(want[theirs], abs=1e-12)
        lo, hi = row[f"{ours} interval"]
        assert lo <= row[ours] <= hi
    assert row["left out"] == {
        "system story without all three scores": 2,
        "every human story sharing its story id lacks one of the three scores": 156,  # every LLaVA story has a human one
    }
    assert (tmp_path / "csv" / "distances.csv").read_text().count(
        "\n"
    ) == 4897 + 1  # the header and a row a story (what made them: the provenance column)
    worst = max(abs(row[ours] - want[theirs]) for ours, theirs in (("d_G", "G"), ("d_C", "C"), ("d_R", "R"), ("dHM", "dHM")))
    parity.record(
        metric="dHM (`vst dhm --pairing story`)",
        reference="akskuchi/dHM-visual-storytelling `dHM.py` (transcribed) on its released VIST scores",
        compared="LLaVA against human on VIST test: d_G, d_C, d_R, dHM; N and the stories left out",
        figure=f"N 4,897 = theirs; 4/4 distances, max |Δ| {worst:.0e}; prints the paper's 0.2079 0.1456 0.1193 0.1576",
    )


def test_imported_records_are_signed_with_the_file_and_the_variant(tmp_path: Path) -> None:
    src = tmp_path / "m_G.json"
    src.write_text(json.dumps({"a": 0.5, "b": "", "c": "nan"}))
    values, problems = read_released(src, "grounding")
    assert values == {"a": 0.5} and len(problems) == 2
    (record,) = imported_records({("m", "a"): {"grounding": 0.5}}, src, {"grounding": "dHM release"})
    assert (
        record.metrics.get("grounding") is not None
        and record.metrics["grounding"].unbounded == 0.5
        and record.metrics["grounding"].score == pytest.approx(math.tanh(0.5))
    )
    imported = record.signature["imported"]
    assert (
        imported["file"] == "m_G.json" and imported["variants"] == {"grounding": "dHM release"} and len(imported["sha256"]) == 64
    )
    out = tmp_path / "s.jsonl"
    assert main(["import-scores", str(src), "--system", "m", "--out", str(out)]) == 0
    back, problems = load_records(out)
    assert problems == [] and back[0].metrics.get("grounding") is not None and back[0].metrics["grounding"].theta is None


def test_a_long_csv_imports_several_systems_and_metrics(tmp_path: Path) -> None:
    src = tmp_path / "long.csv"
    src.write_text(
        "story_id,metric,value,system\ns1,G,0.4,human\ns1,C,0.7,human\ns1,R,0.9,human\n"
        "s1,grounding,0.1,m\ns1,coherence,0.5,m\ns1,redundancy,0.8,m\ns2,mystery,1,m\n"
    )
    values, problems = read_long(src)
    assert values[("m", "s1")] == {"grounding": 0.1, "coherence": 0.5, "redundancy": 0.8} and len(problems) == 1
    report = dhm_report(imported_records(values, src, {"G": "x"}), human_systems=("human",), resamples=0)
    (system,) = report.systems
    assert system.system == "m" and system.n == 1
    assert system.mean["dHM"] == pytest.approx((abs(math.tanh(0.4) - math.tanh(0.1)) + 0.2 + 0.1) / 3)


def test_the_rubric_judge_as_a_fourth_distance() -> None:
    """d_J = |J_h − J_s| on (J − 1) / 4, added only when asked; the three paper distances are unchanged."""
    import pandas as pd

    from vst_core.analysis.dhm import dhm_report
    from vst_core.analysis.dhm_aspects import available_aspects

    table = pd.DataFrame(
        {
            "story": ["1", "1", "2", "2"],
            "sequence": ["a", "a", "b", "b"],
            "system": ["reference", "m", "reference", "m"],
            "GROOVIST raw": [0.5, 0.1, 0.2, 0.2],
            "coherence": [0.9, 0.5, 0.8, 0.7],
            "NR": [1.0, 0.8, 0.9, 0.9],
            "judge overall": [4.0, 2.0, 5.0, 4.0],
        }
    )
    assert available_aspects(table) == ("G", "C", "R") and available_aspects(table, extra=True) == ("G", "C", "R", "J")
    paper = dhm_report(table, resamples=0)
    four = dhm_report(table, resamples=0, aspects=("G", "C", "R", "J"))
    m3, m4 = paper.systems[0].mean, four.systems[0].mean
    assert m4["J"] == pytest.approx(((4 - 2) / 4 + (5 - 4) / 4) / 2)
    assert m4["G"] == pytest.approx(m3["G"]) and m4["R"] == pytest.approx(m3["R"])
    assert m4["dHM"] == pytest.approx((m3["G"] + m3["C"] + m3["R"] + m4["J"]) / 4)
    assert four.systems[0].signed["J"] == pytest.approx(((2 - 4) / 4 + (4 - 5) / 4) / 2)


def test_the_commands_csv_is_the_reports_own(tmp_path: Path) -> None:
    """``vst dhm --csv`` writes :meth:`DHMReport.csv` and :meth:`DHMReport.systems_csv` (one
    writer for the command, the notebook and the dashboard); both read with a plain CSV reader."""
    import pandas as pd

    src = tmp_path / "long.csv"
    rows = ["story_id,metric,value,system"]
    for k in range(12):
        for system, shift in (("human", 0.0), ("m", 0.1)):
            rows += [
                f"s{k},G,{0.3 + 0.01 * k + shift},{system}",
                f"s{k},C,{0.5 + shift},{system}",
                f"s{k},R,{0.9 - shift},{system}",
            ]
    src.write_text("\n".join(rows) + "\n")
    scores = tmp_path / "imported.jsonl"
    assert main(["import-scores", str(src), "--long", "--out", str(scores)]) == 0
    assert main(["dhm", str(scores), "--human", "human", "--csv", str(tmp_path / "csv"), "--out", str(tmp_path / "d.json")]) == 0
    report = dhm_report(load_records(scores)[0], human_systems=("human",))  # signed without the command's file stamp
    for name, text in (("distances.csv", report.csv()), ("systems.csv", report.systems_csv())):
        written = pd.read_csv(tmp_path / "csv" / name)
        same = pd.read_csv(io.StringIO(text))
        stamp = ["signature_id", "provenance"]  # the command's signature names its file; the report's does not
        pd.testing.assert_frame_equal(written.drop(columns=stamp), same.drop(columns=stamp))
    distances = pd.read_csv(tmp_path / "csv" / "distances.csv")
    assert list(distances.columns[:4]) == ["system", "story_id", "sequence_id", "humans"] and len(distances) == 12
    assert list(distances.columns[-2:]) == ["signature_id", "provenance"] and distances["signature_id"].notna().all()
    assert str(distances["provenance"].iat[0]).startswith(f"dHM sig {distances['signature_id'].iat[0]}")
