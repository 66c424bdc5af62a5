"""Reference-based baselines (BLEU-1..4, ROUGE-L, CIDEr-D, METEOR) for comparison with the
reference-free metrics, computed with the COCO caption evaluation package.

A story is scored against the references of its image sequence other than itself (the "reference
absent" rule of Vrank Eq. 3 applied story by story), so a reference is never matched with itself.
Text is lower-cased and split into words and punctuation by a regular expression (the package's
own tokenizer needs Java). METEOR runs the package's Java program: without a Java runtime it is
reported as unavailable, never filled in.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from typing import Protocol

import numpy as np

BASELINES: tuple[str, ...] = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "ROUGE-L", "CIDEr", "METEOR")
REFERENCE_SYSTEMS: frozenset[str] = frozenset({"reference", "human", "gold", "ground truth", "gt"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def is_reference(system: str | None) -> bool:
    return (system or "").strip().lower() in REFERENCE_SYSTEMS


def normalize(text: str) -> str:
    """Lower-case and separate words and punctuation by single spaces."""
    return " ".join(_WORD.findall(text.lower()))


class StoryText(Protocol):
    """What a baseline reads of a story (a Story and a StoryScores record both fit)."""

    @property
    def story_id(self) -> str: ...
    @property
    def sequence_id(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def sentences(self) -> Sequence[str]: ...


def reference_sets(records: Sequence[StoryText]) -> dict[str, list[str]]:
    """story_id -> normalized references of its sequence, leaving out itself and any reference
    with the same text; stories whose sequence has no other reference are absent."""
    refs: dict[str, list[tuple[str, str]]] = {}
    for r in records:
        if is_reference(r.system) and r.sentences:
            refs.setdefault(r.sequence_id, []).append((r.story_id, normalize(" ".join(r.sentences))))
    out: dict[str, list[str]] = {}
    for r in records:
        if not r.sentences:
            continue
        text = normalize(" ".join(r.sentences))
        others = [t for sid, t in refs.get(r.sequence_id, []) if sid != r.story_id and t != text]
        if others:
            out[r.story_id] = others
    return out


def baseline_scores(records: Sequence[StoryText]) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Per-story baseline scores and, for each baseline that could not run, the reason.

    Returns ``({story_id: {name: score}}, {name: reason})``; stories without another reference in
    their sequence have no baseline score."""
    unavailable: dict[str, str] = {}
    try:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge
    except ImportError as exc:  # pragma: no cover - the package is a requirement
        return {}, {name: f"pycocoevalcap is not installed ({exc})" for name in BASELINES}
    refs = reference_sets(records)
    if not refs:
        return {}, {name: "no story has a reference of its sequence to compare with" for name in BASELINES}
    texts = {r.story_id: normalize(" ".join(r.sentences)) for r in records if r.story_id in refs}
    ids = list(refs)
    gts = {sid: refs[sid] for sid in ids}
    res = {sid: [texts[sid]] for sid in ids}
    scores: dict[str, dict[str, float]] = {sid: {} for sid in ids}
    _, bleu = Bleu(4).compute_score(gts, res, verbose=0)
    for n, per_story in enumerate(bleu, start=1):
        for sid, value in zip(ids, per_story):
            scores[sid][f"BLEU-{n}"] = float(value)
    _, rouge = Rouge().compute_score(gts, res)
    _, cider = Cider().compute_score(gts, res)
    for sid, r_value, c_value in zip(ids, np.asarray(rouge), np.asarray(cider)):
        scores[sid]["ROUGE-L"] = float(r_value)
        scores[sid]["CIDEr"] = float(c_value)
    meteor, reason = _meteor(gts, res, ids)
    if meteor is None:
        unavailable["METEOR"] = reason
    else:
        for sid, value in zip(ids, meteor):
            scores[sid]["METEOR"] = float(value)
    return scores, unavailable


def _meteor(gts: dict[str, list[str]], res: dict[str, list[str]], ids: list[str]) -> tuple[list[float] | None, str]:
    if shutil.which("java") is None:
        return None, "METEOR needs a Java runtime (java on PATH); none was found"
    try:
        from pycocoevalcap.meteor.meteor import Meteor

        # the scorer's Java process ends when the scorer is garbage-collected, on return
        _, values = Meteor().compute_score({k: gts[k] for k in ids}, {k: res[k] for k in ids})
        return [float(v) for v in values], ""
    except Exception as exc:
        return None, f"METEOR failed to run ({type(exc).__name__}: {exc})"
