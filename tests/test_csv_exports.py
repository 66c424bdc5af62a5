"""Every CSV the CLI and the dashboard write is safe to open in a spreadsheet (the OWASP rule)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.data.csv_out import FORMULA_START, NUMBER, frame_csv, safe_cell

HOSTILE = ['=HYPERLINK("http://x.test/?"&A1,"go")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1"]


def cells(text: str) -> list[list[str]]:
    """The rows of a CSV written by the product."""
    return list(csv.reader(io.StringIO(text, newline="")))


def evaluated(cell: str) -> bool:
    """Would a spreadsheet take this cell as a formula?"""
    return cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("=+-@\t\r\n,\"'abc1.e "), max_size=12), min_size=1, max_size=8))
def test_no_text_cell_is_evaluated_and_each_reads_back(values: list[str]) -> None:
    frame = pd.DataFrame({"story": values, "score": np.linspace(-1, 1, len(values))})
    rows = cells(frame_csv(frame, ["=1+1 a description\non a second line"]))
    assert rows[0] == ["story", "score", "provenance"]
    for k, ((story, score, about), value) in enumerate(zip(rows[1:], values, strict=True)):
        assert not evaluated(story) and not evaluated(score) and not evaluated(about)
        assert about == ("'=1+1 a description on a second line" if k == 0 else "")  # what produced it, once, as text
        assert (story[1:] if story != value else story) == value  # the apostrophe is the only change
    assert [float(r[1]) for r in rows[1:]] == list(np.linspace(-1, 1, len(values)))  # numbers unchanged


def test_numbers_as_text_are_left_as_numbers() -> None:
    assert [safe_cell(v) for v in ("-0.5", "+3", "1e-3", "-.5")] == ["-0.5", "+3", "1e-3", "-.5"]
    assert safe_cell("-0.12 [-0.2, 0.1] *") == "'-0.12 [-0.2, 0.1] *"  # a correlation cell is text
    assert safe_cell(-3) == -3 and safe_cell(None) is None


def hostile_scores(tmp_path: Path) -> Path:
    """Scores of stories whose ids and system names are spreadsheet formulas (`vst score`)."""
    from vst_core.cli import main

    rng = np.random.default_rng(5)
    words = "we went to the park and the dog ran after a ball then we ate cake at home".split()
    lines = []
    for k in range(12):
        sentences = [" ".join(rng.choice(words, 6)) + "." for _ in range(3)]
        for system in ("reference", HOSTILE[1]):
            lines.append(json.dumps({"story_id": f"{HOSTILE[k % len(HOSTILE)]}{k}", "system": system, "sentences": sentences}))
    stories = tmp_path / "stories.jsonl"
    stories.write_text("\n".join(lines) + "\n")
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(stories), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    return scores


@pytest.mark.slow  # meta-eval with baselines and resamples; safe_cell is property-tested above
def test_meta_eval_and_dhm_csv_tables_carry_no_formula(tmp_path: Path) -> None:
    from vst_core.cli import main

    scores = hostile_scores(tmp_path)
    human = tmp_path / "human.csv"
    rng = np.random.default_rng(1)
    rows = [
        [f"{HOSTILE[k % len(HOSTILE)]}{k}", system, f"{rng.uniform(1, 5):.3f}"]
        for k in range(12)
        for system in ("reference", HOSTILE[1])
    ]
    with human.open("w", newline="") as fh:
        csv.writer(fh).writerows([["story_id", "system", "overall"], *rows])
    meta = tmp_path / "meta"
    assert main(["meta-eval", str(scores), str(human), "--out", str(tmp_path / "r.json"), "--csv", str(meta)]) == 0
    dhm = tmp_path / "dhm"
    assert main(["dhm", str(scores), "--out", str(tmp_path / "d.json"), "--csv", str(dhm), "--resamples", "0"]) == 0
    written = [*meta.glob("*.csv"), *dhm.glob("*.csv")]
    assert len(written) >= 5
    seen = [cell for path in written for row in cells(path.read_bytes().decode("utf-8")) for cell in row]
    assert [c for c in seen if evaluated(c)] == []
    assert any(c == "'" + HOSTILE[0] + "0" for c in seen)  # the ids are there, neutralised


def test_dashboard_exports_carry_no_formula() -> None:
    from vst_core.config import Settings
    from vst_core.viz.tables import export_csv

    table = pd.DataFrame({"story": HOSTILE, "system": ["@m"] * len(HOSTILE), "NR": np.arange(len(HOSTILE)) - 2.5})
    text = export_csv(table, Settings())
    header = next(csv.reader(io.StringIO(text, newline="")))
    assert header[-2:] == ["signature_id", "provenance"] and "signature" in cells(text)[1][-1]
    assert [c for row in cells(text) for c in row if evaluated(c)] == []


def test_each_row_names_its_signature_by_id_and_the_file_holds_it_whole_once() -> None:
    """Every row of an exported table carries the id of the signature that produced it, and the
    signature itself (the settings, the weights' and inputs' digests) is in the file once, in the
    first row's provenance cell; a plain ``pandas.read_csv`` reads it. 112 rows were 100 kB when
    every row repeated the whole signature."""
    from vst_core.config import Settings
    from vst_core.signature import signature
    from vst_core.viz.tables import export_csv

    sig = signature(Settings(), {"stories": "0" * 16})
    table = pd.DataFrame({"story": [f"s{k}" for k in range(112)], "system": "m", "NR": np.linspace(0, 1, 112)})
    text = export_csv(table, Settings(), {"stories": "0" * 16})
    read = pd.read_csv(io.StringIO(text), dtype={"signature_id": str})
    assert (read["signature_id"] == sig["id"]).all() and len(read) == 112
    whole = json.dumps(sig, sort_keys=True)
    assert text.count('""settings""') == 1 and read["provenance"].notna().sum() == 1  # the JSON once (quoted as CSV)
    assert json.loads(str(read["provenance"].iat[0]).split(" | signature ", 1)[1]) == json.loads(whole)
    assert len(text.encode()) < 12_000 + len(whole), len(text.encode())


#: The product's code: only csv_out writes a CSV (through pandas, its cells made safe first).
PRODUCT = ["app.py", "app_pages", "dashboard", "vst_core"]


def test_no_module_but_csv_out_writes_a_csv_itself() -> None:
    """A ``csv.writer``, ``csv.DictWriter`` or ``to_csv`` anywhere else would write cells unescaped."""
    from conftest import ROOT

    writers = re.compile(r"\.to_csv\(|\bcsv\.(?:writer|DictWriter)\(|from csv import [^\n]*\b(?:writer|DictWriter)\b")
    files = [p for name in PRODUCT for p in ([ROOT / name] if name.endswith(".py") else (ROOT / name).rglob("*.py"))]
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in files
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if writers.search(line)
    ]
    assert found and [f for f in found if not f.startswith("vst_core/data/csv_out.py:")] == [], found


def test_a_trained_models_held_out_predictions_carry_no_formula(tmp_path: Path) -> None:
    """``vst train-vrank`` writes its held-out pairs (``predictions.csv``) through the card: story
    keys and sequence ids that are formulas are written as text, the numbers as they are, and the
    card's figures still come from them."""
    from vst_core.learned.card import PREDICTION_COLUMNS, read_card, write_card

    n = len(HOSTILE)
    predictions = pd.DataFrame(
        {
            "sequence_id": [f"{h}s" for h in HOSTILE],
            "better": [f"{h} (a)" for h in HOSTILE],
            "worse": [f"{h} (b)" for h in reversed(HOSTILE)],
            "gap": np.linspace(0.5, 2.0, n),
            "agreement": [1.0] * n,
            "forward": np.linspace(-1.0, 1.0, n),
            "backward": np.linspace(1.0, -1.0, n),
            "margin": np.linspace(-0.5, 0.5, n),
        }
    )
    write_card(tmp_path, {"kind": "vrank"}, predictions)
    rows = cells((tmp_path / "predictions.csv").read_bytes().decode("utf-8"))
    assert rows[0] == PREDICTION_COLUMNS and len(rows) == n + 1
    assert [c for row in rows for c in row if evaluated(c)] == []
    assert [r[1] for r in rows[1:]] == ["'" + h + " (a)" for h in HOSTILE]  # the apostrophe is the only change
    assert [float(r[7]) for r in rows[1:]] == list(predictions["margin"])
    assert read_card(tmp_path)["held_out"][0]["n"] == n


