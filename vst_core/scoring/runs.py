"""Scoring runs over a story set: the run's policy (:mod:`vst_core.scoring.policy`), chunks,
resume, shards and the run summary.

Records are appended to the scores JSONL as each chunk is done, so an interrupted run keeps what
it finished; a rerun with the same settings skips the stories already there (a story is
``(system, story_id)``), another story file with the same settings appends, and a run with other
settings is refused. Shards split a set by a stable hash of the sequence id."""

from __future__ import annotations

import errno
import fcntl
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import orjson

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import ScoresWriter, Story, StorySet
from vst_core.data.scores_io import scored_keys, settings_id
from vst_core.hashing import bucket
from vst_core.models.device import likely_device
from vst_core.records import StoryScores, read_record
from vst_core.scoring.policy import RunReport, skip_unloadable, summaries, theta_over_set
from vst_core.scoring.record_store import FILE_NAME as RECORDS_FILE
from vst_core.scoring.record_store import RecordStore, RunKeys, served_line, signature_text, stored_line
from vst_core.scoring.registry import Models
from vst_core.scoring.sets import SetResults, set_results
from vst_core.scoring.story import Key, refused, score_batch
from vst_core.signature import inputs_of, weights_missing
from vst_core.signature import signature as settings_signature


class ProgressBar(Protocol):
    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


#: ``progress(total)`` gives a bar that is advanced as stories are written (tqdm fits).
Progress = Callable[[int], ProgressBar]
#: ``on_start(report)`` is called once the run's policy is settled (the metrics not run and why, θ
#: ``dataset``), before any story is scored: what a front end says before its progress bar.
OnStart = Callable[[RunReport], None]


class ResumeMismatchError(RuntimeError):
    """The output file holds scores made with other settings."""


class RunLockedError(RuntimeError):
    """Another run is writing the same output file."""


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out`` (a ``.lock`` file beside the file it resolves to, so a
    symbolic link and its target share one) for the whole run: a second run on the same file is
    refused at once instead of writing its stories twice. The lock file is removed when the run
    wrote nothing."""
    if out.exists() and not out.is_file():  # a folder, a device (/dev/full reads for ever), a FIFO
        raise OSError(errno.EINVAL, "not a regular file", str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    # the lock of the file itself: a run through a symbolic link and one through its target share it
    real = out.resolve()
    lock = real.with_name(real.name + ".lock")
    with lock.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(f"another run is writing {out} (lock {lock}); wait for it or pass another --out") from None
        try:
            yield
        finally:
            if not out.exists():  # nothing was written: leave nothing behind
                lock.unlink(missing_ok=True)
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class RunSummary:
    """What a scoring run did: the stories scored (``scored``), those already in its file
    (``skipped``), those with errors (``failed``: a metric not run aside), the input's and the regions
    file's problems, and the run's :class:`~vst_core.scoring.policy.RunReport` (the metrics not run
    and why, θ ``dataset``, what each metric's summary hook said)."""

    out: Path
    signature_id: str
    settings_id: str = ""
    scored: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    report: RunReport = field(default_factory=RunReport)

    @property
    def warnings(self) -> list[str]:
        """One line per metric not run, as ``vst score`` says it (:meth:`RunReport.warnings`)."""
        return self.report.warnings()


def already_scored(out: Path, wanted: str) -> set[tuple[str, str]]:
    """The ``(system, story_id)`` of the stories already in ``out``; records made with other
    settings are an error. Only the settings are compared, not the inputs: a story file of another
    system (or more stories of one) appends to a file written with the same settings, and each
    record keeps the signature of the run that wrote it, so its input stays named."""
    if not out.exists():
        return set()
    keys, signatures = scored_keys(out)
    others = signatures - {wanted}
    if others:
        raise ResumeMismatchError(
            f"{out} holds scores made with other settings (settings {', '.join(sorted(others))}, "
            f"now {wanted}); pass another --out or --overwrite"
        )
    return keys


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
    return bucket(sequence_id, n) + 1


def shard_stories(stories: Iterable[Story], i: int, n: int) -> list[Story]:
    """The stories of shard ``i`` of ``n``, in input order. Stories of one image sequence fall in
    the same shard (their images are decoded and encoded by one job); shards are disjoint and
    together hold every story."""
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"shard i/n needs 1 <= i <= n; got {i}/{n}")
    return [s for s in stories if shard_of(s.sequence_id or s.story_id, n) == i]


