"""The judgement readers never keep a value that is not a finite number (left out and counted with
its reason), and Vrank training refuses non-finite gaps and stops at the first non-finite loss
without writing a model."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.analysis.meta_eval.judgements import JudgementsError
from vst_core.analysis.meta_eval.reader import read_judgements

#: Cells a careless export or an attacker puts where a number belongs.
BAD_CELLS = ("x", "", "nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999", " ", "1,5", "0x1p3", "None", "∞")


def test_a_vhed_rank_norm_that_is_not_a_number_leaves_its_pair_out() -> None:
    raw = b"story_id,model_base,model_comp,avg_rank_base,avg_rank_comp,rank_norm\n1,A,B,1,2,x\n2,A,B,1,2,0.5\n"
    judgements = read_judgements(raw, layout="vhed")
    assert judgements.pairs.gap.tolist() == [0.5]
    assert any("rank_norm is not a finite number; left out" in p for p in judgements.problems)
    with pytest.raises(JudgementsError, match="no usable story pairs"):
        read_judgements(raw.split(b"\n2,")[0] + b"\n", layout="vhed")


def _finite(judgements: object) -> bool:
    ratings, errors, pairs = (getattr(judgements, n) for n in ("ratings", "errors", "pairs"))
    arrays = [ratings["value"], errors["value"], pairs["gap"]] if len(pairs) else [ratings["value"], errors["value"]]
    return all(np.isfinite(np.asarray(a, dtype=float)).all() for a in arrays)


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


cell = st.one_of(st.sampled_from(BAD_CELLS), st.integers(1, 5).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(("A", "B", "C")), st.sampled_from(("B", "C")), cell, cell, cell, cell), min_size=1, max_size=12))  # fmt: skip
def test_generated_vhed_files_keep_no_non_finite_gap(rows: list[tuple[int, str, str, str, str, str, str]]) -> None:
    header = [
        "sent1",
        "sent2",
        "story_id",
        "model_base",
        "model_comp",
        "agreement",
        "avg_rank_base",
        "avg_rank_comp",
        "rank_norm",
    ]
    data = [["a .", "b .", f"s{k}", base, comp, agreement, rb, rc, gap] for k, base, comp, rb, rc, gap, agreement in rows]
    try:
        judgements = read_judgements(_csv(header, data), layout="vhed")
    except JudgementsError:
        return
    assert _finite(judgements) and (judgements.pairs["gap"] > 0).all()
    assert not judgements.pairs["agreement"].map(lambda v: isinstance(v, float) and math.isinf(v)).any()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(("auto-gen", "human-edit")), st.lists(cell, min_size=6, max_size=6)), min_size=1, max_size=12))  # fmt: skip
def test_generated_vist_edit_files_keep_no_non_finite_rating(rows: list[tuple[int, str, list[str]]]) -> None:
    header = ["team", "story_id", "album_id", "workerId", "focused", "coherent", "share", "human", "grounded", "detailed"]
    data = [[team, f"{k}-1-2-3-4", "7.22E+16", f"w{n}", *values] for n, (k, team, values) in enumerate(rows)]
    try:
        judgements = read_judgements(_csv(header, data), layout="vist-edit", model="AREL")
    except JudgementsError:
        return
    assert _finite(judgements) and judgements.ratings["value"].isin([1, 2, 3, 4, 5]).all()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(("r1", "r2")), cell, cell), min_size=1, max_size=12))
def test_generated_wide_and_pairwise_files_keep_no_non_finite_value(rows: list[tuple[int, str, str, str]]) -> None:
    wide = _csv(["story_id", "rater", "overall"], [[f"s{k}", r, v] for k, r, v, _ in rows])
    pairwise = _csv(["story_a", "story_b", "rank_a", "rank_b"], [[f"s{k}", f"t{k}", a, b] for k, _, a, b in rows])
    for raw, layout in ((wide, "wide"), (pairwise, "pairwise")):
        try:
            judgements = read_judgements(raw, layout=layout)
        except JudgementsError:
            continue
        assert _finite(judgements)


# ------------------------------------------------------------------ training refuses what is not finite


def test_training_refuses_a_pair_with_a_non_finite_gap(tmp_path: Path) -> None:
    from vst_core.learned.pairs import RankedPair
    from vst_core.metrics.vrank.train import train_vrank

    pairs = [
        RankedPair("q", "a", "b", "a dog .", "a cat .", 0.5, None),
        RankedPair("q", "a", "c", "a dog .", "sun .", math.nan, None),
    ]
    with pytest.raises(ValueError, match="not a positive finite number"):
        train_vrank(pairs, [], tmp_path / "out", log=lambda _: None)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # trains a tiny BERT for one batch
def test_a_diverging_run_stops_at_the_first_non_finite_loss_and_writes_no_model(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_damaged_models import _tiny_bert
    from test_vrank import write_vhed

    from vst_core.cli import main

    base = tmp_path / "base"
    base.mkdir()
    _tiny_bert(base, tokenizer_dir)
    data = write_vhed(tmp_path / "VHED.csv", sequences=8)
    out = tmp_path / "model"
    code = main(
        ["train-vrank", str(data), "--out", str(out), "--base", str(base), "--lr", "1e20", "--batch-size", "4",
         "--max-length", "48", "--epochs", "2", "--held-out", "0.25", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 5 and "training loss is" in err and "no model was written" in err, err
    assert not (out / "head.safetensors").exists() and not (out / "vrank.json").exists()
