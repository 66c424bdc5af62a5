"""What the sidebar asks for, as plain data, and the settings it means. No streamlit here, so the
mapping from widgets to :class:`~vst_core.config.Settings` is unit-tested on its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vst_core.config import CLIP_METRICS, NRVariant, Settings

RegionsKind = Literal["grid", "csv", "detector"]

DEFAULTS = Settings()

SAMPLE = "Bundled sample"
UPLOAD_IMAGES = "Upload images + stories"
UPLOAD_FILE = "Upload a story file"
SCORES_FILE = "Scores JSONL (no model needed)"
SOURCES: tuple[str, ...] = (SAMPLE, UPLOAD_IMAGES, UPLOAD_FILE, SCORES_FILE)
SLIDER = "slider"


@dataclass(frozen=True)
class Choices:
    """The sidebar's values; defaults are the :class:`Settings` defaults (plus every metric on)."""

    source: str = SAMPLE
    variant: NRVariant = DEFAULTS.nr_variant
    ngram: int = DEFAULTS.nr_ngram
    coherence: bool = True
    coherence_model: str = DEFAULTS.coherence_model
    grounding: bool = True
    clip_arch: str = DEFAULTS.clip_arch
    clip_pretrained: str = DEFAULTS.clip_pretrained or ""
    clip_checkpoint: str = ""
    clip_config: str = ""
    regions: str = DEFAULTS.regions
    extra_clip: bool = True
    device: str = DEFAULTS.device
    theta_name: str = DEFAULTS.theta
    theta_value: float = 0.6
    penalize: bool = DEFAULTS.penalize
    concreteness: bool = True

    @property
    def theta(self) -> str:
        """A θ preset name, or the slider's number as text."""
        return str(self.theta_value) if self.theta_name == SLIDER else self.theta_name

    @property
    def clip_metrics(self) -> tuple[str, ...]:
        return ("grounding", "clipscore", "rovist_vg") if self.extra_clip else ("grounding",)


def settings_for(choices: Choices) -> Settings:
    """The settings the sidebar describes (SettingsError when they cannot be used)."""
    metrics = (
        ("redundancy",) + (("coherence",) if choices.coherence else ()) + (choices.clip_metrics if choices.grounding else ())
    )
    regions = choices.regions.strip() or "grid"
    kind: RegionsKind = "grid" if regions == "grid" else "detector" if regions == "detector" else "csv"
    return Settings(
        metrics=metrics,
        nr_variant=choices.variant,
        nr_ngram=choices.ngram,
        coherence_model=choices.coherence_model,
        clip_arch=choices.clip_arch,
        clip_pretrained=choices.clip_pretrained or None,
        clip_checkpoint=choices.clip_checkpoint.strip() or None,
        clip_config=choices.clip_config.strip() or None,
        theta=choices.theta,
        penalize=choices.penalize,
        weighting="concreteness" if choices.concreteness else "none",
        device=choices.device,
        regions=kind,
        regions_file=regions if kind == "csv" else None,
    )


def base_of(settings: Settings) -> Settings:
    """The settings models actually run with: θ, the penalty and the weighting are applied afterwards
    by re-aggregating stored similarities (:func:`vst_core.reaggregate.reaggregate`)."""
    return settings.with_(theta=DEFAULTS.theta, penalize=True, weighting="concreteness")


def settings_for_file(choices: Choices, recorded: Settings) -> Settings:
    """Settings recorded in a scores file, with the sidebar's θ / −P / −C applied on top (a θ left
    at the default preset keeps the file's)."""
    return recorded.with_(
        theta=choices.theta if choices.theta_name != DEFAULTS.theta else recorded.theta,
        penalize=choices.penalize,
        weighting=recorded.weighting if choices.concreteness else "none",
    )


def without(settings: Settings, metrics: tuple[str, ...] | frozenset[str]) -> Settings:
    """``settings`` minus some metrics (a model that is not available)."""
    return settings.with_(metrics=tuple(m for m in settings.metrics if m not in metrics))


def without_clip(settings: Settings) -> Settings:
    return without(settings, CLIP_METRICS)
