"""Score stories: every metric of the settings on one story (or a batch), as a typed record.

A failing metric becomes an error entry of the record with its reason, never a silent 0; a story
whose text is empty, or over a length limit (:func:`vst_core.config.story_limit_reason`), carries
that error for every metric and is given to no metric's ``score`` hook. Models come from a
:class:`~vst_core.scoring.registry.Models` (loaded once, or injected)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from vst_core.config import MAX_STORY_CHARS, MAX_STORY_SENTENCES, Settings, story_limit_reason
from vst_core.contract import MetricSpec, registry
from vst_core.data import Story, StorySet
from vst_core.formulas.grounding import theta_from_scores
from vst_core.images.grounder import Grounder, ImageEntry
from vst_core.models.hub import ModelLoadError
from vst_core.records import (
    MetricScores,
    StoryScores,
    record_problem,
)
from vst_core.scoring.registry import Models
from vst_core.signature import signature as settings_signature


def completed(record: StoryScores) -> StoryScores:
    """The record with what a run left out and drawing needs filled in by each metric's module
    (its ``complete``, given its record and the story: RoViST-NR's repeated spans of a ``--no-spans``
    run); a hook that fails or gives something else leaves that metric's record as it is."""
    for name, spec in registry().specs.items():
        if spec.showing.complete is None or name not in record.metrics:
            continue
        try:
            filled = spec.showing.complete(record.metrics[name], record)
        except Exception:  # drawing goes on with the record as it was written
            continue
        if isinstance(filled, spec.record):
            record = record.with_metric(name, cast(Any, filled))  # a plugin's record is its own type
    return record


Key = tuple[str, str]


@dataclass
class ScoringRun:
    """What a metric's ``score`` hook is given with a batch of stories: the settings (each metric's
    own options among them), the models (loaded once), the story set's folder, the set metrics
    computed before the chunks (``together``), and the image work shared by the image metrics (each
    story's images prepared once a batch). Warnings a metric raises on a story go into its record."""

    settings: Settings
    models: Models
    root: Path
    together: Mapping[Key, Mapping[str, MetricScores | str]] = field(default_factory=dict)
    warnings: dict[Key, list[str]] = field(default_factory=dict)
    _grounder: Grounder | None = None
    _entries: dict[Key, list[ImageEntry] | str] = field(default_factory=dict)

    def warn(self, key: Key, message: str) -> None:
        self.warnings.setdefault(key, []).append(message)

    def image_records(
        self,
        stories: Sequence[Story],
        build: Callable[[Grounder, Story, list[ImageEntry]], MetricScores],
        *,
        metric: str | None = None,
    ) -> dict[Key, MetricScores | str]:
        """``build(grounder, story, entries)`` on each story whose images were read (every story's
        images prepared once for the batch); a story whose images failed gets the reason, and so does
        every story when ``metric``'s ``texts`` hook failed on the batch."""
        if self._grounder is None:
            grounder = self.models.grounder(self.root)
            grounder.prepare(stories)
            self._grounder = grounder  # only once prepared: a failed preparation is tried again
        grounder = self._grounder
        why = grounder.text_failures.get(metric) if metric is not None else None
        if why is not None:
            return {story.key: why for story in stories}
        out: dict[Key, MetricScores | str] = {}
        for story in stories:
            entries = self._entries.get(story.key)
            if entries is None:
                try:
                    if not grounder.ready(story):
                        grounder.prepare([story])
                    entries = grounder.entries(story)
                except ValueError as exc:
                    entries = f"ValueError: {exc}"
                self._entries[story.key] = entries
            if isinstance(entries, str):
                out[story.key] = entries
                continue
            try:
                out[story.key] = build(grounder, story, entries)
            except Exception as exc:  # one story's failure is its error
                out[story.key] = f"{type(exc).__name__}: {exc}"
        return out

    def set_records(self, stories: Sequence[Story], name: str) -> dict[Key, MetricScores | str]:
        """The set metric ``name``'s records, computed over the whole set before the chunks."""
        out: dict[Key, MetricScores | str] = {}
        for story in stories:
            found = self.together.get(story.key, {}).get(name)
            out[story.key] = (
                found
                if found is not None
                else f"ValueError: {name} compares the stories of a sequence: score the story set (score_story_set)"
            )
        return out

    def close(self) -> None:
        """Drop the batch's decoded images and phrases (vectors stay in the cache)."""
        if self._grounder is not None:
            self._grounder.forget()
            self._grounder = None
        self._entries.clear()


