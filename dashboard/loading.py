"""Everything the dashboard caches: story sets by content hash or path and mtime, models once per
process keyed by their name strings, scoring by the story set's digest and the settings, reports
by the records' digest. Functions take strings and hashes, never PIL images or tensors."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import streamlit as st
from PIL import Image

from dashboard import session
from dashboard.keys import JUDGEMENTS
from vst_core.analysis.dhm import DHMReport, dhm_report
from vst_core.analysis.leaderboard import Leaderboard, PairTest, PermutationBudget, leaderboard, paired_tests, story_ratings
from vst_core.analysis.meta_eval import Judgements, JudgementsError, MetaReport, MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.identity import keyed_judgements, keys_of, shared_ids
from vst_core.analysis.meta_eval.scored import record_margins, score_frame, texts_of
from vst_core.analysis.meta_eval.versus import VersusSettings, versus_accuracy, versus_correlations
from vst_core.analysis.slice_finder import metric_slices, paired_differences, story_descriptors, system_slices, with_human
from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import StorySet, StorySetError, read_story_set
from vst_core.data.access import FileIdentity, PathNotAllowed, confine, open_confined, reason
from vst_core.data.images import image_size
from vst_core.data.images import thumbnail as images_thumbnail
from vst_core.data.index import IndexError_, ScoresIndex
from vst_core.data.index_store import load_index
from vst_core.data.scores_io import checked_scores, size_text
from vst_core.data.uploads import place_upload, story_set_from_files
from vst_core.formulas.baselines import baseline_scores
from vst_core.images.options import image_settings
from vst_core.models.hub import ModelLoadError
from vst_core.models.protocols import ImageTextEncoder
from vst_core.problems import Problem
from vst_core.scoring.policy import RunReport, ScoredStories
from vst_core.scoring.reaggregate import reaggregate
from vst_core.scoring.registry import Models, unloadable_metrics
from vst_core.scoring.runs import score_records
from vst_core.viz import RunView

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"
#: Made-up judgements of the sample stories, for trying the Agreement page.
SAMPLE_JUDGEMENTS = SAMPLE.parent / "human_example.csv"
SAMPLE_IDS = frozenset(read_judgements(SAMPLE_JUDGEMENTS).story_ids)

Loaded = tuple[StorySet | None, str | None]
logger = logging.getLogger(__name__)

#: The least share of the way between two drawings of a progress bar, and the least seconds: a
#: bar drawn inside a cached function is replayed on every rerun, so it is drawn a few dozen times.
PROGRESS_STEP = 0.02
PROGRESS_SECONDS = 0.25


class PageProgress:
    """A progress bar on the page that vst_core's callbacks advance, with the counts in words:
    ``shown(done, total)`` as the index build and the upload reader call it, or :meth:`bar` as the
    scoring engine asks for one (tqdm's ``update`` and ``close``). Drawn at most every
    :data:`PROGRESS_STEP` of the way and :data:`PROGRESS_SECONDS`, and removed by :meth:`close`
    (``with PageProgress(...)``), so a cached function that draws one replays nothing visible.

    >>> PageProgress.words("Scoring", 40, 192), PageProgress.words("Indexing", 3 << 20, 12 << 20, size_text)
    ('Scoring: 40 of 192', 'Indexing: 3 MiB of 12 MiB')
    """

    def __init__(self, what: str, counted: Callable[[int], str] = "{:,}".format) -> None:
        self.what, self.counted = what, counted
        self.slot = st.empty()
        self.last, self.when, self.drawn = -1.0, 0.0, ("", 0)

    @staticmethod
    def words(what: str, done: int, total: int, counted: Callable[[int], str] = "{:,}".format) -> str:
        return f"{what}: {counted(done)} of {counted(total)}"

    def __call__(self, done: int, total: int, what: str | None = None) -> None:
        share = min(1.0, max(0.0, done / total)) if total > 0 else 1.0
        now, what = time.monotonic(), what or self.what
        same = self.drawn == (what, total)  # a new step or a new bar is drawn at once
        if same and share < 1.0 and (share - self.last < PROGRESS_STEP or now - self.when < PROGRESS_SECONDS):
            return
        self.last, self.when, self.drawn = share, now, (what, total)
        self.slot.progress(share, text=self.words(what, done, total, self.counted))

    def say(self, text: str, share: float = 1.0) -> None:
        """A step counted no further, in words (the bar left at ``share``)."""
        self.drawn = (text, 0)
        self.slot.progress(share, text=text)

    def bar(self, total: int) -> _Bar:
        """A bar over ``total`` items for :data:`vst_core.scoring.runs.Progress`."""
        self.drawn = ("", 0)
        self(0, total)
        return _Bar(self, total)

    def close(self) -> None:
        self.slot.empty()

    def __enter__(self) -> PageProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Bar:
    """tqdm's ``update`` and ``close`` over a :class:`PageProgress`."""

    def __init__(self, shown: PageProgress, total: int) -> None:
        self.shown, self.total, self.done = shown, total, 0

    def update(self, n: int = 1) -> None:
        self.done += n
        self.shown(self.done, self.total)

    def close(self) -> None:
        return None


def read_upload(files: list[tuple[str, bytes]], folder: Path) -> tuple[StorySet | None, str | None, list[str]]:
    """:func:`~vst_core.data.uploads.story_set_from_files` with its progress on the page: the images
    unpacked, counted, then the stories read with their images checked."""

    def told(step: str, done: int, total: int) -> None:
        if step == "images":
            shown(done, total)
        elif done < total:
            shown.say("Reading the stories and checking their images…")

    with PageProgress("Reading the upload: images unpacked") as shown:
        shown.say(f"Reading the upload ({len(files):,} files)…", 0.0)
        return story_set_from_files(files, folder, progress=told)


@st.cache_data(show_spinner=False)
def story_file(path: str, mtime: float) -> Loaded:
    """A story file on the server (the bundled sample), re-read when it changes."""
    try:
        return read_story_set(path), None
    except StorySetError as exc:
        return None, str(exc)


def readable_roots() -> tuple[Path, ...]:
    """Where a scores file may be read from: the allowed server folders and this session's uploads."""
    return (*session.roots(), session.folder().path.resolve())


@st.cache_resource(show_spinner=False, max_entries=8)
def _index(paths: tuple[str, ...], stamps: tuple[FileIdentity, ...]) -> ScoresIndex:
    """One index per process for these files as they were checked (``stamps``: device, inode, size,
    mtime and ctime of each, every read verified against them: a same-size rewrite with its mtime
    restored has another ctime, so another entry, never the old table beside new evidence); the
    cache_resource keeps one object, never a pickled copy of 100,000 rows. A build shows the bytes
    read so far."""
    with PageProgress("Indexing the scores", size_text) as shown:
        return load_index(list(paths), progress=shown, expected=list(stamps))


def scores_index(paths: list[Path], roots: Sequence[Path] | None = None) -> tuple[ScoresIndex | None, str | None]:
    """The index of scores files on the server (inside ``roots``, default :func:`readable_roots`);
    a message for the page when one is missing, not a regular file, unreadable, swapped for a link
    since it was checked, over the size limit (:func:`vst_core.data.scores_io.max_scores_bytes`) or
    holds no usable record. Indexing shows a spinner with the size and the time taken."""
    try:
        checked = checked_scores(paths, readable_roots() if roots is None else roots)
    except PathNotAllowed as exc:
        return None, str(exc)
    names = tuple(str(p) for p in paths)
    size = size_text(sum(f.size for f in checked))
    try:
        with st.spinner(f"Reading {size} of scores (indexed once per file content; later loads read the index)…", show_time=True):
            index = _index(names, tuple(checked))
    except IndexError_ as exc:
        return None, f"cannot read the scores: {exc}"
    except OSError as exc:
        logger.warning("cannot index %s: %s", names, exc)
        return None, f"cannot read the scores ({reason(exc)})"
    if not len(index):
        unreadable = f" ({len(index.problems)} unreadable lines)" if index.problems else ""
        return None, f"no usable record in {', '.join(p.name for p in paths)}{unreadable}"
    return index, None


@st.cache_resource(show_spinner=False, max_entries=4)
def index_view(_index: ScoresIndex, digest: str, root: str, settings: Settings, recorded: Settings) -> RunView:
    """One view per index, images folder and settings (θ and the ablations re-applied when they
    differ from the ``recorded`` ones), kept across reruns: its lookups (story -> row, sequence ->
    rows) and its table are built once, not on every widget change."""
    return RunView.of_index(_index, Path(root), settings, recorded)


def scores_upload(files: list[tuple[str, bytes]], folder: Path) -> tuple[list[Path], str | None, list[str]]:
    """Uploaded scores JSONL files and their images, written under ``folder`` (the session's): the
    paths of the scores files placed, or why none."""

    scores = [(name, data) for name, data in files if name.lower().endswith(".jsonl")]
    others = [(name, data) for name, data in files if not name.lower().endswith(".jsonl")]

    def refs_of(path: Path) -> list[str]:  # the image paths the file names: only read when images came with it
        if not others:
            return []
        refs: list[str] = []
        with path.open("rb") as fh:
            for raw in fh:
                try:
                    images = orjson.loads(raw).get("images")
                except (orjson.JSONDecodeError, AttributeError):
                    continue
                if isinstance(images, list):
                    refs.extend(ref for ref in images if isinstance(ref, str))
        return refs

    if len(scores) <= 1:
        path, error, said = place_upload(files, folder, refs_of, suffixes=(".jsonl",), what="scores file")
        return ([path] if path is not None else []), error, said
    placed: list[Path] = []
    messages: list[str] = []
    for k, item in enumerate(scores):  # several scores files: the images go with the first
        path, error, found = place_upload([item, *(others if k == 0 else [])], folder if k == 0 else folder / f"scores-{k + 1}", refs_of,
                                          suffixes=(".jsonl",), what="scores file")  # fmt: skip
        if path is None:
            return [], error, messages
        placed.append(path)
        messages.extend(found)
    return placed, None, messages


@st.cache_data(show_spinner=False, max_entries=16)
def image_probe(_view: RunView, key: str, stories: int) -> list[Problem]:
    """The image problems of the first ``stories`` stories of an indexed view that name images (a
    wrong images folder shows at once, without opening 500,000 images of a large set); cached by
    the view's ``key``."""
    found: list[Problem] = []
    for row in np.flatnonzero(_view.table["sentences"].to_numpy() > 0)[:stories]:
        story = _view.story(int(row))
        if story is not None:
            found.extend(p for p in story.problems if p.kind == "image")
    return found


#: Longest side of an image shown on a page (decoded reduced where the format allows).
SHOWN_PIXELS = 768


def stamp(path: Path) -> tuple[int, ...]:
    """What tells a file's versions apart for a cache key: device, inode, size, mtime and ctime
    (an image rewritten with its mtime restored has another ctime). OSError as ``stat``."""
    return tuple(FileIdentity.of(path.stat()))


@st.cache_data(show_spinner=False, max_entries=512)
def thumbnail(path: str, version: tuple[int, ...]) -> tuple[Image.Image | None, tuple[int, int], str | None]:
    """(image for display, the original's size, why none), cached by path and :func:`stamp`: never
    decodes more than the budget of :mod:`vst_core.data.images`, and keeps only
    :data:`SHOWN_PIXELS` on the longer side."""
    try:
        size = image_size(Path(path))
        return images_thumbnail(Path(path), SHOWN_PIXELS), size, None
    except Exception as exc:  # over the budget, gone, truncated: said in place of the image
        return None, (0, 0), f"{Path(path).name}: {exc}"


def recheck(value: str | None, what: str) -> None:
    """Check a typed file path again right before a reader that takes only a path opens it: still a
    regular file inside the allowed folders, not a link swapped in since the sidebar confined it
    (one that is gone is left to the reader's own message). PathNotAllowed, for the page, otherwise.
    The reader opens it again by its path: the gap left is from here to that open."""
    if value and os.path.lexists(value):  # never raises: a name too long or a NUL is False
        roots = session.roots()
        open_confined(confine(value, roots, what=what), roots, what=what).close()


def clip_encoder(settings: Settings) -> ImageTextEncoder:
    """CLIP of ``settings``, through :class:`Models` as the command line has it (weights that built
    before come as a lazy encoder, built on the first vector the cache lacks), once per process for
    its fields, device, batch size and workers; a typed checkpoint or config is checked again first
    (PathNotAllowed, a ValueError the frame shows as a notice)."""
    image = image_settings(settings)
    fields = [image.clip_model, image.clip_pretrained, image.clip_checkpoint, image.clip_config, image.clip_activation]
    return _clip(orjson.dumps([*fields, settings.device, settings.batch_size, settings.workers]).decode(), settings)


@st.cache_resource(show_spinner="Loading CLIP…")
def _clip(key: str, _settings: Settings) -> ImageTextEncoder:
    image = image_settings(_settings)
    recheck(image.clip_checkpoint, "“…or local checkpoint file”")
    recheck(image.clip_config, "“open_clip model config”")
    return Models(_settings).clip


def model_key(name: str, settings: Settings) -> str:
    """What identifies the models metric ``name`` loads: the device, its model files (and the
    version, :func:`stamp`, of each file among them, so a file edited in place loads again), the
    settings its own box's model loads with (its ``Switch.loads``: RoViST-C's pair model, tokenizer
    and profile) and the other settings naming its model that the signature names by digest
    (RoViST-VG's ViT, the judge's); a package's metric, whose ``load`` may read any setting it
    lists, by all of those."""
    spec = registry().spec(name)
    own = [f.setting for f in spec.showing.model_fields] + list(
        spec.showing.switch.loads if spec.showing.switch is not None else ()
    )
    own += [o.setting for o in spec.signing.options if not o.signed and o.setting not in own]  # named by digest, as files are
    keys = list(dict.fromkeys([*spec.signing.settings, *own])) if spec in registry().plugins else own
    parts: dict[str, Any] = {"device": settings.device, **{k: settings.option(k) for k in keys}}
    for f in spec.showing.model_fields:
        value = settings.option(f.setting)
        if value and f.kind == "file":
            try:
                parts[f"{f.setting}@"] = stamp(Path(value))
            except OSError:
                parts[f"{f.setting}@"] = None  # its loader says why
    return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str).decode()


