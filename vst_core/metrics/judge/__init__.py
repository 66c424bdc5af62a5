"""The rubric judge (G-Eval's rule, Liu et al., 2023): a chat model asked rubric questions; an
aspect's score = Σ k·p(k) over the next-token probabilities of the ratings 1..5.

Everything the product knows of the judge is this package: the spec, its options and hooks
(here), its default models (:mod:`.defaults`), its record (:mod:`.record`), the rule and the bias
measures (:mod:`.rule`), the rubric template (:mod:`.template`) and the answers' cache
(:mod:`.cache`), what a judge offers (:mod:`.seam`), the local model (:mod:`.local`) and a served one
(:mod:`.served`), a batch of stories (:func:`.batch.judge_records`), the bias tables (:mod:`.bias`)
and ``vst judge-bias`` (:mod:`.command`), its evidence (:mod:`.html`). Card: ``docs/metrics/judge.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vst_core.contract import (
    Card,
    Computing,
    Diagnostics,
    Fetch,
    FetchArgument,
    FetchCheck,
    FetchPlan,
    Key,
    Measure,
    MetricField,
    MetricSpec,
    ModelsLike,
    Option,
    OptionValue,
    RunLike,
    SettingsLike,
    Showing,
    Signing,
    Story,
    StoryRecordLike,
    Tools,
    at_least_one,
)
from vst_core.metrics.judge.bench import BENCH
from vst_core.metrics.judge.defaults import JUDGE_MODEL, JUDGE_VLM, NAME
from vst_core.metrics.judge.record import JudgeAspect, JudgeScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.metrics.judge.cache import JudgeCache
    from vst_core.metrics.judge.seam import Judge
    from vst_core.metrics.judge.template import Rubric


def _positive(value: float | None) -> str | None:
    return None if value is None or value > 0 else f"must be > 0 seconds, got {value}"


#: The judge's settings: its models and template are signed by their digests (identity), a served
#: model by its name and host; what the server is asked and how fast, only where it changes numbers.
OPTIONS = (
    Option("judge_model", JUDGE_MODEL, "the text-only chat model (hub name in the cache, or a local folder)", signed=False),
    Option(
        "judge_vlm",
        JUDGE_VLM,
        "the vision-language model used with --judge-images (hub name in the cache, or a local folder)",
        signed=False,
    ),
    Option(
        "judge_template",
        help="a rubric template JSON (aspects with two or more paraphrases each; see vst_core/metrics/judge/rubric_v1.json, "
        "the default); its sha256 is in the signature",
        kind="file",
        signed=False,
        metavar="FILE",
    ),
    Option(
        "judge_images",
        False,
        "the vision-language model sees the story's images (and is asked without them as well, to measure what the "
        "images change)",
        kind="bool",
    ),
    Option(
        "judge_rationale",
        False,
        "also generate a short rationale per story (greedy decoding; shown, never scored)",
        kind="bool",
        signed=False,
    ),
    Option(
        "judge_endpoint",
        label="Endpoint URL",
        help="ask the judge served at this OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1, from `vllm serve`) "
        "instead of loading --judge-model here; its answers need log-probabilities",
        signed=False,
        metavar="URL",
        blank_is_unset=True,
    ),
    Option(
        "judge_served_model",
        label="Served model",
        help="the model's name on the server (as its /v1/models lists it); needed with --judge-endpoint",
        signed=False,
        metavar="NAME",
        blank_is_unset=True,
    ),
    Option(
        "judge_api_key_env",
        label="API key variable",
        help="the environment variable holding the server's API key (the key itself is never written anywhere)",
        signed=False,
        metavar="VAR",
        blank_is_unset=True,
    ),
    Option("judge_concurrency", 8, "requests in flight to the server", kind="int", signed=False, check=at_least_one),
    Option(
        "judge_timeout",
        60.0,
        "seconds a whole request may take, its answer read to the end (retried with backoff on timeouts, 429 and 5xx)",
        kind="float",
        signed=False,
        metavar="SECONDS",
        check=_positive,
    ),
    Option(
        "judge_top_logprobs",
        20,
        "log-probabilities asked per answer (vLLM allows up to its --max-logprobs, default 20); a rating token outside "
        "the top K counts as probability 0",
        kind="int",
        while_set="judge_endpoint",
        metavar="K",
        check=at_least_one,
    ),
)


def check(settings: SettingsLike) -> str | None:
    """Why the judge's settings cannot be used: an endpoint that is no http(s) base URL without
    credentials, or one without the name the server serves the model under.

    >>> from types import SimpleNamespace
    >>> check(SimpleNamespace(option={"judge_endpoint": "http://127.0.0.1:8000/v1", "judge_served_model": None}.get))
    'judge_endpoint needs judge_served_model (the model name the server serves)'
    """
    endpoint = settings.option("judge_endpoint")
    if endpoint is None:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(endpoint)
        port_ok = parts.port is None or parts.port > 0  # reading the port checks it is a number
    except ValueError:  # "Invalid IPv6 URL", a port that is not a number
        parts, port_ok = urlsplit(""), False
    if not port_ok or parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return f"judge_endpoint must be an http(s) base URL without credentials, e.g. http://127.0.0.1:8000/v1; got {endpoint!r}"
    if not settings.option("judge_served_model"):
        return "judge_endpoint needs judge_served_model (the model name the server serves)"
    return None


def score(stories: Sequence[Story], run: RunLike) -> Mapping[Key, JudgeScores | str]:
    """The batch's prompts in shared model calls; a chunk the model cannot take gives each story the
    reason; a model that cannot load stops the run (:class:`~vst_core.models.hub.ModelLoadError`)."""
    from vst_core.metrics.judge.batch import judge_records
    from vst_core.models.hub import ModelLoadError

    texts = [s for s in stories if not s.is_empty]
    m = run.models
    try:
        judged: dict[Key, JudgeScores | str] = (
            dict(judge_records(texts, run.settings, model(m), rubric(m), answers(m), run.root)) if texts else {}
        )
    except ModelLoadError:
        raise
    except (ValueError, RuntimeError, OSError) as exc:
        judged = {s.key: f"{type(exc).__name__}: {exc}" for s in texts}
    return {s.key: judged.get(s.key, "empty story") for s in stories}


def model(models: ModelsLike) -> Judge:
    """The judge of the settings, loaded once per :class:`~vst_core.scoring.registry.Models` (or
    injected as ``Models(..., judge=...)``): the served model when they name an endpoint, else the
    local vision-language model with ``judge_images``, else the local text model."""

    def build(m: ModelsLike) -> Judge:
        s = m.settings
        if s.option("judge_endpoint") and s.option("judge_served_model"):
            from vst_core.metrics.judge.served import load_judge_server

            return load_judge_server(
                s.option("judge_endpoint"),
                s.option("judge_served_model"),
                api_key_env=s.option("judge_api_key_env"),
                vision=s.option("judge_images"),
                concurrency=s.option("judge_concurrency"),
                timeout=s.option("judge_timeout"),
                top_logprobs=s.option("judge_top_logprobs"),
            )
        from vst_core.metrics.judge.local import load_judge

        name = s.option("judge_vlm") if s.option("judge_images") else s.option("judge_model")
        return load_judge(name, vision=s.option("judge_images"), device=s.device, batch_size=min(s.batch_for(None), 16))

    return models.own(NAME, build)


def rubric(models: ModelsLike) -> Rubric:
    """The rubric template of the settings (their file, else the built-in one), read once."""
    from vst_core.metrics.judge.template import load_rubric

    return models.own("judge_rubric", lambda m: load_rubric(m.settings.option("judge_template")))


def answers(models: ModelsLike) -> JudgeCache:
    """The judge's answers on disk (``judge.sqlite`` in the models' cache folder), opened once."""
    from vst_core.config import default_cache_dir
    from vst_core.metrics.judge.cache import FILE_NAME, JudgeCache

    return models.own("judge_cache", lambda m: JudgeCache((m.cache_dir or default_cache_dir()) / FILE_NAME))


def identity(settings: SettingsLike) -> dict[str, str]:
    """The judge's weights (or the served model) and the rubric template by digest."""
    from vst_core.metrics.judge.template import rubric_id

    return {"judge_weights": weights_id(settings), "judge_template": rubric_id(settings.option("judge_template"))}


