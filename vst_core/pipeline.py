"""Score a story set with chosen settings, story by story, resumable.

Each story gives one JSON-able record (the scores JSONL line): its metadata, each metric's
story score with its evidence mapped to character spans, the settings signature, warnings,
and per-metric errors as data (never a silent 0).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from vst_core.config import CLIP_METRICS, Settings
from vst_core.data import Problem, ScoresWriter, Story, StorySet
from vst_core.metrics.coherence import coherence
from vst_core.metrics.redundancy import (
    NonRedundancy,
    combine_parts,
    non_redundancy,
    non_redundancy_scores,
)
from vst_core.models.pairs import PairScorer, PairScores, load_pair_scorer, pairs_of
from vst_core.text import Token, token_texts, tokenize

#: Bumped when the record layout changes, so readers can tell old files apart.
SCORES_FORMAT = 1

class ProgressBar(Protocol):
    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


#: ``progress(total)`` gives a bar that is advanced as stories are written (tqdm fits).
Progress = Callable[[int], ProgressBar]


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


class Models:
    """The models a run needs, loaded once on first use (or injected, e.g. tiny ones in tests)."""

    def __init__(
        self,
        settings: Settings,
        *,
        pair_scorer: PairScorer | None = None,
        clip: Any = None,
        cache: Any = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.settings = settings
        self._pair_scorer = pair_scorer
        self._clip = clip
        self._cache = cache
        self.cache_dir = cache_dir
        self._grounders: dict[str, Any] = {}
        self.problems: list[Problem] = []

    @property
    def clip(self) -> Any:
        if self._clip is None:
            from vst_core.models.clip import load_clip

            s = self.settings
            self._clip = load_clip(
                s.clip_arch, s.clip_pretrained, checkpoint=s.clip_checkpoint, model_config=s.clip_config,
                device=s.device, batch_size=s.batch_size, workers=s.workers,
            )
        return self._clip

    @property
    def cache(self) -> Any:
        if self._cache is None:
            from vst_core.embeddings import EmbeddingCache, default_cache_dir

            self._cache = EmbeddingCache((self.cache_dir or default_cache_dir()) / "embeddings.sqlite")
        return self._cache

    def grounder(self, root: Path) -> Any:
        """One grounder per dataset folder (its regions and idf belong to that set)."""
        key = str(root)
        if key not in self._grounders:
            from vst_core.grounder import Grounder
            from vst_core.regions import Detector, read_regions_csv

            s = self.settings
            table = None
            if s.regions == "csv" and s.regions_file:
                table, problems = read_regions_csv(s.regions_file)
                self.problems.extend(problems)
            detector = Detector(self.clip.device) if s.regions == "detector" else None
            self._grounders[key] = Grounder(s, self.clip, root=root, cache=self.cache, regions_table=table, detector=detector)
        return self._grounders[key]

    @property
    def pair_scorer(self) -> PairScorer:
        if self._pair_scorer is None:
            s = self.settings
            self._pair_scorer = load_pair_scorer(
                s.coherence_model, tokenizer=s.coherence_tokenizer, device=s.device, batch_size=s.batch_size
            )
        return self._pair_scorer

    def grounder_for(self, story_set: StorySet) -> Any:
        """The grounder of a story set, with idf fitted over the whole set when the settings use it."""
        grounder = self.grounder(story_set.root)
        if grounder.needs_idf and not grounder.idf:
            grounder.fit_idf(list(story_set))
        return grounder

    def load(self) -> None:
        """Load every model the settings need now, so a missing one fails before any work."""
        if "coherence" in self.settings.metrics:
            _ = self.pair_scorer
        if CLIP_METRICS & set(self.settings.metrics):
            _ = self.clip


def score_redundancy(story: Story, settings: Settings) -> dict[str, Any]:
    return _redundancy(story, settings.nr_ngram, settings.nr_variant)


def _redundancy(story: Story, n: int, variant: str) -> dict[str, Any]:
    tokens = [tokenize(s) for s in story.sentences]
    return redundancy_record(non_redundancy([[t.text for t in ts] for ts in tokens], n=n, variant=variant), tokens)


#: Note on an NR record whose repeated spans a ``--no-spans`` run left out.
NO_SPANS_NOTE = "repeated spans not computed in this run (--no-spans)"


def redundancy_without_spans(stories: Sequence[Story], settings: Settings) -> dict[str, dict[str, Any]]:
    """NR records of many stories from one vectorised pass (:func:`non_redundancy_scores`): the
    same numbers (up to float rounding) and notes as :func:`score_redundancy`, without the
    repeated spans (``None``; :func:`with_repeated_spans` adds them when a story is shown)."""
    tokens = [[token_texts(s) for s in story.sentences] for story in stories]
    batch = non_redundancy_scores(tokens, n=settings.nr_ngram, variant=settings.nr_variant)
    out: dict[str, dict[str, Any]] = {}
    for k, story in enumerate(stories):
        e, a = float(batch.inter_mean[k]), float(batch.intra_mean[k])
        score, inter, intra, notes = combine_parts(
            None if math.isnan(e) else e, None if math.isnan(a) else a, bool(batch.sentences[k]), settings.nr_ngram,
            settings.nr_variant,
        )
        out[story.story_id] = {
            "score": score, "inter": inter, "intra": intra, "variant": settings.nr_variant, "n": settings.nr_ngram,
            "notes": [*notes, NO_SPANS_NOTE],
            "inter_repeats": None, "intra_repeats": None,
        }
    return out


def with_repeated_spans(record: dict[str, Any], story: Story) -> dict[str, Any]:
    """The record with the repeated spans of its NR result filled in, if a run left them out."""
    nr = record.get("metrics", {}).get("redundancy")
    if not nr or nr.get("inter_repeats") is not None:
        return record
    spans = _redundancy(story, int(nr.get("n", 4)), str(nr.get("variant", "paper")))
    notes = [x for x in nr.get("notes", []) if x != NO_SPANS_NOTE]
    filled = {**nr, "notes": notes, "inter_repeats": spans["inter_repeats"], "intra_repeats": spans["intra_repeats"]}
    return {**record, "metrics": {**record["metrics"], "redundancy": filled}}


def coherence_record(story: Story, settings: Settings, scores: PairScores, scorer_name: str) -> dict[str, Any]:
    result = coherence(list(scores.probabilities), story.sentences, repeat_is_zero=settings.coherence_repeat_zero)
    return {
        "score": result.score,
        "pairs": [
            {"from": i, "to": i + 1, "probability": p, "truncated": scores.truncated[i]}
            for i, p in enumerate(result.pairs)
        ],
        "weakest": result.weakest,
        "model": scorer_name,
        "notes": list(result.notes),
    }


def pair_scores_for(stories: list[Story], scorer: PairScorer) -> dict[str, PairScores]:
    """Score the adjacent pairs of many stories in one batched call."""
    owners: list[tuple[str, int, int]] = []
    pairs: list[tuple[str, str]] = []
    for story in stories:
        story_pairs = pairs_of(story.sentences)
        owners.append((story.story_id, len(pairs), len(pairs) + len(story_pairs)))
        pairs.extend(story_pairs)
    scored = scorer.score_pairs_detailed(pairs) if pairs else PairScores(np.zeros(0), ())
    return {
        sid: PairScores(scored.probabilities[a:b], scored.truncated[a:b]) for sid, a, b in owners
    }


def score_story(
    story: Story,
    settings: Settings,
    signature: dict[str, Any] | None = None,
    *,
    models: Models | None = None,
    pair_scores: PairScores | None = None,
    root: Path | None = None,
    redundancy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score one story with every metric of ``settings``; a failing metric becomes an error entry.
    ``redundancy`` is a precomputed NR record (e.g. from :func:`redundancy_without_spans`)."""
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
    clip_results: dict[str, Any] | None = None
    for name in settings.metrics:
        if blocking:
            record["errors"][name] = "; ".join(blocking)
            continue
        try:
            if name == "redundancy":
                record["metrics"][name] = redundancy or score_redundancy(story, settings)
            elif name == "coherence":
                models = models or Models(settings)
                scores = pair_scores or pair_scores_for([story], models.pair_scorer)[story.story_id]
                record["metrics"][name] = coherence_record(story, settings, scores, models.pair_scorer.name)
                for i, cut in enumerate(scores.truncated):
                    if cut:
                        record["warnings"].append(
                            f"coherence: pair {i + 1}->{i + 2} of story {story.story_id!r} is longer than the "
                            "model's maximum length and was truncated"
                        )
            elif name in CLIP_METRICS:
                if clip_results is None:
                    models = models or Models(settings)
                    grounder = models.grounder(root or Path("."))
                    if not grounder.ready(story):
                        grounder.prepare([story])
                    clip_results = grounder.score(story)
                record["metrics"][name] = clip_results[name]
            else:  # pragma: no cover - parse_metrics rejects unknown names
                raise KeyError(name)
        except Exception as exc:  # a story that fails shows why; the run goes on
            record["errors"][name] = f"{type(exc).__name__}: {exc}"
    other = [str(p) for p in story.problems if p.severity == "error" and p.kind != "empty"]
    if other:
        record["problems"] = other
    return record


