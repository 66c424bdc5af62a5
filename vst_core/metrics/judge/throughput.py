"""The rubric judge's cost: stories/s of :func:`vst_core.metrics.judge.batch.judge_records` on synthetic
stories with a random-weight Qwen2 (the default judge's architecture), cold and from the cache.

``size="full"`` is Qwen/Qwen2.5-0.5B-Instruct's configuration (24 layers of width 896, 494 M
parameters; the cost of a forward pass does not depend on the weight values); ``"replica"`` is the
narrowed one the tests load (2 layers of width 64: the pipeline's own overhead). The tokenizer is a
byte-level BPE trained on the rubric and the stories (Qwen2's split rule), so a prompt's token count
is close to, not equal to, the real tokenizer's (``judge_prompt_tokens`` reports it)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from vst_core.config import Settings
from vst_core.data import Story, StorySet
from vst_core.metrics.judge.defaults import NAME

#: Qwen/Qwen2.5-0.5B-Instruct's architecture (its config.json); the replica narrows it.
QWEN_05B: dict[str, Any] = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": True,
}
REPLICA: dict[str, Any] = {
    **QWEN_05B,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
}
_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def _tokenizer(lines: list[str]) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1200,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer)
    out = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    out.chat_template = _TEMPLATE
    return out


def judge_throughput(texts: Sequence[Sequence[str]], size: str, *, device: str, batch_size: int, seed: int = 0) -> dict[str, Any]:
    """Cold and cached stories/s of the judge over the stories ``texts`` (each its sentences: ``vst bench``
    gives synthetic five-sentence stories)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from vst_core.metrics.judge.batch import judge_records
    from vst_core.metrics.judge.cache import JudgeCache
    from vst_core.metrics.judge.local import JudgeModel
    from vst_core.metrics.judge.template import load_rubric

    rubric = load_rubric()
    stories = len(texts)
    rubric_lines = json.loads(resources.files("vst_core.metrics.judge").joinpath("rubric_v1.json").read_text())
    corpus = [s for t in texts for s in t] + [q for v in rubric_lines["aspects"].values() for q in v] + [rubric_lines["story"]]
    tokenizer = _tokenizer(corpus * 3)
    torch.manual_seed(seed)
    shape = QWEN_05B if size == "full" else REPLICA
    model = Qwen2ForCausalLM(Qwen2Config(**shape)).eval()
    if device == "cuda":
        model = model.to(torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    judge = JudgeModel(
        f"random Qwen2 ({size})", tokenizer, model, device=device, batch_size=batch_size, signature=f"bench-{size}"
    )
    story_set = StorySet.of([Story.from_sentences(t, story_id=f"s{k}") for k, t in enumerate(texts)], Path("."))
    settings = Settings(metrics=(NAME,))
    cache = JudgeCache(None)
    judge.logprobs([rubric.prompt(texts[0], "overall", 0)], ["1"])  # warm-up
    calls = judge.calls
    start = time.perf_counter()
    judge_records(list(story_set), settings, judge, rubric, cache, Path("."))
    cold = time.perf_counter() - start
    start = time.perf_counter()
    judge_records(list(story_set), settings, judge, rubric, cache, Path("."))
    warm = time.perf_counter() - start
    prompts = [rubric.prompt(t, a, p) for t in texts for a, ps in rubric.aspects.items() for p in range(len(ps))]
    tokens = [len(tokenizer(judge.render(p, False))["input_ids"]) for p in prompts]
    return {
        "judge_model": f"Qwen2ForCausalLM {size} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters), random weights",
        "judge_stories": stories,
        "judge_prompts_per_story": len(prompts) // max(1, stories),
        "judge_prompt_tokens": round(sum(tokens) / len(tokens), 1),
        "judge_batch_size": batch_size,
        "judge_model_calls": judge.calls - calls,
        "judge_stories_per_s": round(stories / cold, 4),
        "judge_seconds_per_story": round(cold / stories, 3),
        "judge_cached_stories_per_s": round(stories / warm, 1),
    }


#: What the served judge's benchmark cannot measure on a machine without a GPU and a running server.
VLLM_NOT_MEASURED = (
    "not measured by vst bench: a vLLM (or SGLang) server needs a GPU and model weights; start one and "
    "time `vst score --metrics judge --judge-endpoint URL` on your stories (docs/judge.md: A large judge on your GPUs)"
)


def judge_server_throughput(
    texts: Sequence[Sequence[str]], *, latency: float = 0.05, concurrencies: tuple[int, ...] = (1, 8, 32)
) -> dict[str, Any]:
    """Stories/s of the served-judge client (:class:`vst_core.metrics.judge.served.JudgeServer`)
    against a local server that answers every request after ``latency`` seconds
    (:func:`.chat_server.fixed_latency_answer`), at each concurrency, cold (every
    answer a request) and from the answer cache. With 12 prompts a story the bound is
    ``concurrency / (12 · latency)`` stories/s; the gap to it is the client's own cost."""
    from vst_core.metrics.judge.batch import judge_records
    from vst_core.metrics.judge.cache import JudgeCache
    from vst_core.metrics.judge.chat_server import ChatServer, fixed_latency_answer
    from vst_core.metrics.judge.served import JudgeServer
    from vst_core.metrics.judge.template import load_rubric

    rubric = load_rubric()
    stories = len(texts)
    story_set = StorySet.of([Story.from_sentences(t, story_id=f"s{k}") for k, t in enumerate(texts)], Path("."))
    settings = Settings(metrics=(NAME,))
    prompts = stories * sum(len(v) for v in rubric.aspects.values())
    rates: dict[str, float] = {}
    bounds: dict[str, float] = {}
    cached = 0.0
    with ChatServer(fixed_latency_answer(latency)) as server:
        for concurrency in concurrencies:
            judge = JudgeServer(server.url, "judge", concurrency=concurrency, timeout=60.0).connect()
            cache = JudgeCache(None)
            start = time.perf_counter()
            found = judge_records(list(story_set), settings, judge, rubric, cache, Path("."))
            cold = time.perf_counter() - start
            failed = [v for v in found.values() if isinstance(v, str)]
            if failed:
                raise RuntimeError(f"the benchmark's server failed: {failed[0]}")
            rates[str(concurrency)] = round(stories / cold, 3)
            bounds[str(concurrency)] = round(min(concurrency, prompts) / (prompts / stories * latency), 3)
            start = time.perf_counter()
            judge_records(list(story_set), settings, judge, rubric, cache, Path("."))
            cached = max(cached, stories / (time.perf_counter() - start))
            judge.close()
    return {
        "judge_server_latency_ms": round(latency * 1000, 3),
        "judge_server_stories": stories,
        "judge_server_requests_per_story": prompts // max(1, stories),
        "judge_server_stories_per_s": rates,
        "judge_server_bound_stories_per_s": bounds,
        "judge_server_seconds_per_1000_stories": {c: round(1000 / r, 1) for c, r in rates.items()},
        "judge_server_cached_stories_per_s": round(cached, 1),
        "judge_server_vllm": VLLM_NOT_MEASURED,
    }
