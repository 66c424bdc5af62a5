"""One out-of-range value costs one row or one story, never the file, with a message in the
product's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vst_core.data.readers import read_story_set
from vst_core.data.regions import read_regions_csv

HUGE = "9" * 5000


def test_a_regions_row_with_a_400_digit_number_is_skipped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "regions.csv"
    path.write_text(
        "image_name,bbox,score\n"
        f'a.jpg,"[1, 2, 3, {"7" * 400}]",0.5\n'
        'a.jpg,"[1, 2, 30, 40]",0.9\n'
        f'b.jpg,"[1, 2, 30, 40]",{"8" * 400}\n'
    )
    table, problems = read_regions_csv(path)
    assert [len(v) for v in table.by_path.values()] == [1]
    assert [p.line for p in problems] == [2, 4]
    assert "too large for a float" in problems[0].message and "not a finite number" in problems[1].message


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_story_with_a_5000_digit_integer_costs_that_story_only(tmp_path: Path, suffix: str) -> None:
    stories = [{"story_id": f"s{k}", "text": "We went out. It rained."} for k in range(3)]
    texts = [json.dumps(s) for s in stories]
    texts[1] = texts[1][:-1] + f', "rating": {HUGE}}}'
    path = tmp_path / f"stories{suffix}"
    path.write_text(("[" + ",".join(texts) + "]") if suffix == ".json" else "\n".join(texts) + "\n")
    read = read_story_set(path, check_images=False)
    assert [s.story_id for s in read.stories] == ["s0", "s2"]
    (problem,) = read.problems
    assert "5,000 digits" in problem.message and "set_int_max_str_digits" not in problem.message


def test_a_long_integer_as_a_story_text_or_too_deep_a_story_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "stories.json"
    deep: object = "x"
    for _ in range(80):
        deep = [deep]
    path.write_text(
        json.dumps({"stories": [{"story_id": "a", "text": "One. Two."}, {"story_id": "b", "text": "Three.", "x": deep}]})[:-2]
        + f', {{"story_id": "c", "text": "Four.", "n": {HUGE}}}]}}'
    )
    read = read_story_set(path, check_images=False)
    assert [s.story_id for s in read.stories] == ["a"]
    assert len(read.problems) == 2 and "nested deeper" in read.problems[0].message
