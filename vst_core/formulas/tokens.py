"""What the metrics count as a word."""

from __future__ import annotations


def is_punctuation(token: str) -> bool:
    """True when the token has no letter or digit (``.``, ``,``, ``--``, ``"``).

    >>> [is_punctuation(t) for t in (".", "--", "a.", "3")]
    [True, True, False, False]
    """
    return not any(map(str.isalnum, token))
