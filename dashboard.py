"""Streamlit pieces shared by the dashboard's pages: the sidebar (data, models, metrics), models
loaded once per process, scoring cached by content, and the notices when weights are missing.
Pages call :func:`load_view` and render the :class:`~vst_core.viz.RunView` it returns."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from vst_core.config import CLIP_METRICS, Settings, settings_from_signature
from vst_core.data import (
    MAX_UPLOAD_IMAGES,
    StorySet,
    StorySetError,
    read_story_set,
    story_set_from_upload,
)
from vst_core.grounder import rescore_grounding
from vst_core.meta_eval import (
    Judgements,
    JudgementsError,
    MetaReport,
    MetaSettings,
    read_judgements,
    run_meta_eval,
)
from vst_core.metrics.baselines import baseline_scores
from vst_core.metrics.grounding import THETA_PRESETS
from vst_core.models.clip import ClipEncoder, load_clip
from vst_core.models.hub import ModelLoadError
from vst_core.models.pairs import (
    PairScorer,
    load_pair_scorer,
    resolve_device,
)
from vst_core.pipeline import Models, score_story, stories_from_records, with_repeated_spans
from vst_core.viz import RunView

SAMPLE = Path(__file__).parent / "assets" / "sample" / "stories.jsonl"
#: Made-up judgements of the sample stories, for trying the meta-evaluation page.
SAMPLE_JUDGEMENTS = SAMPLE.parent / "human_example.csv"
SAMPLE_IDS = frozenset(read_judgements(SAMPLE_JUDGEMENTS).story_ids)

#: Sidebar widget keys; their values survive a change of page.
SIDEBAR_KEYS = (
    "source", "variant", "ngram", "coherence", "coherence_model", "grounding", "clip_arch", "clip_pretrained",
    "clip_checkpoint", "clip_config", "theta_name", "theta_value", "penalize", "concreteness", "scores_path",
    "scores_images", "regions", "extra_clip", "device", "upload_stories",
)


@st.cache_data(show_spinner=False)
def load_upload(name: str, data: bytes, digest: str) -> tuple[StorySet | None, str | None]:
    """Read an uploaded story file (cached by content hash); images are not part of an upload."""
    folder = Path(tempfile.mkdtemp(prefix="vst-upload-"))
    path = folder / Path(name).name
    path.write_bytes(data)
    try:
        return read_story_set(path, check_images=False), None
    except StorySetError as exc:
        return None, str(exc)


@st.cache_data(show_spinner=False)
def load_path(path: str, mtime: float) -> tuple[StorySet | None, str | None]:
    try:
        return read_story_set(path), None
    except StorySetError as exc:
        return None, str(exc)


@st.cache_resource(show_spinner="Loading the sentence-pair model…")
def pair_scorer(spec: str, device: str) -> PairScorer:
    """One scorer per process, keyed by its spec string and device."""
    return load_pair_scorer(spec, device=device)


@st.cache_resource(show_spinner="Loading CLIP…")
def clip_encoder(arch: str, pretrained: str | None, checkpoint: str | None, config: str | None, device: str) -> ClipEncoder:
    """One CLIP encoder per process, keyed by its name strings and device."""
    return load_clip(arch, pretrained, checkpoint=checkpoint, model_config=config, device=device)


@st.cache_data(show_spinner="Scoring…")
def score_all(_story_set: StorySet, key: str, settings: Settings) -> list[dict]:
    clip = None
    if "grounding" in settings.metrics:
        clip = clip_encoder(settings.clip_arch, settings.clip_pretrained, settings.clip_checkpoint, settings.clip_config, settings.device)
    models = Models(
        settings,
        pair_scorer=pair_scorer(settings.coherence_model, settings.device) if "coherence" in settings.metrics else None,
        clip=clip,
    )
    signature = settings.signature()
    stories = list(_story_set)
    if clip is not None:
        grounder = models.grounder_for(_story_set)
        grounder.prepare([s for s in stories if not s.is_empty])
    return [score_story(s, settings, signature, models=models, root=_story_set.root) for s in stories]


@st.cache_data(show_spinner=False)
def _read_scores(path: str, mtime: float, images_dir: str) -> tuple[StorySet | None, list[dict] | None, str | None]:
    from vst_core.data import read_scores

    file = Path(path)
    records, problems = read_scores(file)
    root = Path(images_dir) if images_dir else file.parent
    story_set, kept, more = stories_from_records(records, root, str(file))
    if not kept:
        return None, None, f"no usable record in {file}" + (f" ({len(problems)} unreadable lines)" if problems else "")
    kept = [with_repeated_spans(r, story) for r, story in zip(kept, story_set)]  # runs with --no-spans left them out
    return StorySet(story_set.stories, root, str(file), (*problems, *more)), kept, None


@st.cache_data(show_spinner=False)
def load_image_upload(files: tuple[tuple[str, bytes], ...], text: str) -> tuple[StorySet | None, list[str]]:
    """Uploaded images + pasted stories as a story set in a temporary folder (cached by content)."""
    folder = Path(tempfile.mkdtemp(prefix="vst-images-"))
    return story_set_from_upload(list(files), text, folder)


def load_scores_file(path: str, images_dir: str) -> tuple[StorySet | None, list[dict] | None, str | None]:
    """A scores JSONL as stories + records; errors as a message for the page."""
    file = Path(path)
    if not file.is_file():
        return None, None, f"scores file not found: {file}"
    try:
        return _read_scores(str(file), file.stat().st_mtime, images_dir)
    except OSError as exc:
        return None, None, f"cannot read {file}: {exc}"


#: Sidebar choices mirrored in the URL so a view can be shared by link and survives a reload.
URL_KEYS: dict[str, type] = {
    "source": str, "variant": str, "ngram": int, "coherence": bool, "grounding": bool, "theta_name": str,
    "theta_value": float, "penalize": bool, "concreteness": bool, "scores_path": str, "scores_images": str, "regions": str,
    "extra_clip": bool, "device": str,
}


def records_digest(records: list[dict]) -> str:
    """Content hash of score records (what a meta-evaluation depends on)."""
    return hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()


@st.cache_data(show_spinner="Reading the judgements…")
def load_judgements(data: bytes) -> tuple[Judgements | None, str | None]:
    try:
        return read_judgements(data), None
    except JudgementsError as exc:
        return None, str(exc)


@st.cache_data(show_spinner="Computing BLEU, ROUGE-L, CIDEr and METEOR against the references…")
def baselines(_records: list[dict], key: str) -> tuple[dict, dict]:
    """Reference-based baselines, cached by the records' content hash ``key``."""
    return baseline_scores(_records)


