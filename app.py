"""Dashboard entry point: the bundled sample (or your story set) scored for repetition."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from vst_core.config import Settings
from vst_core.data import StorySet, StorySetError, read_story_set
from vst_core.models.hub import WeightsUnavailableError
from vst_core.metrics.grounding import THETA_PRESETS
from vst_core.models.clip import ClipEncoder, load_clip
from vst_core.models.pairs import CheckpointShapeError, PairScorer, load_pair_scorer
from vst_core.grounder import rescore_grounding
from vst_core.pipeline import Models, score_story
from vst_core.viz import draw_box, format_score, legend_html, story_html

SAMPLE = Path(__file__).parent / "assets" / "sample" / "stories.jsonl"

st.set_page_config(page_title="Visual story evaluation", page_icon="📖", layout="wide")


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
        grounder = models.grounder(_story_set.root)
        grounder.fit_idf(stories)
        grounder.prepare([s for s in stories if not s.is_empty])
    return [score_story(s, settings, signature, models=models, root=_story_set.root) for s in stories]


with st.sidebar:
    st.header("Data")
    source = st.radio("Story set", ["Bundled sample", "Upload a story file"], key="source")
    story_set: StorySet | None = None
    error: str | None = None
    if source == "Bundled sample":
        story_set, error = load_path(str(SAMPLE), SAMPLE.stat().st_mtime)
    else:
        upload = st.file_uploader("Story set (JSON or JSONL)", type=["json", "jsonl"], key="upload")
        if upload is not None:
            data = upload.getvalue()
            story_set, error = load_upload(upload.name, data, hashlib.sha256(data).hexdigest())
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
    theta_name = st.selectbox("θ preset", [*THETA_PRESETS, "slider"], key="theta_name")
    theta = (
        str(st.slider("θ", 0.0, 1.5, 0.6, 0.005, key="theta_value", help="re-renders from cached similarities"))
        if theta_name == "slider" else theta_name
    )
    penalize = st.checkbox("Penalty below θ (untick: ablation −P)", value=True, key="penalize")
    use_weights = st.checkbox("Concreteness weights (untick: ablation −C)", value=True, key="concreteness")

metrics = tuple(
    m for m, on in (("redundancy", True), ("coherence", want_coherence), ("grounding", want_grounding)) if on
)
settings = Settings(  # type: ignore[arg-type]
    metrics=metrics, nr_variant=variant, nr_ngram=n, coherence_model=coherence_model, clip_arch=clip_arch,
    clip_pretrained=clip_pretrained, clip_checkpoint=clip_checkpoint, clip_config=clip_config, theta=theta,
    penalize=penalize, weighting="concreteness" if use_weights else "none",
)
st.title("Visual story evaluation")
st.caption(
    "Non-redundancy (RoViST-NR) with the spans that repeat, the coherence (RoViST-C) of every sentence "
    "transition, and the grounding (GROOVIST) of every noun phrase: hover for details. " + legend_html(),
    unsafe_allow_html=True,
)
if want_coherence:
    try:
        pair_scorer(coherence_model, settings.device)
    except (WeightsUnavailableError, CheckpointShapeError, ValueError) as exc:
        st.warning(f"Coherence is off: {exc}", icon="⚠️")
        settings = settings.with_(metrics=tuple(m for m in settings.metrics if m != "coherence"))
if want_grounding:
    try:
        clip_encoder(clip_arch, clip_pretrained, clip_checkpoint, clip_config, settings.device)
    except (WeightsUnavailableError, ValueError, RuntimeError) as exc:
        st.warning(f"Grounding is off: {exc}", icon="⚠️")
        settings = settings.with_(metrics=tuple(m for m in settings.metrics if m != "grounding"))

if error:
    st.error(error)
if story_set is None:
    if not error:
        st.info("Upload a story set to begin, or pick the bundled sample.")
    st.stop()

for problem in story_set.all_problems():
    (st.error if problem.severity == "error" else st.warning)(str(problem))

# θ, the penalty and the weighting only re-aggregate stored similarities: models run once per base setting.
base = settings.with_(theta="VIST", penalize=True, weighting="concreteness")
records = score_all(story_set, f"{story_set.source}:{len(story_set)}", base)
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
by_id = {r["story_id"]: r for r in records}

table = pd.DataFrame(
    [
        {
            "story": r["story_id"],
            "sequence": r["sequence_id"],
            "system": r["system"],
            "NR": r["metrics"].get("redundancy", {}).get("score"),
            "inter": r["metrics"].get("redundancy", {}).get("inter"),
            "intra": r["metrics"].get("redundancy", {}).get("intra"),
            **({"coherence": r["metrics"].get("coherence", {}).get("score")} if "coherence" in settings.metrics else {}),
            **(
                {
                    "GROOVIST": r["metrics"].get("grounding", {}).get("score"),
                    "T": r["metrics"].get("grounding", {}).get("temporal_misalignment"),
                }
                if "grounding" in settings.metrics else {}
            ),
            "error": "; ".join(r["errors"].values()),
        }
        for r in records
    ]
)
st.subheader("Scores")
st.dataframe(table, hide_index=True, width="stretch", column_config={
    c: st.column_config.NumberColumn(format="%.3f") for c in ("NR", "inter", "intra", "coherence", "GROOVIST", "T")
})

for sequence_id, stories in story_set.sequences().items():
    st.subheader(f"Sequence {sequence_id}")
    first = next((s for s in stories if s.images_ok), None)
    if first is not None:
        for col, ref in zip(st.columns(len(first.images)), first.images):
            col.image(str(story_set.image_path(ref)), width="stretch")
    for story in stories:
        record = by_id[story.story_id]
        nr = record["metrics"].get("redundancy")
        with st.container(border=True):
            head, score, coh_col, g_col = st.columns([3, 1, 1, 1])
            head.markdown(f"**{story.system}** · `{story.story_id}`")
            if nr is None:
                score.metric("NR", "error")
                st.error(record["errors"].get("redundancy", "not scored"))
                continue
            coh = record["metrics"].get("coherence")
            score.metric("NR", format_score(nr["score"]), help=f"inter {format_score(nr['inter'])} · intra {format_score(nr['intra'])}")
            if coh is not None:
                coh_col.metric("coherence", format_score(coh["score"]), help=f"mean P(next follows) · {coh['model']}")
            grd = record["metrics"].get("grounding")
            if grd is not None:
                g_col.metric(
                    "GROOVIST", format_score(grd["score"]),
                    help=f"unbounded {format_score(grd['unbounded'])} · θ {grd['theta']:.4f} · "
                    f"T {format_score(grd['temporal_misalignment'])} · P {format_score(grd['np_proportion'])}",
                )
            elif "grounding" in record["errors"]:
                g_col.metric("GROOVIST", "error", help=record["errors"]["grounding"])
            st.markdown(story_html(story.sentences, nr, coh, grd), unsafe_allow_html=True)
            if grd and grd["phrases"] and story.images_ok:
                labels = [f"{p['surface']} → image {p['image'] + 1} ({p['contribution']:+.2f})" for p in grd["phrases"]]
                pick = st.selectbox("Show the region a phrase matched", labels, index=None, key=f"np-{story.story_id}")
                if pick is not None:
                    p = grd["phrases"][labels.index(pick)]
                    from PIL import Image

                    with Image.open(story_set.image_path(story.images[p["image"]])) as im:
                        st.image(draw_box(im, p["box"], p["text"]), width=360, caption=f"{p['text']}: best cosine {p['best_cosine']:.3f}")
            for note in [*nr["notes"], *(coh or {}).get("notes", []), *(grd or {}).get("notes", [])]:
                st.caption(note)

st.divider()
st.caption(f"Settings: {settings.describe()} · device: cpu (no model in use)")
