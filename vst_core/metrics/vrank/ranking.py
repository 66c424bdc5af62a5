"""Story scores from a pairwise ranker (Vrank): margins and their means.

A ranker f(a, b) predicts the ranking gap of story a over story b (> 0: a better). Asked in both
orders, its margin is m(a, b) = (f(a, b) − f(b, a)) / 2, antisymmetric by construction, so the
order stories are given in cannot decide a pair. A story's score is its mean margin over the other
stories of its image sequence, s(a) = mean_b m(a, b); with two stories s(a) = m(a, b) = −s(b),
so pairwise accuracy on the scores equals the ranker's own accuracy on the pair.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def margin(forward: float, backward: float) -> float:
    """m(a, b) = (f(a, b) − f(b, a)) / 2.

    >>> margin(0.8, -0.4)
    0.6000000000000001
    """
    return (forward - backward) / 2.0


def story_margins(
    keys: Sequence[K], predicted: Mapping[tuple[K, K], float]
) -> tuple[dict[K, float | None], dict[K, dict[K, float]]]:
    """Per story its mean margin (None with no other story) and its margin against each other story.

    ``predicted[(a, b)]`` is f(a, b); a pair missing in either order, or not finite, is left out.

    >>> scores, margins = story_margins(["a", "b"], {("a", "b"): 1.0, ("b", "a"): -0.5})
    >>> scores, margins["b"]
    ({'a': 0.75, 'b': -0.75}, {'a': -0.75})
    """
    margins: dict[K, dict[K, float]] = {k: {} for k in keys}
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            forward, backward = predicted.get((a, b)), predicted.get((b, a))
            if forward is None or backward is None or not (math.isfinite(forward) and math.isfinite(backward)):
                continue
            m = margin(forward, backward)
            margins[a][b] = m
            margins[b][a] = -m
    scores: dict[K, float | None] = {k: (sum(v.values()) / len(v) if v else None) for k, v in margins.items()}
    return scores, margins