@pytest.mark.slow  # the rubric judge asked over HTTP for every story, aspect and paraphrase
def test_judge_bias_out_carries_no_formula(tmp_path: Path) -> None:
    """A rubric whose aspects are named as formulas: ``vst judge-bias --out`` writes them as text."""
    from conftest import ROOT, SAMPLE

    from vst_core.cli import main
    from vst_core.metrics.judge.chat_server import ChatServer, completion, synthetic_logprobs

    rubric = json.loads((ROOT / "vst_core" / "metrics" / "judge" / "rubric_v1.json").read_text(encoding="utf-8"))
    rubric["aspects"].update({h: ["Is the story good?", "Is the story well told?"] for h in HOSTILE})
    template, out = tmp_path / "rubric.json", tmp_path / "bias.csv"
    template.write_text(json.dumps(rubric), encoding="utf-8")
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as server:
        args = ["judge-bias", str(SAMPLE), "--judge-endpoint", server.url, "--judge-served-model", "judge"]
        assert main([*args, "--judge-template", str(template), "--cache-dir", str(tmp_path), "--out", str(out)]) == 0
    rows = cells(out.read_bytes().decode("utf-8"))
    assert rows[0] == ["bias", "scope", "measure", "value", "n"]
    assert [c for row in rows for c in row if evaluated(c)] == []
    assert {"'" + h for h in HOSTILE} <= {r[1] for r in rows[1:]}  # every aspect is there, as text


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_an_export_gets_the_mode_the_umask_gives(tmp_path: Path, mask: int) -> None:
    """A file written whole (every export: CSV, reports, tables, a trained model's predictions) has
    the mode a file opened for writing gets under the umask, as the scores file has, not the
    private 0600 of its temporary file (colleagues on a shared server could not open it)."""
    import os

    import pandas as pd

    from vst_core.data.csv_out import write_csv

    before = os.umask(mask)
    try:
        write_csv(tmp_path / "t.csv", pd.DataFrame({"a": [1]}))
    finally:
        os.umask(before)
    assert (tmp_path / "t.csv").stat().st_mode & 0o777 == 0o666 & ~mask


