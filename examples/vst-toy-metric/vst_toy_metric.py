"""An example metric plugin for vst-eval: lexical variety, distinct words / words over the story.

Installed (``pip install examples/vst-toy-metric``), it is a metric like the built-in ones:
``vst score stories.jsonl --metrics redundancy,lexical_variety`` computes it, the scores file
keeps its records, the Dataset page shows its ``variety`` column, the Agreement page ranks it
against people's ratings and the Inspect page draws its card and its evidence (the words the
story repeats). Nothing in vst-eval names it: its ``pyproject.toml`` registers :data:`METRIC` in
the ``vst_eval.metrics`` entry-point group.

It owns one setting, declared once as an :class:`~vst_core.contract.Option`: a file of words
not to count (``--lexical-variety-stopwords FILE`` on the command line,
``Settings(lexical_variety_stopwords=FILE)`` in Python, a box in the dashboard's sidebar; the
signature names the file by its digest, from :func:`identity`).

>>> variety(("A dog ran.", "The dog sat."))
LexicalVariety(score=0.8333333333333334, words=6, distinct=5, repeated=('dog',))
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vst_core.contract import (
    Computing,
    MetricField,
    MetricSpec,
    Option,
    RunLike,
    SettingsLike,
    Showing,
    Signing,
    Story,
)

NAME = "lexical_variety"
_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True, slots=True)
class LexicalVariety:
    """``score`` = distinct words / words (None for a story without words); ``repeated`` the words
    used more than once, most frequent first."""

    score: float | None
    words: int
    distinct: int
    repeated: tuple[str, ...] = ()


def variety(sentences: Sequence[str], stopwords: frozenset[str] = frozenset()) -> LexicalVariety:
    """Lexical variety of a story's sentences (lower-cased words, apostrophes kept, ``stopwords`` not counted)."""
    words = [w for s in sentences for w in _WORD.findall(s.lower()) if w not in stopwords]
    counts = Counter(words)
    repeated = tuple(w for w, n in counts.most_common() if n > 1)
    return LexicalVariety(len(counts) / len(words) if words else None, len(words), len(counts), repeated)


STOPWORDS = "lexical_variety_stopwords"


def stopwords(path: str | None) -> frozenset[str]:
    """The words of the stopword file (one or more per line, lower-cased), or none without a file."""
    if not path:
        return frozenset()
    return frozenset(_WORD.findall(Path(path).read_text(encoding="utf-8").lower()))


def score(stories: Sequence[Story], run: RunLike) -> Mapping[tuple[str, str], LexicalVariety]:
    """The hook vst-eval calls on each batch: ``{(system, story_id): record}``."""
    left_out = stopwords(run.settings.option(STOPWORDS))
    return {story.key: variety(story.sentences, left_out) for story in stories}


def identity(settings: SettingsLike) -> dict[str, str]:
    """The stopword file in the signature, by its content: ``{"lexical_variety_stopwords": sha256 prefix}``."""
    path = settings.option(STOPWORDS)
    return {STOPWORDS: hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else "none"}


def evidence(found: LexicalVariety) -> tuple[str, str] | None:
    """The words the story repeats (given the story's record), as an escaped list."""
    if not found.repeated:
        return None
    items = "".join(f"<li>{html.escape(w)}</li>" for w in found.repeated)
    n = len(found.repeated)
    return f"Lexical variety: {n} repeated word{'' if n == 1 else 's'}", f'<ul class="vst-toy-repeated">{items}</ul>'


METRIC = MetricSpec(
    name=NAME,
    title="Lexical variety",
    description="lexical variety (example plugin): distinct words / words over the story",
    record=LexicalVariety,
    fields=(
        MetricField("variety", NAME, "score", "distinct words / words over the story", report="variety"),
        MetricField("words", NAME, "words", "words in the story", direction="none"),
    ),
    card="https://example.org/vst-toy-metric",
    computing=Computing(score=score),
    signing=Signing(
        version="0.1.0",
        identity=identity,
        options=(
            Option(
                STOPWORDS,
                help="a text file of words not to count (a stopword list)",
                kind="file",
                label="Lexical variety stopwords",
                signed=False,  # identity() signs the file's content
                metavar="FILE",
            ),
        ),
    ),
    showing=Showing(evidence=evidence),
)
