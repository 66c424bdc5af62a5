"""RoViST-C as the authors' code computes it: the ``reference`` coherence profile (the slow
sentencepiece ALBERT tokenizer, a story with an over-long input left unscored) and the prefix
context's rule after a repeated sentence (dHM's ``evaluate/eval_C_R.py``), against transcriptions
of the authors' loops. The tokenizer is a sentencepiece model trained here on a few hundred words."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from conftest import ParityLog, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.config import Settings
from vst_core.data import Story
from vst_core.formulas.coherence import OVER_LONG_NOTE, coherence, transitions
from vst_core.hashing import weights_digest
from vst_core.metrics import rovist_c as rovist_c_metric
from vst_core.metrics.rovist_c.albert_tokenizer import SentencePieceAlbertTokenizer, load_slow_albert_tokenizer
from vst_core.metrics.rovist_c.scorers import pair_weights_id, pairs_of
from vst_core.models.hub import ModelLoadError

if TYPE_CHECKING:  # torch loads in the tests that build a tiny model (all slow)
    pass

WORDS = (
    "we went to the beach park then first finally later after that a dog cat ran sat saw big small red "
    "water waves sun home ate cake played ball were was it and on in of . , ! ?"
).split()
NUMBERS = ["101,", "2020,", "7,", "42,", "1,000,", "300"]


@pytest.fixture(scope="module")
def albert_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ALBERT tokenizer folder as the hub holds it: a unigram ``spiece.model`` (<pad> 0, <unk> 1,
    [CLS] 2, [SEP] 3, [MASK] 4) whose vocabulary has pieces like ``▁101,``, and its config."""
    import sentencepiece as spm

    folder = tmp_path_factory.mktemp("albert-tok")
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS + NUMBERS) for _ in range(10)) for _ in range(300)]
    (folder / "corpus.txt").write_text("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(folder / "corpus.txt"),
        model_prefix=str(folder / "spiece"),
        vocab_size=120,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
    )
    config = {"do_lower_case": True, "remove_space": True, "keep_accents": False, "model_max_length": 512}
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "AlbertTokenizer"}))
    return folder


# --------------------------------------------------------------------------- the slow tokenizer

#: transformers 4.30.0's slow ``AlbertTokenizer.tokenize`` on these texts with the model above, run
#: outside the suite (transformers 5 has no slow ALBERT tokenizer to compare with here).
AUTHORS_PIECES = {
    "We saw 101, dogs.": ["▁we", "▁saw", "▁", "1", "0", "1", ",", "▁dog", "s", "."],
    "It was 2020, the sun!": ["▁it", "▁was", "▁", "2", "0", "2", "0", ",", "▁the", "▁sun", "!"],
    "a1,000, cake": ["▁a", "1", ",", "0", "0", "0", ",", "▁cake"],
    "x7, 42,y": ["▁", "x", "7", ",", "▁", "4", "2", ",", "y"],
    "The ``big'' café [MASK] dog": ["▁the", "▁", '"', "b", "i", "g", '"', "▁", "c", "a", "f", "e", "[MASK]", "▁dog"],
    "we  went   [SEP]home": ["▁we", "▁went", "[SEP]", "▁home"],
}


@pytest.mark.parity
def test_slow_tokenizer_gives_the_authors_pieces(albert_tokenizer: Path, parity: ParityLog) -> None:
    tok = load_slow_albert_tokenizer(str(albert_tokenizer))
    assert isinstance(tok, SentencePieceAlbertTokenizer) and not tok.is_fast
    got = {text: tok.tokenize(text) for text in AUTHORS_PIECES}
    assert got == AUTHORS_PIECES
    parity.record(
        metric="RoViST-C (reference profile)",
        reference="transformers 4.30.0 AlbertTokenizer (slow, sentencepiece): the authors' rovist_c.py tokenizer, "
        "pinned by dHM's evaluate/requirements.txt",
        compared=f"pieces of {len(AUTHORS_PIECES)} texts (digits before a comma, accents, `` '' quotes, [MASK] and "
        "[SEP] in the text) with a sentencepiece model trained in the test; outside the suite also the "
        "[CLS] A [SEP] B [SEP] ids and segment ids of 85,750 pair and prefix inputs of dHM's released VIST "
        "stories (human and LLaVA) and 2,934 random edge texts",
        figure=f"{len(AUTHORS_PIECES)}/{len(AUTHORS_PIECES)} equal piece for piece (outside: 85,750/85,750 and 2,934/2,934)",
    )


