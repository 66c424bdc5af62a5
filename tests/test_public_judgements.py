"""The field's two public human-judgement layouts read directly: VIST-Edit ``Human_eval`` files
(ratings) and VHED's CSV (story pairs). Every file here is hand-written in the exact layout (header,
delimiter, line ends, trailing fields); no row comes from the released data, whose licence forbids
copying it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from vst_core.analysis.meta_eval import (
    JudgementsError,
    MetaSettings,
    aggregate,
    detect_layout,
    read_judgements,
    read_vhed,
    read_vist_edit,
    run_meta_eval,
    vhed_story_id,
    vist_edit_story_id,
)
from vst_core.cli import main
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores

EXAMPLES = int(os.environ.get("VST_HYPOTHESIS_EXAMPLES", "150"))

VIST_EDIT_HEADER = "team,story_id,album_id,workerId,focused,coherent,share,human,grounded,detailed"
S1 = "101-102-103-104-105"
S2 = "201-202-203-204-205"
R1 = "00000000-0000-4000-8000-00000000000a"
R2 = "00000000-0000-4000-8000-00000000000b"
#: Made-up ratings: team, photo sequence, album (as a spreadsheet left it), rater, six aspects.
VIST_EDIT_ROWS = [
    f"auto-gen,{S1},7.22E+16,{R1},4,4,5,4,4,4",
    f"auto-gen,{S1},7.22E+16,{R2},2,3,2,2,3,2",
    f"human-edit,{S1},7.22E+16,{R1},5,5,5,5,5,5",
    f"human-edit,{S1},7.22E+16,{R2},4,4,3,4,4,4",
    f"lstm-sort-text,{S1},7.22E+16,{R1},3,3,3,3,3,3",
    f"auto-gen,{S2},649651,{R1},1,2,1,2,1,2",
    f"human-edit,{S2},649651,{R2},5,4,5,4,5,4",
]


def arel_bytes(rows: list[str] = VIST_EDIT_ROWS) -> bytes:
    """AREL.csv's shape: six empty fields after the header and every row, CRLF, no final newline."""
    return "\r\n".join(line + ",,,,,," for line in [VIST_EDIT_HEADER, *rows]).encode()


def glac_bytes(rows: list[str] = VIST_EDIT_ROWS) -> bytes:
    """GLAC.csv's shape: no trailing fields, CRLF, no final newline."""
    return "\r\n".join([VIST_EDIT_HEADER, *rows]).encode()


VHED_HEADER = "sent1,sent2,label,story_id,model_base,model_comp,agreement,img_seq,avg_rank_base,avg_rank_comp,order,rank_norm"
#: Made-up pairs: better/worse by the lower average rank; gap = |rank_norm|.
VHED_ROWS = [
    "the dog ran .,we ate cake .,-1.2,s1,reference,kg-story,4,\"['11', '12', '13', '14', '15']\",1.4,2.6,5,-0.24",
    "the dog ran .,the sun set .,1.0,s1,reference,pr-vist,3,\"['11', '12', '13', '14', '15']\",2.4,1.4,5,0.2",
    "we ate cake .,the sun set .,0.0,s1,kg-story,pr-vist,3,\"['11', '12', '13', '14', '15']\",2.0,2.0,5,0.0",
    "a big wave .,a red ball .,-2.0,s2,reference,kg-story,5,\"['21', '22', '23', '24', '25']\",1.0,3.0,5,-0.4",
]


def vhed_bytes(rows: list[str] = VHED_ROWS) -> bytes:
    return ("\n".join([VHED_HEADER, *rows]) + "\n").encode()


# ------------------------------------------------------------------------------------ VIST-Edit


def test_a_vist_edit_file_reads_into_ratings_under_sequence_and_system(tmp_path: Path) -> None:
    path = tmp_path / "AREL.csv"
    path.write_bytes(arel_bytes())
    j = read_judgements(path)
    assert j.layout == "vist-edit"
    assert j.aspects == ["focused", "coherent", "share", "human", "grounded", "detailed"]
    assert len(j.ratings) == 7 * 6
    assert set(j.ratings["story_id"]) == {
        f"{S1}:AREL",
        f"{S1}:AREL-human-edit",
        f"{S1}:AREL-lstm-sort-text",
        f"{S2}:AREL",
        f"{S2}:AREL-human-edit",
    }
    row = j.ratings[(j.ratings["story_id"] == f"{S1}:AREL-human-edit") & (j.ratings["rater"] == R2)]
    assert dict(zip(row["aspect"], row["value"], strict=True)) == {
        "focused": 4,
        "coherent": 4,
        "share": 3,
        "human": 4,
        "grounded": 4,
        "detailed": 4,
    }
    assert set(row["system"]) == {"AREL-human-edit"}
    means = aggregate(j)
    assert means.loc[f"{S1}:AREL", "focused"] == 3.0 and means.loc[f"{S1}:AREL-human-edit", "share"] == 4.0
    assert j.problems == ["6 empty column(s) without a name (a trailing comma?); ignored"]
    assert read_vist_edit(path).ratings.equals(j.ratings)
    assert vist_edit_story_id(S1, "AREL", "human-edit") == (f"{S1}:AREL-human-edit", "AREL-human-edit")


