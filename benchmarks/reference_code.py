"""The public RoViST code's non-redundancy, transcribed as a direct algorithm (token-pair double
loops), the one oracle of the ``reference`` NR variant: the tests check the vectorised
implementation against it and the benchmark times against it."""

from __future__ import annotations

from collections.abc import Callable


def reference_nr(sentences: list[list[str]], n: int = 4) -> float | None:
    """Last token of each sentence dropped; for every pair of sentences j < i (and every pair of
    consecutive non-overlapping n-gram windows of a sentence), intersection = number of equal
    token pairs, union = distinct tokens of both; a sentence pair with an empty union is skipped;
    NR = 1 − mean(inter, intra), intra = 0 without windows; None (the code's NaN) without an inter
    pair. This is the released evaluation code of the GROOVIST authors (dHM, 2024); the original
    RoViST script is the same but divides by zero on an empty union."""
    words = [s[:-1] for s in sentences]
    inter: list[float] = []
    for i in range(1, len(words)):
        for j in range(i):
            union = len(set(words[i]) | set(words[j]))
            if union == 0:
                continue
            same = 0
            for x in words[i]:
                for y in words[j]:
                    if x == y:
                        same += 1
            inter.append(same / union)
    intra: list[float] = []
    for w in words:
        for k in range(0, len(w), n):
            first, second = w[k : k + n], w[k + n : k + 2 * n]
            if not second:
                continue
            same = 0
            for x in first:
                for y in second:
                    if x == y:
                        same += 1
            intra.append(same / len(set(first) | set(second)))
    if not inter:
        return None
    return 1 - (sum(inter) / len(inter) + (sum(intra) / len(intra) if intra else 0.0)) / 2


def public_code_nr(
    story: str,
    sent_tokenize: Callable[[str], list[str]],
    word_tokenize: Callable[[str], list[str]],
    ngram_len: int = 4,
) -> float | None:
    """``eval_repetition`` of the dHM authors' ``evaluate/eval_C_R.py`` on one story text: the
    story split by ``sent_tokenize``, each sentence by ``word_tokenize`` (their ``nltk`` functions,
    given here), then :func:`reference_nr`; None where that code gives NaN."""
    return reference_nr([word_tokenize(sentence) for sentence in sent_tokenize(story)], ngram_len)
