"""Sanity checks with the real default weights; skipped (with the reason) where they are absent."""

from __future__ import annotations

import pytest
from PIL import Image

from conftest import ROOT
from vst_core.models.clip import cached_pretrained_file, load_clip

pytestmark = pytest.mark.weights


def _have_bert() -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache("bert-base-uncased", "config.json"), str)
    except Exception:
        return False


@pytest.mark.skipif(cached_pretrained_file("ViT-B-32", "openai") is None, reason="CLIP ViT-B-32/openai weights not in the local cache (vst fetch-models)")
def test_clip_matches_the_obvious_image() -> None:
    enc = load_clip(device="cpu")
    images = [Image.open(ROOT / "assets/sample/images" / name) for name in ("home_2_chelsea.jpg", "space_1_rocket.jpg")]
    sims = enc.encode_text(["a photo of a cat", "a photo of a rocket launch"]) @ enc.encode_images(images).T
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]


@pytest.mark.skipif(not _have_bert(), reason="bert-base-uncased not in the local cache (vst fetch-models)")
def test_bert_nsp_prefers_a_related_next_sentence() -> None:
    from vst_core.models.pairs import load_pair_scorer

    scorer = load_pair_scorer("bert-nsp", device="cpu")
    related, unrelated = scorer.score_pairs([
        ("We drove to the beach early in the morning.", "The waves were already huge when we arrived."),
        ("We drove to the beach early in the morning.", "The central bank raised interest rates on Monday."),
    ])
    assert related > unrelated
