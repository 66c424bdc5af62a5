"""Character consistency: does a story keep its named characters, sentence after sentence?

For each named character present in at least one of a story's N ≥ 2 sentences (present: named,
or in a coreference cluster that names it), with P its sentences (as "Humans vs Vision-Language
Models: a unified measure of narrative coherence", NCS 2026, defines them; public code):

    continuity  CharTr = mean over s = 0 … N−2 of [s ∈ P and s+1 ∈ P]   (consecutive sentences that both keep it)
    spread      CharRe = (max P − min P) / (N − 1)                       (how much of the story it spans)
    coherence          = tanh(continuity / (spread + 1e-8))              (local continuity against global span)
    persistence        = |P| / N                                          (the share of sentences it is in)
    introduction       = min P / (N − 1)                                  (0: in the first sentence)

and, for a story in sentence groups per image, the share of the image groups it is named in.
A story's value of each is the mean over its present characters; a story whose characters are
never found has none (NCS's "nan" policy; their "zero" policy would score it 0).

>>> t = track("Ann", {0, 1, 3}, 4)
>>> round(t.continuity, 4), round(t.spread, 4), round(t.coherence, 4), t.persistence
(0.3333, 1.0, 0.3215, 0.75)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: NCS's guard against a zero spread (a character in one sentence).
EPSILON = 1e-8


@dataclass(frozen=True, slots=True)
class Track:
    """One character through a story: the sentences (and image groups) it is present in and its
    measures (module docstring)."""

    name: str
    sentences: tuple[int, ...]
    frames: tuple[int, ...]
    continuity: float
    spread: float
    coherence: float
    persistence: float
    introduction: float
    frame_share: float | None


def track(name: str, present: Iterable[int], n: int, frames: Sequence[int] = (), groups: int = 0) -> Track:
    """The measures of a character present in sentences ``present`` of ``n`` (n ≥ 2); ``frames``:
    the image group of each sentence, ``groups`` how many there are (0: no groups)."""
    found = sorted(set(present))
    if n < 2 or not found:
        raise ValueError("a track needs a story of at least 2 sentences and a character present in one")
    inside = set(found)
    continuity = sum(1 for s in range(n - 1) if s in inside and s + 1 in inside) / (n - 1)
    spread = (found[-1] - found[0]) / (n - 1)
    in_frames = tuple(sorted({frames[s] for s in found})) if frames else ()
    return Track(
        name,
        tuple(found),
        in_frames,
        continuity,
        spread,
        math.tanh(continuity / (spread + EPSILON)),
        len(found) / n,
        found[0] / (n - 1),
        len(in_frames) / groups if frames and groups else None,
    )


def name_pattern(name: str) -> re.Pattern[str]:
    """A character's name as a whole word or words, any case ("Ann" in "Ann's", not in "Anna").

    >>> bool(name_pattern("Ann").search("Then Ann's dog ran.")), bool(name_pattern("Ann").search("Anna ran."))
    (True, False)
    """
    words = [re.escape(w) for w in name.split()]
    return re.compile(r"(?<![\w])" + r"\s+".join(words) + r"(?![\w])", re.IGNORECASE)


def presence_by_names(sentences: Sequence[str], names: Iterable[str]) -> dict[str, set[int]]:
    """The sentences each character is named in (plain name matching, no coreference: a pronoun
    does not count), for every distinct name, present or not.

    >>> presence_by_names(["Ann waves.", "She smiles.", "Ann and Bob leave."], ["Ann", "Bob"])
    {'Ann': {0, 2}, 'Bob': {2}}
    """
    out: dict[str, set[int]] = {}
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        pattern = name_pattern(name)
        out[name] = {k for k, sentence in enumerate(sentences) if pattern.search(sentence)}
    return out


def presence_from_clusters(
    tokens: Sequence[Sequence[str]], clusters: Sequence[Sequence[Sequence[int]]], names: Iterable[str]
) -> dict[str, set[int]]:
    """The sentences each character is present in by a coreference model's clusters (as NCS
    attributes them): a cluster belongs to every character whose lower-cased name is part of one
    of its mentions' lower-cased text, and the character is present in each sentence where a
    mention of the cluster starts. ``tokens``: the sentences' tokens; a mention is [first, last]
    over the flattened tokens."""
    flat = [t for sentence in tokens for t in sentence]
    bounds, at = [], 0
    for sentence in tokens:  # each sentence's first and last flattened token (an empty one holds none)
        bounds.append((at, at + len(sentence) - 1))
        at += len(sentence)
    wanted = sorted({n.lower() for n in names if n and n != "{}"})
    out: dict[str, set[int]] = {n: set() for n in wanted}
    for cluster in clusters:
        where: set[int] = set()
        texts: list[str] = []
        for first, last in cluster:
            if last < len(flat):
                texts.append(" ".join(flat[first : last + 1]).lower())
                where.update(next(([k] for k, (a, b) in enumerate(bounds) if a <= first <= b), []))
        if not where or not texts:
            continue
        for name in wanted:
            if any(name in text for text in texts):
                out[name].update(where)
    return out


def tracks(presence: Mapping[str, set[int]], n: int, frames: Sequence[int] = (), groups: int = 0) -> list[Track]:
    """Every present character's :class:`Track` (none below 2 sentences), by name."""
    if n < 2:
        return []
    return [track(name, found, n, frames, groups) for name, found in sorted(presence.items()) if found]