def dataset_theta(story_set: StorySet, models: Models, chunk_size: int | None = None) -> tuple[float, int]:
    """θ as GROOVIST defines it, the mean scaled NP score over the loaded set: (θ, #phrases).

    Always over the whole set (never a shard), so every shard of a run agrees on θ."""
    from vst_core.metrics.grounding import theta_from_scores

    chunk_size = chunk_size or chunk_size_for(models.settings)
    grounder = models.grounder(story_set.root)
    stories = [s for s in story_set if not s.is_empty and s.images]
    values: list[float] = []
    for start in range(0, len(stories), chunk_size):
        chunk = stories[start : start + chunk_size]
        grounder.prepare(chunk)
        for story in chunk:
            values.extend(grounder.best_cosines(story))
        grounder.forget()
    return theta_from_scores(values), len(values)


@dataclass
class RunSummary:
    """What a scoring run did."""

    out: Path
    signature_id: str
    scored: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def scored_ids(out: Path) -> tuple[set[str], set[str]]:
    """(story ids, signature ids) of the records in a scores JSONL, read line by line so only
    the ids stay in memory; unreadable lines (a half-written last one) are ignored."""
    ids: set[str] = set()
    signatures: set[str] = set()
    with Path(out).open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(record, dict) and "story_id" in record:
                ids.add(str(record["story_id"]))
                signatures.add(str((record.get("signature") or {}).get("id")))
    return ids, signatures