def test_the_model_comes_from_the_file_name_or_the_keyword(tmp_path: Path) -> None:
    glac = tmp_path / "GLAC.csv"
    glac.write_bytes(glac_bytes([r.replace("lstm-sort-text", "lstm-text") for r in VIST_EDIT_ROWS]))
    j = read_judgements(glac)
    assert j.layout == "vist-edit" and not j.problems
    assert set(j.ratings["system"]) == {"GLAC", "GLAC-human-edit", "GLAC-lstm-text"}
    with glac.open("rb") as stream:  # an open file keeps its name
        assert set(read_judgements(stream).ratings["system"]) == set(j.ratings["system"])
    with pytest.raises(JudgementsError, match="does not say which system generated its stories"):
        read_judgements(glac_bytes())
    named = read_judgements(glac_bytes(), model="AREL")
    assert f"{S2}:AREL-human-edit" in named.story_ids
    renamed = tmp_path / "ratings.csv"
    renamed.write_bytes(glac_bytes())
    with pytest.raises(JudgementsError, match="model='AREL'"):
        read_judgements(renamed)


def test_odd_vist_edit_rows_are_reported(tmp_path: Path) -> None:
    rows = [
        *VIST_EDIT_ROWS,
        f"auto-gen,{S2},649651,{R2},7,x,,3,3,3",  # out of range, text, empty
        f",{S2},649651,{R2},3,3,3,3,3,3",  # no team
        f"gpt-edit,{S2},649651,{R2},3,3,3,3,3,3",  # a team the release does not have
        VIST_EDIT_ROWS[0],  # a duplicate
    ]
    j = read_judgements(arel_bytes(rows), layout="vist-edit", model="AREL", aspects=["share", "focused", "coherent"])
    assert j.aspects == ["share", "focused", "coherent"]
    text = " | ".join(j.problems)
    assert "outside 1-5" in text and "non-numeric" in text and "missing value" in text
    assert "without a team or story_id" in text and "'gpt-edit'" in text and "duplicated row" in text
    assert f"{S2}:AREL-gpt-edit" in j.story_ids
    with pytest.raises(JudgementsError, match="aspect\\(s\\) 'overall' not in the VIST-Edit file"):
        read_judgements(arel_bytes(), layout="vist-edit", model="AREL", aspects=["overall"])


# ------------------------------------------------------------------------------------ VHED


def test_a_vhed_file_reads_into_pairs_with_model_ids() -> None:
    j = read_judgements(vhed_bytes())
    assert j.layout == "vhed" and j.ratings.empty
    pairs = j.pairs
    assert list(pairs["better"]) == ["s1:reference", "s1:pr-vist", "s2:reference"]
    assert list(pairs["worse"]) == ["s1:kg-story", "s1:reference", "s2:kg-story"]
    assert list(pairs["gap"]) == [0.24, 0.2, 0.4]
    assert list(pairs["agreement"]) == [4, 3, 5]
    assert list(pairs["sequence_id"]) == ["11-12-13-14-15", "11-12-13-14-15", "21-22-23-24-25"]
    assert any("equal average ranks" in p for p in j.problems)
    assert read_vhed(vhed_bytes()).pairs.equals(pairs)
    assert vhed_story_id(" s1", "kg-story ") == "s1:kg-story"


def test_odd_vhed_rows_are_reported() -> None:
    rows = [
        *VHED_ROWS,
        "x,y,0,s3,kg-story,kg-story,3,[],1.0,2.0,5,0.1",  # a model against itself
        "we ate pie .,z,0,s1,kg-story,pr-vist,4,[],1.0,2.0,5,0.1",  # s1:kg-story with another text
        "x,y,0,,kg-story,pr-vist,4,[],1.0,2.0,5,0.1",  # no story_id
        "x,y,0,s4,kg-story,pr-vist,4,[],one,2.0,5,0.1",  # a rank that is text
    ]
    j = read_judgements(vhed_bytes(rows))
    text = " | ".join(j.problems)
    assert "a model with itself" in text and "different texts" in text and "'s1:kg-story'" in text
    assert "without a story_id" in text and "non-numeric" in text
    assert len(j.pairs) == 4 and j.pairs["sequence_id"].iloc[-1] == "s1"  # an empty img_seq falls back on story_id
    no_gap = read_judgements(b"story_id,model_base,model_comp,avg_rank_base,avg_rank_comp\ns1,a,b,1.5,2.25\n")
    assert no_gap.layout == "vhed" and list(no_gap.pairs["gap"]) == [0.75]
    assert any("no rank_norm column" in p for p in no_gap.problems)