def test_no_piece_ends_in_a_digit_and_a_comma(albert_tokenizer: Path) -> None:
    """The rule the fast tokenizer only approximates: ``▁101,`` is in the vocabulary, never in the output."""
    tok = load_slow_albert_tokenizer(str(albert_tokenizer))
    assert tok.sp_model.piece_to_id("▁101,") != tok.sp_model.piece_to_id("<unk>")
    for text in ["101, 2020, 7, 42, 1,000, 300", "it was 2020,5 and 7,a"]:
        pieces = tok.tokenize(text)
        assert not [p for p in pieces if len(p) > 1 and p[-1] == "," and p[-2].isdigit()], pieces


def test_a_pair_is_the_authors_input(albert_tokenizer: Path) -> None:
    """``[CLS] A [SEP] B [SEP]`` tokenized as one text, segment ids (len(A)+2)·0 + (len(B)+1)·1
    (their ``coherence_scorer.py``); a batch is padded on the right, truncation is longest-first."""
    tok = load_slow_albert_tokenizer(str(albert_tokenizer))
    a, b = "We saw 101, dogs at the park.", "Then the cat ran home!"
    enc = tok(a, b)
    assert enc["input_ids"] == tok.convert_tokens_to_ids(tok.tokenize(" ".join(["[CLS]", a, "[SEP]", b, "[SEP]"])))
    len_a, len_b = len(tok.tokenize(a)), len(tok.tokenize(b))
    assert enc["token_type_ids"] == (len_a + 2) * [0] + (len_b + 1) * [1]
    batch = tok([a, "we ate."], [b, "it was big."], padding=True)
    assert batch["input_ids"][0] == enc["input_ids"] and len(batch["input_ids"][1]) == len(enc["input_ids"])
    assert batch["attention_mask"][1].count(1) == len(tok("we ate.", "it was big.")["input_ids"])
    cut = tok(a, b, truncation="longest_first", max_length=12)["input_ids"]
    assert len(cut) == 12 and cut[0] == tok.cls_token_id and cut.count(tok.sep_token_id) == 2


def test_a_fast_only_tokenizer_is_refused_with_the_fix(albert_tokenizer: Path, tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError, match=r"spiece\.model.*--coherence-profile paper"):
        load_slow_albert_tokenizer(str(tmp_path))
    with pytest.raises(ModelLoadError, match=r"no ALBERT tokenizer"):
        load_slow_albert_tokenizer(str(tmp_path / "nothing-here"))  # not a folder: the hub cache, offline


@pytest.mark.slow  # the signature of a coherence setting imports transformers (about 1.5 s)
def test_the_weights_id_and_signature_name_the_tokenizer_kind(albert_tokenizer: Path, tmp_path: Path) -> None:
    from vst_core.signature import describe, signature

    ckpt = tmp_path / "sop_model_epoch4.pth.tar"
    ckpt.write_bytes(b"not read: only digested")
    spec = f"rovist-c:{ckpt}"
    paper = pair_weights_id(spec, str(albert_tokenizer))
    reference = pair_weights_id(spec, str(albert_tokenizer), "reference")
    digest = weights_digest(albert_tokenizer / "spiece.model")
    assert paper.endswith(f"+tokenizer:{albert_tokenizer}")
    assert f"+slow-tokenizer:{albert_tokenizer}@" in reference and reference.endswith(f"@{digest}")
    assert pair_weights_id(spec, str(tmp_path / "absent"), "reference").endswith("@not-downloaded")
    base = Settings(metrics=("coherence",), coherence_model=spec, coherence_tokenizer=str(albert_tokenizer))
    ref = base.with_(coherence_profile="reference")
    assert signature(base)["id"] != signature(ref)["id"]
    assert signature(ref)["settings"]["coherence_weights"] == reference
    assert "coherence reference rovist-c:" in describe(ref) and "reference" not in describe(base)


# --------------------------------------------------------------------------- over-long inputs (pure)


def test_reference_profile_leaves_a_story_with_an_over_long_pair_unscored() -> None:
    sentences = ["We went out.", "It rained all day long.", "We went home."]
    paper = coherence([0.8, 0.6], sentences)
    assert paper.score == pytest.approx(0.7)
    ref = coherence([0.8, float("nan")], sentences, over_long=[False, True])
    assert ref.score is None and ref.weakest is None and ref.pairs == (0.8, None)
    assert ref.notes == (f"pair(s) 2->3 {OVER_LONG_NOTE}",)
    assert coherence([0.8, 0.6], sentences, over_long=[False, False]) == paper