def weights_id(settings: SettingsLike) -> str:
    """The judge's weights: ``name@digest`` of the local model's file, or for a served judge its
    served name, the endpoint's host and that its weights cannot be digested from here (the answers'
    cache keys and records carry the revision the server reports). Never the key, nor its variable.

    >>> from vst_core.config import Settings
    >>> weights_id(Settings(metrics=("judge",), judge_endpoint="http://10.0.0.5:8000/v1", judge_served_model="qwen72"))
    'served:qwen72 at 10.0.0.5:8000 (weights not digestible from here)'
    """
    from vst_core.metrics.judge.served import endpoint_host
    from vst_core.models.hub import hf_weights_id

    if settings.option("judge_endpoint") and settings.option("judge_served_model"):
        host = endpoint_host(settings.option("judge_endpoint"))
        return f"served:{settings.option('judge_served_model')} at {host} (weights not digestible from here)"
    return hf_weights_id(settings.option("judge_vlm") if settings.option("judge_images") else settings.option("judge_model"))


def fetch_check(model: str, vision: bool = False) -> tuple[str, bool, Callable[[], str]]:
    """``vst fetch-models --judge`` (or ``--judge-vlm`` with ``vision``): the model's name, whether
    its weights are cached, and a check that loads it and rates one story."""
    from vst_core.models.fetch import SENTENCE_PAIRS
    from vst_core.models.hub import HF_WEIGHT_FILES, hub_file

    def rate() -> str:
        from vst_core.metrics.judge.local import load_judge
        from vst_core.metrics.judge.rule import rating
        from vst_core.metrics.judge.template import load_rubric

        loaded = load_judge(model, vision=vision, device="cpu", batch_size=1)
        prompt = load_rubric().prompt(list(SENTENCE_PAIRS[0]), "coherence", 0)
        (row,) = loaded.logprobs([prompt], [str(k) for k in range(1, 6)])
        found = rating(list(row))
        return (
            f"{loaded.signature} loads and rates a story (coherence {found.score:.2f}; the ratings 1-5 hold "
            f"{found.mass:.1%} of the next-token probability)"
        )

    kind = "judge vision-language model" if vision else "judge model"
    return f"{kind} {model}", hub_file(model, HF_WEIGHT_FILES) is not None, rate


