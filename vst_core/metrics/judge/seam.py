"""The seam between the judge's scoring and its models: what a judge must offer (the local model,
:class:`~vst_core.metrics.judge.local.JudgeModel`, or a served one,
:class:`~vst_core.metrics.judge.served.JudgeServer`; a test's stand-in satisfies it too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from vst_core.metrics.judge.template import JudgePrompt


@dataclass(frozen=True)
class JudgeAnswers:
    """A judge's answers to rubric prompts: ``logprobs`` (prompts × labels; NaN rows where it gave
    none) and, per prompt, None or the reason it gave no answer (a server's failed request)."""

    logprobs: np.ndarray
    errors: tuple[str | None, ...]


class Judge(Protocol):
    """A rubric judge: the local model (:class:`~vst_core.metrics.judge.local.JudgeModel`) or a served one
    (:class:`~vst_core.metrics.judge.served.JudgeServer`). ``signature`` names its weights (cache
    keys, records); ``calls`` counts model calls or requests; ``failures`` the prompts it gave no
    answer to (a served judge's failed requests; always 0 for a local model, which raises instead)."""

    name: str
    signature: str
    calls: int
    failures: int

    @property
    def vision(self) -> bool: ...

    def answers(
        self, prompts: Sequence[JudgePrompt], labels: Sequence[str], *, root: Path | None = None, images: bool = False
    ) -> JudgeAnswers: ...

    def generate(
        self, prompts: Sequence[JudgePrompt], *, root: Path | None = None, images: bool = False, max_new_tokens: int = 80
    ) -> list[str]: ...
