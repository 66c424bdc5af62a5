"""Sanity checks of the default weights: the real ones where this machine's caches hold them,
otherwise the random-weight replicas in the real layouts (then only what holds for any weights
is asserted: same loading code, same names, unit vectors, probabilities)."""

from __future__ import annotations

import pytest
from conftest import ROOT, point_at
from PIL import Image
from real_layout import RealLayout

from vst_core.models.clip import cached_pretrained_file, load_clip

pytestmark = pytest.mark.weights


def _have_real_bert() -> bool:
    from vst_core.models.hub import hub_file

    return hub_file("bert-base-uncased", ("model.safetensors", "pytorch_model.bin")) is not None


@pytest.fixture
def clip_source(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if cached_pretrained_file("ViT-B-32", "openai") is not None:
        return "real"
    replicas: RealLayout = request.getfixturevalue("layout")
    point_at(monkeypatch, replicas.env())
    return "replica"


@pytest.fixture
def bert_source(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if _have_real_bert():
        return "real"
    replicas: RealLayout = request.getfixturevalue("layout")
    point_at(monkeypatch, replicas.env())
    return "replica"


def test_clip_matches_the_obvious_image(clip_source: str) -> None:
    enc = load_clip(device="cpu")
    assert enc.signature.startswith("ViT-B-32/openai/quickgelu/sha:")
    images = [Image.open(ROOT / "assets/sample/images" / name) for name in ("home_2_chelsea.jpg", "space_1_rocket.jpg")]
    sims = enc.encode_text(["a photo of a cat", "a photo of a rocket launch"]) @ enc.encode_images(images).T
    assert sims.shape == (2, 2) and (abs(sims) <= 1 + 1e-5).all()
    if clip_source == "real":
        assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]


def test_bert_nsp_prefers_a_related_next_sentence(bert_source: str) -> None:
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer

    scorer = load_pair_scorer("bert-nsp", device="cpu")
    related, unrelated = scorer.score_pairs(
        [
            ("We drove to the beach early in the morning.", "The waves were already huge when we arrived."),
            ("We drove to the beach early in the morning.", "The central bank raised interest rates on Monday."),
        ]
    )
    assert 0 < related < 1 and 0 < unrelated < 1
    if bert_source == "real":
        assert related > unrelated