def recheck_paths(name: str, settings: Settings) -> None:
    """Every file or folder metric ``name``'s model is read from (its ``model_fields``) checked again
    right before its loader opens it (:func:`recheck`, :func:`recheck_folder`)."""
    for f in registry().spec(name).showing.model_fields:
        value = settings.option(f.setting)
        if value:
            (recheck_folder if f.kind == "folder" else recheck)(value, f"“{f.label}”")


def metric_models(name: str, settings: Settings, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The models metric ``name`` loads (its spec's ``load``, through :class:`Models`), once per
    process and :func:`model_key`, as keyword arguments for :class:`Models`; the ones in ``given``
    (the CLIP encoder, cached on its own) are used, not loaded again. Raises
    what its loader raises (ModelLoadError, PathNotAllowed, ...): the frame shows it as a notice."""
    return _metric_models(name, model_key(name, settings), settings, dict(given or {}))


@st.cache_resource(show_spinner="Loading a metric's model…", max_entries=16)
def _metric_models(name: str, key: str, _settings: Settings, _given: dict[str, Any]) -> dict[str, Any]:
    recheck_paths(name, _settings)
    models = Models(_settings, **_given)
    models.load_metric(name)
    return {k: v for k, v in models.loaded().items() if k not in _given}


def recheck_folder(value: str, what: str) -> None:
    """A typed folder is still inside the allowed folders (PathNotAllowed, for the page, otherwise)."""
    if value and os.path.lexists(value):
        confine(value, session.roots(), what=what)


@st.cache_data(show_spinner="Asking the model…", max_entries=4)
def measured(_view: RunView, key: str, rows: tuple[int, ...], settings: Settings, metric: str) -> pd.DataFrame:
    """A metric's measurement that asks its model (its spec's ``diagnostics.measure``: the judge's
    position bias) on the stories of ``rows``, cached by the view's key, the rows, the settings and
    the metric; ModelLoadError (or ValueError, OSError) when the model cannot be had."""
    measure = registry().spec(metric).showing.diagnostics
    if measure is None or measure.measure is None:
        raise ValueError(f"{metric} measures nothing on request")
    stories = [s for s in (_view.story(row) for row in rows) if s is not None]
    return pd.DataFrame(measure.measure.run(stories, _view.root, settings))


def loaded_models(settings: Settings) -> Models:
    """The models of ``settings`` as the dashboard keeps them, each loaded once per process (CLIP by
    :func:`clip_encoder`, every metric's own by :func:`metric_models`), in one :class:`Models`; a
    model that does not load is left to the run's policy, which leaves its metric out with the
    reason (:func:`vst_core.scoring.runs.score_records`)."""
    given: dict[str, Any] = {}
    loaded: dict[str, Any] = {}

    def clip() -> None:
        given["clip"] = clip_encoder(settings)

    def load(name: str) -> None:
        loaded.update(metric_models(name, settings, given))

    unloadable_metrics(settings.metrics, load, clip=clip)
    return Models(settings, **given, **loaded)


@st.cache_data(show_spinner=False)
def score_all(_story_set: StorySet, key: str, settings: Settings) -> ScoredStories:
    """Every story of a set scored under ``settings`` (cached by the set's digest ``key``), with a
    progress bar counting the stories done (and a set metric's work before them, Vrank's pairs); a
    typed regions CSV is checked again first (ModelLoadError, shown as a notice, when it fails). The
    run's policy is the command line's and the Python API's: a metric whose model does not load is
    not run, each record says why, and so does the result's ``report``."""
    with PageProgress(f"Scoring {len(_story_set):,} stories") as shown:
        shown(0, len(_story_set))
        return _scored(_story_set, settings, shown)


def _scored(story_set: StorySet, settings: Settings, shown: PageProgress) -> ScoredStories:
    image = image_settings(settings)
    if image.regions == "csv" and registry().with_need("images") & set(settings.metrics):
        try:
            recheck(image.regions_file, "“Regions”")
        except PathNotAllowed as exc:
            raise ModelLoadError(f"{exc}; give another “Regions” file, or grid") from None
    report = RunReport()
    # the engine of `vst score` and the Python API: the same policy, batches, set-level fits and records
    records = score_records(story_set, settings, models=loaded_models(settings), progress=shown.bar, report=report)
    return ScoredStories(records, report)


@st.cache_resource(show_spinner=False, max_entries=4)
def records_view(_story_set: StorySet, key: str, base: Settings, settings: Settings, device: str) -> tuple[RunView, RunReport]:
    """The view of a story set scored under ``base`` (:func:`score_all`) with θ and the ablations of
    ``settings`` re-applied, and the run's report, kept across reruns by the set's digest ``key``,
    the settings and the device: the view's key (the records' digest), lookups and table are built
    once per view, not on every widget change."""
    scored = score_all(_story_set, key, base)
    records = reaggregate(scored, base, settings)
    return RunView.of_records(_story_set, records, settings, device), scored.report


@st.cache_data(show_spinner=False, max_entries=16)
def signature_ids(_view: RunView, key: str) -> tuple[str, ...]:
    """The signature ids of a view's scores (:meth:`RunView.signature_ids`, which reads every
    record of a set scored here), once per view content ``key``."""
    return _view.signature_ids()


def session_judgements(story_ids: set[str]) -> tuple[Judgements | None, str]:
    """The judgements chosen on the Agreement page (kept for the session), else on the bundled sample
    its made-up example ratings; with a label saying which."""
    data: bytes | None = st.session_state.get(JUDGEMENTS)
    example = SAMPLE_JUDGEMENTS.read_bytes() if data is not None or SAMPLE_IDS & story_ids else None
    if data is None:
        data = example
    if data is None:
        return None, ""
    label = "made-up example ratings" if data == example else "the judgements loaded on the Agreement page"
    return judgements(data)[0], label


@st.cache_data(show_spinner="Reading the judgements…")
def judgements(data: bytes) -> tuple[Judgements | None, str | None]:
    try:
        return read_judgements(data), None
    except JudgementsError as exc:
        return None, str(exc)


@st.cache_data(show_spinner="Computing the reference-based baselines…")
def baselines(
    _scored: pd.DataFrame, key: str, judged: frozenset[str], meteor: bool = False
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Reference-based baselines of the judged stories (METEOR only when asked: its Java scorer
    takes about 13 s to load), cached by the view's content key ``key``."""
    return baseline_scores(texts_of(_scored), only=judged, meteor=meteor)


@st.cache_data(show_spinner="Comparing every metric with the human judgements…")
def meta_report(
    _scored: pd.DataFrame,
    key: str,
    signatures: tuple[str, ...],
    data: bytes,
    settings: MetaSettings,
    metrics: tuple[str, ...],
    aspects: tuple[str, ...],
    _view: RunView | None = None,
    trained: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> MetaReport:
    """The report the CLI would write for the view's table and these judgements, cached by the
    view's content key and the judgements' bytes. With ``_view``, a ranker's pairs (Vrank's) are
    judged by its own margins, read from the records of the judged stories only; ``trained`` gives
    each learned metric's report column and the story ids its card says it was trained on."""
    found, error = judgements(data)
    if found is None:
        raise ValueError(error)
    frame = score_frame(_scored)
    keyed, _ = keyed_judgements(found, frame)
    margins: dict[str, dict[tuple[str, str], float]] | None = None
    rankers = {report: spec for report, spec in registry().ranked.items() if report in frame} if _view is not None else {}
    if _view is not None and rankers:
        judged, shared = keyed.story_ids, shared_ids(frame)
        keys = keys_of(_scored[["story", "system"]].astype(str))  # the table's rows, keyed as score_frame keys them
        margins = {}
        for report, spec in rankers.items():
            has = _scored[report].notna().to_numpy()
            rows = [i for i, k in enumerate(keys) if has[i] and k in judged]
            ranked = _view.metric_records(rows, spec.name)  # one pass over the files, only this metric's records decoded
            triples = ((str(_scored["system"].iat[row]), str(_scored["story"].iat[row]), v) for row, v in ranked.items())
            margins.update(record_margins(report, triples, shared=shared))
    return run_meta_eval(
        _scored,
        found,
        settings,
        metrics=metrics or None,
        aspects=aspects or None,
        baselines=baselines(_scored, key, frozenset(keyed.story_ids), settings.meteor) if settings.baselines else None,
        signature_ids=signatures,
        margins=margins,
        trained_on=dict(trained) or None,
    )


@st.cache_data(show_spinner="Comparing every system with the human stories…")
def dhm(
    _scored: pd.DataFrame,
    key: str,
    signatures: tuple[str, ...],
    human: tuple[str, ...],
    pairing: str,
    resamples: int,
    aspects: tuple[str, ...],
) -> DHMReport:
    """The dHM report of the view's table (cached by the view's content key and the options),
    signed with the view's ``signatures`` (for scores files: the files and any re-applied θ)."""
    table = _scored.copy(deep=False)
    table.attrs["scores_signatures"] = list(signatures)
    return dhm_report(
        table, human_systems=human, pairing="story" if pairing == "story" else "sequence", resamples=resamples, aspects=aspects
    )


@st.cache_data(show_spinner="Testing every measure against the human stories…")
def profile(_scored: pd.DataFrame, key: str, human: tuple[str, ...], resamples: int) -> pd.DataFrame:
    """:func:`~vst_core.analysis.profile.human_likeness_profile` of the view's table (cached by the
    view's content key and the options)."""
    from vst_core.analysis.profile import human_likeness_profile

    return human_likeness_profile(_scored, human, resamples=resamples)


@st.cache_data(show_spinner="Ranking the systems and testing every two of them…")
def board(
    _scored: pd.DataFrame,
    key: str,
    signatures: tuple[str, ...],
    systems: tuple[str, ...],
    human: tuple[str, ...],
    resamples: int,
    permutations: int,
    seed: int,
    _judgements: Judgements | None,
    judgements_digest: str,
) -> Leaderboard:
    """``vst compare``'s leaderboard of the view's table (cached by the view's content key, the
    options and the judgements' digest), signed with the view's ``signatures``."""
    ratings = story_ratings(_scored, _judgements) if _judgements is not None else None
    return leaderboard(
        _scored,
        systems=systems,
        human=human,
        resamples=resamples,
        permutations=permutations,
        seed=seed,
        ratings=ratings,
        scores_signatures=signatures,
        judgements_digest=judgements_digest if _judgements is not None else "",
    )


@st.cache_data(show_spinner="Testing the differences…", max_entries=32)
def pair_tests(_paired: pd.DataFrame, key: str, a: str, b: str, metrics: tuple[str, ...]) -> list[PairTest]:
    """:func:`~vst_core.analysis.leaderboard.paired_tests` of two systems' paired differences,
    cached by the view's content key and the two systems."""
    return paired_tests(_paired, metrics, a, b)


@st.cache_data(show_spinner="Testing every two metrics against each other…", max_entries=8)
def metric_versus(_report: MetaReport, key: str, report_id: str, settings: VersusSettings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every two metrics of the report against each other (correlation with each aspect, and
    pairwise accuracy), cached by the view's content key, the report's signature id and the settings."""
    scores = _report.data
    budget = PermutationBudget(settings.permutation_budget)  # one run: both tables draw within it
    return (
        versus_correlations(scores, _report.metrics, _report.aspects, settings, budget=budget),
        versus_accuracy(_report.pairs, scores, _report.metrics, settings, budget=budget),
    )


@st.cache_data(show_spinner="Looking for the slices…", max_entries=8)
def found_slices(
    _table: pd.DataFrame,
    key: str,
    metric: str,
    against: tuple[str, ...],
    pairs: bool,
    min_size: int,
    _judgements: Judgements | None = None,
    judgements_digest: str = "",
) -> pd.DataFrame:
    """The slice finder's proposals on the view's table (cached by its content key and the options):
    where ``metric`` disagrees with the human aspect ``against[0]`` (with ``_judgements``), or where
    system ``against[0]`` loses to ``against[1]``."""
    if _judgements is not None:
        data, _ = with_human(_table, _judgements)
        return metric_slices(data, metric, against[0], story_descriptors(data), pairs=pairs, min_size=min_size)
    paired = paired_differences(_table, metric, against[0], against[1])
    return system_slices(paired, pairs=pairs, min_size=min_size)