#: An installed metric's record larger than this as JSON is that story's error (a scores line stays
#: readable: the reader takes lines up to 10 MB).
MAX_PLUGIN_RECORD_BYTES = 2 * 1024 * 1024


def _checked(spec: MetricSpec, found: object) -> dict[Key, MetricScores | str]:
    """A hook's results as records or reasons: a value that is neither a record of the metric's type
    nor a reason, or (for an installed metric) a record that would not read back from its JSON or
    is over :data:`MAX_PLUGIN_RECORD_BYTES`, is that story's error instead of a broken scores file."""
    if not isinstance(found, Mapping):
        raise TypeError(f"{spec.name} gave a {type(found).__name__}, not a mapping of (system, story_id) to records")
    out: dict[Key, MetricScores | str] = {}
    builtin = spec.module.startswith("vst_core.")
    for key, value in found.items():
        if isinstance(value, str):
            out[key] = value
        elif not isinstance(value, spec.record):
            out[key] = f"TypeError: {spec.name} gave a {type(value).__name__}, not a {spec.record.__name__}"
        elif builtin:
            out[key] = value
        else:
            problem = record_problem(spec.record, value, MAX_PLUGIN_RECORD_BYTES)
            problem = problem or next((why for f in spec.fields if (why := f.outside(value)) is not None), None)
            out[key] = value if problem is None else f"{spec.name}'s record cannot be written: {problem}"
    return out


