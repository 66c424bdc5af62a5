"""RoViST-NR's part of ``vst bench``: stories/s of the vectorised pass (``score --no-spans``) and of the
per-story pass with repeated spans, against the public code's double loops (:func:`reference_nr`,
found only in a source checkout), all from the sentences with one tokenizer (the ``nr`` phase)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import vst_core
from vst_core.contract import Bench, BenchPhase, BenchRunLike, BenchSize, rate
from vst_core.metrics.rovist_nr.defaults import NAME, VARIANT, ngram_of, variant_of

#: The public RoViST NR code, transcribed once for the tests and the benchmark; it lives in the
#: source checkout's ``benchmarks/`` folder and is not installed with the package.
REFERENCE_CODE = Path(vst_core.__file__).resolve().parent.parent / "benchmarks" / "reference_code.py"

ReferenceNR = Callable[[list[list[str]]], float | None]


@cache
def reference_nr() -> ReferenceNR | None:
    """``reference_nr`` of the checkout this package runs from (loaded from its file, without
    touching ``sys.path``), or None when the package is installed without a checkout."""
    if not REFERENCE_CODE.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_vst_bench_reference_code", REFERENCE_CODE)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: ReferenceNR = module.reference_nr
    return found


#: Why the phase is left out where the package runs without its source checkout.
NR_SKIPPED = (
    "the public RoViST NR code it is timed against (benchmarks/reference_code.py) comes with a source "
    "checkout only, not with an installed package; run vst bench from a checkout to measure it"
)
STORIES = BenchSize("nr_stories", 5000, "text-only stories of the RoViST-NR comparison")


def nr_throughput(texts: list[list[str]], reference: ReferenceNR, seconds: float = 1.0) -> dict[str, float]:
    """Stories/s of RoViST-NR (reference variant, n = 4) from sentences to numbers, three ways,
    all with the same tokenizer (the variant's: NLTK Punkt and Treebank words, as the public code):
    the vectorised pass of ``vst score --no-spans``, the default per-story pass with the repeated
    spans, and ``reference`` (the public code's double loops); every score is checked to agree with
    the baseline first. ``*_tokens``: the same from tokens, i.e. the numeric core alone.

    The tokenizer is most of the end-to-end time (NLTK's Treebank regular expressions run about 30
    substitutions per sentence); an earlier version of this benchmark gave the baseline our one-regex
    tokenizer instead, which made the vectorised pass look slower than the loop."""
    from vst_core.config import Settings
    from vst_core.data import Story
    from vst_core.formulas.redundancy import non_redundancy_scores
    from vst_core.metrics.rovist_nr.batch import nr_words, redundancy_of, redundancy_without_spans

    settings = Settings(metrics=(NAME,), options=((VARIANT.setting, "reference"),))
    stories = [Story(f"s{k}", f"s{k}", "bench", tuple(sentences)) for k, sentences in enumerate(texts)]
    fast = redundancy_without_spans(stories, settings)
    for story in stories:
        ref = reference(nr_words(story, "reference"))
        found = fast[story.key]
        if isinstance(found, str):
            raise AssertionError(f"NR refused {story.story_id}: {found}")
        ours = found.score
        if (ours is None) != (ref is None) or (ours is not None and abs(ours - ref) > 1e-9):  # type: ignore[operator]
            raise AssertionError(f"NR differs from the baseline on {story.story_id}: {ours} vs {ref}")

    def vectorised() -> int:
        redundancy_without_spans(stories, settings)
        return len(stories)

    def with_spans() -> int:
        for story in stories:
            redundancy_of(story, ngram_of(settings), variant_of(settings))
        return len(stories)

    def baseline() -> int:
        for story in stories:
            reference(nr_words(story, "reference"))
        return len(stories)

    tokens = [nr_words(story, "reference") for story in stories]

    def vectorised_tokens() -> int:
        non_redundancy_scores(tokens, n=4, variant="reference")
        return len(tokens)

    def baseline_tokens() -> int:
        for story_tokens in tokens:
            reference(story_tokens)
        return len(tokens)

    return {
        "vectorised": rate(vectorised, seconds),
        "spans": rate(with_spans, seconds),
        "baseline": rate(baseline, seconds),
        "vectorised_tokens": rate(vectorised_tokens, seconds),
        "baseline_tokens": rate(baseline_tokens, seconds),
    }


def nr_phase(run: BenchRunLike) -> dict[str, Any]:
    """RoViST-NR stories/s, vectorised and per story, against the public code's double loops, on
    ``nr_stories`` stories and on a quarter as many with 4x longer sentences; skipped (with the
    reason under ``nr_reference``) where the public code is absent, outside a source checkout."""
    reference, count = reference_nr(), run.config.size(STORIES.name)
    if reference is None:
        run.say(f"RoViST-NR: {NR_SKIPPED}")
        return {"nr_reference": f"skipped: {NR_SKIPPED}"}
    run.say(f"RoViST-NR against the double-loop baseline on {count} stories")
    seconds = min(1.0, run.config.raw_seconds)
    rates = nr_throughput(run.sentences(count), reference, seconds)
    long = nr_throughput(run.sentences(max(count // 4, 1), join=4), reference, seconds)
    return {
        "nr_stories": count,
        "nr_stories_per_s": round(rates["vectorised"], 1),
        "nr_with_spans_stories_per_s": round(rates["spans"], 1),
        "nr_reference_stories_per_s": round(rates["baseline"], 1),
        "nr_speedup_vs_reference": round(rates["vectorised"] / rates["baseline"], 2),
        "nr_tokenized_speedup_vs_reference": round(rates["vectorised_tokens"] / rates["baseline_tokens"], 2),
        "nr_long_sentences_speedup_vs_reference": round(long["vectorised"] / long["baseline"], 2),
    }


BENCH = Bench(
    phases=(
        BenchPhase(
            "nr",
            nr_phase,
            targets={"nr_speedup_vs_reference": 20.0},
            figures="nr_speedup_vs_reference: RoViST-NR stories/s of the vectorised pass (score --no-spans) over "
            "the public code's double loops, both from the sentences with one tokenizer; also the per-story "
            "pass with repeated spans, and 4x longer sentences (the public code is in a source checkout only: "
            "elsewhere nr_reference says the phase was skipped)",
        ),
    ),
    sizes=(STORIES,),
    runs=frozenset({"warm", "memory"}),
)
