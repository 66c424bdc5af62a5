"""Nouns of a story as the RoViST-VG code extracts them (``usydnlp/rovist``, ``scripts/extract_nouns.py``).

Their rules: the story text split by NLTK's ``sent_tokenize``; in each sentence the placeholders
``[male]``, ``[female]``, ``[location]``, ``[organization]`` become the bare word; the sentence split
by ``word_tokenize`` and tagged by NLTK's ``pos_tag``; every token tagged NN, NNS, NNP or NNPS is a
noun except the token ``i``; a noun counts once per sentence and again in another sentence.

The sentence split and word tokens come from :mod:`vst_core.text.public` (NLTK itself). The tagger:

* ``nltk``: NLTK's averaged-perceptron English model (``averaged_perceptron_tagger_eng``, the JSON form
  of the model the authors' ``pos_tag`` loaded) when its data is installed
  (``python -m nltk.downloader averaged_perceptron_tagger_eng``): their exact tags;
* ``spacy`` otherwise: the spaCy pipeline's tagger (Penn Treebank ``tag_``) on the same NLTK tokens,
  so only the tags can differ, never the tokens. :func:`tagger_name` says which ran (the signature
  records it).

The ``textblob-aptagger`` package is not used: its model (``trontagger-0.1.0.pickle``) is an earlier
training of the same perceptron, not NLTK's weights (another tag dictionary and weight table, and
``-LRB-``/``-RRB-`` where NLTK's model has ``(``/``)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from vst_core.text.public import punkt_sentences, word_tokens

#: Penn Treebank noun tags the RoViST-VG code keeps.
NOUN_TAGS: frozenset[str] = frozenset({"NN", "NNS", "NNP", "NNPS"})
#: VIST's anonymisation placeholders and the word each becomes before tagging.
PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    ("[male]", "male"),
    ("[female]", "female"),
    ("[location]", "location"),
    ("[organization]", "organization"),
)
#: The one token dropped although tagged as a noun (VIST text is lower-cased: "i" is the pronoun).
DROPPED = "i"


@dataclass(frozen=True, slots=True)
class Noun:
    """A noun token and the sentence (of the Punkt split of the story) it comes from."""

    text: str
    sentence: int


#: NLTK's data package holding the perceptron tagger the authors' ``pos_tag`` used.
NLTK_TAGGER_DATA = "averaged_perceptron_tagger_eng"


def nltk_tagger_path() -> Path | None:
    """Where NLTK's tagger data is installed, or None."""
    try:
        import nltk

        return Path(str(nltk.data.find(f"taggers/{NLTK_TAGGER_DATA}")))
    except (LookupError, ImportError, OSError):
        return None


@lru_cache(maxsize=1)
def _nltk_tagger() -> Any | None:
    """NLTK's averaged-perceptron English tagger when its data is installed, else None."""
    try:
        from nltk.tag.perceptron import PerceptronTagger

        return PerceptronTagger()
    except (LookupError, OSError, ValueError, ImportError):
        return None


def tagger_name(spacy_model: str | None = None) -> str:
    """Which tagger :func:`story_nouns` uses, with its version (recorded in the signature)."""
    if _nltk_tagger() is not None:
        import nltk

        return f"nltk-{nltk.__version__}/averaged_perceptron_tagger_eng"
    from vst_core.text.phrases import load_spacy, spacy_model_name

    return f"spacy/{spacy_model_name(load_spacy(spacy_model))}/tag_"


def _tag(sentences: Sequence[Sequence[str]], spacy_model: str | None) -> list[list[str]]:
    """Penn tags of each tokenised sentence."""
    tagger = _nltk_tagger()
    if tagger is not None:
        return [[t for _, t in tagger.tag(list(words))] if words else [] for words in sentences]
    from spacy.tokens import Doc

    from vst_core.text.phrases import load_spacy

    nlp = load_spacy(spacy_model)
    skip = [name for name in nlp.pipe_names if name not in ("tok2vec", "tagger")]
    docs = [Doc(nlp.vocab, words=list(words)) for words in sentences if words]
    tagged = iter(list(nlp.pipe(docs, disable=skip)))
    return [[t.tag_ for t in next(tagged)] if words else [] for words in sentences]


def story_text(sentences: Sequence[str]) -> str:
    """A story as the one text the RoViST code reads."""
    return " ".join(s.strip() for s in sentences if s.strip())


def nouns_many(stories: Sequence[Sequence[str]], spacy_model: str | None = None) -> list[list[Noun]]:
    """:func:`story_nouns` of many stories, tagged in one pass."""
    split: list[list[list[str]]] = []
    for sentences in stories:
        text = story_text(sentences)
        parts = punkt_sentences(text) if text else []
        cleaned = []
        for sentence in parts:
            for placeholder, word in PLACEHOLDERS:
                sentence = sentence.replace(placeholder, word)
            cleaned.append(word_tokens(sentence))
        split.append(cleaned)
    flat = [words for story in split for words in story]
    tags = iter(_tag(flat, spacy_model))
    out: list[list[Noun]] = []
    for story in split:
        found: list[Noun] = []
        for k, words in enumerate(story):
            seen: dict[str, None] = {}
            for word, tag in zip(words, next(tags), strict=True):
                if word != DROPPED and tag in NOUN_TAGS:
                    seen.setdefault(word)
            found.extend(Noun(w, k) for w in seen)
        out.append(found)
    return out


def story_nouns(sentences: Sequence[str], spacy_model: str | None = None) -> list[Noun]:
    """The nouns of one story, in order, once per sentence (see the module doc for the rules).

    >>> [n.text for n in story_nouns(["the dog ran to the park .", "the dog slept ."])]  # doctest: +SKIP
    ['dog', 'park', 'dog']
    """
    return nouns_many([sentences], spacy_model)[0]
