"""A long or hostile story cannot stall a run: RoViST-NR finds repeated spans through an index of
words (no work for sentence pairs that share none) and lists at most MAX_SPANS of them, and the
engine refuses a story over the length limits with its reason while the other stories score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.config import MAX_STORY_CHARS, MAX_STORY_SENTENCES, Settings
from vst_core.data import Story, StorySet
from vst_core.formulas import redundancy
from vst_core.formulas.redundancy import CAPPED, MAX_SPANS, non_redundancy
from vst_core.metrics import rovist_nr
from vst_core.metrics.rovist_nr import batch
from vst_core.metrics.rovist_nr.batch import nr_words, redundancy_of
from vst_core.records import StoryScores
from vst_core.scoring.runs import score_records
from vst_core.scoring.story import refused
from vst_core.text.public import split_story

NR = Settings(metrics=("redundancy",))


def spans_listed(result: Any) -> int:
    inter = sum(len(p.tokens) + len(p.earlier_tokens) for p in result.inter_repeats)
    return inter + sum(len(p.tokens) for p in result.intra_repeats)


@pytest.mark.parametrize("variant", ["paper", "reference"])
def test_a_long_story_costs_no_work_for_the_sentence_pairs_that_share_no_word(
    variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 sentences of words of their own: 1,999,000 sentence pairs, none repeating a word. The
    numbers are those of the definition, no pair record is built and the steps are a few per token
    (a pass over every pair built 2 million records, 1.6 GB, a minute)."""
    built = []
    real = redundancy.InterOverlap

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(redundancy, "InterOverlap", counted)
    story = [[f"w{i}a", f"w{i}b", f"w{i}c", "."] for i in range(2000)]
    result = non_redundancy(story, n=4, variant=variant)  # type: ignore[arg-type]
    assert result.inter == 0.0 and result.score == 1.0 and result.inter_repeats == ()
    assert built == []
    tokens = sum(map(len, story))
    assert result.steps <= 4 * tokens


def test_repeats_past_the_span_cap_are_counted_in_a_note_and_the_numbers_count_every_one() -> None:
    story = [["we", "went", "to", "the", "beach", "."]] * 40  # 780 sentence pairs of 10 spans each
    full = non_redundancy(story, n=4, max_spans=None)
    capped = non_redundancy(story, n=4, max_spans=105)
    assert (capped.score, capped.inter, capped.intra) == (full.score, full.inter, full.intra) == (0.5, 1.0, 0.0)
    assert spans_listed(full) == 7_800 and spans_listed(capped) == 100
    assert capped.inter_repeats == full.inter_repeats[:10] and capped.left_out == 770
    assert capped.notes == (*full.notes, f"770 of 780 {CAPPED} (at most 105 spans a story); the numbers count every one")


def test_a_record_lists_at_most_max_spans_and_stays_a_line_the_reader_takes() -> None:
    # 200 equal sentences of 33 words, within the limits (19,600 characters): 19,900 sentence pairs,
    # 66 spans each, 1,313,400 in all
    sentence = " ".join(f"{a}{b}" for a in "ab" for b in "abcdefghijklmnop") + " x."
    story = Story("same", "same", "m", (sentence,) * 200)
    assert refused(story) == ""
    record = redundancy_of(story, 4, "paper")
    assert record.inter_repeats is not None and record.intra_repeats == ()
    listed = sum(len(p.spans) + len(p.earlier_spans) for p in record.inter_repeats)
    assert (record.score, record.inter, record.intra) == (0.5, 1.0, 0.0) and MAX_SPANS - 66 < listed <= MAX_SPANS
    left = 19_900 - len(record.inter_repeats)
    assert record.notes[-1] == f"{left:,} of 19,900 {CAPPED} (at most {MAX_SPANS:,} spans a story); the numbers count every one"
    line = json.dumps(StoryScores("same", "same", "m", story.sentences, (), {"redundancy": record}).to_json())
    assert len(line) < 3_000_000  # a scores line the reader takes (10 MB); with every pair listed, 80 MB

    # the spans a --no-spans run left out come back with the same note when the story is shown
    (without,) = score_records(StorySet.of([story], "."), NR.with_(spans=False))
    shown = rovist_nr.complete(without.metrics["redundancy"], without)
    assert shown is not None and shown.inter_repeats == record.inter_repeats and shown.notes[-1] == record.notes[-1]


