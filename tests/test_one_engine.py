"""One scoring engine behind the three front ends: the same set scored by ``vst score``, by the
Python API and by the dashboard gives identical records, signatures included
(:func:`vst_core.scoring.runs.score_records`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE, clip_args

pytestmark = pytest.mark.slow  # builds a tiny CLIP, scores the sample three times


def test_the_cli_the_api_and_the_dashboard_give_identical_records(
    tiny_clip: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vst_core as vst
    from dashboard.loading import score_all
    from vst_core.cli import main
    from vst_core.cli.score import add_parser
    from vst_core.cli.score_options import settings_from_args

    metrics = "redundancy,grounding,clipscore,rovist_vg_clip"  # rovist_vg_clip: idf fitted over the whole set
    args = ["score", str(SAMPLE), "--out", str(tmp_path / "cli.jsonl"), "--metrics", metrics, *clip_args(tiny_clip)]
    assert main([*args, "--no-progress"]) == 0
    cli = [json.loads(line) for line in (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines()]

    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    settings = settings_from_args(parser.parse_args(args))
    monkeypatch.setenv("VST_DATA_DIRS", str(tiny_clip[1].parent))  # the folder the dashboard may read the weights from
    story_set = vst.read_story_set(SAMPLE)
    api = [r.to_json() for r in vst.score_stories(story_set, settings=settings)]
    page = [r.to_json() for r in score_all(story_set, "sample", settings)]

    assert len(cli) == len(story_set) == 8
    assert [(r["system"], r["story_id"]) for r in cli] == [s.key for s in story_set]
    assert api == cli
    assert page == cli
    assert {r["signature"]["id"] for r in cli} == {cli[0]["signature"]["id"]}
    grounded = [r for r in cli if "grounding" in r["metrics"]]
    assert grounded and all(r["metrics"]["clipscore"]["score"] is not None for r in grounded)
    assert all("rovist_vg_clip" in r["metrics"] for r in grounded)
