"""WordNet noun lemmas, as NLTK's ``WordNetLemmatizer().lemmatize(word)`` gives them, for the GROOVIST
reference profile (its concreteness lookup falls back to that lemma).

The algorithm is WordNet's *morphy* for nouns: a word listed in ``noun.exc`` maps to its base
forms (``geese`` -> ``goose``); otherwise the suffix rules (``-s``, ``-ses``, ``-xes``, ``-zes``,
``-ches``, ``-shes``, ``-men``, ``-ies``) are applied, repeatedly while nothing matches, and the
shortest form that is a noun in ``index.noun`` wins; with none, the word itself. The WordNet 3.0
database files are read from ``$VST_WORDNET_DIR``, Debian's ``wordnet-base`` package
(``/usr/share/wordnet``) or NLTK's data folder (``corpora/wordnet``), whichever has them first.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

_RULES: tuple[tuple[str, str], ...] = (
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
)


def wordnet_dir() -> Path | None:
    """The first folder holding ``index.noun`` and ``noun.exc``, or None."""
    candidates = [os.environ.get("VST_WORDNET_DIR", ""), "/usr/share/wordnet"]
    try:
        import nltk

        candidates += [str(Path(p) / "corpora" / "wordnet") for p in nltk.data.path]
    except ImportError:  # pragma: no cover - nltk is a requirement
        pass
    for candidate in filter(None, candidates):
        folder = Path(candidate)
        if (folder / "index.noun").is_file() and (folder / "noun.exc").is_file():
            return folder
    return None


@lru_cache(maxsize=1)
def _database() -> tuple[frozenset[str], dict[str, tuple[str, ...]]] | None:
    folder = wordnet_dir()
    if folder is None:
        return None
    nouns = set()
    with (folder / "index.noun").open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line and not line.startswith(" "):  # the licence header lines start with two spaces
                nouns.add(line.split(" ", 1)[0])
    exceptions: dict[str, tuple[str, ...]] = {}
    with (folder / "noun.exc").open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 2:
                exceptions[parts[0]] = tuple(parts[1:])
    return frozenset(nouns), exceptions


def wordnet_id() -> str:
    """Where the lemmas come from, for the signature (``missing`` without WordNet)."""
    folder = wordnet_dir()
    return f"wordnet-3.0:{folder}" if folder is not None else "wordnet:missing"


def noun_lemma(word: str) -> str:
    """``WordNetLemmatizer().lemmatize(word)`` (noun); the word itself without WordNet data."""
    database = _database()
    if database is None:
        return word
    nouns, exceptions = database

    def known(forms: list[str]) -> list[str]:
        return list(dict.fromkeys(f for f in forms if f in nouns))

    def rules(forms: list[str]) -> list[str]:
        return [f[: -len(old)] + new for f in forms for old, new in _RULES if f.endswith(old)]

    if word in exceptions:
        found = known([word, *exceptions[word]])
    else:
        forms = rules([word])
        found = known([word, *forms])
        while not found and forms:
            forms = rules(forms)
            found = known(forms)
    return min(found, key=len) if found else word
