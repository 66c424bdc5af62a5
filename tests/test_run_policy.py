"""One run policy behind the three front ends (:mod:`vst_core.scoring.policy`): ``vst score``, the
Python API and the dashboard's scoring path give identical records for the same settings, and
leave out a metric whose model does not load alike, with the same reason; a strict run fails
instead. What a metric's summary hook says of a run is in the run's report."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLE, write_jsonl

import vst_core as vst
from vst_core.cli import main
from vst_core.config import Settings
from vst_core.metrics.rovist_c.seam import PairScores
from vst_core.models.hub import ModelLoadError, cli_words, python_words
from vst_core.scoring.policy import RunReport, ScoredStories, worded
from vst_core.scoring.registry import Models
from vst_core.scoring.runs import score_records, score_story_set


def _cli(tmp_path: Path, name: str, *args: str) -> tuple[int, list[dict[str, Any]]]:
    """``vst score`` of the sample into ``name``: the exit code and the records written."""
    out = tmp_path / name
    code = main(["score", str(SAMPLE), "--out", str(out), "--no-progress", *args])
    return code, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def _page(settings: Settings, key: str) -> ScoredStories:
    """The dashboard's scoring path (what the frame's view is built from), without Streamlit running."""
    from dashboard.loading import score_all

    return score_all(vst.read_story_set(SAMPLE), key, settings)


def _json(records: list[vst.StoryScores]) -> list[dict[str, Any]]:
    return [r.to_json() for r in records]


def test_the_same_settings_give_the_same_records_through_the_cli_the_api_and_the_dashboard(tmp_path: Path) -> None:
    """RoViST-NR's own option ``spans`` (``--no-spans``) reaches the metric from each front end:
    numbers only, the same records three times, and signed as before (no ``spans`` in the id)."""
    code, cli = _cli(tmp_path, "fast.jsonl", "--metrics", "redundancy", "--no-spans")
    settings = Settings(metrics=("redundancy",), spans=False)
    api = vst.score_stories(vst.read_story_set(SAMPLE), settings=settings)
    page = _page(settings, "sample-no-spans")
    assert code == 0 and len(cli) == 8
    assert _json(api) == cli and _json(page) == cli
    assert all(r["metrics"]["redundancy"]["inter_repeats"] is None for r in cli)
    assert api.report.not_run == page.report.not_run == {} and api.report.metrics == ("redundancy",)
    _, full = _cli(tmp_path, "full.jsonl", "--metrics", "redundancy")
    assert full[0]["metrics"]["redundancy"]["inter_repeats"] is not None
    assert {r["signature"]["id"] for r in cli} == {r["signature"]["id"] for r in full}


def test_a_metric_whose_model_does_not_load_is_left_out_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Vrank with a model folder that does not exist beside RoViST-NR: the command line, the API
    and the dashboard's scoring path each give the eight RoViST-NR records, each naming Vrank as
    not run with the same reason, and the same reason in their report, each in its own words."""
    absent = tmp_path / "no-such-vrank"
    capsys.readouterr()
    code, cli = _cli(tmp_path, "scores.jsonl", "--metrics", "redundancy,vrank", "--vrank-model", str(absent))
    err = capsys.readouterr().err
    settings = Settings(metrics=("redundancy", "vrank"), vrank_model=str(absent))
    with caplog.at_level(logging.WARNING, logger="vst_core.api"):
        api = vst.score_stories(vst.read_story_set(SAMPLE), settings=settings)
    page = _page(settings, "sample-without-vrank")

    assert code == 6 and len(cli) == 8
    assert _json(api) == cli and _json(page) == cli
    assert all(r["metrics"]["redundancy"]["score"] is not None and "vrank" not in r["metrics"] for r in cli)
    why = api.report.reasons()["vrank"]
    assert "is not a folder" in why and str(absent) in why and "--vrank-model DIR" in why
    assert {r["errors"]["vrank"] for r in cli} == {f"not run: {why}"}
    assert api.report.not_run == page.report.not_run and api.report.metrics == page.report.metrics == ("redundancy",)
    # each front end says it in its words: the command's flags, the API's Settings fields
    assert f"error: vrank is not run: {why}\n" in err and "scoring redundancy only" in err
    assert f"vrank is not run: {api.report.reasons(python_words)['vrank']}" in caplog.text
    assert "Settings(vrank_model=DIR)" in caplog.text

    # the frame turns it off before scoring, with the same reason in the sidebar's words
    from dashboard.choices import sidebar_words
    from dashboard.frame import _probe

    notices: list[str] = []
    kept = _probe(settings, notices, {})
    assert kept.metrics == ("redundancy",)
    assert notices == [f"Vrank is off: {worded(api.report.not_run['vrank'], sidebar_words)}"]