def already_scored(out: Path, signature_id: str) -> set[str]:
    """Story ids already in ``out`` with this signature; other signatures are an error."""
    if not out.exists():
        return set()
    ids, signatures = scored_ids(out)
    others = signatures - {signature_id}
    if others:
        raise ResumeMismatchError(
            f"{out} holds scores made with other settings (signature {', '.join(sorted(others))}, "
            f"now {signature_id}); pass another --out or --overwrite"
        )
    return ids


_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` (1 <= i <= n) as ``(i, n)``; ValueError with the reason otherwise."""
    match = _SHARD.match(text)
    if not match:
        raise ValueError(f"--shard takes i/n with whole numbers, e.g. 1/4; got {text!r}")
    i, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"--shard i/n needs 1 <= i <= n; got {text!r}")
    return i, n


def shard_of(sequence_id: str, n: int) -> int:
    """Shard (1..n) of an image sequence: ``sha256(sequence_id) mod n + 1``, the same on any machine."""
    return int.from_bytes(hashlib.sha256(sequence_id.encode("utf-8")).digest()[:8], "big") % n + 1


def shard_stories(stories: Iterable[Story], i: int, n: int) -> list[Story]:
    """The stories of shard ``i`` of ``n``, in input order. Stories of one image sequence fall in
    the same shard (their images are decoded and encoded by one job); shards are disjoint and
    together hold every story."""
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"shard i/n needs 1 <= i <= n; got {i}/{n}")
    return [s for s in stories if shard_of(s.sequence_id or s.story_id, n) == i]


def chunk_size_for(settings: Settings, images_per_story: int = 5) -> int:
    """Stories per chunk: at least 16, and enough for about 8 full encoder batches of region
    crops (``images_per_story · top_b`` crops a story), so batches are full and a partial
    last batch costs at most an eighth of a chunk."""
    per_story = max(1, images_per_story * settings.top_b)
    return max(16, -(-8 * settings.batch_size // per_story))


def score_story_set(
    story_set: StorySet,
    settings: Settings,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: Progress | None = None,
    models: Models | None = None,
    chunk_size: int | None = None,
    shard: tuple[int, int] | None = None,
    spans: bool = True,
) -> RunSummary:
    """Score every story not yet in ``out`` and append its record, one line per story.

    Stories go through in chunks (``chunk_size``, default :func:`chunk_size_for`) so model
    inputs of many stories share a batch; each record is written as soon as its chunk is done,
    so an interrupted run loses at most one chunk, and memory is bounded by a chunk. With
    ``shard=(i, n)`` only the stories of :func:`shard_stories` are scored; idf and the like are
    still fitted over the whole set, so every shard gives the numbers a single run would.
    With ``spans=False`` the NR numbers of a chunk come from one vectorised pass and the records
    hold no repeated spans (the dashboard recomputes them for the stories it shows).
    """
    out = Path(out)
    models = models or Models(settings)
    if settings.weights_missing():
        # a model still to download: fetch it first, so this run's signature names the weights it
        # used, exactly as a later run from the filled cache will
        models.load()
    signature = settings.signature()
    if overwrite and out.exists():
        out.unlink()
    done = already_scored(out, signature["id"])
    summary = RunSummary(out=out, signature_id=signature["id"], problems=[str(p) for p in story_set.problems])
    mine: Sequence[Story] = shard_stories(story_set, *shard) if shard else list(story_set)
    todo = [s for s in mine if s.story_id not in done]
    summary.skipped = len(mine) - len(todo)
    chunk_size = chunk_size or chunk_size_for(settings)
    if todo:
        models.load()
        if CLIP_METRICS & set(settings.metrics):
            grounder = models.grounder_for(story_set)
            summary.problems.extend(str(p) for p in models.problems)
            if grounder.regions_table:
                used = {Path(ref).name for story in story_set for ref in story.images}
                unknown = sorted(set(grounder.regions_table) - used)
                if unknown:
                    shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
                    summary.problems.append(
                        f"warning: the regions file names {len(unknown)} image(s) not in the story set ({shown}); ignored"
                    )
    bar = progress(len(todo)) if progress else None
    try:
        with ScoresWriter(out) as writer:
            for start in range(0, len(todo), chunk_size):
                chunk = todo[start : start + chunk_size]
                _score_chunk(chunk, settings, signature, models, writer, summary, story_set.root, spans)
                if bar is not None:
                    bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    return summary


def _score_chunk(
    chunk: list[Story],
    settings: Settings,
    signature: dict[str, Any],
    models: Models,
    writer: ScoresWriter,
    summary: RunSummary,
    root: Path,
    spans: bool = True,
) -> None:
    nr: dict[str, dict[str, Any]] = {}
    if not spans and "redundancy" in settings.metrics:
        nr = redundancy_without_spans([s for s in chunk if not s.is_empty], settings)
    pair_scores: dict[str, PairScores] = {}
    if "coherence" in settings.metrics:
        pair_scores = pair_scores_for([s for s in chunk if not s.is_empty], models.pair_scorer)
    grounder = None
    if CLIP_METRICS & set(settings.metrics):
        grounder = models.grounder(root)
        grounder.prepare([s for s in chunk if not s.is_empty])
    for story in chunk:
        record = score_story(
            story, settings, signature, models=models, pair_scores=pair_scores.get(story.story_id), root=root,
            redundancy=nr.get(story.story_id),
        )
        writer.write(record)
        summary.scored += 1
        summary.warnings.extend(w for w in record["warnings"] if w.startswith("coherence:"))
        if record["errors"]:
            summary.failed.append(story.story_id)
    if grounder is not None:
        grounder.forget()


#: Fields a scores record needs to be shown; others are filled with defaults and reported.
_RECORD_DEFAULTS: dict[str, Any] = {
    "sequence_id": None, "system": "unknown", "images": [], "metrics": {}, "errors": {}, "warnings": [],
}


def stories_from_records(
    records: list[dict[str, Any]], root: Path, source: str
) -> tuple[StorySet, list[dict[str, Any]], list[Problem]]:
    """Rebuild the stories behind score records (e.g. read from a scores JSONL) so they can be
    shown without any model. Records from another version are completed and reported."""
    from vst_core.data import story_from_record

    stories: list[Story] = []
    kept: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for k, record in enumerate(records):
        sid = str(record.get("story_id", f"record-{k + 1}"))
        if not isinstance(record.get("sentences"), list):
            problems.append(Problem("scores record without sentences; skipped", "line", story_id=sid))
            continue
        missing = [f for f in _RECORD_DEFAULTS if f not in record]
        if missing or record.get("format") != SCORES_FORMAT:
            problems.append(Problem(
                f"record from another version (format {record.get('format', 'none')}; missing {', '.join(missing) or 'nothing'})",
                "line", "warning", story_id=sid,
            ))
        full = {**_RECORD_DEFAULTS, **record, "story_id": sid}
        full["sequence_id"] = full["sequence_id"] or sid
        try:
            story = story_from_record(
                {k: full[k] for k in ("story_id", "sequence_id", "system", "images", "sentences")}, root=root, check_images=True
            )
        except ValueError as exc:
            problems.append(Problem(f"unusable record ({exc}); skipped", "line", story_id=sid))
            continue
        stories.append(story)
        kept.append(full)
    return StorySet(tuple(stories), root, source, tuple(problems)), kept, problems
