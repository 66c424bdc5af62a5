"""RoViST-C's part of ``vst bench``: the pair scorer's throughput (the ``coherence`` phase) and its
random-weight replica for the memory run, ``BertForNextSentencePrediction`` of ``bert-base`` size
(the default ``bert-nsp`` scorer's architecture; ``--coherence-size tiny``: 2 layers of width 32)
with a word-level vocabulary of the synthetic stories. The cost of a forward pass does not depend
on the weight values, so nothing is downloaded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vst_core.contract import Bench, BenchConfigLike, BenchPhase, BenchRunLike, BenchSize, ReplicaRequest

SIZE = BenchSize(
    "coherence_size",
    "base",
    "pair-scorer architecture: base = bert-base (the default bert-nsp scorer), tiny = 2 layers of width 32",
    choices=("base", "tiny"),
    minimum=None,
)


def random_pair_scorer(size: str, folder: Path, words: Sequence[str], *, device: str, batch_size: int, seed: int = 0) -> Any:
    """``BertForNextSentencePrediction`` of ``bert-base`` size (``size="base"``, or ``"tiny"``) with
    random weights behind the product's :class:`TransformerPairScorer`, its tokenizer a word-level
    vocabulary of ``words`` (written into ``folder``)."""
    import torch
    from transformers import BertConfig, BertForNextSentencePrediction, BertTokenizerFast  # type: ignore[attr-defined]

    from vst_core.metrics.rovist_c.scorers import TransformerPairScorer

    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    config = (
        BertConfig()
        if size == "base"
        else BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    )
    torch.manual_seed(seed)
    model = BertForNextSentencePrediction(config)
    return TransformerPairScorer(f"bert-nsp:random-{size}", tokenizer, model, positive=0, device=device, batch_size=batch_size)


def replica(request: ReplicaRequest) -> Any:
    """The pair scorer of the run's ``coherence_size`` for the shared runs."""
    config = request.config
    return random_pair_scorer(
        config.size(SIZE.name),
        request.folder,
        request.words,
        device=request.device,
        batch_size=request.batch_size,
        seed=config.seed,
    )


def about(config: BenchConfigLike) -> dict[str, str]:
    """The replica's architecture, for the head of the summary."""
    return {
        "coherence_arch": "BertForNextSentencePrediction(" + ("BertConfig())" if config.size(SIZE.name) == "base" else "tiny)")
    }


def coherence_phase(run: BenchRunLike) -> dict[str, Any]:
    """Sentence pairs/s of the random-weight pair scorer over every consecutive pair of the set."""
    from vst_core.metrics.rovist_c.scorers import pairs_of

    config, size = run.config, run.config.size(SIZE.name)
    scorer = random_pair_scorer(size, run.folder, run.words(), device=run.device, batch_size=32, seed=config.seed)
    pairs = [p for story in run.story_set for p in pairs_of(story.sentences)]
    scorer.score_pairs(pairs[:4])  # warm-up
    run.say(f"coherence: {len(pairs)} sentence pairs")
    start = time.perf_counter()
    scorer.score_pairs(pairs)
    return {
        "coherence_pairs_per_s": round(len(pairs) / (time.perf_counter() - start), 2),
        "coherence_batch_size": scorer.batch_size,
    }


BENCH = Bench(
    phases=(
        BenchPhase(
            "coherence",
            coherence_phase,
            figures="coherence_pairs_per_s: sentence pairs/s of the pair scorer (random weights, --coherence-size)",
        ),
    ),
    sizes=(SIZE,),
    runs=frozenset({"memory"}),
    replica=replica,
    about=about,
)
