"""Character consistency: hand-computed cases, name matching, parity with NCS's released
per-character values (recomputed from their released coreference clusters), and the metric
through ``vst score`` on VWP-layout stories."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT
from test_vwp import write_csv

from vst_core.cli import main
from vst_core.data import load_records
from vst_core.data.types import Story
from vst_core.formulas.characters import EPSILON, presence_by_names, presence_from_clusters, track, tracks
from vst_core.metrics.characters import record

NCS = ROOT / "tests" / "data" / "ncs"


def test_a_hand_computed_track() -> None:
    """Present in sentences 1, 2 and 4 of 5 (0-based 0, 1, 3): one of four consecutive pairs both
    name it; it spans 3 of 4 steps."""
    t = track("Ann", {0, 1, 3}, 5, frames=(0, 0, 1, 2, 2), groups=3)
    assert t.continuity == pytest.approx(1 / 4) and t.spread == pytest.approx(3 / 4)
    assert t.coherence == pytest.approx(math.tanh((1 / 4) / (3 / 4 + EPSILON)))
    assert t.persistence == pytest.approx(3 / 5) and t.introduction == 0.0
    assert t.frames == (0, 2) and t.frame_share == pytest.approx(2 / 3)
    once = track("Bob", {2}, 5)
    assert once.continuity == 0.0 and once.spread == 0.0 and once.coherence == 0.0 and once.introduction == 0.5
    always = track("Cy", range(5), 5)
    assert always.continuity == 1.0 and always.spread == 1.0 and always.coherence == pytest.approx(math.tanh(1.0))
    with pytest.raises(ValueError):
        track("Dee", {0}, 1)


def test_names_are_whole_words_in_any_case() -> None:
    sentences = ["ANN arrives.", "Anna is not Ann.", "Mary Jane waves at ann's dog.", "Mary smiles.", "Jane leaves."]
    found = presence_by_names(sentences, ["Ann", "Mary Jane", "Mary", "  ", "Ann"])
    assert found == {"Ann": {0, 1, 2}, "Mary Jane": {2}, "Mary": {2, 3}}


def test_a_story_record_means_over_present_characters() -> None:
    story = Story(
        "s",
        "q",
        "human",
        ("Ann walks in.", "Ann sits.", "Bob waves.", "They talk."),
        frames=(0, 0, 1, 2),
        characters=(("Ann", ""), ("Bob", ""), ("Zed", "")),
    )
    found = record(story)
    ann, bob = track("Ann", {0, 1}, 4, story.frames, 3), track("Bob", {2}, 4, story.frames, 3)
    assert found.named == 3 and found.found == 2 and [t.name for t in found.tracks] == ["Ann", "Bob"]
    assert found.continuity == pytest.approx((ann.continuity + bob.continuity) / 2)
    assert found.score == pytest.approx((ann.coherence + bob.coherence) / 2)
    assert found.frame_share == pytest.approx((1 / 3 + 1 / 3) / 2)
    none = record(Story("t", "q", "human", ("A dog.", "A cat.")))
    assert none.score is None and none.notes == ("no named characters given for this story",)
    absent = record(Story("u", "q", "human", ("A dog.", "A cat."), characters=(("Ann", ""),)))
    assert absent.score is None and "none of the 1 named characters" in absent.notes[0]


def test_the_measures_equal_ncs_from_their_released_clusters() -> None:
    """NCS's per-character CharTr, CharRe and char_coherence (nan policy) of two runs, recomputed
    from their released coreference clusters and characters: presence as they attribute it
    (:func:`presence_from_clusters`), then the measures here."""
    characters = json.loads((NCS / "characters.json").read_text())
    want = pd.read_csv(NCS / "character_metrics_raw_nan_policy.csv")
    want = want[~want["character_name"].str.startswith("__")]
    rows = []
    with gzip.open(NCS / "clusters.jsonl.gz", "rt") as fh:
        for line in fh:
            doc = json.loads(line)
            names = characters[str(doc["story_id"])]
            model, prompt, seed = doc["run"].split("_")
            for t in tracks(presence_from_clusters(doc["sentences"], doc["clusters"], names), len(doc["sentences"])):
                rows.append(
                    {
                        "model": model,
                        "prompt": prompt,
                        "seed": seed,
                        "story_id": doc["story_id"],
                        "character_name": t.name,
                        "ours_tr": t.continuity,
                        "ours_re": t.spread,
                        "ours_coh": t.coherence,
                    }  # fmt: skip
                )
    got = pd.DataFrame(rows)
    both = got.merge(want, on=["model", "prompt", "seed", "story_id", "character_name"], how="outer", indicator=True)
    assert (both["_merge"] == "both").all(), both[both["_merge"] != "both"]
    assert len(both) == len(want) >= 60
    for ours, theirs in (("ours_tr", "CharTr"), ("ours_re", "CharRe"), ("ours_coh", "char_coherence")):
        assert (both[ours] - both[theirs]).abs().max() < 1e-12


def test_the_metric_scores_vwp_stories(tmp_path: Path) -> None:
    out = tmp_path / "chars.jsonl"
    assert main(["score", str(write_csv(tmp_path)), "--out", str(out), "--metrics", "characters", "--no-progress"]) == 0
    records = {r.story_id: r for r in load_records(out)[0]}
    first = records["A1"].metrics["characters"]
    assert first.named == 2 and first.found == 2 and [t.name for t in first.tracks] == ["Ann", "Bob"]
    ann = next(t for t in first.tracks if t.name == "Ann")
    assert ann.sentences == (0, 4, 6, 8) and ann.frames == (0, 2, 4, 5)  # "Ann" in shots 1, 3, 5, 6
    assert ann.frame_share == pytest.approx(4 / 7)
    assert records["A3"].metrics["characters"].score is None  # no characters given


def test_introduction_is_where_each_character_first_appears() -> None:
    """The record's introduction: the mean over present characters of (first sentence) / (N − 1)."""
    from vst_core.data import Story
    from vst_core.metrics.characters import record

    story = Story(
        "s",
        "q",
        "m",
        ("Ann waves.", "A dog runs.", "Bob arrives.", "Ann and Bob leave.", "The end."),
        characters=(("Ann", ""), ("Bob", "")),
    )
    found = record(story)
    assert found.introduction == pytest.approx((0 / 4 + 2 / 4) / 2)