def caption(recorded: Mapping[str, object]) -> str:
    images = " with images" if recorded.get("judge_images") else ""
    return f"judge {recorded.get('judge_weights')}{images} {recorded.get('judge_template')}"


def cards(jd: JudgeScores | None) -> list[Card]:
    """One card: the overall score, with each aspect on hover (:func:`.html.judge_detail`)."""
    from vst_core.metrics.judge.html import judge_detail

    return [("judge", jd.score if jd else None, judge_detail(jd) if jd else "")]


def evidence(jd: JudgeScores) -> tuple[str, str] | None:
    """Each aspect's score and what the judge was asked (:func:`.html.judge_html`)."""
    from vst_core.metrics.judge.html import judge_html

    if not jd.aspects:
        return None
    overall = "undefined" if jd.score is None else f"{jd.score:.2f}"
    return f"Rubric judge: overall {overall} of 5, {len(jd.aspects)} aspects", judge_html(jd)


def summary(models: ModelsLike) -> tuple[list[str], list[str]]:
    """The judge's calls, its cache's hits and misses (and any damage set aside), and the prompts a
    server answered with nothing usable."""
    judge, cache = model(models), answers(models)
    calls = (
        "chat requests to the server (after one /models look-up)" if models.settings.option("judge_endpoint") else "model calls"
    )
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


def fetch_plan(values: Mapping[str, OptionValue]) -> FetchPlan:
    """``vst fetch-models --judge [NAME] --judge-vlm [NAME]``: the chat model and the vision-language
    model asked for."""
    checks: list[FetchCheck] = []
    if values.get("judge"):
        checks.append(fetch_check(str(values["judge"])))
    if values.get("judge_vlm"):
        checks.append(fetch_check(str(values["judge_vlm"]), vision=True))
    return FetchPlan(tuple(checks))


