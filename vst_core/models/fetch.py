"""``vst fetch-models``: which weights are cached, download what is missing, check each by scoring.

Each model is built once: the same loader a scoring run uses finds the cached file or, when the
file is missing and the hub is reachable, downloads it first; then one input is scored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vst_core.contract import FetchPlan
from vst_core.models.clip import clip_cache_dirs, load_clip, resolve_clip_weights
from vst_core.models.detector import Detector, detector_weights_path
from vst_core.models.hub import ModelLoadError, hf_cache_dir, in_cli_words, torch_hub_dir

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
        lines += [f"      note  {in_cli_words(n)}" for n in self.notes]
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
    except Exception as exc:  # a model that does not load, or a check that fails on its own: that model's line
        state = "broken" if was_cached else "missing"
        why = str(exc) if isinstance(exc, ModelLoadError) else f"{type(exc).__name__}: {exc}"
        report.models.append(ModelStatus(name, state, why, time.perf_counter() - start))
        return
    state = "cached" if was_cached else "downloaded"
    report.models.append(ModelStatus(name, state, detail, time.perf_counter() - start))


def fetch_models(
    *,
    clip_arch: str = "ViT-B-32",
    clip_pretrained: str = "openai",
    detector: bool = False,
    more: Sequence[FetchPlan] = (),
    log: Callable[[str], None] = lambda line: None,
) -> FetchReport:
    """Check (and fetch when missing) CLIP, then each metric's own models as its package plans them
    (``more``: RoViST-C's next-sentence model first), then optionally the detector; see the module doc."""

    report = FetchReport()
    _check_clip(report, clip_arch, clip_pretrained, log)
    for plan in more:
        for name, cached, run in plan.checks:
            _check(report, name, cached, run, log)
        report.notes.extend(plan.notes)
    if detector:
        _check_detector(report, log)
    report.folders = {
        "Hugging Face hub cache (HF_HUB_CACHE, by default HF_HOME/hub)": hf_cache_dir(),
        "TORCH_HOME (detector)": torch_hub_dir() / "checkpoints",
        "XDG_CACHE_HOME (OpenAI CLIP files, optional)": clip_cache_dirs()[0],
    }
    for plan in more:
        for what, path in plan.folders.items():
            report.folders.setdefault(what, path)
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
