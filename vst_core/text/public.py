"""The public RoViST code's text processing, for the ``reference`` RoViST-NR profile.

That code splits a story with NLTK's ``sent_tokenize`` (Punkt, English model) and each sentence
with NLTK's ``word_tokenize`` (Treebank rules: ``[female]`` becomes ``[``, ``female``, ``]``,
``grandpa's`` becomes ``grandpa``, ``'s``, quotes become `````` / ``''``). Here NLTK itself does
both. The word rules ship with the nltk package; the English Punkt model is data that NLTK
downloads separately (``punkt_tab``):

* when it is installed (``python -m nltk.downloader punkt_tab``), it is used: the public code's
  exact splitter;
* otherwise Punkt runs with no trained model plus :data:`ABBREVIATIONS` and any dotted initialism
  of the text (``t.j.``, ``u.s.``) as abbreviations. On VIST-style text (tokenised, lower-cased,
  a period as its own token) the two agree except at an ellipsis, where the trained model's
  orthographic statistics decide. :func:`splitter_name` says which one ran; it is in the signature.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vst_core.text.phrases import Token

#: Abbreviations the trained English model knows and VIST-like stories use (title, street, month).
ABBREVIATIONS: frozenset[str] = frozenset(
    "mr mrs ms dr st jr sr mt ft vs etc prof lt col gen capt sgt inc ltd co jan feb aug sept oct nov dec".split()
)
_INITIALISM = re.compile(r"(?<![\w.])((?:[a-z]\.){2,})", re.IGNORECASE)
_QUOTES = {"``": '"', "''": '"'}


@lru_cache(maxsize=1)
def _trained() -> object | None:
    """NLTK's English Punkt model when its data is installed, else None."""
    try:
        from nltk.tokenize import PunktTokenizer

        return PunktTokenizer("english")
    except (LookupError, OSError, ImportError, ValueError):
        return None


def splitter_name() -> str:
    """Which sentence splitter :func:`punkt_sentences` uses (recorded in the signature)."""
    import nltk

    kind = "punkt_tab-english" if _trained() is not None else "punkt-untrained+abbreviations"
    return f"nltk-{nltk.__version__}/{kind}"


def punkt_sentences(text: str) -> list[str]:
    """Sentences of ``text`` as ``nltk.sent_tokenize`` splits them (see the module doc)."""
    trained = _trained()
    if trained is not None:
        return list(trained.tokenize(text))  # type: ignore[attr-defined]
    initialisms = frozenset(m.group(1).lower()[:-1] for m in _INITIALISM.finditer(text))
    return list(_untrained(initialisms).tokenize(text))  # type: ignore[attr-defined]


@lru_cache(maxsize=256)
def _untrained(initialisms: frozenset[str]) -> object:
    """Punkt with no trained model, :data:`ABBREVIATIONS` and a text's dotted initialisms."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS | initialisms)
    return PunktSentenceTokenizer(params)


def split_story(text: str) -> list[str]:
    """A story text as sentences, the way the public RoViST and dHM code splits it (Punkt);
    blank pieces dropped. The default splitter for stories given as one text."""
    return [s.strip() for s in punkt_sentences(text.strip()) if s.strip()] if text.strip() else []


def word_tokens(sentence: str) -> list[str]:
    """``nltk.word_tokenize`` of one sentence (already split, so no second sentence split)."""
    from nltk.tokenize import word_tokenize

    return list(word_tokenize(sentence, preserve_line=True))


def located_tokens(sentence: str) -> list[Token] | None:
    """:func:`word_tokens` with their character spans in ``sentence``; None when a token cannot be
    found in order (the tokenizer rewrote it beyond its quote conversion)."""
    out: list[Token] = []
    at = 0
    for token in word_tokens(sentence):
        surface = _QUOTES.get(token, token)
        start = sentence.find(surface, at)
        if start < 0 and surface == '"':
            start = min((i for i in (sentence.find(q, at) for q in ('"', "``", "''")) if i >= 0), default=-1)
        if start < 0:
            return None
        end = start + (len(surface) if sentence.startswith(surface, start) else 2)
        out.append(Token(token, start, end))
        at = end
    return out
