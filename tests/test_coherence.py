"""Coherence: the pure metric, and every pair-scorer backend through its real loading code
with tiny models built here (no downloaded weights)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from conftest import WORDS, write_jsonl

from vst_core.cli import main
from vst_core.config import Settings
from vst_core.data import Story, read_scores, read_story_set
from vst_core.formulas.coherence import coherence
from vst_core.metrics import rovist_c
from vst_core.metrics.rovist_c.scorers import CheckpointShapeError, load_pair_scorer, load_rovist_c
from vst_core.models.hub import WeightsUnavailableError
from vst_core.scoring.registry import Models
from vst_core.scoring.story import score_story

if TYPE_CHECKING:  # torch loads in the tests that build tiny models (all slow)
    import torch

# --------------------------------------------------------------------------- pure metric


def test_mean_and_weakest() -> None:
    c = coherence([0.9, 0.2, 0.7])
    assert c.score == pytest.approx(0.6) and c.weakest == 1 and c.notes == ()


def test_one_sentence_is_undefined_not_zero() -> None:
    c = coherence([], ["Only one sentence."])
    assert c.score is None and c.weakest is None
    assert "no sentence pair" in c.notes[0]


def test_unscored_pairs_left_out() -> None:
    c = coherence([0.8, float("nan"), 0.4])
    assert c.score == pytest.approx(0.6) and c.pairs[1] is None and c.weakest == 2
    assert "left out" in c.notes[0]
    assert coherence([None]).score is None


def test_identical_sentences_zero_when_asked() -> None:
    sents = ["We had fun.", "We had fun.", "Then we left."]
    assert coherence([0.9, 0.9], sents).score == pytest.approx(0.9)
    c = coherence([0.9, 0.9], sents, repeat_is_zero=True)
    assert c.pairs == (0.0, 0.9) and c.weakest == 0 and "identical" in c.notes[0]


def test_bad_probabilities() -> None:
    with pytest.raises(ValueError, match="outside"):
        coherence([1.5])
    with pytest.raises(ValueError, match="need 2 pair"):
        coherence([0.5], ["a", "b", "c"])


# --------------------------------------------------------------------------- tiny models


PAIRS = [
    ("We went to the beach.", "The waves were big."),
    ("Then we ate cake.", "Finally we went home!"),
    ("A dog ran.", "The cat sat on the ball, and it was red."),
    ("我们去了海滩。", "🌊🌊🌊"),
]


@pytest.mark.slow  # a tiny model through transformers and torch
def test_bert_nsp_probabilities_batch_equals_single(tiny_bert: Path) -> None:
    batched = load_pair_scorer(f"bert-nsp:{tiny_bert}", device="cpu", batch_size=8)
    single = load_pair_scorer(f"bert-nsp:{tiny_bert}", device="cpu", batch_size=1)
    p = batched.score_pairs(PAIRS)
    assert p.shape == (4,) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p, single.score_pairs(PAIRS), atol=1e-5)
    np.testing.assert_allclose(p, [single.score_pairs([pair])[0] for pair in PAIRS], atol=1e-5)


@pytest.mark.slow  # a tiny model through transformers and torch
def test_bert_nsp_uses_the_is_next_index(tiny_bert: Path) -> None:
    import torch
    from transformers import BertForNextSentencePrediction, BertTokenizerFast

    scorer = load_pair_scorer(f"bert-nsp:{tiny_bert}", device="cpu")
    model = BertForNextSentencePrediction.from_pretrained(tiny_bert).eval()
    enc = BertTokenizerFast.from_pretrained(tiny_bert)(*PAIRS[0], return_tensors="pt")
    with torch.no_grad():
        expected = torch.softmax(model(**enc).logits, -1)[0, 0].item()  # index 0: "B is next"
    assert scorer.score_pairs([PAIRS[0]])[0] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow  # a tiny model through transformers and torch
def test_empty_and_too_long_pairs(tiny_bert: Path) -> None:
    scorer = load_pair_scorer(f"bert-nsp:{tiny_bert}", device="cpu")
    long = " ".join(["water"] * 200)
    result = scorer.score_pairs_detailed([("", "We ate."), ("We ate.", long), ("We ate.", "We sat.")])
    assert math.isnan(result.probabilities[0])
    assert 0 <= result.probabilities[1] <= 1 and result.truncated == (False, True, False)


@pytest.mark.slow  # a tiny model through transformers and torch
def test_truncation_warning_names_the_story(tiny_bert: Path, tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "s.jsonl", [{"story_id": "long-one", "sentences": ["We ate.", " ".join(["cake"] * 100)]}])
    story = read_story_set(src).stories[0]
    settings = Settings(metrics=("coherence",), coherence_model=f"bert-nsp:{tiny_bert}", device="cpu")
    record = score_story(story, settings, models=Models(settings))
    assert any("long-one" in w and "truncated" in w for w in record.warnings)
    assert record.metrics.get("coherence") is not None and record.metrics["coherence"].pairs[0].truncated is True


def _tiny_rovist_c(path: Path, vocab_size: int, head_out: int = 2) -> torch.nn.Module:
    """A checkpoint in the RoViST-C format: {"opt": Namespace, "model": state_dict}."""
    import torch
    from transformers import AlbertConfig, AlbertModel

    torch.manual_seed(1)
    # hidden 32 is not a standard ALBERT size: the loader then assumes 12 layers, hidden // 64 -> 1 head
    config = AlbertConfig(
        vocab_size=vocab_size,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=12,
        num_attention_heads=1,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_act="gelu",
    )

    class SOPClassifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.albert_model = AlbertModel(config)
            self.dropout = torch.nn.Dropout(0.4)
            self.linear = torch.nn.Linear(32, head_out)

    module = SOPClassifier().eval()
    opt = argparse.Namespace(hidden_dim=32, dropout_prob=0.4, batch_size=32, learning_rate=1e-5)
    torch.save({"epoch": 4, "model": module.state_dict(), "valid_loss": 0.3, "opt": opt}, path)
    return module


@pytest.mark.slow  # a tiny model through transformers and torch
def test_rovist_c_checkpoint_loads_and_scores(tokenizer_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import BertTokenizerFast

    ckpt = tmp_path / "sop_model_epoch4.pth.tar"
    module = _tiny_rovist_c(ckpt, vocab_size=len(WORDS) + 5)
    scorer = load_pair_scorer(f"rovist-c:{ckpt}", tokenizer=str(tokenizer_dir), device="cpu")
    p = scorer.score_pairs(PAIRS[:3])
    enc = BertTokenizerFast.from_pretrained(tokenizer_dir)(
        [a for a, _ in PAIRS[:3]], [b for _, b in PAIRS[:3]], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        pooled = module.albert_model(
            enc["input_ids"], attention_mask=enc["attention_mask"], token_type_ids=enc["token_type_ids"]
        )[1]
        expected = torch.softmax(module.linear(pooled), -1)[:, 1].numpy()  # index 1: "in order"
    np.testing.assert_allclose(p, expected, atol=1e-5)
    np.testing.assert_allclose(p, [scorer.score_pairs([x])[0] for x in PAIRS[:3]], atol=1e-5)


@pytest.mark.slow  # a tiny model through transformers and torch
def test_rovist_c_wrong_shapes_are_explained(tokenizer_dir: Path, tmp_path: Path) -> None:
    import torch

    ckpt = tmp_path / "three_way.pth.tar"
    _tiny_rovist_c(ckpt, vocab_size=len(WORDS) + 5, head_out=3)
    with pytest.raises(CheckpointShapeError, match=r"expected a linear head of shape \(2, 32\).*found \(3, 32\)"):
        load_rovist_c(ckpt, tokenizer=str(tokenizer_dir), device="cpu")
    torch.save({"weights": {}}, tmp_path / "other.pt")
    with pytest.raises(CheckpointShapeError, match="RoViST-C format"):
        load_rovist_c(tmp_path / "other.pt", device="cpu")
    torch.save({"model": {"linear.weight": torch.zeros(2, 4)}, "opt": argparse.Namespace(hidden_dim=4)}, tmp_path / "noenc.pt")
    with pytest.raises(CheckpointShapeError, match="missing 'albert_model"):
        load_rovist_c(tmp_path / "noenc.pt", device="cpu")


@pytest.mark.slow  # imports transformers and torch (about 3 s)
def test_missing_weights_fail_fast_with_instructions(tmp_path: Path) -> None:
    with pytest.raises(WeightsUnavailableError, match="no-such-org/no-such-bert.*fetch-models.*local checkpoint"):
        load_pair_scorer("bert-nsp:no-such-org/no-such-bert", device="cpu")
    with pytest.raises(WeightsUnavailableError, match="RoViST-C checkpoint not found"):
        load_pair_scorer(f"rovist-c:{tmp_path / 'absent.pth.tar'}", device="cpu")
    with pytest.raises(ValueError, match="unknown coherence model"):
        load_pair_scorer("gpt-coherence", device="cpu")


@pytest.mark.slow  # imports transformers and torch (about 3 s)
def test_cli_missing_weights_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "s.jsonl", [{"story_id": "a", "sentences": ["We ate.", "We sat."]}])
    code = main(
        [
            "score",
            str(src),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--metrics",
            "coherence",
            "--coherence-model",
            "bert-nsp:no-such-org/no-such-bert",
            "--no-progress",
        ]
    )
    assert code == 4 and "fetch-models" in capsys.readouterr().err


# --------------------------------------------------------------------------- train-sop end to end


def _order_stories(n: int) -> list[dict[str, object]]:
    things = ["beach", "park", "home", "water", "cake", "ball", "dog", "cat"]
    stories = []
    for k in range(n):
        a, b, c = things[k % 8], things[(k + 3) % 8], things[(k + 5) % 8]
        stories.append(
            {
                "story_id": f"s{k}",
                "sequence_id": f"q{k}",
                "system": "synthetic",
                "sentences": [f"first we saw the {a}.", f"then we saw the {b}.", f"finally we saw the {c}."],
            }
        )
    return stories


@pytest.mark.slow
def test_train_sop_loss_falls_and_checkpoint_scores(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_jsonl(tmp_path / "train.jsonl", _order_stories(40))
    out = tmp_path / "sop"
    code = main(
        [
            "train-sop",
            str(src),
            "--out",
            str(out),
            "--base",
            str(tiny_bert),
            "--epochs",
            "4",
            "--lr",
            "1e-3",
            "--batch-size",
            "8",
            "--patience",
            "4",
            "--no-progress",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "epoch 1: train loss" in err and "held-out accuracy" in err
    meta = json.loads((out / "vst_sop.json").read_text())
    epochs = meta["report"]["epochs"]
    assert epochs[-1]["train_loss"] < epochs[0]["train_loss"]
    assert meta["report"]["held_out_pairs"] > 0 and meta["report"]["best_epoch"] is not None

    scores = tmp_path / "scores.jsonl"
    assert (
        main(
            [
                "score",
                str(src),
                "--out",
                str(scores),
                "--metrics",
                "coherence,redundancy",
                "--coherence-model",
                str(out),
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    records, _ = read_scores(scores)
    assert len(records) == 40
    coh = records[0]["metrics"]["coherence"]
    assert coh["model"] == "sop:sop" and len(coh["pairs"]) == 2 and 0 <= coh["score"] <= 1
    assert coh["weakest"] in (0, 1)
    assert records[0]["signature"]["settings"]["coherence_model"] == str(out)


@pytest.mark.slow  # a tiny model through transformers and torch
def test_prefix_context_scores_each_sentence_after_the_whole_story_so_far(tiny_bert: Path) -> None:
    from vst_core.metrics.rovist_c.scorers import pairs_of

    sentences = ("We went out.", "It rained.", "We went home.")
    assert pairs_of(sentences, "prefix") == [("We went out.", "It rained."), ("We went out. It rained.", "We went home.")]
    settings = Settings(metrics=("coherence",), coherence_model=f"bert-nsp:{tiny_bert}", device="cpu", coherence_context="prefix")
    story = Story("s", "s", "m", sentences)
    models = Models(settings)
    record = score_story(story, settings, models=models)
    assert record.metrics.get("coherence") is not None and record.metrics["coherence"].context == "prefix"
    want = rovist_c.model(models).score_pairs(pairs_of(sentences, "prefix"))
    assert [p.probability for p in record.metrics["coherence"].pairs] == pytest.approx(list(want), abs=1e-6)
    from vst_core.signature import signature

    assert signature(settings)["id"] != signature(settings.with_(coherence_context="pair"))["id"]
