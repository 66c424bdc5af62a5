"""Tokens, placeholders, sentence splitting and noun phrases (spaCy pipeline from PyPI)."""

from __future__ import annotations

import pytest

from vst_core.text.phrases import (
    SpacyUnavailableError,
    load_spacy,
    noun_phrases,
    replace_placeholders,
    split_sentences,
    tokenize,
)


def test_tokenize_offsets_and_treebank_like_splits() -> None:
    sentence = "[female] didn't like the ice-cream, sadly..."
    tokens = tokenize(sentence)
    assert [t.text for t in tokens] == ["[female]", "did", "n't", "like", "the", "ice-cream", ",", "sadly", "..."]
    assert all(sentence[t.start : t.end] == t.text for t in tokens)


def test_replace_placeholders_maps_back_to_the_original() -> None:
    text, starts, ends = replace_placeholders("[male] met [female].")
    assert text == "male met female."
    assert (starts[0], ends[3]) == (0, 6)  # "male" covers "[male]"
    k = text.index("female")
    assert (starts[k], ends[k + 5]) == (11, 19)


@pytest.mark.slow  # loads spaCy and its pipeline (with torch: about 3.5 s)
def test_split_sentences() -> None:
    assert split_sentences("We went to the beach. The water was cold!  ") == ["We went to the beach.", "The water was cold!"]
    assert split_sentences("   ") == []


@pytest.mark.slow  # loads spaCy and its pipeline (with torch: about 3.5 s)
def test_noun_phrases_placeholders_pronouns_dedup_and_spans() -> None:
    sentences = ["[male] bought a red kite at the beach.", "He flew the red kite.", "It was fun for everyone."]
    phrases = noun_phrases(sentences)
    texts = [p.text for p in phrases]
    assert "male" in texts and "a red kite" in texts and "the beach" in texts
    assert "the red kite" in texts  # different surface form, kept
    assert not {"he", "it", "everyone"} & set(texts)  # pronoun-only chunks dropped
    for p in phrases:
        assert sentences[p.sentence][p.start : p.end] == p.surface
    male = next(p for p in phrases if p.text == "male")
    assert male.surface == "[male]" and male.sentence == 0
    kite = next(p for p in phrases if p.text == "the red kite")
    assert kite.sentence == 1 and kite.root == "kite"


@pytest.mark.slow  # loads spaCy and its pipeline (with torch: about 3.5 s)
def test_noun_phrases_dedup_within_story() -> None:
    phrases = noun_phrases(["The dog barked.", "The dog slept."])
    assert [(p.text, p.sentence) for p in phrases] == [("the dog", 0)]


@pytest.mark.slow  # loads spaCy and its pipeline (with torch: about 3.5 s)
def test_spacy_loaded_once_and_unknown_model_is_clear() -> None:
    assert load_spacy() is load_spacy()
    with pytest.raises(SpacyUnavailableError, match="no spaCy English pipeline"):
        load_spacy("xx_no_such_pipeline")