# ------------------------------------------------------------------------------------ layouts


@pytest.mark.parametrize(
    ("header", "layout"),
    [
        (VHED_HEADER.split(","), "vhed"),
        (VIST_EDIT_HEADER.split(",") + ["", ""], "vist-edit"),
        (["TEAM", "Story_ID", "worker_id", "Focused"], "vist-edit"),
        (["team", "story_id", "focused"], "wide"),  # no rater column: not VIST-Edit's header
        (["story_a", "story_b", "rank_a", "rank_b"], "pairwise"),
        (["story_id", "rater", "aspect", "value"], "long"),
        (["story_id", "overall"], "wide"),
    ],
)
def test_layouts_are_told_apart_by_the_header(header: list[str], layout: str) -> None:
    assert detect_layout(header) == layout


@pytest.mark.parametrize(
    ("data", "layout", "message"),
    [
        (vhed_bytes(), "vist-edit", "not a vist-edit judgements file: no 'team' column"),
        (glac_bytes(), "vhed", "not a vhed judgements file: no 'avg_rank_base', 'avg_rank_comp', 'model_base', 'model_comp'"),
        (b"story_id,overall\na,3\n", "long", "not a long judgements file: no 'aspect', 'value' column"),
        (b"story_id,rater,aspect,value\na,r,overall,3\n", "pairwise", "not a pairwise judgements file"),
        (b"team,story_id,workerId,overall\nauto-gen,a,r,3\n", "vist-edit", "none of the aspect columns"),
        (b"story_id,overall\na,3\n", "csv", "unknown judgements layout 'csv'"),
        (b"Team,team,story_id,focused\nx,y,z,3\n", "vist-edit", "both mean 'team'"),
    ],
)
def test_a_file_that_does_not_fit_the_chosen_layout_is_refused(data: bytes, layout: str, message: str) -> None:
    with pytest.raises(JudgementsError, match=message.replace("(", "\\(")):
        read_judgements(data, layout=layout, model="AREL")


def test_a_chosen_layout_keeps_the_existing_readers() -> None:
    wide = b"story_id,overall\na,3\nb,4\n"
    assert read_judgements(wide, layout="wide").layout == read_judgements(wide).layout == "wide"
    long = b"story_id,rater,aspect,value\na,r,overall,3\nb,r,overall,4\n"
    assert read_judgements(long, layout="long").ratings.equals(read_judgements(long).ratings)
    pairwise = b"story_a,story_b,rank_a,rank_b\na,b,1,2\n"
    assert read_judgements(pairwise, layout="pairwise").pairs.equals(read_judgements(pairwise).pairs)


# ------------------------------------------------------------------------------------ the CLI


def nr_record(story_id: str, sequence_id: str, system: str, nr: float) -> StoryScores:
    """A redundancy-only scores record in the project's layout."""
    return StoryScores(
        story_id=story_id,
        sequence_id=sequence_id,
        system=system,
        sentences=("A story.", "Another sentence."),
        metrics={"redundancy": RedundancyScores(score=nr, inter=1 - nr, intra=1 - nr, variant="paper", n=4)},
    )


