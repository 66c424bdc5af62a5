"""Studies: records and their JSON, the study file, raters' tokens, each rater's plan and the
answer store (one transaction an answer, revisions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vst_core.data import Story
from vst_core.study import (
    VIST_EDIT_ASPECTS,
    AnswerStore,
    GoldSpec,
    Presented,
    Sample,
    Study,
    StudyError,
    add_rater,
    answers_path,
    deal,
    find_study,
    load_study,
    new_study,
    plan_for,
    rater_for,
    read_source,
    revoke_rater,
    save_study,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample"


def stories(sequences: int = 6, systems: tuple[str, ...] = ("human", "a", "b")) -> list[Story]:
    return [
        Story(f"{q}", f"seq{q}", m, (f"Story {q} of {m}.", "It ended."), (f"{q}_1.jpg", f"{q}_2.jpg"))
        for q in range(sequences)
        for m in systems
    ]


def test_a_study_round_trips_through_its_file_exactly(tmp_path: Path) -> None:
    gold = [GoldSpec((("human", "0"),), {"focused": 5})]
    study = new_study(stories(), sample=Sample(sequences=4), raters=4, gold=gold, seed=3, title="Pilot")
    path = save_study(study, tmp_path / "pilot.study.json")
    back = load_study(path)
    assert back == study and back.signature == study.signature
    assert json.loads(path.read_text())["signature"] == study.signature
    assert study.signature.startswith("study:") and len(study.signature) == len("study:") + 12
    assert len(study.items) == 4 * 3 + 1 and study.raters_per_item == 3 and len(study.gold_items) == 1


def test_the_signature_ignores_raters_and_time_but_not_what_raters_see() -> None:
    study = new_study(stories(), seed=3)
    assert add_rater(study, "extra").signature == study.signature
    assert new_study(stories(), seed=3, created="other").signature == study.signature
    assert new_study(stories(), seed=3, instructions="Read closely.").signature != study.signature
    assert new_study(stories(), seed=4, sample=Sample(sequences=2)).signature != study.signature


def test_an_edited_or_broken_study_file_is_refused_with_why(tmp_path: Path) -> None:
    path = save_study(new_study(stories(), seed=1), tmp_path / "s.study.json")
    data = json.loads(path.read_text())
    data["instructions"] = "changed"
    path.write_text(json.dumps(data))
    with pytest.raises(StudyError, match="does not match its signature"):
        load_study(path)
    path.write_text("{not json")
    with pytest.raises(StudyError, match="not JSON"):
        load_study(path)
    with pytest.raises(StudyError, match="no study file"):
        load_study(tmp_path / "missing.study.json")


def test_tokens_are_secret_and_a_wrong_or_revoked_one_finds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    study = new_study(stories(), raters=3, seed=1)
    tokens = [r.token for r in study.raters]
    assert len(set(tokens)) == 3 and all(len(t) >= 32 for t in tokens)
    assert all(t not in repr(r) for t, r in zip(tokens, study.raters, strict=True))
    first = study.raters[0]
    assert rater_for(study, first.token) == first
    for wrong in ("", "x" * 32, first.token[:-1] + ("A" if first.token[-1] != "A" else "B"), "../" + first.token, None, 7):
        assert rater_for(study, wrong) is None
    revoked = revoke_rater(study, first.name)
    assert rater_for(revoked, first.token) is None and rater_for(revoked, tokens[1]) is not None
    monkeypatch.setenv("VST_STUDIES", str(tmp_path))
    save_study(revoked, tmp_path / "one.study.json")
    (tmp_path / "junk.study.json").write_text("{}")
    found = find_study(tokens[1])
    assert found is not None and found[0] == revoked and found[1].name == "one.study.json"
    assert find_study(first.token) is None and find_study("../../etc/passwd") is None


def test_each_item_gets_its_raters_and_every_rater_as_many_items() -> None:
    study = new_study(stories(sequences=10), raters=5, raters_per_item=3, seed=2)
    dealt = deal(study)
    counts = [len(v) for v in dealt.values()]
    assert sum(counts) == len(study.items) * 3 and max(counts) - min(counts) <= 1
    per_item: dict[str, set[str]] = {}
    for name, ids in dealt.items():
        for item_id in ids:
            per_item.setdefault(item_id, set()).add(name)
    assert all(len(v) == 3 for v in per_item.values()) and len(per_item) == len(study.items)


def test_a_plan_is_the_same_on_every_visit_and_differs_between_raters() -> None:
    study = new_study(stories(sequences=10), protocol="pairwise", sample=Sample(systems=("a", "b")), raters=2, seed=2)
    one, two = study.raters
    assert plan_for(study, one) == plan_for(study, one)
    assert [p.item_id for p in plan_for(study, one)] != [p.item_id for p in plan_for(study, two)]
    lefts = [p.order[0] for p in plan_for(study, one)]
    assert 0 in lefts and 1 in lefts  # the left story is not always the same system's
    assert sorted(p.position for p in plan_for(study, one)) == list(range(len(study.items)))


def test_revoking_a_rater_changes_no_other_raters_items() -> None:
    study = new_study(stories(sequences=8), raters=4, raters_per_item=2, seed=5)
    revoked = revoke_rater(study, "r2")
    for rater in ("r1", "r3", "r4"):
        assert plan_for(study, study.rater(rater)) == plan_for(revoked, revoked.rater(rater))  # type: ignore[arg-type]


def test_gold_items_go_to_every_rater() -> None:
    study = new_study(stories(), raters=5, raters_per_item=2, gold=[GoldSpec((("a", "1"),), {"human": 1})], seed=1)
    for rater in study.raters:
        assert "gold-01" in {p.item_id for p in plan_for(study, rater)}


def test_the_store_keeps_every_revision_and_the_latest_wins(tmp_path: Path) -> None:
    study = new_study(stories(), raters=1, seed=1)
    rater = study.raters[0]
    step = plan_for(study, rater)[0]
    store = AnswerStore(answers_path(tmp_path / "s.study.json"))
    first = store.record(study, rater, step, {a.key: 3 for a in VIST_EDIT_ASPECTS}, 4.5)
    second = store.record(study, rater, step, {a.key: 4 for a in VIST_EDIT_ASPECTS}, 2.0)
    assert (first.revision, second.revision) == (1, 2)
    assert store.answers(study) == [second]
    assert store.answers(study, latest_only=False) == [first, second]
    assert store.answered(study, rater) == {step.item_id: second}
    assert second.study_signature == study.signature and second.presented == step.order
    again = store.record(study, rater, step, {a.key: 5 for a in VIST_EDIT_ASPECTS}, 1.0, request="submit-1")
    assert store.record(study, rater, step, {a.key: 1 for a in VIST_EDIT_ASPECTS}, 1.0, request="submit-1") == again
    assert store.count() == 3


@pytest.mark.parametrize(
    ("protocol", "value", "why"),
    [
        ("likert", {"focused": 6}, "not rated|1-5"),
        ("likert", {a.key: 0 for a in VIST_EDIT_ASPECTS}, "1-5"),
        ("likert", {"nope": 1}, "no aspect"),
        ("pairwise", {"preferred": 2}, "index"),
        ("pairwise", {"preferred": "left"}, "index"),
        ("pairwise", {"preferred": True}, "index"),
    ],
)
def test_a_bad_answer_is_refused_and_nothing_is_written(tmp_path: Path, protocol: str, value: dict, why: str) -> None:
    sample = Sample(systems=("a", "b")) if protocol == "pairwise" else Sample()
    study = new_study(stories(), protocol=protocol, sample=sample, raters=1, seed=1)
    rater = study.raters[0]
    store = AnswerStore(tmp_path / "a.sqlite")
    with pytest.raises(StudyError, match=why):
        store.record(study, rater, plan_for(study, rater)[0], value, 1.0)
    assert store.count() == 0


def test_an_answer_from_a_revoked_rater_or_to_an_item_not_theirs_is_refused(tmp_path: Path) -> None:
    study = new_study(stories(sequences=4), raters=2, raters_per_item=1, seed=1)
    one, two = study.raters
    store = AnswerStore(tmp_path / "a.sqlite")
    theirs = plan_for(study, two)[0]
    rating = {a.key: 3 for a in VIST_EDIT_ASPECTS}
    with pytest.raises(StudyError, match="not one of"):
        store.record(study, one, theirs, rating, 1.0)
    revoked = revoke_rater(study, "r2")
    with pytest.raises(StudyError, match="revoked"):
        store.record(revoked, revoked.raters[1], theirs, rating, 1.0)
    with pytest.raises(StudyError, match="order"):
        store.record(study, two, Presented(theirs.item_id, (1,), 0), rating, 1.0)
    with pytest.raises(StudyError, match="seconds"):
        store.record(study, two, theirs, rating, float("nan"))
    assert store.count() == 0


def test_ties_are_refused_when_the_study_allows_none(tmp_path: Path) -> None:
    study = new_study(stories(), protocol="pairwise", sample=Sample(systems=("a", "b")), ties=False, raters=1, seed=1)
    with pytest.raises(StudyError, match="ties"):
        AnswerStore(tmp_path / "a.sqlite").record(
            study, study.raters[0], plan_for(study, study.raters[0])[0], {"preferred": "tie"}, 1
        )


def test_a_study_from_the_bundled_sample_stories_and_scores() -> None:
    read = read_source(SAMPLE / "stories.jsonl")
    study = new_study(read.stories, protocol="pairwise", sample=Sample(systems=("reference", "model-a")), source=read.source)
    assert len(study.items) == 2 and study.source["kind"] == "stories" and study.source["shared_ids"] == "no"
    assert study.items[0].stories[0].photos[0].endswith("space_1_rocket.jpg")
    scored = read_source(SAMPLE / "scores_nr_reference.jsonl")
    assert scored.source["kind"] == "scores" and scored.records
    best_worst = new_study(scored.stories, protocol="best-worst", sample=Sample(sequences=1), seed=2)
    assert len(best_worst.items) == 1 and len(best_worst.items[0].stories) == 4


def test_a_judgements_file_is_named_for_what_it_is() -> None:
    with pytest.raises(StudyError, match="judgements"):
        read_source(SAMPLE / "human_example.csv")


def test_what_cannot_be_built_says_why() -> None:
    with pytest.raises(StudyError, match="no story of system"):
        new_study(stories(), sample=Sample(systems=("nobody",)))
    with pytest.raises(StudyError, match="not in the file"):
        new_study(stories(), sample=Sample(stories=(("a", "99"),)))
    with pytest.raises(StudyError, match="one listed story"):
        new_study(stories(), protocol="pairwise", sample=Sample(stories=(("a", "1"),)))
    with pytest.raises(StudyError, match="raters per item"):
        new_study(stories(), raters=2, raters_per_item=3)
    with pytest.raises(StudyError, match="unknown protocol"):
        new_study(stories(), protocol="ranking")


def test_a_study_is_a_frozen_record() -> None:
    study = new_study(stories(), seed=1)
    with pytest.raises(AttributeError):
        study.title = "x"  # type: ignore[misc]
    assert isinstance(study, Study)