def test_an_over_long_repeat_is_still_zero() -> None:
    """The authors set a repeat to 0 before they tokenize it: its length never matters."""
    sentences = ["A very long sentence.", "A very long sentence.", "Short."]
    c = coherence([float("nan"), 0.5], sentences, repeat_is_zero=True, over_long=[True, False])
    assert c.score == pytest.approx(0.25) and c.pairs == (0.0, 0.5)
    with pytest.raises(ValueError, match="over-long flags"):
        coherence([0.5], ["a", "b"], over_long=[])


# --------------------------------------------------------------------------- prefix after a repeat


def fake_model(first: str, second: str) -> float:
    """A deterministic P(second follows first) in (0, 1) that any change of either text changes."""
    digest = hashlib.sha256(f"{first}\x00{second}".encode()).digest()
    return (int.from_bytes(digest[:6], "big") + 1) / (2**48 + 2)


def dhm_get_coherence_score(sentences: list[str], model: Any = fake_model) -> list[float]:
    """dHM's ``evaluate/eval_C_R.py::get_coherence_score`` after ``nltk.sent_tokenize``, with the
    tokenizer and ALBERT call replaced by ``model(prefix, sentence)``."""
    prefix = sentences[0]
    scores: list[float] = []
    for pos in range(1, len(sentences)):
        sentence = sentences[pos]

        if prefix.strip() == sentence.strip():
            scores.append(0)
            continue

        scores.append(model(prefix, sentence))
        prefix += " " + sentence  # considers prefix, CHANGE made to the original RoViST-C metric
    return scores


def ours_prefix(sentences: list[str]) -> tuple[tuple[float | None, ...], float | None]:
    inputs = pairs_of(sentences, "prefix")
    result = coherence([fake_model(a, b) for a, b in inputs], sentences, repeat_is_zero=True, context="prefix")
    return result.pairs, result.score


HAND_MADE = {
    "first sentence repeated": ["We went out.", "We went out.", "It rained.", "We went home."],
    "repeated twice": ["We went out.", "We went out. ", " We went out.", "It rained."],
    "repeat, then new": ["A dog ran.", "A dog ran.", "A cat sat.", "A dog ran.", "The end."],
    "no repeat": ["We went out.", "It rained.", "We went home."],
    "a later sentence repeated": ["We went out.", "It rained.", "It rained.", "We went home."],
}


@pytest.mark.parity
def test_prefix_leaves_a_repeated_sentence_out_as_dhm_does(parity: ParityLog) -> None:
    for name, sentences in HAND_MADE.items():
        want = dhm_get_coherence_score(sentences)
        pairs, score = ours_prefix(sentences)
        assert list(pairs) == want, name
        assert score == pytest.approx(float(np.mean(want)), abs=1e-15), name
    first = HAND_MADE["first sentence repeated"]
    assert pairs_of(first, "prefix") == [
        ("We went out.", "We went out."),
        ("We went out.", "It rained."),  # the repeat is not in the story so far
        ("We went out. It rained.", "We went home."),
    ]
    assert pairs_of(first, "prefix", repeat_is_zero=False)[2] == ("We went out. We went out. It rained.", "We went home.")
    parity.record(
        metric="RoViST-C (prefix context)",
        reference="dHM evaluate/eval_C_R.py::get_coherence_score (the prefix loop, transcribed)",
        compared=f"{len(HAND_MADE)} hand-made stories with repeated sentences, the model replaced by one "
        "deterministic function of (prefix, sentence) on both sides",
        figure="every pair probability identical and the story mean equal to 1e-15",
    )


sentence_lists = st.lists(
    st.sampled_from(["We went out.", "It rained.", " It rained. ", "We went home.", "A dog ran."]), min_size=2, max_size=7
)


@pytest.mark.parity
def test_prefix_equals_the_dhm_loop_on_random_stories(parity: ParityLog) -> None:
    n = examples(150)

    @settings(max_examples=n, deadline=None)
    @given(sentences=sentence_lists)
    def check(sentences: list[str]) -> None:
        want = dhm_get_coherence_score(sentences)
        pairs, score = ours_prefix(sentences)
        assert list(pairs) == want
        assert score == pytest.approx(float(np.mean(want)), abs=1e-15)

    check()
    parity.record(
        metric="RoViST-C (prefix context)",
        reference="dHM evaluate/eval_C_R.py::get_coherence_score (the prefix loop, transcribed)",
        compared=f"{n} random stories of 2 to 7 sentences drawn from 5 (repeats and padded repeats frequent), "
        "property-based (hypothesis)",
        figure="every pair probability identical and the story mean equal to 1e-15 on every example",
    )