def test_the_leaderboard_csv_says_what_the_page_shows() -> None:
    """The Leaderboard's CSV names its clusters by the letters the page shows (A the best, not 1)
    and its columns by the page's words (N, 95% low, 95% high); the numbers stay numbers."""
    import vst_core as vst
    from vst_core.viz.report import leaderboard_csv

    rng = np.random.default_rng(0)
    rows = [
        {"story": f"{s}{k}", "sequence": f"q{k}", "system": s, "NR": base + rng.normal(0, 0.02)}
        for k in range(20)
        for s, base in (("a", 0.9), ("b", 0.5), ("c", 0.5))
    ]
    board = vst.compare(pd.DataFrame(rows), resamples=100, permutations=200)
    table = pd.read_csv(io.StringIO(leaderboard_csv(board)["leaderboard.csv"]))
    assert list(table.columns) == [
        "metric", "direction", "rank", "cluster", "system", "N", "mean", "95% low", "95% high", "small N",
        "signature_id", "provenance",
    ]  # fmt: skip
    assert table.set_index("system")["cluster"].to_dict() == {"a": "A", "b": "B", "c": "B"}
    assert table["mean"].dtype == float and table["95% low"].dtype == float and table["N"].tolist() == [20] * 3
    pairs = pd.read_csv(io.StringIO(leaderboard_csv(board)["pairwise.csv"]))
    assert len(pairs) == 3 and (pairs["signature_id"] == board.signature["id"]).all()
