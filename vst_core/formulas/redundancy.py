"""RoViST-NR: non-redundancy of a story, with the spans that caused the repetition.

Paper definition (Wang et al. 2022, §3.3, Eq. 7), ``variant="paper"``:

    JS(A, B)  = |A ∩ B| / |A ∪ B|                      over sets of unique lower-cased words
    inter     = mean over sentence pairs j < i of JS(words_i, words_j)
    intra     = mean over consecutive non-overlapping n-grams (g_k, g_k+1) of a sentence of JS
    NR        = 1 - mean(inter, intra)

Punctuation tokens are excluded. A part with no pairs (one sentence: no inter part;
every sentence shorter than n+1 words: no intra part) is ``None`` and NR is computed from
the part that exists; with neither, NR is ``None``. ``notes`` says which.

Public-code behaviour, ``variant="reference"`` (for parity with published numbers):
case-sensitive tokens, only the last token of each sentence dropped (other punctuation
kept), intersection = number of matching token *pairs* (so JS can exceed 1 and NR go
below 0), and intra = 0 when no sentence has two n-grams. A one-sentence story gives NaN
in that code; here it is ``None`` with a note. A sentence pair with no token at all (empty
union) is left out of the inter mean, as the released evaluation code of the GROOVIST authors
does (the original RoViST script divides by zero there); in the paper variant its JS is 0.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vst_core.formulas.tokens import is_punctuation
from vst_core.formulas.variants import NRVariant

VARIANTS: tuple[str, ...] = ("paper", "reference")


@dataclass(frozen=True, slots=True)
class InterOverlap:
    """Sentence ``sentence`` against the earlier sentence ``earlier``.

    ``tokens`` are the token indices of ``sentence`` that repeat a word of ``earlier``;
    ``earlier_tokens`` the indices in ``earlier`` they repeat.
    """

    sentence: int
    earlier: int
    jaccard: float
    tokens: tuple[int, ...]
    earlier_tokens: tuple[int, ...]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class IntraOverlap:
    """Two consecutive n-gram windows of one sentence, as token index ranges ``[start, end)``.

    ``tokens`` are the indices inside ``window`` that repeat a word of ``previous``.
    """

    sentence: int
    previous: tuple[int, int]
    window: tuple[int, int]
    jaccard: float
    tokens: tuple[int, ...]
    words: tuple[str, ...]


#: Most character spans one story's evidence lists (a repeat of two sentences counts the spans in
#: both); the repeats past it are counted in a note, not listed, and the numbers count every one.
#: The released story with the most (VWP, LLaVA) lists 6,821; a record at the cap is about 2 MB as JSON.
MAX_SPANS = 50_000

#: Words of the note on a story whose repeats are not all listed (:data:`MAX_SPANS`).
CAPPED = "repeats not listed"


@dataclass(frozen=True, slots=True)
class NonRedundancy:
    """Story non-redundancy and its evidence. ``None`` means undefined; ``notes`` say why.

    ``inter_repeats`` are the sentence pairs that share a word and ``intra_repeats`` the window
    pairs that do, in reading order, as many as fit in the span cap; ``left_out`` counts the
    repeats past it (a note says so). ``steps`` is the work done: tokens read, earlier sentences
    reached through a shared word, spans listed; sentence pairs that share no word cost nothing.
    """

    score: float | None
    inter: float | None
    intra: float | None
    variant: NRVariant
    n: int
    inter_repeats: tuple[InterOverlap, ...]
    intra_repeats: tuple[IntraOverlap, ...]
    notes: tuple[str, ...]
    left_out: int = 0
    steps: int = 0


def jaccard(a: Sequence[str], b: Sequence[str], *, count_pairs: bool = False) -> float:
    """``|set(a) ∩ set(b)| / |set(a) ∪ set(b)|``; with ``count_pairs`` the numerator counts
    every equal pair ``(x in a, y in b)`` instead, as the public RoViST code does. 0 for two
    empty inputs."""
    union = set(a) | set(b)
    if not union:
        return 0.0
    if count_pairs:
        counts_b: dict[str, int] = {}
        for y in b:
            counts_b[y] = counts_b.get(y, 0) + 1
        return sum(counts_b.get(x, 0) for x in a) / len(union)
    return len(set(a) & set(b)) / len(union)


def _counts(words: Sequence[str]) -> dict[str, int]:
    """How often each word occurs in ``words``."""
    out: dict[str, int] = {}
    for w in words:
        out[w] = out.get(w, 0) + 1
    return out


def _units(tokens: Sequence[str], variant: NRVariant) -> list[tuple[int, str]]:
    """(token index, comparable form) of the tokens a variant compares."""
    if variant == "paper":  # a letters-or-digits token is a word without looking at each character
        return [(i, t.lower()) for i, t in enumerate(tokens) if t.isalnum() or not is_punctuation(t)]
    return list(enumerate(tokens[:-1]))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def combine_parts(
    inter: float | None, intra: float | None, has_sentences: bool, n: int, variant: NRVariant
) -> tuple[float | None, float | None, float | None, list[str]]:
    """(score, inter, intra, notes) from the two mean Jaccards (``None``: no pairs), by the rules of
    the module doc: the paper variant averages the parts that exist; the reference variant sets a
    missing intra part to 0 and needs the inter part."""
    notes: list[str] = []
    if not has_sentences:
        notes.append("empty story: non-redundancy is undefined")
    elif inter is None:
        notes.append("one sentence: there is no inter-sentence part")
    if intra is None and has_sentences:
        if variant == "reference":
            intra = 0.0
            notes.append(f"no sentence has two {n}-gram windows: intra set to 0 as the public code does")
        else:
            notes.append(f"no sentence has two {n}-gram windows: there is no intra-sentence part")
    if variant == "reference":
        score = None if inter is None or intra is None else 1.0 - (inter + intra) / 2.0
        if inter is None and has_sentences:
            notes.append("reference variant needs an inter part (the public code gives NaN): score undefined")
    else:
        parts = [x for x in (inter, intra) if x is not None]
        score = 1.0 - sum(parts) / len(parts) if parts else None
        if len(parts) == 1:
            notes.append("score computed from the only part that exists")
    return score, inter, intra, notes


def _positions(units: Sequence[tuple[int, str]]) -> dict[str, list[int]]:
    """Token indices of each word of a sentence, in order."""
    out: dict[str, list[int]] = {}
    for k, w in units:
        out.setdefault(w, []).append(k)
    return out


def _indices(where: dict[str, list[int]], shared: set[str]) -> tuple[int, ...]:
    return tuple(sorted([k for w in shared for k in where[w]]))


def non_redundancy(
    sentences: list[list[str]], n: int = 4, variant: NRVariant = "paper", *, max_spans: int | None = MAX_SPANS
) -> NonRedundancy:
    """Non-redundancy of a tokenised story (one token list per sentence); see module doc.

    The sentence pairs that share a word are found through an index of the earlier sentences by
    word, so the work is linear in the tokens plus the (sentence, shared word) pairs; the evidence
    lists at most ``max_spans`` spans (None: all), the numbers count every pair.

    >>> r = non_redundancy([["the", "dog", "ran"], ["the", "dog", "sat"], ["a", "cat"]], n=2)
    >>> round(r.score, 4), [(p.sentence, p.earlier, p.words) for p in r.inter_repeats]
    (0.9167, [(1, 0, ('dog', 'the'))])
    >>> capped = non_redundancy([["we", "went", "home"]] * 4, max_spans=6)
    >>> len(capped.inter_repeats), capped.left_out, capped.notes[-1]
    (1, 5, '5 of 6 repeats not listed (at most 6 spans a story); the numbers count every one')
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    if max_spans is not None and max_spans < 0:
        raise ValueError(f"max_spans must be >= 0 or None, got {max_spans}")
    count_pairs = variant == "reference"
    units = [_units(toks, variant) for toks in sentences]
    # each sentence's words, their set and (reference) counts once, not once per pair; the same
    # integer counts over the same union as :func:`jaccard`, so the values are identical
    words = [[w for _, w in u] for u in units]
    sets = [set(w) for w in words]
    sizes = [len(x) for x in sets]
    counts = [_counts(w) for w in words] if count_pairs else []
    where = [_positions(u) for u in units]
    steps = sum(map(len, sentences))
    budget = max_spans if max_spans is not None else sys.maxsize
    left = 0  # repeats not listed: once one does not fit, none after it is listed

    # intra first: its spans are at most the story's tokens
    intra_values: list[float] = []
    intra_repeats: list[IntraOverlap] = []
    for s, sent_units in enumerate(units):
        windows = [sent_units[k : k + n] for k in range(0, len(sent_units), n)]
        window_words = [[w for _, w in window] for window in windows]
        window_sets = [set(w) for w in window_words]
        steps += len(sent_units)
        for k in range(1, len(windows)):
            prev, nxt = windows[k - 1], windows[k]
            shared = window_sets[k - 1] & window_sets[k]
            if count_pairs:
                value = jaccard(window_words[k - 1], window_words[k], count_pairs=True)
            else:  # windows are never empty: the union is not
                value = len(shared) / (len(window_sets[k - 1]) + len(window_sets[k]) - len(shared))
            intra_values.append(value)
            if not shared:
                continue
            tokens = tuple([t for t, w in nxt if w in shared])
            if left or len(tokens) > budget:
                left += 1
                continue
            budget -= len(tokens)
            steps += len(tokens)
            intra_repeats.append(
                IntraOverlap(
                    sentence=s,
                    previous=(prev[0][0], prev[-1][0] + 1),
                    window=(nxt[0][0], nxt[-1][0] + 1),
                    jaccard=value,
                    tokens=tokens,
                    words=tuple(sorted(shared)),
                )
            )

    # inter: a pair that shares no word has Jaccard 0, which leaves the sum as it is (x + 0.0 == x),
    # so only the pairs found through the index are summed, in the same order as over every pair
    inter_values = array("d")
    inter_repeats: list[InterOverlap] = []
    pairs = 0
    empty_before = 0  # sentences without a token: the reference variant leaves out a pair of two
    earlier_with: dict[str, list[int]] = {}  # word -> the sentences so far that have it
    for i in range(len(units)):
        set_i = sets[i]
        sharing: set[int] = set()  # the earlier sentences that share a word with this one
        for w in set_i:
            earlier = earlier_with.setdefault(w, [])
            steps += 1 + len(earlier)
            sharing.update(earlier)
            earlier.append(i)
        if count_pairs and not words[i]:
            pairs += i - empty_before
            empty_before += 1
        else:
            pairs += i
        size_i = sizes[i]
        for j in sorted(sharing):
            shared = set_i & sets[j]  # probes the smaller set's words
            steps += size_i if size_i < sizes[j] else sizes[j]
            union = size_i + sizes[j] - len(shared)
            if count_pairs:  # Σ over shared words of (count in i) × (count in j): the equal token pairs
                counts_i, counts_j = counts[i], counts[j]
                value = sum([counts_i[x] * counts_j[x] for x in shared]) / union
            else:
                value = len(shared) / union
            inter_values.append(value)
            if left:
                left += 1
                continue
            tokens, earlier_tokens = _indices(where[i], shared), _indices(where[j], shared)
            size = len(tokens) + len(earlier_tokens)
            if size > budget:
                left += 1
                continue
            budget -= size
            steps += size
            inter_repeats.append(
                InterOverlap(
                    sentence=i,
                    earlier=j,
                    jaccard=value,
                    tokens=tokens,
                    earlier_tokens=earlier_tokens,
                    words=tuple(sorted(shared)),
                )
            )

    score, inter, intra, notes = combine_parts(
        sum(inter_values) / pairs if pairs else None, _mean(intra_values), bool(sentences), n, variant
    )
    if left:
        found = left + len(inter_repeats) + len(intra_repeats)
        notes.append(f"{left:,} of {found:,} {CAPPED} (at most {max_spans:,} spans a story); the numbers count every one")
    return NonRedundancy(
        score=score,
        inter=inter,
        intra=intra,
        variant=variant,
        n=n,
        inter_repeats=tuple(inter_repeats),
        intra_repeats=tuple(intra_repeats),
        notes=tuple(notes),
        left_out=left,
        steps=steps,
    )


