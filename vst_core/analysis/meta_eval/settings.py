"""The settings of a meta-evaluation and its signature (hashed with the scores' signature ids)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from vst_core.hashing import json_digest

#: Ranking gaps are differences of means of small integers: rounded to this many decimals, equal
#: real gaps compare equal (4.4 − 4.2 is 0.2, not 0.20000000000000018).
GAP_DECIMALS = 9

Method = Literal["spearman", "pearson", "kendall_b", "kendall_c"]
METHODS: dict[str, str] = {
    "spearman": "Spearman ρ",
    "pearson": "Pearson r",
    "kendall_b": "Kendall τ-b",
    "kendall_c": "Kendall τ-c",
}


# --------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class MetaSettings:
    """Everything that can change a meta-evaluation number; hashed into its signature."""

    aggregate: Literal["mean", "median"] = "mean"
    methods: tuple[str, ...] = ("spearman", "pearson", "kendall_b", "kendall_c")
    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    gap_edges: tuple[float, ...] | None = None  # None: quartiles of the observed gaps
    t_split: float = 1.0
    p_split: float | None = None  # None: the mode of P
    bin_method: str = "kendall_c"
    baselines: bool = True
    meteor: bool = False  # METEOR's Java scorer loads its paraphrase tables for about 13 s: asked for, not by default
    pair_aspect: str | None = None  # pairs from ratings: None = "overall" if judged, else the last; "mean" = mean of aspects
    # what a correlation interval resamples: the image sequences (their stories are not independent), or the items
    resample_unit: Literal["sequence", "item"] = "sequence"

    def __post_init__(self) -> None:
        if self.aggregate not in ("mean", "median"):
            raise ValueError(f"aggregate must be mean or median, not {self.aggregate!r}")
        unknown = [m for m in (*self.methods, self.bin_method) if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"unknown correlation method(s) {unknown}; choose from {', '.join(METHODS)}")
        if self.resample_unit not in ("sequence", "item"):
            raise ValueError(f"resample_unit must be sequence or item, not {self.resample_unit!r}")
        if self.resamples < 0:
            raise ValueError("resamples must be >= 0 (0 turns bootstrap intervals off)")
        if not 0 < self.confidence < 1:
            raise ValueError("confidence must be between 0 and 1")
        if self.gap_edges is not None and (len(self.gap_edges) < 2 or list(self.gap_edges) != sorted(set(self.gap_edges))):
            raise ValueError("gap edges must be at least two increasing numbers")

    def signature(
        self,
        scores_ids: Iterable[str] = (),
        *,
        judgements: str = "",
        metrics: Sequence[str] = (),
        aspects: Sequence[str] = (),
    ) -> dict[str, Any]:
        """These settings, the signature ids of the scores, the judgements file's digest and the
        metrics and aspects compared, hashed to an id."""
        payload = {
            "meta_settings": asdict(self),
            "scores_signatures": sorted(set(scores_ids)),
            "judgements_sha256": judgements,
            "metrics": list(metrics),
            "aspects": list(aspects),
        }
        return {"id": json_digest(payload, 12), **payload}

    def describe(self, scores_ids: Iterable[str] = (), **inputs: Any) -> str:
        ids = sorted(set(scores_ids))
        sig = self.signature(ids, **inputs)
        return (
            f"meta-eval sig {sig['id']} · scores sig {'+'.join(ids) or 'none'} · raters {self.aggregate} · "
            f"bootstrap {self.resamples}× seed {self.seed} ({self.confidence:.0%})"
        )