def bias_rows(records: Sequence[StoryRecordLike]) -> list[dict[str, object]]:
    """The paraphrase and image rows of the judge's bias table, from its answers in ``records``."""
    from vst_core.metrics.judge.bias import judge_bias_table

    return [{str(k): v for k, v in row.items()} for row in judge_bias_table(records).to_dict("records")]


def position_bias(stories: Sequence[Story], root: Path, settings: SettingsLike) -> list[dict[str, object]]:
    """The judge's position bias on ``stories``: the pairwise question in both orders for every two
    stories of a sequence (answers from the judge's own cache when asked before); a scores file's
    template named by its id stands for the default when it is the default's. ModelLoadError when the
    judge cannot load."""
    from vst_core.config import Settings
    from vst_core.data import StorySet
    from vst_core.metrics.judge.batch import pair_verdicts
    from vst_core.metrics.judge.bias import position_rows
    from vst_core.metrics.judge.template import rubric_id
    from vst_core.scoring.registry import Models

    if not isinstance(settings, Settings):
        raise TypeError("position_bias takes the run's Settings")
    template = settings.option("judge_template")
    if template and not Path(template).is_file():  # a scores file's signature names the template by its id
        if template != rubric_id(None):
            raise ValueError(
                f"the scores were made with the rubric template {template}, which is not a file here: "
                "run `vst judge-bias STORIES --judge-template FILE` with it"
            )
        settings = settings.with_(judge_template=None)
    models = Models(settings.with_(metrics=(NAME,)))
    found = rubric(models)
    results = pair_verdicts(StorySet.of(stories, root=root, source="view"), settings, model(models), found, answers(models))
    return position_rows(results, found.pair_questions)


#: The judge's own section of the Agreement page: its paraphrase and image biases from its answers,
#: and its position bias on request (asks the judge: the local model, or the server given beside it).
DIAGNOSTICS = Diagnostics(
    title="Rubric judge: paraphrase consistency and images",
    table=bias_rows,
    caption="From the judge's answers on {n} stories (at most {limit}): the spread of the rubric paraphrases' scores "
    "and their rank agreement (Spearman), and with a vision-language judge what the images change.",
    measure=Measure(
        label="Measure its position bias on {sequences} sequences (asks the judge model: every two stories of a "
        "sequence, in both orders)",
        run=position_bias,
        asks=("judge_endpoint", "judge_served_model", "judge_api_key_env"),
        caption="follows position: share of pairs whose verdict flips with the order (the first shown wins both "
        "times, or the second both times); mean P(first) shift: how much being shown first adds. "
        "Empty server boxes: the local judge model the scores were made with. "
        "The same table from the command line: `vst judge-bias STORIES`.",
    ),
)
FETCH = Fetch(
    arguments=(
        FetchArgument(
            "--judge", f"also fetch the rubric judge's chat model (default {JUDGE_MODEL})", metavar="NAME", const=JUDGE_MODEL
        ),
        FetchArgument(
            "--judge-vlm",
            f"also fetch the judge's vision-language model for --judge-images (default {JUDGE_VLM})",
            metavar="NAME",
            const=JUDGE_VLM,
        ),
    ),
    plan=fetch_plan,
)


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
    card="docs/metrics/judge.md",
    computing=Computing(
        needs=frozenset({"model"}),
        score=score,
        summary=summary,
        load=lambda models: (rubric(models), model(models)),
    ),
    signing=Signing(
        options=OPTIONS,
        check=check,
        identity=identity,
        caption=caption,
    ),
    showing=Showing(
        cards=cards,
        evidence=evidence,
        diagnostics=DIAGNOSTICS,
        offered=False,  # a chat model per story belongs to `vst score`; the dashboard reads its records
    ),
    tools=Tools(
        commands={"judge-bias": "vst_core.metrics.judge.command"},
        fetch=FETCH,
        bench=BENCH,
    ),
)

__all__ = ["JUDGE_MODEL", "JUDGE_VLM", "METRIC", "NAME", "JudgeAspect", "JudgeScores"]
