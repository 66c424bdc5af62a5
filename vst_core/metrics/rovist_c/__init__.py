"""RoViST-C (Wang et al., 2022): coherence = mean P(sentence i+1 follows sentence i).

Formula: :mod:`vst_core.formulas.coherence`; the pair scorer: :mod:`vst_core.metrics.rovist_c.scorers`; every
transition of a batch in one model call (:func:`.batch.pair_scores_for`).
Card: ``docs/metrics/rovist_c.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from vst_core.contract import (
    Card,
    Computing,
    Fetch,
    FetchArgument,
    FetchCheck,
    FetchPlan,
    Key,
    MetricField,
    MetricSpec,
    ModelsLike,
    Option,
    OptionValue,
    Reading,
    RunLike,
    SettingsLike,
    Showing,
    Signing,
    Switch,
    Tools,
)
from vst_core.metrics.rovist_c.bench import BENCH
from vst_core.metrics.rovist_c.defaults import NSP_MODEL
from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.metrics.rovist_c.seam import PairScorer

NAME = "coherence"


def score(stories: Sequence[Story], run: RunLike) -> Mapping[Key, CoherenceScores | str]:
    """Every transition of the batch through the pair scorer once; a truncated pair is a warning."""
    from vst_core.metrics.rovist_c.batch import coherence_of, pair_scores_for, profile_problem, truncation_warnings

    s, scorer = run.settings, model(run.models)
    problem = profile_problem(scorer, s)
    if problem:
        return {story.key: f"ValueError: {problem}" for story in stories}
    scored = pair_scores_for(stories, scorer, s.option("coherence_context"), repeat_is_zero=s.option("coherence_repeat_zero"))
    out: dict[Key, CoherenceScores | str] = {}
    for story in stories:
        try:
            record = coherence_of(story, s, scored[story.key], scorer.name)
        except Exception as exc:  # this story's reason; the others are scored
            out[story.key] = f"{type(exc).__name__}: {exc}"
            continue
        out[story.key] = record
        for warning in truncation_warnings(story, scored[story.key], record):
            run.warn(story.key, warning)
    return out


def model(models: ModelsLike) -> PairScorer:
    """The sentence-pair scorer of the settings (``coherence_model`` with its tokenizer and profile),
    loaded once per :class:`~vst_core.scoring.registry.Models` (or injected as
    ``Models(..., coherence=scorer)``)."""

    def build(m: ModelsLike) -> PairScorer:
        from vst_core.metrics.rovist_c.scorers import load_pair_scorer

        s = m.settings
        return load_pair_scorer(
            s.option("coherence_model"),
            tokenizer=s.option("coherence_tokenizer"),
            profile=s.option("coherence_profile"),
            device=s.device,
            batch_size=s.batch_for(None),
        )

    return models.own(NAME, build)


def summary(models: ModelsLike) -> tuple[list[str], list[str]]:
    """What a run says of RoViST-C when it ends: each warning its records carry (a pair longer than the
    model reads, truncated; a story the reference profile left unscored), one line each, from the
    warnings of the run's records its models hold (``models.warnings``: those read back from the
    record store too), the others' left out.

    >>> class Run:
    ...     warnings = ["coherence: pair 1->2 of story 'a' is longer than the model reads", "an image is missing"]
    >>> summary(Run())  # type: ignore[arg-type]
    (["warning: coherence: pair 1->2 of story 'a' is longer than the model reads"], [])
    """
    said = models.warnings
    return [f"warning: {w}" for w in said if w.startswith(f"{NAME}:")], []


def identity(settings: SettingsLike) -> dict[str, str]:
    """The pair scorer's weights (and, for RoViST-C, its tokenizer) by digest."""
    from vst_core.metrics.rovist_c.scorers import pair_weights_id

    return {
        "coherence_weights": pair_weights_id(
            settings.option("coherence_model"), settings.option("coherence_tokenizer"), settings.option("coherence_profile")
        )
    }


def fetch_checks(model: str, rovist_c: str | None = None, tokenizer: str | None = None) -> list[FetchCheck]:
    """``vst fetch-models``: the next-sentence model ``model`` and, with ``rovist_c``, the authors'
    RoViST-C file with its tokenizer, each as (name, whether its weights are cached, a check that
    loads it and scores a sentence pair)."""
    from pathlib import Path

    from vst_core.models.fetch import SENTENCE_PAIRS
    from vst_core.models.hub import HF_WEIGHT_FILES, hub_file

    def nsp() -> str:
        from vst_core.metrics.rovist_c.scorers import load_bert_nsp

        scorer = load_bert_nsp(model, device="cpu")
        related, unrelated = scorer.score_pairs(SENTENCE_PAIRS)
        return f"loads and scores (P(next) {related:.3f} for a related pair, {unrelated:.3f} for an unrelated one)"

    checks: list[FetchCheck] = [(f"next-sentence model {model}", hub_file(model, HF_WEIGHT_FILES) is not None, nsp)]
    if rovist_c:
        from vst_core.metrics.rovist_c.albert_tokenizer import ROVIST_C_TOKENIZER

        name, path = tokenizer or ROVIST_C_TOKENIZER, rovist_c

        def rovist() -> str:
            from vst_core.metrics.rovist_c.scorers import load_rovist_c

            scorer = load_rovist_c(path, tokenizer=name, device="cpu")
            p = scorer.score_pairs(SENTENCE_PAIRS[:1])[0]
            return f"{Path(path).name} with tokenizer {name} loads and scores (P(in order) {p:.3f})"

        checks.append((f"RoViST-C {path}", hub_file(name, ("spiece.model", "tokenizer.json")) is not None, rovist))
    return checks