def chunk_size_for(settings: Settings, images_per_story: int = 5) -> int:
    """Stories per chunk: at least 16, and enough for about 32 full encoder batches of region
    crops (``images_per_story · top_b`` crops a story), so batches are full, the work between
    chunks (hashing the next images, the cache's writes) is paid rarely, and a partial last batch
    costs at most a thirty-second of a chunk."""
    per_story = max(1, images_per_story * int(settings.option("top_b")))
    return max(16, -(-32 * settings.batch_for(likely_device(settings.device)) // per_story))


def _regions_file_problems(story_set: StorySet, models: Models) -> list[str]:
    """Problems of the regions file, and the images it names that the set does not have."""
    grounder = models.grounder_for(story_set)
    problems = [str(p) for p in models.problems]
    table = grounder.regions_table
    if not table:
        return problems
    used: set[str] = set()
    ambiguous: set[str] = set()
    for ref in {ref for story in story_set for ref in story.images}:
        key, _, why = table.lookup(ref)
        if key is not None:
            used.add(key)
        elif why:
            ambiguous.add(why)
    if ambiguous:
        problems.append(f"warning: {len(ambiguous)} image(s) match several regions entries, e.g. {sorted(ambiguous)[0]}")
    unknown = sorted(set(table.by_path) - used)
    if unknown and not any(k.startswith("id:") for k in used):
        shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        problems.append(f"warning: the regions file names {len(unknown)} image(s) not in the story set ({shown}); ignored")
    return problems


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
    strict: bool = False,
    theta_from_set: bool = False,
    on_start: OnStart | None = None,
) -> RunSummary:
    """Score every story not yet in ``out`` and append its record, one line per story.

    The run's policy comes first (:mod:`vst_core.scoring.policy`): a metric whose model does not
    load is left out with its reason, each record naming it, unless ``strict``; with
    ``theta_from_set`` GROOVIST's θ is the mean NP score over the whole set; ``on_start`` is told
    before any story is scored. Stories go through in chunks (``chunk_size``, default
    :func:`chunk_size_for`) so model inputs of many stories share a batch; each record is written
    as soon as its chunk is done, so an interrupted run loses at most one chunk, and memory is
    bounded by a chunk. With ``shard=(i, n)`` only the stories of :func:`shard_stories` are scored;
    idf, θ and the like are still fitted over the whole set, so every shard gives the numbers a
    single run would. What each metric's summary hook says at the end is in the summary's report.
    """
    out = Path(out)
    with locked(out):
        return _score_story_set(
            story_set, settings, out, overwrite, progress, models or Models(settings), chunk_size, shard,
            _Policy(strict, theta_from_set, on_start),
        )  # fmt: skip


def run_signature(story_set: StorySet, settings: Settings, models: Models) -> dict[str, Any]:
    """The signature of a run of ``story_set`` under ``settings``. A model still to download is
    fetched first, so the signature names the weights the run used, exactly as a later run from the
    filled cache will."""
    if weights_missing(settings):
        models.load()
    return settings_signature(settings, inputs_of(story_set))


def score_records(
    story_set: StorySet,
    settings: Settings,
    stories: Sequence[Story] | None = None,
    *,
    models: Models | None = None,
    signature: Mapping[str, Any] | None = None,
    chunk_size: int | None = None,
    progress: Progress | None = None,
    problems: list[str] | None = None,
    strict: bool = False,
    theta_from_set: bool = False,
    report: RunReport | None = None,
    on_start: OnStart | None = None,
) -> Iterator[StoryScores]:
    """The scoring engine: one :class:`StoryScores` per story of ``stories`` (default: every story
    of ``story_set``), in their order, yielded chunk by chunk. The run's policy comes first
    (:mod:`vst_core.scoring.policy`): a metric whose model does not load is left out with its
    reason, each record naming it in its ``errors`` (``not run: ...``), unless ``strict`` (then,
    as when no metric's model loads, its :class:`ModelLoadError` says which and why, before any
    work); with ``theta_from_set`` GROOVIST's θ is the mean NP score over ``story_set``;
    ``on_start`` is told before any story is scored. The set-level results (Vrank's pairs, COSMic's
    references) are fitted over ``story_set`` first, and each chunk's stories share their model
    batches (:func:`score_batch`). A story scored before under the same settings, with the same
    text, photos and set-level inputs, is read from the record store in the cache folder
    (:mod:`vst_core.scoring.record_store`) instead, stamped with this run's signature: the same
    record. The regions file's problems are appended to ``problems``; the metrics not run, θ and,
    once the last record is yielded, what each metric's summary hook says, to ``report``. The CLI
    writes what this yields (:func:`score_story_set`), the Python API returns it and the dashboard
    caches it, so the three give the same records.

    >>> from vst_core.data.types import Story
    >>> story_set = StorySet.of([Story.from_sentences(["A dog ran.", "A dog ran."], story_id="d")], ".")
    >>> [round(r.metrics["redundancy"].score, 2) for r in score_records(story_set, Settings(metrics=("redundancy",)))]
    [0.0]
    """
    report = report if report is not None else RunReport()
    settings, models = _settled(
        story_set, settings, models or Models(settings), _Policy(strict, theta_from_set, on_start), report
    )
    for item in _records(
        story_set,
        settings,
        stories,
        models=models,
        signature=signature,
        chunk_size=chunk_size,
        progress=progress,
        not_run=report.reasons(),
        problems=problems,
        lines=False,
    ):
        assert isinstance(item, StoryScores)
        yield item
    report.said = summaries(settings, models)


@dataclass(frozen=True)
class _Policy:
    """What a caller asks of the run's policy: ``strict`` (a model that does not load stops the run),
    θ over the whole set, and whom to tell once it is settled."""

    strict: bool = False
    theta_from_set: bool = False
    on_start: OnStart | None = None


def _settled(
    story_set: StorySet, settings: Settings, models: Models, policy: _Policy, report: RunReport
) -> tuple[Settings, Models]:
    """The settings and models a run scores with once its policy is applied (:mod:`.policy`): the
    metrics whose model does not load left out (unless strict), θ ``dataset`` computed; both in
    ``report``, and said to ``policy.on_start``."""
    settings, models, report.not_run = skip_unloadable(settings, models, strict=policy.strict)
    if policy.theta_from_set:
        settings, models, report.theta = theta_over_set(story_set, settings, models, chunk_size_for(settings))
    report.metrics = settings.metrics
    models.warnings = []  # the warnings of this run's records, for the metrics' summary hooks
    if policy.on_start is not None:
        policy.on_start(report)
    return settings, models


@dataclass(frozen=True)
class Served:
    """A record read from the record store: its scores line with this run's signature, its warnings."""

    line: str
    warnings: tuple[str, ...]


def _records(
    story_set: StorySet,
    settings: Settings,
    stories: Sequence[Story] | None,
    *,
    models: Models | None,
    signature: Mapping[str, Any] | None,
    chunk_size: int | None,
    progress: Progress | None,
    not_run: Mapping[str, str],
    problems: list[str] | None,
    lines: bool,
) -> Iterator[StoryScores | Served]:
    """:func:`score_records` once its policy is settled (``not_run``: metric -> why, as each record
    says it), with a stored record given as its line (:class:`Served`) when ``lines`` (what the CLI
    writes as it is), decoded otherwise. Each record's warnings are kept in ``models.warnings`` for
    the metrics' summary hooks."""
    models = models or Models(settings)
    todo = list(story_set) if stories is None else list(stories)
    signature = signature if signature is not None else run_signature(story_set, settings, models)
    chunk_size = chunk_size or chunk_size_for(settings)
    if not todo:
        return
    models.load()
    idf: Mapping[str, float] | None = None
    grounder = None
    if registry().with_need("images") & set(settings.metrics):
        grounder = models.grounder_for(story_set)  # idf and the like fitted over the whole set, before any chunk
        idf = grounder.idf if grounder.needs_idf else None
        if problems is not None:
            problems.extend(_regions_file_problems(story_set, models))
    store = _record_store(models, signature)
    keying = RunKeys(story_set, settings, signature, memo=models.memo, idf=idf) if store else None
    keys = keying.keys([s for s in todo if not refused(s)]) if keying else {}
    together: SetResults = {}
    asked: set[Key] = set()
    sequences = bool(registry().with_need("sequence") & set(settings.metrics))
    if sequences:  # pairs and references first: one bar over Vrank's pairs
        present = store.present(keys.values()) if store else set()
        unserved = [s for s in todo if keys.get(s.key) not in present]
        together = set_results(story_set, unserved, settings, models, progress)
        asked = {s.key for s in unserved}
    bar = progress(len(todo)) if progress else None
    missing = {m: f"not run: {why}" for m, why in not_run.items()}
    stamped = signature_text(signature) if store else ""

    def compute(chunk: list[Story]) -> list[StoryScores | Served]:
        if sequences and (lacking := [s for s in chunk if s.key not in asked]):  # a stored record gone since
            together.update(set_results(story_set, lacking, settings, models, None))
            asked.update(s.key for s in lacking)
        records = score_batch(chunk, settings, signature, models, story_set.root, together=together)
        out: list[StoryScores | Served] = [replace(r, errors={**r.errors, **missing}) if missing else r for r in records]
        if store is not None and keying is not None:
            unkeyed = [s for s in chunk if s.key not in keys and not refused(s)]
            if unkeyed:  # photos hashed by this chunk: their digests are in the memo now
                keys.update(keying.keys(unkeyed))
            rows = {}
            for n, (story, record) in enumerate(zip(chunk, records, strict=True)):
                key = keys.get(story.key)
                line = stored_line(record) if key is not None and not refused(story) else None
                if key is not None and line is not None:
                    rows[key] = (line, record.warnings)
                    if lines and not missing:  # the line written is the one stored: the record made into JSON once
                        out[n] = Served(served_line(line, stamped), record.warnings)
            store.put(rows)
        return out

    block = chunk_size * max(4, -(-2048 // chunk_size))  # read a block's stored records at once; whole chunks
    try:
        for start in range(0, len(todo), block):
            part = todo[start : start + block]
            rows = store.lines(keys[s.key] for s in part if s.key in keys) if store else {}
            served: dict[int, StoryScores | Served] = {}
            for n, story in enumerate(part):
                row = rows.get(keys.get(story.key, ""))
                if row is None:
                    continue
                if lines and not missing:
                    served[n] = Served(served_line(row[0], stamped), row[1])
                elif (record := _decoded(row[0], signature)) is not None:
                    served[n] = replace(record, errors={**record.errors, **missing}) if missing else record
            rest = [n for n in range(len(part)) if n not in served]
            done: dict[int, StoryScores | Served] = {}
            ends: dict[int, int] = {}  # the last story of each chunk computed: the bar moves once it is yielded
            at = shown = 0
            for n in range(len(part)):
                if n in served:
                    models.warnings.extend(served[n].warnings)
                    yield served[n]
                    shown += 1
                    continue
                if n not in done:  # the next chunk of the stories to compute, this one first
                    if bar is not None and shown:
                        bar.update(shown)
                        shown = 0
                    chunk = rest[at : at + chunk_size]
                    at += len(chunk)
                    if grounder is not None:  # the next chunk's photos hashed beside this chunk's model work
                        upcoming = (part[m] for m in rest[at : at + chunk_size])
                        grounder.probe_after([ref for story in upcoming if not refused(story) for ref in story.images])
                    done.update(zip(chunk, compute([part[m] for m in chunk]), strict=True))
                    ends[chunk[-1]] = len(chunk)
                item = done.pop(n)
                models.warnings.extend(item.warnings)
                yield item
                if bar is not None and n in ends:
                    bar.update(ends.pop(n))
            if bar is not None and shown:
                bar.update(shown)
    finally:
        if bar is not None:
            bar.close()
        if grounder is not None:
            grounder.close()


def _record_store(models: Models, signature: Mapping[str, Any]) -> RecordStore | None:
    """The record store of the run's cache folder, when the cache is on disk and the run's models
    are the ones its signature names (:meth:`Models.known_models`)."""
    folder = models.folder()
    recorded = signature.get("settings")
    clip_weights = recorded.get("clip_weights") if isinstance(recorded, Mapping) else None
    if folder is None or not models.known_models(clip_weights):
        return None
    return RecordStore(folder / RECORDS_FILE)


def _decoded(line: str, signature: Mapping[str, Any]) -> StoryScores | None:
    """A stored line as the record it holds, with this run's signature; None when it does not read
    back whole (computed again)."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    record, found = read_record(data)
    if record is None or found:
        return None
    return replace(record, signature=signature)


def _score_story_set(
    story_set: StorySet,
    settings: Settings,
    out: Path,
    overwrite: bool,
    progress: Progress | None,
    models: Models,
    chunk_size: int | None,
    shard: tuple[int, int] | None,
    policy: _Policy,
) -> RunSummary:
    report = RunReport()
    settings, models = _settled(story_set, settings, models, policy, report)
    signature = run_signature(story_set, settings, models)
    if overwrite and out.exists():
        out.unlink()
    made_with = settings_id(signature)
    done = already_scored(out, made_with)
    summary = RunSummary(out, signature["id"], made_with, problems=[str(p) for p in story_set.problems], report=report)
    mine: Sequence[Story] = shard_stories(story_set, *shard) if shard else list(story_set)
    todo = [s for s in mine if (s.system, s.story_id) not in done]
    summary.skipped = len(mine) - len(todo)
    if todo:
        models.load()  # a model that does not load stops the run before --out is touched
    records = _records(
        story_set,
        settings,
        todo,
        models=models,
        signature=signature,
        chunk_size=chunk_size,
        progress=progress,
        not_run=report.reasons(),
        problems=summary.problems,
        lines=True,
    )
    with ScoresWriter(out) as writer:
        for record in records:
            summary.scored += 1
            if isinstance(record, Served):  # a stored record without errors: its line as it is
                writer.write_line(record.line)
                continue
            writer.write(record)
            if any(metric not in report.not_run for metric in record.errors):
                summary.failed.append(record.story_id)
    report.said = summaries(settings, models)
    return summary
