"""Score a story set with chosen settings, story by story, resumable.

Each story gives one JSON-able record (the scores JSONL line): its metadata, each metric's
story score with its evidence mapped to character spans, the settings signature, warnings,
and per-metric errors as data (never a silent 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vst_core.config import Settings
from vst_core.data import ScoresWriter, Story, StorySet, read_scores
from vst_core.metrics.redundancy import NonRedundancy, non_redundancy
from vst_core.text import Token, tokenize

#: Bumped when the record layout changes, so readers can tell old files apart.
SCORES_FORMAT = 1

Progress = Callable[[Iterable[Story], int], Iterable[Story]]


class ResumeMismatchError(RuntimeError):
    """The output file holds scores made with other settings."""


def _span(tokens: list[Token], index: int) -> list[int]:
    return [tokens[index].start, tokens[index].end]


def _range_span(tokens: list[Token], window: tuple[int, int]) -> list[int]:
    return [tokens[window[0]].start, tokens[window[1] - 1].end]


def redundancy_record(result: NonRedundancy, tokens: list[list[Token]]) -> dict[str, Any]:
    """JSON form of a non-redundancy result; token indices become character spans."""
    return {
        "score": result.score,
        "inter": result.inter,
        "intra": result.intra,
        "variant": result.variant,
        "n": result.n,
        "notes": list(result.notes),
        "inter_repeats": [
            {
                "sentence": p.sentence,
                "earlier": p.earlier,
                "jaccard": p.jaccard,
                "words": list(p.words),
                "spans": [_span(tokens[p.sentence], k) for k in p.tokens],
                "earlier_spans": [_span(tokens[p.earlier], k) for k in p.earlier_tokens],
            }
            for p in result.inter_repeats
        ],
        "intra_repeats": [
            {
                "sentence": p.sentence,
                "jaccard": p.jaccard,
                "words": list(p.words),
                "window": _range_span(tokens[p.sentence], p.window),
                "previous": _range_span(tokens[p.sentence], p.previous),
                "spans": [_span(tokens[p.sentence], k) for k in p.tokens],
            }
            for p in result.intra_repeats
        ],
    }


def score_redundancy(story: Story, settings: Settings) -> dict[str, Any]:
    tokens = [tokenize(s) for s in story.sentences]
    result = non_redundancy([[t.text for t in ts] for ts in tokens], n=settings.nr_ngram, variant=settings.nr_variant)
    return redundancy_record(result, tokens)


MetricFn = Callable[[Story, Settings], dict[str, Any]]
METRIC_FUNCTIONS: dict[str, MetricFn] = {"redundancy": score_redundancy}


def score_story(story: Story, settings: Settings, signature: dict[str, Any] | None = None) -> dict[str, Any]:
    """Score one story with every metric of ``settings``; a failing metric becomes an error entry."""
    record: dict[str, Any] = {
        "format": SCORES_FORMAT,
        "story_id": story.story_id,
        "sequence_id": story.sequence_id,
        "system": story.system,
        "sentences": list(story.sentences),
        "images": list(story.images),
        "metrics": {},
        "errors": {},
        "warnings": [str(p) for p in story.problems if p.severity == "warning"],
        "signature": signature or settings.signature(),
    }
    blocking = [p.message for p in story.problems if p.kind == "empty" and p.severity == "error"]
    for name in settings.metrics:
        if blocking:
            record["errors"][name] = "; ".join(blocking)
            continue
        try:
            record["metrics"][name] = METRIC_FUNCTIONS[name](story, settings)
        except Exception as exc:  # a story that fails shows why; the run goes on
            record["errors"][name] = f"{type(exc).__name__}: {exc}"
    other = [str(p) for p in story.problems if p.severity == "error" and p.kind != "empty"]
    if other:
        record["problems"] = other
    return record


@dataclass
class RunSummary:
    """What a scoring run did."""

    out: Path
    signature_id: str
    scored: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def already_scored(out: Path, signature_id: str) -> set[str]:
    """Story ids already in ``out`` with this signature; other signatures are an error."""
    if not out.exists():
        return set()
    records, _ = read_scores(out)
    others = {str(r.get("signature", {}).get("id")) for r in records} - {signature_id}
    if others:
        raise ResumeMismatchError(
            f"{out} holds scores made with other settings (signature {', '.join(sorted(others))}, "
            f"now {signature_id}); pass another --out or --overwrite"
        )
    return {str(r["story_id"]) for r in records}


def score_story_set(
    story_set: StorySet,
    settings: Settings,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> RunSummary:
    """Score every story not yet in ``out`` and append its record, one line per story."""
    out = Path(out)
    signature = settings.signature()
    if overwrite and out.exists():
        out.unlink()
    done = already_scored(out, signature["id"])
    summary = RunSummary(out=out, signature_id=signature["id"], problems=[str(p) for p in story_set.problems])
    todo = [s for s in story_set if s.story_id not in done]
    summary.skipped = len(story_set) - len(todo)
    iterator: Iterable[Story] = progress(todo, len(todo)) if progress else todo
    with ScoresWriter(out) as writer:
        for story in iterator:
            record = score_story(story, settings, signature)
            writer.write(record)
            summary.scored += 1
            if record["errors"]:
                summary.failed.append(story.story_id)
    return summary
