"""COSMic's recipe (Inan et al., 2021): placeholder until the trainer lands; see ``load_cosmic``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vst_core.data import Story
from vst_core.models.hub import WeightsUnavailableError
from vst_core.records import CosmicScores


class CosmicModel:
    name: str = "cosmic"


def load_cosmic(folder: str | None, *, device: str = "auto") -> CosmicModel:
    raise WeightsUnavailableError("COSMic needs --cosmic-model DIR (a folder written by vst train-cosmic)")


def cosmic_records(
    jobs: Sequence[tuple[Story, Story]], model: CosmicModel, clip: Any, root: Path
) -> Mapping[tuple[str, str], CosmicScores | str]:
    raise NotImplementedError