@dataclass(frozen=True)
class NRScores:
    """The numbers of :func:`non_redundancy` for many stories, one array entry per story;
    NaN where :func:`non_redundancy` gives ``None``. ``inter_mean``/``intra_mean`` are the raw
    means (NaN: no pairs) that :func:`combine_parts` turns into the score and notes."""

    score: np.ndarray
    inter: np.ndarray
    intra: np.ndarray
    inter_mean: np.ndarray
    intra_mean: np.ndarray
    sentences: np.ndarray

    def as_records(self) -> list[dict[str, float | None]]:
        """One ``{"score", "inter", "intra"}`` dict per story, undefined as ``None``."""
        columns = [[None if math.isnan(v) else v for v in a.tolist()] for a in (self.score, self.inter, self.intra)]
        return [{"score": s, "inter": e, "intra": a} for s, e, a in zip(*columns)]


def _offset_jaccard(
    group: np.ndarray, offset: int, size: int, count_pairs: bool, table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Jaccard of every segment pair ``(s, s + offset)`` in the same group (story or sentence).

    ``table`` holds the sorted distinct (segment, code) keys, their counts, their segments and the
    distinct count per segment. Returns (first segments of the pairs, their Jaccard)."""
    keys, counts, key_segment, distinct = table
    segments = group.size
    first = np.arange(max(segments - offset, 0))
    first = first[group[first] == group[first + offset]]
    if first.size == 0:
        return first, np.zeros(0)
    target = keys + offset * size  # the same code in the segment ``offset`` further on
    at = np.minimum(np.searchsorted(keys, target), keys.size - 1)
    hit = keys[at] == target
    hit &= group[key_segment] == group[np.minimum(key_segment + offset, segments - 1)]
    shared = np.bincount(key_segment[hit], minlength=segments)[first]
    union = distinct[first] + distinct[first + offset] - shared
    if count_pairs:  # Σ over shared tokens of count in s × count in s + offset
        top = np.bincount(key_segment[hit], weights=counts[hit] * counts[at[hit]], minlength=segments)[first]
    else:
        top = shared.astype(float)
    empty = np.nan if count_pairs else 0.0  # the reference variant leaves empty unions out of the mean
    return first, np.divide(top, union, out=np.full(first.size, empty), where=union > 0)


def _count_table(
    segment: np.ndarray, codes: np.ndarray, segments: int, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    keys, counts = np.unique(segment * size + codes, return_counts=True)
    key_segment = keys // size
    return keys, counts.astype(float), key_segment, np.bincount(key_segment, minlength=segments)


def non_redundancy_scores(stories: Sequence[Sequence[Sequence[str]]], n: int = 4, variant: NRVariant = "paper") -> NRScores:
    """:func:`non_redundancy` numbers (score, inter, intra) of many tokenised stories at once.

    The same definitions, vectorised over the whole batch: tokens become (segment, word code)
    keys, where a segment is a sentence (inter part) or an n-gram window (intra part). For the
    pairs of segments ``offset`` apart in the same story (sentence pairs) or sentence (consecutive
    windows), |A∩B| counts the keys found again ``offset`` segments on (or Σ c_A·c_B equal token
    pairs for the reference variant) and |A∪B| = |A| + |B| - |A∩B|."""
    import pandas as pd

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    reference = variant == "reference"
    count = len(stories)
    per_story = np.fromiter(map(len, stories), dtype=np.int64, count=count)
    if reference:  # the last token of each sentence is dropped
        lengths = [max(len(t) - 1, 0) for st in stories for t in st]
        flat = [w for st in stories for t in st for w in t[:-1]]
    else:
        lengths = [len(t) for st in stories for t in st]
        flat = [w for st in stories for t in st for w in t]
    sentences = len(lengths)
    sentence_of = np.repeat(np.arange(sentences), lengths)
    codes, vocab = pd.factorize(np.asarray(flat, dtype=object)) if flat else (np.zeros(0, np.int64), np.zeros(0, object))
    if not reference and len(vocab):  # compare lower-cased words, punctuation left out
        lowered, to_lower = np.unique([w.lower() for w in vocab], return_inverse=True)
        keep = ~np.array([is_punctuation(w) for w in vocab])[codes]
        codes, sentence_of = to_lower[codes][keep], sentence_of[keep]
        vocab = lowered
    size = max(len(vocab), 1)
    story_of_sentence = np.repeat(np.arange(count), per_story)

    # inter: sentence pairs (s, s + d) of one story, for every d
    table = _count_table(sentence_of, codes, sentences, size)
    inter_j, inter_owner = [np.zeros(0)], [np.zeros(0, np.int64)]
    for offset in range(1, int(per_story.max(initial=0))):
        first, jac = _offset_jaccard(story_of_sentence, offset, size, reference, table)
        inter_j.append(jac)
        inter_owner.append(story_of_sentence[first])

    # intra: consecutive non-overlapping n-gram windows of a sentence
    lengths_arr = np.bincount(sentence_of, minlength=sentences)
    position = np.arange(codes.size) - (np.cumsum(lengths_arr) - lengths_arr)[sentence_of]
    windows_per_sentence = -(-lengths_arr // n)
    window_of = (np.cumsum(windows_per_sentence) - windows_per_sentence)[sentence_of] + position // n
    window_sentence = np.repeat(np.arange(sentences), windows_per_sentence)
    windows = window_sentence.size
    first, intra_j = _offset_jaccard(window_sentence, 1, size, reference, _count_table(window_of, codes, windows, size))
    intra_owner = story_of_sentence[window_sentence[first]]

    def means(values: np.ndarray, owner: np.ndarray) -> np.ndarray:
        defined = ~np.isnan(values)
        values, owner = values[defined], owner[defined]
        total = np.bincount(owner, weights=values, minlength=count)
        pairs = np.bincount(owner, minlength=count)
        out: np.ndarray = np.divide(total, pairs, out=np.full(count, np.nan), where=pairs > 0)
        return out

    inter_mean = means(np.concatenate(inter_j), np.concatenate(inter_owner))
    intra_mean = means(intra_j, intra_owner)
    inter, intra = inter_mean, intra_mean
    if reference:
        intra = np.where(np.isnan(intra) & (per_story > 0), 0.0, intra)
        score = 1.0 - (inter + intra) / 2.0
    else:
        parts = (~np.isnan(inter)).astype(int) + (~np.isnan(intra)).astype(int)
        total = np.nan_to_num(inter) + np.nan_to_num(intra)
        score = 1.0 - np.divide(total, parts, out=np.full(count, np.nan), where=parts > 0)
    return NRScores(score, inter, intra, inter_mean, intra_mean, per_story)