def test_a_story_over_a_limit_is_refused_with_its_reason_and_the_next_one_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = batch.redundancy_of

    def watched(story: Story, n: int, variant: Any) -> Any:
        seen.append(story.story_id)
        return real(story, n, variant)

    monkeypatch.setattr(batch, "redundancy_of", watched)
    many = Story.from_sentences(["We went to the beach."] * (MAX_STORY_SENTENCES + 1), story_id="many")
    long = Story.from_sentences(["word " * (MAX_STORY_CHARS // 5 + 1)], story_id="long")
    fine = Story.from_sentences(["We went to the beach.", "The beach was sunny."], story_id="fine")
    for spans in (True, False):
        seen.clear()
        records = {r.story_id: r for r in score_records(StorySet.of([many, long, fine], "."), NR.with_(spans=spans))}
        assert records["many"].metrics == {} and records["long"].metrics == {}
        assert records["many"].errors == {
            "redundancy": f"story not scored: {MAX_STORY_SENTENCES + 1:,} sentences, over the limit of "
            f"{MAX_STORY_SENTENCES:,} a story (VST_MAX_STORY_SENTENCES raises it)"
        }
        assert records["long"].errors["redundancy"].startswith(f"story not scored: {len(long.text):,} characters, over the limit")
        assert "VST_MAX_STORY_CHARS raises it" in records["long"].errors["redundancy"]
        assert records["fine"].errors == {} and records["fine"].metrics["redundancy"].score is not None
        assert seen == (["fine"] if spans else [])

    # the environment raises a limit; 0 turns it off
    monkeypatch.setenv("VST_MAX_STORY_SENTENCES", str(MAX_STORY_SENTENCES + 1))
    monkeypatch.setenv("VST_MAX_STORY_CHARS", "0")
    records = {r.story_id: r for r in score_records(StorySet.of([many, long], "."), NR)}
    assert records["many"].metrics["redundancy"].score is not None and records["long"].errors == {}


def test_the_reference_reading_is_held_to_the_sentence_limit_after_its_own_split() -> None:
    # one given sentence, which Punkt splits into 300: the paper reading scores it, the public code's is refused
    story = Story.from_sentences([" ".join(["It rained."] * 300)], story_id="one")
    assert refused(story) == ""
    for spans in (True, False):
        (paper,) = score_records(StorySet.of([story], "."), NR.with_(spans=spans))
        assert paper.metrics["redundancy"].score is not None
        (ref,) = score_records(StorySet.of([story], "."), Settings(metrics=("redundancy",), nr_variant="reference", spans=spans))
        assert ref.errors["redundancy"] == (
            "ValueError: the public code's sentence split of the story gives 300 sentences, over the limit of "
            f"{MAX_STORY_SENTENCES} a story (VST_MAX_STORY_SENTENCES raises it)"
        )


WORD = st.sampled_from(["the", "dog", "a", "Ann", "[female]", "can't", "x" * 40, "ok.", "3"])
PUNCT = st.text(alphabet=".,!?;:'\"-()[]…", min_size=1, max_size=3)
SPACE = st.text(alphabet=" \n\t\r\u00a0", min_size=1, max_size=4)
#: How many times a piece repeats: small, at the sentence limit, and far past both limits.
TIMES = st.one_of(st.integers(1, 300), st.sampled_from([MAX_STORY_SENTENCES - 1, MAX_STORY_SENTENCES, 1_000, 3_000, 8_000]))
HOSTILE = st.one_of(
    st.tuples(WORD, TIMES).map(lambda t: (t[0] + " ") * t[1]),  # a long run of one word
    st.tuples(PUNCT, TIMES).map(lambda t: t[0] * t[1]),  # of punctuation
    st.tuples(SPACE, WORD, TIMES).map(lambda t: t[1] + t[0] * t[2] + t[1]),  # of spaces, newlines
    st.tuples(st.lists(WORD, min_size=1, max_size=12), TIMES).map(lambda t: (" ".join(t[0]) + ". ") * t[1]),  # a sentence again
    st.tuples(st.lists(WORD, min_size=1, max_size=12), TIMES).map(lambda t: " ".join(t[0] * t[1])),  # one giant sentence
    st.tuples(WORD, TIMES).map(lambda t: (t[0] + ". ") * t[1]),  # many tiny sentences
    st.lists(st.one_of(WORD, PUNCT, SPACE), max_size=400).map("".join),  # any mixture
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(HOSTILE, st.booleans())
def test_the_work_on_a_hostile_text_is_linear_in_its_characters(text: str, as_lines: bool) -> None:
    """A story within the limits costs RoViST-NR at most (sentence limit + 4) steps a character, spans
    listed included; one over them is refused before any metric sees it."""
    sentences = [s for s in text.split("\n") if s.strip()] if as_lines else split_story(text)
    story = Story("h", "h", "m", tuple(sentences))
    chars = sum(map(len, sentences))
    why = refused(story)
    if len(sentences) > MAX_STORY_SENTENCES or chars > MAX_STORY_CHARS:
        assert why.startswith("story not scored: ") and "raises it" in why
        return
    assert why == ""
    for variant in ("paper", "reference"):
        try:
            tokens = nr_words(story, variant)  # type: ignore[arg-type]
        except ValueError as exc:  # Punkt split it into more sentences than the limit
            assert variant == "reference" and "over the limit" in str(exc)
            continue
        result = non_redundancy(tokens, n=4, variant=variant)  # type: ignore[arg-type]
        assert sum(map(len, tokens)) <= chars + len(tokens)
        assert result.steps <= (MAX_STORY_SENTENCES + 4) * (chars + len(tokens) + 1)
        assert spans_listed(result) <= MAX_SPANS
        assert (result.left_out > 0) == any(CAPPED in note for note in result.notes)


def test_a_sequence_metric_never_reads_a_story_over_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work over a whole set before the chunks (Vrank's pairs, COSMic's reference) is given
    only the stories that will be scored: a refused story's text reaches no model."""
    from dataclasses import replace

    from vst_core.contract import registry
    from vst_core.scoring import sets

    seen: list[str] = []

    def together(story_set: Any, todo: Any, settings: Any, models: Any, progress: Any) -> dict[Any, str]:
        seen.extend(s.story_id for s in todo)
        return {s.key: "none" for s in todo}

    reg = registry()
    spec = reg.specs["vrank"]
    patched = replace(spec, computing=replace(spec.computing, together=together))
    monkeypatch.setitem(reg.specs, "vrank", patched)
    long = Story("long", "long", "m", ("We went to the beach.",) * (MAX_STORY_SENTENCES + 1))
    short = Story("short", "short", "m", ("We went to the beach.", "It was sunny."))
    found = sets.set_results(StorySet.of([long, short], "."), [long, short], Settings(metrics=("vrank",)), None)  # type: ignore[arg-type]
    assert seen == ["short"]
    assert list(found) == [short.key]


def test_idf_is_fitted_over_the_stories_within_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """idf, fitted over the whole set before any chunk, reads no refused story: a story over a
    limit never reaches spaCy's parse (which refuses a text of over 1,000,000 characters)."""
    from vst_core.scoring.registry import Models

    fitted: list[str] = []

    class Watched:
        needs_idf = True
        idf: dict[str, float] = {}

        def fit_idf(self, stories: list[Story]) -> None:
            fitted.extend(s.story_id for s in stories)

    models = Models(Settings(metrics=("grounding",)))
    monkeypatch.setattr(models, "grounder", lambda root: Watched())
    long = Story("long", "long", "m", ("x" * (MAX_STORY_CHARS + 1),))
    short = Story("short", "short", "m", ("We went to the beach.",))
    models.grounder_for(StorySet.of([long, short], "."))
    assert fitted == ["short"]


def test_a_text_over_the_character_limit_is_refused_before_it_is_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text with more characters besides white space than a story may have is never split (a
    10 MB cell of '?! ' took the splitter minutes before it was refused); white space alone is no
    cost and is split as ever."""
    from vst_core.data import read_story_set, readers

    split: list[int] = []

    def counted(text: str) -> list[str]:
        split.append(len(text))
        return split_story(text)

    monkeypatch.setattr(readers, "_default_splitter", lambda: counted)
    rows = [
        {"story_id": "hostile", "text": "A man walks. " + "?! " * MAX_STORY_CHARS},
        {"story_id": "groups", "groups": ["A man walks.", "?!" * MAX_STORY_CHARS]},
        {"story_id": "spaces", "text": "A man walks." + " " * (4 * MAX_STORY_CHARS) + "He stops."},
    ]
    path = tmp_path / "stories.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    stories = {s.story_id: s for s in read_story_set(path, check_images=False)}
    assert split == [len(rows[2]["text"])]
    for name in ("hostile", "groups"):
        assert refused(stories[name]).startswith("story not scored: a text of ")
        assert len(stories[name].sentences) == 1 and len(stories[name].sentences[0]) < 300
    assert refused(stories["spaces"]) == "" and stories["spaces"].sentences == ("A man walks.", "He stops.")


def test_a_refused_storys_record_keeps_what_the_limits_allow_and_a_rerun_skips_it(tmp_path: Path) -> None:
    """A story refused for its length is written with as many of its sentences as the limits allow,
    with a warning, so its line stays one the scores reader takes and a rerun finds it done
    (a record of every sentence was a line of over 10 MB, skipped on reading and appended again)."""
    from vst_core.cli import main

    sentences = ["The cat sat on the mat near the door of the old house."] * (3 * MAX_STORY_SENTENCES)
    path = tmp_path / "stories.json"
    path.write_text(
        json.dumps(
            [
                {"story_id": "long", "system": "m", "sentences": sentences},
                {"story_id": "ok", "system": "m", "sentences": ["We went.", "It was sunny."]},
            ]
        )
    )
    out = tmp_path / "scores.jsonl"
    for _ in range(2):
        main(["score", str(path), "--out", str(out), "--metrics", "redundancy", "--no-progress"])
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    long = json.loads(lines[0])
    assert len(long["sentences"]) <= MAX_STORY_SENTENCES and sum(map(len, long["sentences"])) <= MAX_STORY_CHARS
    assert any("the record keeps the first" in w for w in long["warnings"])
    assert json.loads(lines[1])["sentences"] == ["We went.", "It was sunny."]
