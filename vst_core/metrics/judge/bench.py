"""The rubric judge's part of ``vst bench``: its stories/s with a random Qwen2, cold and from its
answer cache (the ``judge`` phase), and the served-judge client's against a local fixed-latency
server (``judge_server``); the measurements are :mod:`.throughput`'s."""

from __future__ import annotations

from typing import Any

from vst_core.contract import Bench, BenchPhase, BenchRunLike, BenchSize

STORIES = BenchSize("judge_stories", 8, "stories the rubric judge rates")
SIZE = BenchSize(
    "judge_size",
    "replica",
    "rubric judge architecture: replica = the tests' narrowed Qwen2 (2 layers of width 64), "
    "full = Qwen2.5-0.5B-Instruct's (494 M parameters)",
    choices=("replica", "full"),
    minimum=None,
)
SERVER_STORIES = BenchSize("judge_server_stories", 16, "stories the served-judge client rates")
SERVER_LATENCY = BenchSize("judge_server_latency_ms", 50.0, "milliseconds the local judge server takes per request", minimum=0)
SERVER_CONCURRENCY = BenchSize("judge_server_concurrency", (1, 8, 32), "comma-separated requests in flight to try")


def judge_phase(run: BenchRunLike) -> dict[str, Any]:
    """Stories/s of the rubric judge, cold and from its cache (:func:`.throughput.judge_throughput`)."""
    from vst_core.metrics.judge.throughput import judge_throughput

    config = run.config
    stories, size = config.size(STORIES.name), config.size(SIZE.name)
    run.say(f"judge: {stories} stories, 12 rubric prompts each, Qwen2 {size}")
    return judge_throughput(run.sentences(stories), size, device=run.device, batch_size=8, seed=config.seed)


def judge_server_phase(run: BenchRunLike) -> dict[str, Any]:
    """Stories/s of the served-judge client against a fixed-latency local server
    (:func:`.throughput.judge_server_throughput`)."""
    from vst_core.metrics.judge.throughput import judge_server_throughput

    config = run.config
    stories, latency_ms = config.size(SERVER_STORIES.name), float(config.size(SERVER_LATENCY.name))
    concurrency = tuple(config.size(SERVER_CONCURRENCY.name))
    run.say(
        f"judge_server: {stories} stories, 12 requests each, a local server answering in {latency_ms:.0f} ms, "
        f"concurrency {', '.join(map(str, concurrency))}"
    )
    return judge_server_throughput(run.sentences(stories), latency=latency_ms / 1000, concurrencies=concurrency)


BENCH = Bench(
    phases=(
        BenchPhase(
            "judge",
            judge_phase,
            figures="judge_stories_per_s: stories/s of the rubric judge (4 aspects x 3 paraphrases a story) with a "
            "random Qwen2 of the replica's size (--judge-size full: Qwen2.5-0.5B's), cold; and from its answer cache",
        ),
        BenchPhase(
            "judge_server",
            judge_server_phase,
            figures="judge_server_stories_per_s: stories/s of the served-judge client at each concurrency against a "
            "local server answering each request in --judge-server-latency-ms, its bound and the seconds per "
            "1,000 stories (a real server's time is its own)",
        ),
    ),
    sizes=(STORIES, SIZE, SERVER_STORIES, SERVER_LATENCY, SERVER_CONCURRENCY),
)