def mean_of(found: Sequence[Track], attr: str) -> float | None:
    """The mean of a measure over the characters (None without any, or where none has it)."""
    values = [getattr(t, attr) for t in found if getattr(t, attr) is not None]
    return sum(values) / len(values) if values else None


@dataclass(frozen=True, slots=True)
class Mention:
    """A named character in the text of image ``frame``: how well that image shows it (``rank``: the
    share of the story's other images whose best match to the character's crop is lower, ties
    counting half; 0.5 is chance) and the image that shows it best."""

    name: str
    frame: int
    rank: float
    cosine: float
    best_frame: int


def mention_alignment(
    similarity: Mapping[str, Sequence[float]], mentions: Mapping[str, Iterable[int]]
) -> tuple[float | None, list[Mention]]:
    """(mean rank over mentions, each :class:`Mention`): for character c with ``similarity[c][j]``
    the best cosine between c's crop and image j's regions, a mention of c in image i's text
    scores

        rank(c, i) = (#{j ≠ i: s_cj < s_ci} + ½ #{j ≠ i: s_cj = s_ci}) / (F − 1)

    over the story's F ≥ 2 images: 1 when the image it is named beside shows it best, 0 when it
    shows it worst, 0.5 by chance. None without a mention (or with fewer than 2 images).

    >>> score, found = mention_alignment({"Ann": [0.9, 0.2, 0.5]}, {"Ann": [0, 2]})
    >>> score, [(m.frame, m.rank, m.best_frame) for m in found]
    (0.75, [(0, 1.0, 0), (2, 0.5, 0)])
    """
    found: list[Mention] = []
    for name in sorted(mentions):
        values = list(similarity.get(name, ()))
        if len(values) < 2:
            continue
        best = max(range(len(values)), key=lambda j: values[j])
        for i in sorted(set(mentions[name])):
            if not 0 <= i < len(values):
                continue
            below = sum(1 for j, v in enumerate(values) if j != i and v < values[i])
            ties = sum(1 for j, v in enumerate(values) if j != i and v == values[i])
            found.append(Mention(name, i, (below + 0.5 * ties) / (len(values) - 1), float(values[i]), best))
    return (sum(m.rank for m in found) / len(found) if found else None), found


__all__ = [
    "EPSILON",
    "Mention",
    "Track",
    "mean_of",
    "mention_alignment",
    "name_pattern",
    "presence_by_names",
    "presence_from_clusters",
    "track",
    "tracks",
]