def test_a_strict_run_fails_on_a_model_that_does_not_load(tmp_path: Path) -> None:
    absent = tmp_path / "no-such-vrank"
    code, written = _cli(tmp_path, "strict.jsonl", "--metrics", "redundancy,vrank", "--vrank-model", str(absent), "--strict")
    assert code == 4 and written == [] and not (tmp_path / "strict.jsonl.lock").exists()
    settings = Settings(metrics=("redundancy", "vrank"), vrank_model=str(absent))
    with pytest.raises(ModelLoadError, match=r"Settings\(vrank_model=DIR\)"):
        vst.score_stories(vst.read_story_set(SAMPLE), settings=settings, strict=True)
    with pytest.raises(ModelLoadError, match="--vrank-model DIR"):
        list(score_records(vst.read_story_set(SAMPLE), settings, strict=True))


def test_the_engine_applies_the_policy_whoever_calls_it(tmp_path: Path) -> None:
    """:func:`score_records` and :func:`score_story_set` themselves leave the metric out and report
    it: no front end has to."""
    settings = Settings(metrics=("redundancy", "vrank"), vrank_model=str(tmp_path / "absent"))
    report = RunReport()
    records = list(score_records(vst.read_story_set(SAMPLE), settings, report=report))
    assert len(records) == 8 and list(report.not_run) == ["vrank"] and report.metrics == ("redundancy",)
    assert all(r.errors["vrank"] == f"not run: {report.reasons(cli_words)['vrank']}" for r in records)
    summary = score_story_set(vst.read_story_set(SAMPLE), settings, tmp_path / "s.jsonl")
    assert summary.scored == 8 and summary.failed == [] and summary.report.not_run == report.not_run
    assert summary.warnings == report.warnings()


class WordOverlap:
    """A tiny sentence-pair model: P(B follows A) from the words they share, and a pair of more than
    ``most`` words truncated, as a transformer over its maximum length."""

    name = "word-overlap"

    def __init__(self, most: int = 8) -> None:
        self.most = most

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        return self.score_pairs_detailed(pairs).probabilities

    def score_pairs_detailed(self, pairs: list[tuple[str, str]]) -> PairScores:
        words = [(set(a.lower().split()), set(b.lower().split())) for a, b in pairs]
        shared = [len(a & b) / max(1, len(a | b)) for a, b in words]
        cut = tuple(len(a.split()) + len(b.split()) > self.most for a, b in pairs)
        return PairScores(np.array([0.5 + s / 2 for s in shared]), cut)


def test_rovist_cs_truncated_pairs_are_said_when_the_run_ends(tmp_path: Path) -> None:
    """RoViST-C's summary hook says each truncated pair of the run's records once the run ends (the
    engine hands it the records' warnings; the filter is the metric's own), in the run's report."""
    stories = [
        {"story_id": "long", "sentences": ["We ate.", "We ate cake and then more cake with the whole family."]},
        {"story_id": "short", "sentences": ["We ate.", "We sat."]},
    ]
    story_set = vst.read_story_set(write_jsonl(tmp_path / "s.jsonl", stories))
    settings = Settings(metrics=("redundancy", "coherence"))
    summary = score_story_set(story_set, settings, tmp_path / "o.jsonl", models=Models(settings, coherence=WordOverlap()))
    (line,) = summary.report.notes
    assert line.startswith("warning: coherence: pair 1->2 of story 'long'") and "truncated" in line
    assert summary.report.failures == [] and summary.report.metrics == ("redundancy", "coherence")
