"""GROOVIST aggregation and the other grounding formulas, checked by hand and on the paper's example."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vst_core.formulas.grounding import (
    THETA_PRESETS,
    Misalignment,
    RovistVG,
    clipscore,
    groovist_score,
    idf_table,
    np_proportion,
    resolve_theta,
    rovist_vg,
    temporal_misalignment,
    theta_from_scores,
)
from vst_core.text.concreteness import brysbaert_norms, phrase_concreteness

# GROOVIST paper, Appendix A, Figure 4: scaled similarities and concreteness of ten NPs.
FIG4_SCALED = [0.676, 0.675, 0.626, 0.583, 0.572, 0.674, 0.650, 0.595, 0.533, 0.670]
FIG4_CONCRETENESS = [2.675, 3.165, 2.920, 2.175, 2.943, 4.540, 3.030, 2.630, 2.370, 3.085]
FIG4_FINAL = [1.809, 2.137, 1.829, -0.073, -0.129, 3.059, 1.970, -0.056, -0.197, 2.067]


def test_paper_worked_example() -> None:
    raw = [s / 2.5 for s in FIG4_SCALED]  # the function takes raw cosines and scales them
    g = groovist_score(raw, FIG4_CONCRETENESS, THETA_PRESETS["VIST"])
    np.testing.assert_allclose(g.contributions, FIG4_FINAL, atol=2e-3)
    assert g.score == pytest.approx(0.846, abs=1e-3)
    assert g.unbounded == pytest.approx(sum(FIG4_FINAL) / 10, abs=1e-3)


def test_paper_concreteness_values() -> None:
    assert phrase_concreteness(["the", "wedding"]) == pytest.approx(2.675)
    assert phrase_concreteness(["a", "quick", "kiss"]) == pytest.approx(2.943, abs=1e-3)
    assert phrase_concreteness(["groom"]) == pytest.approx(4.54)


def test_concreteness_lemma_fallback_no_rating_and_expressions() -> None:
    norms = brysbaert_norms()
    assert "parkings" not in norms
    assert phrase_concreteness(["cars"], ["car"]) == pytest.approx(norms.get("cars", norms["car"]))
    assert phrase_concreteness(["xqzzy", "blorf"]) == 1.0
    plain = phrase_concreteness(["the", "parking", "lot"])
    assert plain == pytest.approx((norms["the"] + norms["parking"] + norms["lot"]) / 3)
    mwe = phrase_concreteness(["the", "parking", "lot"], expressions=True)
    assert mwe == pytest.approx((norms["the"] + norms["parking lot"]) / 2)
    assert phrase_concreteness(["parking", "lot"], expressions=True) == pytest.approx(norms["parking lot"])


def test_theta_boundary_and_ablations() -> None:
    theta = 0.6
    at, below = groovist_score([0.24], [2.0], theta), groovist_score([0.2399], [2.0], theta)
    assert at.contributions[0] == pytest.approx(0.6 * 2.0)  # s = θ keeps the score
    assert below.contributions[0] == pytest.approx((0.59975 - 0.6) * 2.0)  # just below: ≈ 0, negative
    no_p = groovist_score([0.2], [2.0], theta, penalize=False)
    assert no_p.contributions[0] == pytest.approx(1.0)
    no_c = groovist_score([0.3, 0.1], [4.0, 4.0], theta, weight=False)
    assert no_c.contributions == pytest.approx((0.75, 0.25 - 0.6))


def test_no_noun_phrase_is_undefined() -> None:
    g = groovist_score([], [], 0.6)
    assert g.score is None and g.unbounded is None and "undefined" in g.notes[0]
    with pytest.raises(ValueError, match="weights"):
        groovist_score([0.1, 0.2], [1.0], 0.6)


def test_theta_presets_and_helper() -> None:
    assert resolve_theta("vist") == THETA_PRESETS["VIST"] == 0.6159241924121119
    assert resolve_theta("0.55") == 0.55 and resolve_theta(0.7) == 0.7
    with pytest.raises(ValueError, match="VIST"):
        resolve_theta("imagenet")
    assert theta_from_scores([0.2, 0.3]) == pytest.approx(0.625)


def test_temporal_misalignment() -> None:
    # sentence 0: NPs matched to images 0 and 2 -> t = 1/2; sentence 1: none; sentence 2: image 1 -> 1
    m = temporal_misalignment([0, 0, 2], [0, 2, 1], 3)
    assert m.per_sentence == (0.5, None, 1.0) and m.score == pytest.approx(0.75)
    assert temporal_misalignment([], [], 2) == Misalignment(None, (None, None))
    # one image only: every NP of sentence 0 matches image 0
    assert temporal_misalignment([0, 0], [0, 0], 1).score == 0.0


def test_np_proportion_and_clipscore() -> None:
    assert np_proportion(3, 12) == 0.25 and np_proportion(0, 0) is None
    c = clipscore([0.3, -0.1])
    assert c.pairs == pytest.approx((0.75, 0.0)) and c.score == pytest.approx(0.375)


def test_rovist_vg_by_hand() -> None:
    r = rovist_vg([0.5, 0.2], [2.0, 1.0])
    expected = math.log(math.exp(1.0) + math.exp(0.2))
    assert r.lse == pytest.approx(expected)
    assert r.score == pytest.approx(2 / (1 + math.exp(-0.5 * expected)) - 1)
    assert rovist_vg([], []) == RovistVG(None, None)


def test_idf() -> None:
    idf = idf_table([["dog", "cat"], ["dog"], ["bird"]])
    assert idf["dog"] == pytest.approx(math.log(3 / 3)) and idf["bird"] == pytest.approx(math.log(3 / 2))
