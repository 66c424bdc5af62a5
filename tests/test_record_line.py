"""The writer's JSON line is the text of ``json_line(record.to_json(), allow_nan=False)``, byte for
byte, for records of every metric type (built from their type hints) and for the sample's records."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from conftest import SAMPLE, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import ScoresWriter, read_story_set
from vst_core.data.scores_io import record_line
from vst_core.hashing import json_line
from vst_core.records import StoryScores, read_record
from vst_core.scoring.story import score_story
from vst_core.scoring.synthetic import synthetic_record

#: Text with what a JSON line must escape or keep: quotes, a backslash, non-ASCII, line separators.
_TEXT = st.text(alphabet=st.sampled_from(list('ab "\\\n\té\u2028\u2029\x85😀')), max_size=12)
_METRICS = st.one_of(
    *(st.builds(kind) for kind in registry().types.values()),
)


def reference_line(record: StoryScores) -> str:
    return json_line(record.to_json(), allow_nan=False)


@settings(max_examples=examples(150), deadline=None)
@given(
    metrics=st.dictionaries(st.sampled_from(sorted(registry().types)), _METRICS, max_size=4),
    sentences=st.lists(_TEXT, max_size=3),
    errors=st.dictionaries(_TEXT, _TEXT, max_size=2),
)
def test_the_line_is_the_records_json_for_any_metric_record(
    metrics: dict[str, Any], sentences: list[str], errors: dict[str, str]
) -> None:
    record = StoryScores("s\u2028", "q", "sys", tuple(sentences), ("a.jpg",), metrics, errors, ("w",), {"id": "x"})
    try:
        expected = reference_line(record)
    except ValueError:  # a NaN or an infinity: refused both ways
        with pytest.raises(ValueError):
            record_line(record)
        return
    assert record_line(record) == expected


def test_the_line_is_the_records_json_for_full_evidence_and_scored_samples() -> None:
    rng = random.Random(3)
    records = [synthetic_record(f"s{k}", "sys", rng, {"id": "abc", "settings": {"top_b": 10}}) for k in range(20)]
    records += [score_story(story, Settings()) for story in read_story_set(SAMPLE)]
    for record in records:
        assert record_line(record) == reference_line(record)
        back, problems = read_record(json.loads(record_line(record)))
        assert problems == [] and back == record


def test_a_mapping_that_is_not_a_dict_is_written_as_one() -> None:
    record = StoryScores("s", "q", "sys", ("A dog.",), errors=MappingProxyType({"grounding": "no images"}))
    assert record_line(record) == reference_line(record)
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        record_line(StoryScores("s", "q", "sys", ("A dog.",), signature={"odd": {1, 2}}))


def test_the_writer_writes_those_lines(tmp_path: Path) -> None:
    records = [synthetic_record(f"s{k}", "sys", random.Random(k), {"id": "abc"}) for k in range(3)]
    with ScoresWriter(tmp_path / "out.jsonl") as writer:
        for record in records:
            writer.write(record)
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == "".join(reference_line(r) + "\n" for r in records)
