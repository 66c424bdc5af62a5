"""RoViST-NR against hand-computed examples, both variants, and the evidence spans."""

from __future__ import annotations

import random

import pytest

from benchmarks.reference_code import reference_nr
from vst_core.formulas.redundancy import jaccard, non_redundancy
from vst_core.text.phrases import tokenize


def toks(*sentences: str) -> list[list[str]]:
    return [[t.text for t in tokenize(s)] for s in sentences]


def test_jaccard_sets_and_pairs() -> None:
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    # pair counting: a a vs a -> 2 matching pairs over a union of 1
    assert jaccard(["a", "a"], ["a"], count_pairs=True) == 2.0
    assert jaccard([], []) == 0.0


def test_paper_variant_hand_computed() -> None:
    # s1 words {the, dog, ran}; s2 words {the, dog, sat}; s3 words {a, cat}
    # J(2,1) = 2/4, J(3,1) = 0, J(3,2) = 0 -> inter = 0.5/3
    # intra with n=2: s1 "the dog | ran" -> {the,dog} vs {ran}: 0; s2 same: 0; s3 "a cat": one window
    r = non_redundancy(toks("The dog ran.", "the dog sat!", "A cat."), n=2)
    assert r.inter == pytest.approx(0.5 / 3)
    assert r.intra == pytest.approx(0.0)
    assert r.score == pytest.approx(1 - (0.5 / 3 + 0.0) / 2)
    assert r.notes == ()
    # evidence: sentence 2 (index 1) repeats "the dog" of sentence 1, token indices 0 and 1
    (rep,) = r.inter_repeats
    assert (rep.sentence, rep.earlier, rep.tokens, rep.earlier_tokens) == (1, 0, (0, 1), (0, 1))
    assert rep.words == ("dog", "the")


def test_paper_variant_intra_windows() -> None:
    # "a b c d a b c d" with n=4: windows {a,b,c,d} and {a,b,c,d} -> J = 1 ; one sentence -> no inter
    r = non_redundancy([["a", "b", "c", "d", "a", "b", "c", "d", "."]], n=4)
    assert r.inter is None
    assert r.intra == pytest.approx(1.0)
    assert r.score == pytest.approx(0.0)
    assert any("no inter-sentence part" in note for note in r.notes)
    (rep,) = r.intra_repeats
    assert rep.previous == (0, 4) and rep.window == (4, 8) and rep.tokens == (4, 5, 6, 7)


def test_paper_variant_ignores_case_and_punctuation() -> None:
    a = non_redundancy(toks("We had fun, really.", "WE HAD FUN!"), n=4)
    # {we, had, fun, really} vs {we, had, fun}: 3/4 ; intra: s1 has 4 words -> one window; s2 3 words
    assert a.inter == pytest.approx(0.75)
    assert a.intra is None
    assert a.score == pytest.approx(0.25)


def test_reference_variant_exceeds_one_on_repeated_tokens() -> None:
    # tokens minus the last: [the, dog, the, dog] twice; union 2, equal pairs 2*2 + 2*2 = 8 -> J = 4
    # intra n=4: one window per sentence -> no pair -> intra = 0 (public-code behaviour)
    r = non_redundancy(toks("the dog the dog .", "the dog the dog ."), n=4, variant="reference")
    assert r.inter == pytest.approx(4.0)
    assert r.intra == 0.0
    assert r.score == pytest.approx(1 - (4.0 + 0.0) / 2)  # -1: below zero, as the public code gives
    assert any("intra set to 0" in note for note in r.notes)


def test_reference_variant_is_case_sensitive_and_drops_last_token_only() -> None:
    s = [["We", "had", "fun", ",", "really", "."], ["we", "had", "fun", "really"]]
    r = non_redundancy(s, n=4, variant="reference")
    # s1 units: We had fun , really ; s2 units: we had fun (really dropped)
    # union {We, had, fun, ",", really, we} = 6 ; pairs: had, fun -> 2 -> 1/3
    assert r.inter == pytest.approx(2 / 6)
    # intra: s1 windows [We had fun ,] [really] -> union 5, 0 pairs -> 0 ; s2 one window
    assert r.intra == pytest.approx(0.0)
    paper = non_redundancy(s, n=4, variant="paper")
    assert paper.inter == pytest.approx(1.0)  # case-insensitive, punctuation excluded, nothing dropped


def test_reference_variant_one_sentence_is_undefined() -> None:
    r = non_redundancy(toks("We had a great time at the park ."), variant="reference")
    assert r.score is None and r.inter is None
    assert any("NaN" in note for note in r.notes)


def test_empty_story_is_undefined() -> None:
    r = non_redundancy([])
    assert r.score is None and r.inter is None and r.intra is None
    assert r.notes == ("empty story: non-redundancy is undefined",)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n must be"):
        non_redundancy([["a"]], n=0)
    with pytest.raises(ValueError, match="unknown variant"):
        non_redundancy([["a"]], variant="mine")


@pytest.mark.parametrize("seed", range(20))
def test_reference_variant_matches_direct_algorithm(seed: int) -> None:
    rng = random.Random(seed)
    vocab = ["a", "b", "c", "A", "d", ",", "e"]
    story = [[rng.choice(vocab) for _ in range(rng.randint(1, 14))] for _ in range(rng.randint(1, 6))]
    n = rng.randint(1, 5)
    got = non_redundancy(story, n=n, variant="reference").score
    want = reference_nr(story, n)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == pytest.approx(want)


def test_vectorised_scores_equal_the_per_story_function() -> None:
    import random

    from vst_core.formulas.redundancy import non_redundancy_scores

    rng = random.Random(7)
    words = "the a dog Dog cat . , ! sat ran The big -- ...".split()
    stories = [[[rng.choice(words) for _ in range(rng.randint(0, 12))] for _ in range(rng.randint(0, 7))] for _ in range(400)]
    stories += [[], [["."]], [[".", ","], ["!"]], [["a", "a", "a", "a", "a"]], [["x"]] * 9]
    for variant in ("paper", "reference"):
        for n in (1, 2, 4):
            batch = non_redundancy_scores(stories, n=n, variant=variant).as_records()
            for story, got in zip(stories, batch):
                want = non_redundancy(story, n=n, variant=variant)
                for key in ("score", "inter", "intra"):
                    a, b = got[key], getattr(want, key)
                    assert (a is None) == (b is None), (story, variant, n, key)
                    assert a is None or abs(a - b) < 1e-12, (story, variant, n, key)
