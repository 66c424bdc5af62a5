"""The rubric judge (G-Eval's rule, Liu et al., 2023): a chat model asked rubric questions; an
aspect's score = Σ k·p(k) over the next-token probabilities of the ratings 1..5.

Rule and biases: :mod:`vst_core.metrics.judge`; the model: :mod:`vst_core.models.judge` (local) or
:mod:`vst_core.models.judge_server` (served); rubric and answer cache: :mod:`vst_core.judge`; a
batch: :func:`vst_core.scoring.judge.judge_records`. Card: ``docs/metrics/judge.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vst_core.metric_spec import Card, MetricField, MetricSpec
from vst_core.records import JudgeScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.judge.cache import JudgeCache
    from vst_core.judge.rubric import Rubric
    from vst_core.models.protocols import Judge
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import ScoringRun

NAME = "judge"


def score(stories: Sequence[Story], run: ScoringRun) -> Mapping[tuple[str, str], Any]:
    """The batch's prompts in shared model calls; a chunk the model cannot take gives each story the
    reason; a model that cannot load stops the run (:class:`~vst_core.models.hub.ModelLoadError`)."""
    from vst_core.models.hub import ModelLoadError
    from vst_core.scoring.judge import judge_records

    texts = [s for s in stories if not s.is_empty]
    m = run.models
    try:
        judged: dict[tuple[str, str], Any] = (
            dict(judge_records(texts, run.settings, model(m), rubric(m), answers(m), run.root)) if texts else {}
        )
    except ModelLoadError:
        raise
    except (ValueError, RuntimeError, OSError) as exc:
        judged = {s.key: f"{type(exc).__name__}: {exc}" for s in texts}
    return {s.key: judged.get(s.key, "empty story") for s in stories}


def model(models: Models) -> Judge:
    """The judge of the settings, loaded once per :class:`~vst_core.scoring.registry.Models` (or
    injected as ``Models(..., judge=...)``): the served model when they name an endpoint, else the
    local vision-language model with ``judge_images``, else the local text model."""

    def build(m: Models) -> Judge:
        s = m.settings
        if s.judge_endpoint and s.judge_served_model:
            from vst_core.models.judge_server import load_judge_server

            return load_judge_server(
                s.judge_endpoint,
                s.judge_served_model,
                api_key_env=s.judge_api_key_env,
                vision=s.judge_images,
                concurrency=s.judge_concurrency,
                timeout=s.judge_timeout,
                top_logprobs=s.judge_top_logprobs,
            )
        from vst_core.models.judge import load_judge

        name = s.judge_vlm if s.judge_images else s.judge_model
        return load_judge(name, vision=s.judge_images, device=s.device, batch_size=min(s.batch_size, 16))

    return models.own(NAME, build)


def rubric(models: Models) -> Rubric:
    """The rubric template of the settings (their file, else the built-in one), read once."""
    from vst_core.judge.rubric import load_rubric

    return models.own("judge_rubric", lambda m: load_rubric(m.settings.judge_template))


def answers(models: Models) -> JudgeCache:
    """The judge's answers on disk (``judge.sqlite`` in the models' cache folder), opened once."""
    from vst_core.config import default_cache_dir
    from vst_core.judge.cache import FILE_NAME, JudgeCache

    return models.own("judge_cache", lambda m: JudgeCache((m.cache_dir or default_cache_dir()) / FILE_NAME))


def identity(settings: Any) -> dict[str, str]:
    """The judge's weights (or the served model) and the rubric template by digest."""
    from vst_core.judge.rubric import rubric_id
    from vst_core.signature import judge_weights_id

    return {"judge_weights": judge_weights_id(settings), "judge_template": rubric_id(settings.judge_template)}


def caption(recorded: Mapping[str, Any]) -> str:
    images = " with images" if recorded.get("judge_images") else ""
    return f"judge {recorded.get('judge_weights')}{images} {recorded.get('judge_template')}"


def cards(story: Any) -> list[Card]:
    from vst_core.viz.judge import judge_detail

    jd = story.metrics.get(NAME)
    return [("judge", jd.score if jd else None, judge_detail(jd) if jd else "")]


def evidence(story: Any) -> tuple[str, str] | None:
    from vst_core.viz.judge import judge_html

    jd = story.metrics.get(NAME)
    if jd is None or not jd.aspects:
        return None
    overall = "undefined" if jd.score is None else f"{jd.score:.2f}"
    return f"Rubric judge: overall {overall} of 5, {len(jd.aspects)} aspects", judge_html(jd)


def summary(models: Any) -> tuple[list[str], list[str]]:
    """The judge's calls, its cache's hits and misses (and any damage set aside), and the prompts a
    server answered with nothing usable."""
    judge, cache = model(models), answers(models)
    calls = "chat requests to the server (after one /models look-up)" if models.settings.judge_endpoint else "model calls"
    notes = [
        f"judge: {judge.calls} {calls}, {cache.hits} answers from the cache and {cache.misses} computed "
        f"({judge.signature}, {rubric(models).id}; cache {cache.path})"
    ]
    if damaged := cache.damage_note():
        notes.append(damaged)
    failed = judge.failures
    return notes, [
        f"judge: the server gave no usable answer to {failed} prompt(s); their stories' records say why"
    ] if failed else []


METRIC = MetricSpec(
    name=NAME,
    title="rubric judge",
    description="rubric judge (G-Eval's rule): a local open-weight chat model asked rubric questions (grounding, coherence, "
    "non-redundancy, overall; several paraphrases each); score = sum of k * p(k) over the next-token probabilities "
    "of the ratings 1-5, renormalised; --judge-images lets a vision-language model see the images",
    record=JudgeScores,
    fields=(
        MetricField(
            "judge overall",
            NAME,
            "overall",
            "rubric judge, overall: Σ k·p(k) over ratings 1-5",
            report="judge overall",
            dhm="J",
            bounds=(1.0, 5.0),
        ),
        MetricField(
            "judge grounding",
            NAME,
            "grounding",
            "rubric judge, relevance to the images: Σ k·p(k)",
            report="judge grounding",
            bounds=(1.0, 5.0),
        ),
        MetricField(
            "judge coherence", NAME, "coherence", "rubric judge, coherence: Σ k·p(k)", report="judge coherence", bounds=(1.0, 5.0)
        ),
        MetricField(
            "judge non-redundancy",
            NAME,
            "non_redundancy",
            "rubric judge, non-redundancy: Σ k·p(k)",
            report="judge non-redundancy",
            bounds=(1.0, 5.0),
        ),
    ),
    needs=frozenset({"model"}),
    settings=(
        "judge_model",
        "judge_vlm",
        "judge_images",
        "judge_template",
        "judge_endpoint",
        "judge_served_model",
        "judge_top_logprobs",
        "judge_rationale",
    ),
    card="docs/metrics/judge.md",
    score=score,
    summary=summary,
    load=lambda models: (rubric(models), model(models)),
    identity=identity,
    caption=caption,
    cards=cards,
    evidence=evidence,
    offered=False,  # a chat model per story belongs to `vst score`; the dashboard reads its records
)
