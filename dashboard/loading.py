"""Everything the dashboard caches: story sets by content hash or path and mtime, models once per
process keyed by their name strings, scoring by the story set's digest and the settings, reports
by the records' digest. Functions take strings and hashes, never PIL images or tensors."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from PIL import Image

from vst_core.config import Settings
from vst_core.data import (
    StorySet,
    StorySetError,
    load_records,
    read_story_set,
    stories_of_records,
)
from vst_core.data.uploads import place_upload
from vst_core.dhm import DHMReport, dhm_report
from vst_core.hashing import json_digest
from vst_core.images import image_size
from vst_core.images import thumbnail as images_thumbnail
from vst_core.meta_eval import Judgements, JudgementsError, MetaReport, MetaSettings, read_judgements, run_meta_eval
from vst_core.metrics.baselines import baseline_scores
from vst_core.models.clip import ClipEncoder, load_clip
from vst_core.models.pairs import load_pair_scorer
from vst_core.models.protocols import PairScorer
from vst_core.models.registry import Models
from vst_core.records import StoryScores
from vst_core.scoring import score_story, with_repeated_spans
from vst_core.signature import inputs_of, signature

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"
#: Made-up judgements of the sample stories, for trying the Agreement page.
SAMPLE_JUDGEMENTS = SAMPLE.parent / "human_example.csv"
SAMPLE_IDS = frozenset(read_judgements(SAMPLE_JUDGEMENTS).story_ids)

Loaded = tuple[StorySet | None, str | None]


@st.cache_data(show_spinner=False)
def story_file(path: str, mtime: float) -> Loaded:
    """A story file on the server (the bundled sample), re-read when it changes."""
    try:
        return read_story_set(path), None
    except StorySetError as exc:
        return None, str(exc)


def _read_scores_file(file: Path, root: Path) -> tuple[StorySet | None, list[StoryScores], str | None]:
    records, problems = load_records(file)
    story_set, more = stories_of_records(records, root, str(file))
    shown = {s.story_id for s in story_set}
    records = [with_repeated_spans(r) for r in records if r.story_id in shown]  # runs with --no-spans left them out
    if not records:
        return None, [], f"no usable record in {file.name}" + (f" ({len(problems)} unreadable lines)" if problems else "")
    return StorySet(story_set.stories, root, str(file), (*problems, *more)), records, None


@st.cache_data(show_spinner=False)
def _scores_file(path: str, mtime: float, images_dir: str) -> tuple[StorySet | None, list[StoryScores], str | None]:
    file = Path(path)
    return _read_scores_file(file, Path(images_dir) if images_dir else file.parent)


def scores_file(path: str, images_dir: str) -> tuple[StorySet | None, list[StoryScores], str | None]:
    """A scores JSONL on the server as stories + typed records; errors as a message for the page."""
    file = Path(path)
    if not file.is_file():
        return None, [], f"scores file not found: {file}"
    try:
        return _scores_file(str(file), file.stat().st_mtime, images_dir)
    except OSError as exc:
        return None, [], f"cannot read {file}: {exc}"


def scores_upload(
    files: list[tuple[str, bytes]], folder: Path
) -> tuple[StorySet | None, list[StoryScores], str | None, list[str]]:
    """An uploaded scores JSONL and its images, written under ``folder`` (the session's)."""

    def refs_of(path: Path) -> list[str]:
        return [ref for record in load_records(path)[0] for ref in record.images]

    path, error, messages = place_upload(files, folder, refs_of, suffixes=(".jsonl",), what="scores file")
    if path is None:
        return None, [], error, messages
    return (*_read_scores_file(path, folder), messages)


#: Longest side of an image shown on a page (decoded reduced where the format allows).
SHOWN_PIXELS = 768


@st.cache_data(show_spinner=False, max_entries=512)
def thumbnail(path: str, mtime: float) -> tuple[Image.Image | None, tuple[int, int], str | None]:
    """(image for display, the original's size, why none): never decodes more than the budget of
    :mod:`vst_core.images`, and keeps only :data:`SHOWN_PIXELS` on the longer side."""
    try:
        size = image_size(Path(path))
        return images_thumbnail(Path(path), SHOWN_PIXELS), size, None
    except Exception as exc:  # over the budget, gone, truncated: said in place of the image
        return None, (0, 0), f"{Path(path).name}: {exc}"


@st.cache_resource(show_spinner="Loading the sentence-pair model…")
def pair_scorer(spec: str, device: str) -> PairScorer:
    """One scorer per process, keyed by its spec string and device."""
    return load_pair_scorer(spec, device=device)


@st.cache_resource(show_spinner="Loading CLIP…")
def clip_encoder(arch: str, pretrained: str | None, checkpoint: str | None, config: str | None, device: str) -> ClipEncoder:
    """One CLIP encoder per process, keyed by its name strings and device."""
    return load_clip(arch, pretrained, checkpoint=checkpoint, model_config=config, device=device)


@st.cache_data(show_spinner="Scoring…")
def score_all(_story_set: StorySet, key: str, settings: Settings) -> list[StoryScores]:
    """Every story of a set scored under ``settings`` (cached by the set's digest ``key``)."""
    clip = None
    if "grounding" in settings.metrics:
        clip = clip_encoder(
            settings.clip_arch, settings.clip_pretrained, settings.clip_checkpoint, settings.clip_config, settings.device
        )
    scorer = pair_scorer(settings.coherence_model, settings.device) if "coherence" in settings.metrics else None
    models = Models(settings, pair_scorer=scorer, clip=clip)
    sig = signature(settings, inputs_of(_story_set))
    stories = list(_story_set)
    if clip is not None:
        models.grounder_for(_story_set).prepare([s for s in stories if not s.is_empty])
    return [score_story(s, settings, sig, models=models, root=_story_set.root) for s in stories]


def records_digest(records: list[StoryScores]) -> str:
    """Content hash of score records (what a meta-evaluation depends on)."""
    return json_digest([r.to_json() for r in records])


JUDGEMENTS_KEY = "_vst_judgements"


def session_judgements(story_ids: set[str]) -> tuple[Judgements | None, str]:
    """The judgements chosen on the Agreement page (kept for the session), else on the bundled sample
    its made-up example ratings; with a label saying which."""
    data: bytes | None = st.session_state.get(JUDGEMENTS_KEY)
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


@st.cache_data(show_spinner="Computing BLEU, ROUGE-L, CIDEr and METEOR against the references…")
def baselines(
    _records: list[StoryScores], key: str, judged: frozenset[str]
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Reference-based baselines of the judged stories, cached by the records' content hash ``key``."""
    return baseline_scores(_records, only=judged)


@st.cache_data(show_spinner="Comparing every metric with the human judgements…")
def meta_report(
    _records: list[StoryScores], key: str, data: bytes, settings: MetaSettings, metrics: tuple[str, ...], aspects: tuple[str, ...]
) -> MetaReport:
    """The report the CLI would write for these records and judgements, cached by content."""
    found, error = judgements(data)
    if found is None:
        raise ValueError(error)
    return run_meta_eval(
        _records,
        found,
        settings,
        metrics=metrics or None,
        aspects=aspects or None,
        baselines=baselines(_records, key, frozenset(found.story_ids)) if settings.baselines else None,
    )


@st.cache_data(show_spinner="Comparing every system with the human stories…")
def dhm(
    _records: list[StoryScores], key: str, human: tuple[str, ...], pairing: str, resamples: int, aspects: tuple[str, ...]
) -> DHMReport:
    """The dHM report of the records (cached by their content hash ``key`` and the options)."""
    return dhm_report(
        _records, human_systems=human, pairing="story" if pairing == "story" else "sequence", resamples=resamples, aspects=aspects
    )
