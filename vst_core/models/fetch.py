"""``vst fetch-models``: which weights are cached, download what is missing, check each by scoring.

Each model is built once: the same loader a scoring run uses finds the cached file or, when the
file is missing and the hub is reachable, downloads it first; then one input is scored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vst_core.models.clip import clip_cache_dirs, load_clip, resolve_clip_weights
from vst_core.models.detector import Detector, detector_weights_path
from vst_core.models.hub import HF_WEIGHT_FILES, ModelLoadError, hf_cache_dir, hub_file, torch_hub_dir
from vst_core.models.rovist_vg import VIT_NAME, WHERE, load_rovist_vg

#: Two sentence pairs (one related, one not) a loaded model is checked on: scored, encoded or rated.
SENTENCE_PAIRS = [
    ("We drove to the beach early in the morning.", "The waves were already huge when we arrived."),
    ("We drove to the beach early in the morning.", "The central bank raised interest rates on Monday."),
]


@dataclass
class ModelStatus:
    """One model's line in the report: ``state`` is cached, downloaded, missing or broken."""

    name: str
    state: str
    detail: str
    seconds: float = 0.0


@dataclass
class FetchReport:
    models: list[ModelStatus] = field(default_factory=list)
    folders: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(m.state in ("cached", "downloaded") for m in self.models)

    def summary(self) -> str:
        lines = [f"{m.state:>10}  {m.name}: {m.detail}" for m in self.models]
        lines += [f"      note  {n}" for n in self.notes]
        lines.append("folders to copy to an offline machine (same paths there, or point the variables at them):")
        lines += [f"  {var}: {path}" for var, path in self.folders.items()]
        if not self.ok:
            lines.append("some models are missing or do not load (see above): scores that need them will not run")
        return "\n".join(lines)


def _check(report: FetchReport, name: str, was_cached: bool, run: Callable[[], str], log: Callable[[str], None]) -> None:
    log(f"{name}: {'cached, loading' if was_cached else 'not cached, downloading if the hub is reachable'} ...")
    start = time.perf_counter()
    try:
        detail = run()
    except ModelLoadError as exc:
        state = "broken" if was_cached else "missing"
        report.models.append(ModelStatus(name, state, str(exc), time.perf_counter() - start))
        return
    state = "cached" if was_cached else "downloaded"
    report.models.append(ModelStatus(name, state, detail, time.perf_counter() - start))


def fetch_models(
    *,
    clip_arch: str = "ViT-B-32",
    clip_pretrained: str = "openai",
    detector: bool = False,
    rovist_vg: bool = False,
    rovist_vg_vit: str = VIT_NAME,
    rovist_vg_checkpoint: str | None = None,
    glove: str | None = None,
    more: Sequence[tuple[str, bool, Callable[[], str]]] = (),
    log: Callable[[str], None] = lambda line: None,
) -> FetchReport:
    """Check (and fetch when missing) CLIP, then each of ``more`` (a metric's own model as its
    package checks it: (name, cached already, load and use it -> what it did), RoViST-C's
    next-sentence model first), then optionally the detector and RoViST-VG's files; see the module doc."""

    report = FetchReport()
    _check_clip(report, clip_arch, clip_pretrained, log)
    for name, cached, run in more:
        _check(report, name, cached, run, log)
    if detector:
        _check_detector(report, log)
    if rovist_vg or rovist_vg_checkpoint or glove:
        _check_rovist_vg(report, rovist_vg_vit, rovist_vg_checkpoint, glove, log)
    report.folders = {
        "Hugging Face hub cache (HF_HUB_CACHE, by default HF_HOME/hub)": hf_cache_dir(),
        "TORCH_HOME (detector)": torch_hub_dir() / "checkpoints",
        "XDG_CACHE_HOME (OpenAI CLIP files, optional)": clip_cache_dirs()[0],
    }
    return report