def test_pair_context_is_unchanged_by_the_rule() -> None:
    sentences = ["A.", "A.", "B.", "B."]
    assert pairs_of(sentences) == [("A.", "A."), ("A.", "B."), ("B.", "B.")]
    assert [t.repeated for t in transitions(sentences, "pair", repeat_is_zero=True)] == [True, False, True]


# --------------------------------------------------------------------------- the replica, end to end


def _tiny_rovist_c(path: Path, vocab_size: int) -> None:
    """A random ALBERT + linear head saved as the authors' ``rovist_c.py`` saves it, with 64 positions."""
    import torch
    from transformers import AlbertConfig, AlbertModel

    torch.manual_seed(5)
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
    state = {f"albert_model.{k}": v for k, v in AlbertModel(config).state_dict().items()}
    head = torch.nn.Linear(32, 2)
    state["linear.weight"], state["linear.bias"] = head.weight.detach(), head.bias.detach()
    opt = argparse.Namespace(hidden_dim=32, dropout_prob=0.4)
    torch.save({"epoch": 4, "model": state, "opt": opt}, path)


@pytest.fixture(scope="module")
def rovist_c(albert_tokenizer: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rovist") / "sop_model_epoch4.pth.tar"
    _tiny_rovist_c(path, vocab_size=len(SentencePieceAlbertTokenizer(albert_tokenizer / "spiece.model")))
    return path


def authors_pair_probability(model: Any, tokenizer: Any, first: str, second: str) -> float:
    """One pair as RoViST's ``scripts/coherence_scorer.py`` scores it (no truncation, one at a time)."""
    import torch
    import torch.nn.functional as F

    sent_a_len = len(tokenizer.tokenize(first))
    sent_b_len = len(tokenizer.tokenize(second))
    input_text = " ".join(["[CLS]", first, "[SEP]", second, "[SEP]"])
    token_ids = torch.tensor([tokenizer.convert_tokens_to_ids(tokenizer.tokenize(input_text))])
    segment_ids = torch.tensor([(sent_a_len + 2) * [0] + (sent_b_len + 1) * [1]])
    attention_ids = torch.tensor([(sent_a_len + 2) * [1] + (sent_b_len + 1) * [1]])
    with torch.no_grad():
        sop_logits = model(token_ids, attention_ids, segment_ids)
    return float(F.softmax(sop_logits, dim=1)[0][1].item())


def dhm_eval_coherence(stories: dict[str, list[str]], model: Any) -> tuple[list[str], list[float]]:
    """dHM's ``eval_coherence``: a story whose scoring raises is left out (``invalid_sids``)."""
    c_scores: list[float] = []
    valid_sids, invalid_sids = [], []
    for sid, sentences in stories.items():
        try:
            scores = dhm_get_coherence_score(sentences, model)
            if len(scores) == 0:
                invalid_sids.append(sid)
            else:
                c_scores.append(float(np.mean(scores)))
                valid_sids.append(sid)
        except Exception:
            invalid_sids.append(sid)
    return valid_sids, c_scores


@pytest.mark.slow  # a tiny ALBERT through transformers and torch
def test_reference_profile_loads_the_slow_tokenizer(albert_tokenizer: Path, rovist_c: Path) -> None:
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer

    spec = f"rovist-c:{rovist_c}"
    paper = load_pair_scorer(spec, tokenizer=str(albert_tokenizer), device="cpu")
    reference = load_pair_scorer(spec, tokenizer=str(albert_tokenizer), profile="reference", device="cpu")
    assert getattr(paper.tokenizer, "is_fast", False) and paper.overlong == "truncate"
    assert isinstance(reference.tokenizer, SentencePieceAlbertTokenizer) and reference.overlong == "skip"
    pair = ("We saw 101, dogs.", "It was 2020, the sun!")
    fast_ids = paper.encode([pair])["input_ids"][0].tolist()
    slow_ids = reference.encode([pair])["input_ids"][0].tolist()
    assert fast_ids != slow_ids and len(slow_ids) > len(fast_ids)  # ▁101, and ▁2020, split by the slow rule
    with pytest.raises(ValueError, match="coherence profile"):
        load_pair_scorer(spec, tokenizer=str(albert_tokenizer), profile="authors", device="cpu")


@pytest.mark.slow  # a tiny ALBERT through transformers and torch
@pytest.mark.parity
def test_reference_profile_scores_as_the_authors_loops(albert_tokenizer: Path, rovist_c: Path, parity: ParityLog) -> None:
    """Pair context against RoViST's ``coherence_score`` loop, prefix context against dHM's
    ``eval_coherence`` (whose ``try``/``except`` leaves out a story the model cannot take whole),
    both with the replica and the slow tokenizer; ours batches, pads and runs every story together."""
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    stories = {
        "short": ["We saw 101, dogs.", "It was 2020, the sun!", "Then we ate cake."],
        "repeat": ["A dog ran.", "A dog ran.", "The cat sat on the ball.", "We went home."],
        "long": ["We went to the beach.", " ".join(["the big red ball"] * 16) + ".", "We ate cake.", "Then we went home."],
    }
    base = Settings(
        metrics=("coherence",),
        coherence_model=f"rovist-c:{rovist_c}",
        coherence_tokenizer=str(albert_tokenizer),
        coherence_profile="reference",
        device="cpu",
    )
    checked = 0
    for context in ("pair", "prefix"):
        s = base.with_(coherence_context=context)
        models = Models(s)
        scorer: Any = rovist_c_metric.model(models)  # a TransformerPairScorer: its tokenizer and model
        tok = scorer.tokenizer

        def model(first: str, second: str, scorer: Any = scorer, tok: Any = tok) -> float:
            return authors_pair_probability(scorer.model, tok, first, second)

        records = {
            r.story_id: r
            for r in score_batch([Story(k, k, "m", tuple(v)) for k, v in stories.items()], s, {"id": "test"}, models, Path("."))
        }
        if context == "pair":
            want: dict[str, list[float] | None] = {}
            for sid, sentences in stories.items():
                try:  # RoViST's script has no try: the first over-long pair stops the whole run
                    want[sid] = [
                        0.0 if a.strip() == b.strip() else model(a, b) for a, b in zip(sentences, sentences[1:], strict=False)
                    ]
                except Exception:
                    want[sid] = None
        else:
            valid, _ = dhm_eval_coherence(stories, model)
            want = {sid: (dhm_get_coherence_score(v, model) if sid in valid else None) for sid, v in stories.items()}
        for sid, expected in want.items():
            coh = records[sid].metrics.get("coherence")
            assert coh is not None
            if expected is None:
                assert coh.score is None and any(OVER_LONG_NOTE in n for n in coh.notes), (context, sid)
                assert any("no coherence score" in w and repr(sid) in w for w in records[sid].warnings)
            else:
                got = [p.probability for p in coh.pairs]
                assert got == pytest.approx(expected, abs=1e-5), (context, sid)
                assert coh.score == pytest.approx(float(np.mean(expected)), abs=1e-5)
            checked += 1
    assert (
        records["long"].metrics.get("coherence") is not None and records["long"].metrics["coherence"].score is None
    )  # 64 positions
    parity.record(
        metric="RoViST-C (reference profile)",
        reference="RoViST scripts/coherence_scorer.py (pair loop) and dHM evaluate/eval_C_R.py "
        "(eval_coherence, prefix loop), transcribed",
        compared=f"{checked} story scorings (3 stories: digits before commas, a repeat, an over-long sentence; "
        "pair and prefix context) with a random-weight RoViST-C replica and the slow tokenizer",
        figure="pair probabilities and story means within 1e-5 (batched and padded here, one pair at a time "
        "there); the story the model cannot take whole has no score on both sides",
    )


@pytest.mark.slow  # a tiny ALBERT through transformers and torch
def test_paper_profile_still_truncates_and_warns(albert_tokenizer: Path, rovist_c: Path) -> None:
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_story

    settings_ = Settings(
        metrics=("coherence",), coherence_model=f"rovist-c:{rovist_c}", coherence_tokenizer=str(albert_tokenizer), device="cpu"
    )
    story = Story("long-one", "s", "m", ("We went to the beach.", " ".join(["the big red ball"] * 16) + "."))
    record = score_story(story, settings_, models=Models(settings_))
    coh = record.metrics.get("coherence")
    assert coh is not None and coh.score is not None and coh.pairs[0].truncated
    assert any("truncated" in w and "long-one" in w for w in record.warnings)
    ref = settings_.with_(coherence_profile="reference")
    record = score_story(story, ref, models=Models(ref))
    coh = record.metrics.get("coherence")
    assert coh is not None and coh.score is None and coh.pairs[0].probability is None and not coh.pairs[0].truncated
    assert math.isnan(rovist_c_metric.model(Models(ref)).score_pairs([(story.sentences[0], story.sentences[1])])[0])
    # a scorer loaded for the paper profile (fast tokenizer) never gives reference numbers
    record = score_story(story, ref, models=Models(ref, coherence=rovist_c_metric.model(Models(settings_))))
    assert record.metrics.get("coherence") is None and "slow ALBERT tokenizer" in record.errors["coherence"]