def write_scores(path: Path, records: list[StoryScores]) -> Path:
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.slow  # two interpreter starts
def test_cli_reads_vhed_pairs_and_reports_their_accuracy(tmp_path: Path) -> None:
    scores = write_scores(
        tmp_path / "scores.jsonl",
        [
            nr_record("s1:reference", "11-12-13-14-15", "reference", 0.9),
            nr_record("s1:kg-story", "11-12-13-14-15", "kg-story", 0.7),
            nr_record("s1:pr-vist", "11-12-13-14-15", "pr-vist", 0.8),  # the better story of pair 2, scored lower
            nr_record("s2:reference", "21-22-23-24-25", "reference", 0.6),
            nr_record("s2:kg-story", "21-22-23-24-25", "kg-story", 0.6),  # a tie: wrong
        ],
    )
    human = tmp_path / "human.csv"
    human.write_bytes(vhed_bytes())
    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "vst_core", "meta-eval", str(scores), str(human), "--out", str(out)]
    done = subprocess.run([*command, "--judgements-format", "vhed", "--no-baselines"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["match"]["matched"] == 5 and report["match"]["judged"] == 5
    overall = next(r for r in report["pairwise_accuracy"] if r["metric"] == "NR" and r["group"] == "all")
    assert (overall["n"], overall["correct"], overall["ties"]) == (3, 1, 1)
    assert overall["accuracy"] == pytest.approx(1 / 3)
    wrong = subprocess.run([*command, "--judgements-format", "vist-edit"], cwd=ROOT, capture_output=True, text=True)
    assert wrong.returncode == 3 and "not a vist-edit judgements file" in wrong.stderr and "Traceback" not in wrong.stderr


@pytest.mark.slow  # two CLI runs of meta-eval; the readers of the layout are tested above
def test_cli_reads_a_vist_edit_file_and_correlates_by_story(tmp_path: Path) -> None:
    nr = {
        f"{S1}:AREL": 0.80,
        f"{S1}:AREL-human-edit": 0.95,
        f"{S1}:AREL-lstm-sort-text": 0.85,
        f"{S2}:AREL": 0.70,
        f"{S2}:AREL-human-edit": 0.90,
    }
    scores = write_scores(tmp_path / "scores.jsonl", [nr_record(i, i.split(":")[0], i.split(":")[1], v) for i, v in nr.items()])
    human = tmp_path / "AREL.csv"
    human.write_bytes(arel_bytes())
    out = tmp_path / "r.json"
    args = ["meta-eval", str(scores), str(human), "--out", str(out), "--judgements-format", "vist-edit", "--resamples", "0"]
    assert main([*args, "--no-baselines", "--no-progress"]) == 0
    report = json.loads(out.read_text())
    assert report["match"]["matched"] == 5
    focused = {"S1a": 3.0, "S1e": 4.5, "S1l": 3.0, "S2a": 1.0, "S2e": 5.0}  # rater means, by hand
    expected = stats.spearmanr(list(nr.values()), list(focused.values())).statistic
    cell = next(r for r in report["correlations"] if r["aspect"] == "focused" and r["method"] == "spearman")
    assert cell["n"] == 5 and cell["value"] == pytest.approx(expected)
    assert main([*args, "--no-baselines", "--judgements-format", "auto"]) == 0  # detected from the header


# ------------------------------------------------------------------------------------ hostile input

CELL = st.one_of(
    st.sampled_from(["", "3", "4.5", "0", "6", "inf", "nan", "1e308", "x", " 2 ", '"q,uoted"', "auto-gen", "human-edit"]),
    st.sampled_from(["s1", "s2", "reference", "kg-story", "['1', '2']", S1, R1, "7.22E+16"]),
    st.integers(-3, 9).map(str),
    st.text(max_size=6),
)


@st.composite
def rows_under(draw: st.DrawFn, header: str) -> bytes:
    """The layout's header (maybe with trailing fields), then any rows: ragged, quoted, odd numbers."""
    width = header.count(",") + 1
    trailing = draw(st.sampled_from(["", ",", ",,,,,,"]))
    rows = draw(st.lists(st.lists(CELL, min_size=0, max_size=width + 2), max_size=8))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    text = ending.join([header + trailing, *(",".join(row) + trailing for row in rows)])
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + text.encode("utf-8", "surrogateescape")


RECORDS = [
    nr_record(f"{s}:{m}", s, m, v) for s, m, v in [("s1", "reference", 0.9), ("s1", "kg-story", 0.7), ("s2", "reference", 0.6)]
]


def _read_or_refuse(data: bytes, reader: Any) -> None:
    try:
        judgements = reader(data)
    except JudgementsError as exc:
        assert str(exc)
        return
    assert all(isinstance(p, str) and p for p in judgements.problems)
    assert not (judgements.ratings.empty and judgements.pairs.empty)
    run_meta_eval(RECORDS, judgements, MetaSettings(resamples=20, baselines=False))


READERS = [lambda data: read_vist_edit(data, model="AREL"), read_vhed]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.sampled_from([0, 1]), st.one_of(st.binary(max_size=300), rows_under(VIST_EDIT_HEADER), rows_under(VHED_HEADER)))
def test_the_public_layout_readers_read_or_refuse_any_bytes(which: int, data: bytes) -> None:
    _read_or_refuse(data, READERS[which])


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(rows_under(VIST_EDIT_HEADER), rows_under(VHED_HEADER)))
def test_detection_reads_or_refuses_any_rows_of_the_public_layouts(data: bytes) -> None:
    _read_or_refuse(data, lambda raw: read_judgements(raw, model="GLAC"))


def test_hand_written_files_stay_small() -> None:
    """The fixtures are a handful of made-up rows, never a copy of the released files."""
    assert len(VIST_EDIT_ROWS) < 10 and len(VHED_ROWS) < 10
    assert pd.Series(VIST_EDIT_ROWS).str.contains(S1 + "|" + S2).all()