def caption(recorded: Mapping[str, object]) -> str:
    profile = " reference" if recorded.get("coherence_profile") == "reference" else ""
    return f"coherence{profile} {recorded.get('coherence_weights') or recorded.get('coherence_model')}"


def _model_path(value: str) -> str:
    """The part of a pair-model value read as a path: ``bert-nsp:PATH`` and ``rovist-c:PATH`` name
    one after the colon; ``bert-nsp`` alone is a keyword.

    >>> _model_path("bert-nsp"), _model_path("rovist-c:/m/c.pt"), _model_path("runs/sop")
    ('', '/m/c.pt', 'runs/sop')
    """
    kind, _, arg = value.strip().partition(":")
    return arg if kind in ("bert-nsp", "rovist-c") else value.strip()


def from_score(value: float, note: str) -> CoherenceScores:
    return CoherenceScores(value, (), None, "imported", (note,))


def cards(coh: CoherenceScores | None) -> list[Card]:
    """One card: the mean probability, with the pair model on hover."""
    return [("coherence", coh.score if coh else None, f"mean P(next follows) · {coh.model}" if coh else "")]


FETCH = Fetch(
    arguments=(
        FetchArgument("--coherence-model", "next-sentence model (hub id or folder)", default=NSP_MODEL),
        FetchArgument(
            "--rovist-c", "also check the authors' RoViST-C checkpoint file and fetch its ALBERT tokenizer", metavar="PATH"
        ),
        FetchArgument("--coherence-tokenizer", "tokenizer for --rovist-c (default albert-large-v1)"),
    ),
    plan=lambda v: FetchPlan(
        tuple(
            fetch_checks(
                str(v.get("coherence_model") or NSP_MODEL), _text(v.get("rovist_c")), _text(v.get("coherence_tokenizer"))
            )
        )
    ),
)


def _text(value: OptionValue) -> str | None:
    return None if value is None else str(value)


def _transitions(record: CoherenceScores) -> Mapping[int, str]:
    from vst_core.metrics.rovist_c.html import transitions

    return transitions(record)


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-C",
    description="RoViST-C coherence: mean P(sentence i+1 follows sentence i) from a sentence-pair model",
    record=CoherenceScores,
    fields=(
        MetricField(
            "coherence", NAME, "score", "RoViST-C: mean P(next sentence follows)", report="RoViST-C", dhm="C", bounds=(0.0, 1.0)
        ),
    ),
    card="docs/metrics/rovist_c.md",
    computing=Computing(
        needs=frozenset({"model"}),
        score=score,
        load=model,
        summary=summary,
    ),
    signing=Signing(
        settings=("splitter",),
        options=(
            Option(
                "coherence_model",
                "bert-nsp",
                "the sentence-pair scorer: bert-nsp (bert-base-uncased's next-sentence head), bert-nsp:NAME_OR_PATH, "
                "rovist-c:PATH (the RoViST-C checkpoint file), or a checkpoint directory written by train-sop",
            ),
            Option("coherence_tokenizer", help="the tokenizer for rovist-c (hub id or folder; default albert-large-v1)"),
            Option(
                "coherence_repeat_zero",
                True,
                "identical adjacent sentences score 0, as the public RoViST code sets them; the flag asks the model about them too",
                kind="bool",
                flag="--keep-repeated-pairs",
            ),
            Option(
                "coherence_context",
                "pair",
                "pair: P(sentence i+1 follows sentence i), RoViST-C as published; prefix: P(sentence i+1 follows sentences "
                "1..i), the variant of the dHM evaluation code (Surikuchi et al., 2024)",
                choices=("pair", "prefix"),
            ),
            Option(
                "coherence_profile",
                "paper",
                "paper: the fast tokenizer, an over-long pair truncated with a warning; reference: as the RoViST authors' "
                "code (the slow sentencepiece ALBERT tokenizer for rovist-c, a story with an over-long input left unscored "
                "with the reason)",
                choices=("paper", "reference"),
            ),
        ),
        identity=identity,
        caption=caption,
    ),
    showing=Showing(
        cards=cards,
        transitions=_transitions,
        in_text="the coherence of every sentence transition",
        switch=Switch(
            header="Coherence",
            setting="coherence_model",
            box="Pair model",
            label="Score sentence pairs",
            help="bert-nsp, bert-nsp:NAME_OR_PATH, rovist-c:PATH, or a train-sop checkpoint directory",
            purpose="RoViST-C: the probability that each sentence follows the previous one",
            off="the pair model does not load (see the notice on the page). Give a loadable “Pair model” to use it.",
            loads=("coherence_model", "coherence_tokenizer", "coherence_profile"),
            flags=("--coherence-model", "--coherence-tokenizer"),
            path=_model_path,
        ),
    ),
    reading=Reading(
        aliases=("c", "rovist-c"),
        from_score=from_score,
    ),
    tools=Tools(
        commands={"train-sop": "vst_core.metrics.rovist_c.command"},
        fetch=FETCH,
        bench=BENCH,
    ),
)

__all__ = ["METRIC", "NAME", "CoherencePair", "CoherenceScores"]