@st.cache_data(show_spinner="Comparing every metric with the human judgements…")
def meta_report(
    _records: list[dict], key: str, judgements: bytes, settings: MetaSettings, metrics: tuple[str, ...], aspects: tuple[str, ...]
) -> MetaReport:
    """The report the CLI would write for these records and judgements, cached by content."""
    found, error = load_judgements(judgements)
    assert found is not None, error
    return run_meta_eval(
        _records, found, settings, metrics=metrics or None, aspects=aspects or None,
        baselines=baselines(_records, key) if settings.baselines else None,
    )


def _from_url() -> None:
    for key, kind in URL_KEYS.items():
        if key in st.session_state or key not in st.query_params:
            continue
        raw = st.query_params[key]
        try:
            st.session_state[key] = raw == "1" if kind is bool else kind(raw)
        except ValueError:
            pass  # a hand-edited URL with a bad value: keep the default


def _to_url() -> None:
    for key, kind in URL_KEYS.items():
        if key in st.session_state:
            value = st.session_state[key]
            st.query_params[key] = ("1" if value else "0") if kind is bool else str(value)


def load_view() -> RunView | None:
    """Render the sidebar and notices; score (cached) and return what the page shows."""
    _from_url()
    for key in SIDEBAR_KEYS:  # keep sidebar choices when the page changes
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    with st.sidebar:
        try:
            st.page_link("app.py", label="Inspect a story", icon=":material/search:")
            st.page_link("pages/dataset.py", label="Dataset", icon=":material/table_chart:")
            st.page_link("pages/meta_eval.py", label="Agreement with humans", icon=":material/insights:")
        except StreamlitPageNotFoundError:  # a page run on its own (AppTest) has no app to link to
            pass
        st.header("Data")
        source = st.radio(
            "Story set",
            ["Bundled sample", "Upload images + stories", "Upload a story file", "Scores JSONL (no model needed)"],
            key="source",
        )
        story_set: StorySet | None = None
        error: str | None = None
        scored: list[dict] | None = None
        if source == "Bundled sample":
            story_set, error = load_path(str(SAMPLE), SAMPLE.stat().st_mtime)
        elif source == "Upload images + stories":
            files = st.file_uploader(
                f"Images of one sequence, in order (1-{MAX_UPLOAD_IMAGES})", type=["jpg", "jpeg", "png", "webp", "bmp", "gif"],
                accept_multiple_files=True, key="upload_images",
            )
            text = st.text_area(
                "Candidate stories, one per line", key="upload_stories",
                placeholder="model-a: We went to the beach. | The waves were huge. | ...",
                help="optionally 'system: ' first; '|' between sentences (one per image), else sentences are split automatically",
            )
            if files:
                story_set, messages = load_image_upload(tuple((f.name, f.getvalue()) for f in files), text)
                for message in messages:
                    st.warning(message)
        elif source.startswith("Scores"):
            scores_path = st.text_input(
                "Scores file written by `vst score`", "", key="scores_path",
                help="images are looked up relative to the story file the scores were made from: give that folder below",
            ).strip()
            images_dir = st.text_input("Folder of the story file (for images)", "", key="scores_images").strip()
            if scores_path:
                story_set, scored, error = load_scores_file(scores_path, images_dir)
        else:
            upload = st.file_uploader("Story set (JSON or JSONL)", type=["json", "jsonl"], key="upload")
            if upload is not None:
                st.session_state["last_upload"] = (upload.name, upload.getvalue())
            if "last_upload" in st.session_state:  # the upload survives a change of page
                name, data = st.session_state["last_upload"]
                story_set, error = load_upload(name, data, hashlib.sha256(data).hexdigest())
        st.header("Non-redundancy")
        variant = st.selectbox(
            "Definition",
            ["paper", "reference"],
            help="paper: RoViST Eq. 7 (unique lower-cased words). reference: the public RoViST code "
            "(token pairs counted, last token dropped, case-sensitive).",
            key="variant",
        )
        n = st.slider("n-gram window (intra part)", 2, 8, 4, key="ngram")
        st.header("Coherence")
        want_coherence = st.toggle("Score sentence pairs (needs model weights)", value=True, key="coherence")
        coherence_model = st.text_input(
            "Pair model", "bert-nsp", key="coherence_model",
            help="bert-nsp, bert-nsp:NAME_OR_PATH, rovist-c:PATH, or a train-sop checkpoint directory",
        )

        st.header("Grounding")
        want_grounding = st.toggle("GROOVIST with CLIP (needs model weights)", value=True, key="grounding")
        clip_arch = st.text_input("CLIP architecture", "ViT-B-32", key="clip_arch")
        clip_pretrained = st.text_input("Pretrained tag", "openai", key="clip_pretrained")
        clip_checkpoint = st.text_input("…or local checkpoint file", "", key="clip_checkpoint").strip() or None
        clip_config = st.text_input("open_clip model config (JSON, optional)", "", key="clip_config").strip() or None
        regions_choice = st.text_input(
            "Regions", "grid", key="regions",
            help="grid (ten weight-free proposals), detector (Faster R-CNN, needs its weights) or a regions CSV path",
        ).strip() or "grid"
        extra_clip = st.checkbox("Also CLIPScore and RoViST-VG style", value=True, key="extra_clip")
        device = st.selectbox("Device", ["auto", "cpu", "cuda"], key="device")
        theta_name = st.selectbox("θ preset", [*THETA_PRESETS, "slider"], key="theta_name")
        theta = (
            str(st.slider("θ", 0.0, 1.5, 0.6, 0.005, key="theta_value", help="re-renders from cached similarities"))
            if theta_name == "slider" else theta_name
        )
        penalize = st.checkbox("Penalty below θ (untick: ablation −P)", value=True, key="penalize")
        use_weights = st.checkbox("Concreteness weights (untick: ablation −C)", value=True, key="concreteness")

    _to_url()
    clip_metrics = ("grounding", "clipscore", "rovist_vg") if extra_clip else ("grounding",)
    metrics = ("redundancy",) + (("coherence",) if want_coherence else ()) + (clip_metrics if want_grounding else ())
    regions = regions_choice if regions_choice in ("grid", "detector") else "csv"
    settings = Settings(  # type: ignore[arg-type]
        metrics=metrics, nr_variant=variant, nr_ngram=n, coherence_model=coherence_model, clip_arch=clip_arch,
        clip_pretrained=clip_pretrained, clip_checkpoint=clip_checkpoint, clip_config=clip_config, theta=theta,
        penalize=penalize, weighting="concreteness" if use_weights else "none", device=device,
        regions=regions, regions_file=regions_choice if regions == "csv" else None,
    )
    if scored is not None:
        want_coherence = want_grounding = False  # everything comes from the file
        recorded = settings_from_signature(scored[0]["signature"]) if scored and "signature" in scored[0] else settings
        settings = recorded.with_(
            theta=theta if theta_name != "VIST" else recorded.theta, penalize=penalize,
            weighting=recorded.weighting if use_weights else "none",
        )
    if want_coherence:
        try:
            pair_scorer(coherence_model, settings.device)
        except (ModelLoadError, ValueError) as exc:
            st.warning(f"Coherence is off: {exc}", icon="⚠️")
            settings = settings.with_(metrics=tuple(m for m in settings.metrics if m != "coherence"))
    if want_grounding:
        try:
            clip_encoder(clip_arch, clip_pretrained, clip_checkpoint, clip_config, settings.device)
        except (ModelLoadError, ValueError, RuntimeError) as exc:
            st.warning(f"Grounding is off: {exc}", icon="⚠️")
            settings = settings.with_(metrics=tuple(m for m in settings.metrics if m not in clip_metrics))
        if settings.regions == "csv" and not Path(settings.regions_file or "").is_file():
            st.warning(f"Regions file not found: {settings.regions_file}; the weight-free grid is used", icon="⚠️")
            settings = settings.with_(regions="grid", regions_file=None)

    if error:
        st.error(error)
    if story_set is None:
        if not error:
            st.info("Upload a story set (or images and stories) to begin, or pick the bundled sample.")
        return None

    for problem in story_set.all_problems():
        (st.error if problem.severity == "error" else st.warning)(str(problem))

    # θ, the penalty and the weighting only re-aggregate stored similarities: models run once per base setting.
    if scored is not None:
        base = settings_from_signature(scored[0].get("signature", {})) if scored else settings
        records = scored
    else:
        base = settings.with_(theta="VIST", penalize=True, weighting="concreteness")
        try:
            records = score_all(story_set, story_set.digest(), base)
        except ModelLoadError as exc:  # e.g. the detector's weights: one notice, NR and coherence still run
            st.warning(f"Grounding is off: {exc}", icon="⚠️")
            keep = tuple(m for m in base.metrics if m not in CLIP_METRICS)
            base, settings = base.with_(metrics=keep), settings.with_(metrics=keep)
            records = score_all(story_set, story_set.digest(), base)
    if base != settings:
        signature = settings.signature()
        records = [
            {
                **r,
                "signature": signature,
                "metrics": {
                    **r["metrics"],
                    **(
                        {"grounding": rescore_grounding(r["metrics"]["grounding"], settings.theta_value, penalize=penalize, weight=use_weights)}
                        if "grounding" in r["metrics"] else {}
                    ),
                },
            }
            for r in records
        ]

    uses_models = scored is None and bool({"coherence", "grounding"} & set(settings.metrics))
    return RunView(
        story_set=story_set,
        records=records,
        settings=settings,
        device=resolve_device(settings.device) if uses_models else "none (no model in use)",
        recorded_id=str(scored[0].get("signature", {}).get("id")) if scored and base == settings else None,
    )