def _installed(spec: MetricSpec, stories: Sequence[Story], run: ScoringRun) -> dict[Key, MetricScores | str]:
    """An installed metric on a batch; if the hook fails on the batch, each story alone, so one
    story's failure is its own error and names its own reason. A model that cannot load, or memory
    running out, stops the run (a rerun resumes)."""
    assert spec.computing.score is not None
    try:
        return _checked(spec, spec.computing.score(stories, run))
    except (ModelLoadError, MemoryError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # sys.exit in a plugin's hook included: the run goes on
        if len(stories) == 1:
            return {stories[0].key: f"{type(exc).__name__}: {exc}"}
    out: dict[Key, MetricScores | str] = {}
    for story in stories:
        try:
            out.update(_checked(spec, spec.computing.score([story], run)))
        except (ModelLoadError, MemoryError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # this story's reason; the others are scored
            out[story.key] = f"{type(exc).__name__}: {exc}"
    return out


def refused(story: Story) -> str:
    """Why no metric is given ``story``: its text is empty, or it is over a length limit
    (:func:`vst_core.config.story_limit_reason`); ``""`` when it is scored.

    >>> refused(Story.from_sentences(["We went to the beach."] * 300))
    'story not scored: 300 sentences, over the limit of 200 a story (VST_MAX_STORY_SENTENCES raises it)'
    """
    empty = "; ".join(p.message for p in story.problems if p.kind in ("empty", "length") and p.severity == "error")
    if empty:
        return empty
    why = story_limit_reason(story.sentences)
    return f"story not scored: {why}" if why is not None else ""


def _kept(story: Story) -> tuple[tuple[str, ...], tuple[int, ...], list[str]]:
    """The sentences (and their frames) a refused story's record keeps: as many as the length
    limits allow, the last one cut to them, so that the record stays a line the scores reader takes
    (:data:`~vst_core.data.readers.MAX_LINE_BYTES`) whatever the story; with a warning when some
    are left out (the input file holds them all).

    >>> sentences, frames, cut = _kept(Story.from_sentences(["Go."] * 300))
    >>> len(sentences), cut
    (200, ['the record keeps the first 200 of 300 sentences (600 of 900 characters); the input holds the rest'])
    """
    most = MAX_STORY_SENTENCES
    budget = MAX_STORY_CHARS
    kept: list[str] = []
    for sentence in story.sentences[:most]:
        if budget <= 0:
            break
        kept.append(sentence[:budget])
        budget -= len(kept[-1])
    total = sum(map(len, story.sentences))
    held = sum(map(len, kept))
    if len(kept) == len(story.sentences) and held == total:
        return story.sentences, story.frames, []
    note = (
        f"the record keeps the first {len(kept):,} of {len(story.sentences):,} sentences ({held:,} of {total:,} characters);"
        " the input holds the rest"
    )
    return tuple(kept), story.frames[: len(kept)], [note]


def score_story(
    story: Story,
    settings: Settings,
    signature: Mapping[str, Any] | None = None,
    *,
    models: Models | None = None,
    root: Path | None = None,
    together: Mapping[str, MetricScores | str] | None = None,
) -> StoryScores:
    """Score one story with every metric of ``settings`` (:func:`score_batch` of one story); a
    failing metric becomes an error entry. ``together`` is the story's set metrics
    (:mod:`vst_core.scoring.sets`: a record or the reason there is none), computed with the other
    stories of its sequence."""
    return score_batch(
        [story],
        settings,
        signature or settings_signature(settings),
        models or Models(settings),
        root or Path("."),
        together={story.key: together} if together is not None else None,
    )[0]


def score_batch(
    stories: Sequence[Story],
    settings: Settings,
    signature: Mapping[str, Any],
    models: Models,
    root: Path,
    *,
    together: Mapping[Key, Mapping[str, MetricScores | str]] | None = None,
) -> list[StoryScores]:
    """Score stories together: each metric of ``settings`` is its module's ``score`` hook on the
    whole batch (:mod:`vst_core.metrics`): sentence pairs in one model call, regions and
    phrases of every story encoded in shared batches. A metric that fails on the batch gives each
    story the reason; a story whose text is empty, or longer than a limit allows (:func:`refused`),
    carries that error for every metric and no hook is given it. A model that cannot load stops the
    run."""
    run = ScoringRun(settings, models, root, together or {})
    blocked = {s.key: refused(s) for s in stories}
    todo = [s for s in stories if not blocked[s.key]]
    results: dict[str, Mapping[Key, MetricScores | str]] = {}
    specs = registry().specs
    try:
        for name in settings.metrics:
            spec = specs.get(name)
            if spec is None or spec.computing.score is None:
                reason = f"ValueError: {name} is read from scores files only: it has no way to be computed here"
                results[name] = {s.key: reason for s in todo}
            elif not todo:
                results[name] = {}
            elif spec.module.startswith("vst_core."):
                # a built-in hook gives each story's failure as that story's reason itself; what
                # fails for the whole batch (a model call) stops the run, and a rerun resumes
                results[name] = _checked(spec, spec.computing.score(todo, run))
            else:
                results[name] = _installed(spec, todo, run)
    finally:
        run.close()
    out = []
    for story in stories:
        metrics: dict[str, MetricScores] = {}
        errors: dict[str, str] = {}
        for name in settings.metrics:
            found = blocked[story.key] or results.get(name, {}).get(story.key, f"{name}: not computed")
            if isinstance(found, str):
                errors[name] = found
            else:
                metrics[name] = found
        sentences, frames, cut = _kept(story) if blocked[story.key] else (story.sentences, story.frames, [])
        out.append(
            StoryScores(
                story_id=story.story_id,
                sequence_id=story.sequence_id,
                system=story.system,
                sentences=sentences,
                images=story.images,
                metrics=metrics,
                errors=errors,
                warnings=tuple(
                    [str(p) for p in story.problems if p.severity == "warning"] + run.warnings.get(story.key, []) + cut
                ),
                signature=signature,
                problems=tuple(str(p) for p in story.problems if p.severity == "error" and p.kind not in ("empty", "length")),
                frames=frames,
                characters=story.characters,
            )
        )
    return out


def dataset_theta(story_set: StorySet, models: Models, chunk_size: int) -> tuple[float, int]:
    """θ as GROOVIST defines it, the mean scaled NP score over the loaded set: (θ, #phrases).

    Always over the whole set (never a shard), so every shard of a run agrees on θ."""
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
