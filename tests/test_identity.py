"""A story is (system, story_id): one story file holding two systems under the same ids (the
released layout) is scored, batched and read back per system, never one system's numbers on
the other's story."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE, clip_args

from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import load_records, read_story_set
from vst_core.data.types import Story
from vst_core.metrics.rovist_nr.batch import redundancy_of, redundancy_without_spans

HUMAN = ["We went to the park.", "The dog ran after the ball.", "Then we ate cake at home."]
MODEL = ["The park was big.", "The park was big and the park was green.", "The park was big."]


def shared_file(folder: Path, images: list[str] | None = None) -> Path:
    """Two systems, the same three story ids, different texts, in one JSONL."""
    lines = []
    for k in range(3):
        for system, sentences in (("reference", HUMAN), ("llava", MODEL)):
            record = {
                "story_id": f"4553{k}",
                "sequence_id": f"4553{k}",
                "system": system,
                "sentences": sentences[k:] + sentences[:k],
            }
            if images:
                record["images"] = images
            lines.append(json.dumps(record))
    path = folder / "stories.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_story_file_keeps_both_systems_under_a_shared_id(tmp_path: Path) -> None:
    stories = read_story_set(shared_file(tmp_path))
    assert len(stories) == 6 and {s.story_id for s in stories} == {"45530", "45531", "45532"}
    assert not [p for p in stories.problems if p.kind == "id"]  # nothing renamed
    assert stories.get("45530", "llava").sentences[0] == MODEL[0]
    with pytest.raises(KeyError, match="give the system"):
        stories.get("45530")


@pytest.mark.parametrize("spans", [True, False])
def test_each_system_gets_its_own_nr_in_one_batch(tmp_path: Path, spans: bool) -> None:
    path = shared_file(tmp_path)
    out = tmp_path / "scores.jsonl"
    args = ["score", str(path), "--out", str(out), "--metrics", "redundancy", "--no-progress"]
    assert main(args + ([] if spans else ["--no-spans"])) == 0
    records, _ = load_records(out)
    assert len(records) == 6
    stories = read_story_set(path)
    for record in records:
        want = redundancy_of(stories.get(record.story_id, record.system), 4, "paper").score
        assert record.metrics.get("redundancy") is not None and record.metrics["redundancy"].score == pytest.approx(
            want, abs=1e-12
        )
    by_key = {(r.system, r.story_id): r.metrics["redundancy"].score for r in records if r.metrics.get("redundancy")}
    assert by_key[("reference", "45530")] != by_key[("llava", "45530")]


def test_the_vectorised_nr_is_keyed_by_system_and_id() -> None:
    stories = [Story("1", "1", "reference", tuple(HUMAN)), Story("1", "1", "llava", tuple(MODEL))]
    found = redundancy_without_spans(stories, Settings(nr_variant="paper"))
    assert set(found) == {("reference", "1"), ("llava", "1")}
    assert found[("reference", "1")].score != found[("llava", "1")].score


@pytest.mark.slow  # a tiny CLIP model end to end
def test_grounding_parses_each_systems_phrases(tmp_path: Path, tiny_clip: tuple[Path, Path]) -> None:
    """The grounder's noun phrases are cached per (system, story_id): the model story sharing the
    human story's id is matched with its own phrases."""
    images = [line for line in SAMPLE.read_text().splitlines() if line.strip()][0]
    refs = json.loads(images)["images"]
    for ref in refs:
        target = tmp_path / ref
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((SAMPLE.parent / ref).read_bytes())
    path = shared_file(tmp_path, refs)
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(path), "--out", str(out), "--metrics", "grounding", "--no-progress", *clip_args(tiny_clip)]) == 0
    records, _ = load_records(out)
    for record in records:
        assert record.metrics.get("grounding") is not None
        text = " ".join(record.sentences).lower()
        assert record.metrics["grounding"].phrases and all(p.surface.lower() in text for p in record.metrics["grounding"].phrases)
    human = next(r for r in records if r.system == "reference" and r.story_id == "45530")
    model = next(r for r in records if r.system == "llava" and r.story_id == "45530")
    assert {p.text for p in human.metrics["grounding"].phrases} != {p.text for p in model.metrics["grounding"].phrases}  # type: ignore[attr-defined]