def _check_clip(report: FetchReport, arch: str, pretrained: str, log: Callable[[str], None]) -> None:

    def clip() -> str:
        encoder = load_clip(arch, pretrained, device="cpu")
        text = encoder.encode_text(["a photo of a dog", "a photo of a rocket"])
        return f"{encoder.signature} loads and encodes (cos(dog, rocket) {float(text[0] @ text[1]):+.3f})"

    try:
        cached = resolve_clip_weights(arch, pretrained).path is not None
    except (ModelLoadError, ValueError) as exc:
        report.models.append(ModelStatus(f"CLIP {arch}/{pretrained}", "broken", str(exc)))
    else:
        _check(report, f"CLIP {arch}/{pretrained}", cached, clip, log)


def _check_detector(report: FetchReport, log: Callable[[str], None]) -> None:

    def detect() -> str:
        if detector_weights_path() is None:
            from torchvision.models.detection import FasterRCNN_ResNet50_FPN_V2_Weights

            try:
                FasterRCNN_ResNet50_FPN_V2_Weights.DEFAULT.get_state_dict(progress=True)
            except Exception as exc:
                raise ModelLoadError(f"detector weights could not be downloaded: {exc}") from None
        from PIL import Image

        found = Detector("cpu", batch_size=1)
        boxes = found.boxes([Image.new("RGB", (64, 48), "gray")], 10)
        return f"{found.path} loads and detects ({len(boxes[0])} boxes on a blank image)"

    _check(report, "detector Faster R-CNN ResNet-50 FPN v2", detector_weights_path() is not None, detect, log)


def _check_nltk_tagger(report: FetchReport) -> None:
    """Whether NLTK's perceptron tagger data (the tagger of the authors' noun extraction) is
    installed: a status line when it is, a note naming the command when it is not (spaCy's tagger
    then stands in, and a noun's tag can differ)."""
    from vst_core.text.nouns import NLTK_TAGGER_DATA, nltk_tagger_path

    found = nltk_tagger_path()
    if found is not None:
        report.models.append(
            ModelStatus(f"NLTK tagger {NLTK_TAGGER_DATA}", "cached", f"{found}: RoViST-VG's nouns as the authors tag them", 0.0)
        )
        report.folders.setdefault("NLTK_DATA", found.parents[1])
        return
    report.notes.append(
        f"NLTK's tagger data ({NLTK_TAGGER_DATA}) is not installed: RoViST-VG's nouns are tagged by spaCy instead, and a "
        f"noun's tag can differ from the authors'; install it with `python -m nltk.downloader {NLTK_TAGGER_DATA}`"
    )


def _check_rovist_vg(
    report: FetchReport, vit: str, checkpoint: str | None, glove: str | None, log: Callable[[str], None]
) -> None:
    """RoViST-VG's ViT from the hub (config, image processor, weights); the checkpoint and GloVe
    are the user's files, checked by scoring one word against one crop when both are given."""
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    from vst_core.models.folders import load_hf

    def vit_loads() -> str:
        config = load_hf(vit, ViTConfig.from_pretrained, "ViT")
        load_hf(vit, ViTImageProcessor.from_pretrained, "ViT image processor")
        load_hf(vit, ViTModel.from_pretrained, "ViT")
        return f"loads (hidden size {config.hidden_size}, {config.image_size}px); RoViST-VG's image encoder"

    _check(report, f"ViT {vit}", hub_file(vit, HF_WEIGHT_FILES) is not None, vit_loads, log)
    _check_nltk_tagger(report)
    if not (checkpoint and glove):
        report.notes.append(f"RoViST-VG's checkpoint and GloVe vectors are files you download yourself: {WHERE}")
        return

    def model() -> str:
        from PIL import Image

        loaded = load_rovist_vg(checkpoint, vit=vit, glove=glove, device="cpu", batch_size=1)
        words, _ = loaded.encode_words(["dog"])
        crop = loaded.encode_crops([Image.new("RGB", (64, 48), "gray")])
        return f"{loaded.signature} loads and scores (cos(dog, a gray crop) {float(words[0] @ crop[0]):+.3f})"

    _check(report, f"RoViST-VG {Path(checkpoint).name} + {Path(glove).name}", True, model, log)
