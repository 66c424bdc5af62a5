"""How long a story may be to be scored: its characters and sentences, set by the environment.

A story over a limit is refused with the reason in every metric's error, before any metric sees it
(:func:`vst_core.scoring.story.refused`); a text over the character limit is refused before it is
even split into sentences (:func:`text_limit_reason`). The limits are not signed: a refused story has
no numbers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache

_log = logging.getLogger(__name__)

#: A story longer than this, its sentences' characters together, is not scored (each metric's
#: error says why); ``VST_MAX_STORY_CHARS`` sets it, 0 turns it off. Nine times the longest released
#: story (VWP, LLaVA: 2,212 characters).
MAX_STORY_CHARS = 20_000
#: A story with more sentences than this is not scored: RoViST-NR compares every pair of sentences,
#: so its work grows with their square. ``VST_MAX_STORY_SENTENCES`` sets it, 0 turns it off. Six
#: times the most a released story has (31); 200 sentences of the same 33 words (19,600 characters) take
#: RoViST-NR 0.23 s with its spans.
MAX_STORY_SENTENCES = 200


def _story_limit(name: str, default: int) -> int | None:
    """The limit in environment variable ``name`` (a whole number; 0: none), else ``default``."""
    return _read_limit(name, os.environ.get(name, ""), default)


@lru_cache(maxsize=16)
def _read_limit(name: str, given: str, default: int) -> int | None:
    """``given`` as a limit (0: none); an unreadable value keeps ``default`` and says so, once."""
    text = given.strip().replace("_", "").replace(",", "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        _log.warning("%s=%r is not a whole number of at least 0; the limit stays %s", name, given, f"{default:,}")
        return default
    return value or None


def text_limit_reason(text: str) -> str | None:
    """Why a story's text, before it is split into sentences, is over the character limit: its
    characters besides white space, which every sentence keeps, number more than
    :data:`MAX_STORY_CHARS` (or the environment's). Splitting such a text would cost more than
    the story can be scored for; it is refused unsplit. None when it may be split.

    >>> text_limit_reason("We went to the beach. " * 3) is None
    True
    >>> text_limit_reason("?! " * 20_000)
    'a text of 40,000 characters besides white space, over the limit of 20,000 a story (VST_MAX_STORY_CHARS raises it)'
    """
    chars = _story_limit("VST_MAX_STORY_CHARS", MAX_STORY_CHARS)
    if chars is None or len(text) <= chars:
        return None
    solid = len("".join(text.split()))
    if solid <= chars:
        return None
    return (
        f"a text of {solid:,} characters besides white space, over the limit of {chars:,} a story (VST_MAX_STORY_CHARS raises it)"
    )


def story_limit_reason(sentences: Sequence[str]) -> str | None:
    """Why a story of these sentences is over a limit (:data:`MAX_STORY_CHARS`,
    :data:`MAX_STORY_SENTENCES`, or the environment's), or None when it is within them.

    >>> story_limit_reason(["We went to the beach.", "It was sunny."]) is None
    True
    >>> story_limit_reason(["Go."] * 201)
    '201 sentences, over the limit of 200 a story (VST_MAX_STORY_SENTENCES raises it)'
    """
    chars = _story_limit("VST_MAX_STORY_CHARS", MAX_STORY_CHARS)
    count = _story_limit("VST_MAX_STORY_SENTENCES", MAX_STORY_SENTENCES)
    if count is not None and len(sentences) > count:
        return f"{len(sentences):,} sentences, over the limit of {count:,} a story (VST_MAX_STORY_SENTENCES raises it)"
    length = sum(map(len, sentences))
    if chars is not None and length > chars:
        return f"{length:,} characters, over the limit of {chars:,} a story (VST_MAX_STORY_CHARS raises it)"
    return None
