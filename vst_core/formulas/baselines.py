"""Reference-based baselines (BLEU-1..4, ROUGE-L, CIDEr-D, METEOR) for comparison with the
reference-free metrics, computed with the COCO caption evaluation package.

A story is scored against the references of its image sequence other than itself (the "reference
absent" rule of Vrank Eq. 3 applied story by story), so a reference is never matched with itself.
Text is lower-cased and split into words and punctuation by a regular expression (the package's
own tokenizer needs Java). METEOR runs the package's Java program: without a Java runtime it is
reported as unavailable, never filled in.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from vst_core.story import StoryText

BASELINES: tuple[str, ...] = ("BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "ROUGE-L", "CIDEr", "METEOR")
REFERENCE_SYSTEMS: frozenset[str] = frozenset({"reference", "human", "gold", "ground truth", "gt"})
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")


def is_reference(system: str | None) -> bool:
    return (system or "").strip().lower() in REFERENCE_SYSTEMS


def normalize(text: str) -> str:
    """Lower-case and separate words and punctuation by single spaces."""
    return " ".join(_WORD.findall(text.lower()))


def reference_sets(
    records: Sequence[StoryText], tokens: Mapping[str, str] | None = None, only: Collection[str] | None = None
) -> dict[str, list[str]]:
    """story_id -> tokenised references of its sequence, leaving out itself and any reference with
    the same text; only for the stories in ``only`` (default all); stories whose sequence has no
    other reference are absent. ``tokens``: story_id -> tokenised text (default :func:`normalize`)."""
    text = dict(tokens) if tokens is not None else {r.story_id: normalize(" ".join(r.sentences)) for r in records}
    refs: dict[str, list[str]] = {}
    for r in records:
        if is_reference(r.system) and r.sentences and r.story_id in text:
            refs.setdefault(r.sequence_id, []).append(r.story_id)
    out: dict[str, list[str]] = {}
    for r in records:
        if not r.sentences or (only is not None and r.story_id not in only) or r.story_id not in text:
            continue
        others = [text[sid] for sid in refs.get(r.sequence_id, []) if sid != r.story_id and text[sid] != text[r.story_id]]
        if others:
            out[r.story_id] = others
    return out


def baseline_tokenizer() -> str:
    """The tokenizer the baselines use: the COCO caption package's PTB tokenizer when Java runs (as
    the standard pipeline), else :func:`normalize`."""
    if shutil.which("java") is not None:
        return "the PTB tokenizer of the COCO caption evaluation (Java), as the standard pipeline"
    return "a regular expression (no Java runtime here: not the COCO pipeline's PTB tokenizer)"


def baselines_said(meteor: bool) -> str:
    """What the baselines did, as information for every output."""
    which = "BLEU-1..4, ROUGE-L, CIDEr" + (" and METEOR" if meteor else "")
    later = "" if meteor else "; METEOR on request (its Java scorer takes about 13 s to load)"
    return f"baselines: {which} against the other stories of each sequence, text tokenised with {baseline_tokenizer()}{later}"


def tokenize_stories(texts: Mapping[str, str]) -> dict[str, str]:
    """story_id -> tokenised, lower-cased text, with :func:`baseline_tokenizer`'s tokenizer."""
    if shutil.which("java") is not None and texts:
        try:
            from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

            done = PTBTokenizer().tokenize({k: [{"caption": v}] for k, v in texts.items()})
            return {k: str(done[k][0]) for k in texts}
        except Exception:
            pass
    return {k: normalize(v) for k, v in texts.items()}


def baseline_scores(
    records: Sequence[StoryText], only: Collection[str] | None = None, *, meteor: bool = True
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Per-story baseline scores and, for each baseline that could not run, the reason.

    Returns ``({story_id: {name: score}}, {name: reason})``; stories without another reference in
    their sequence have no baseline score. With ``only`` (e.g. the judged stories), only those
    stories and the references of their sequences are tokenised and scored. Without ``meteor``
    METEOR is not run (its Java scorer takes about 13 s to load) and not reported as unavailable."""
    if importlib.util.find_spec("pycocoevalcap") is None:  # pragma: no cover - the package is a requirement
        return {}, {name: "pycocoevalcap is not installed" for name in BASELINES}
    wanted = {r.sequence_id for r in records if only is None or r.story_id in only}
    needed = [r for r in records if r.sequence_id in wanted and r.sentences]
    tokens = tokenize_stories({r.story_id: " ".join(r.sentences) for r in needed})
    refs = reference_sets(needed, tokens, only)
    if not refs:
        return {}, {name: "no story has a reference of its sequence to compare with" for name in BASELINES}
    ids = list(refs)
    gts = {sid: refs[sid] for sid in ids}
    res = {sid: [tokens[sid]] for sid in ids}
    return _score_all(ids, gts, res, meteor)


def _score_all(
    ids: list[str], gts: dict[str, list[str]], res: dict[str, list[str]], meteor: bool = True
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    unavailable: dict[str, str] = {}
    scores: dict[str, dict[str, float]] = {sid: {} for sid in ids}
    _, bleu = Bleu(4).compute_score(gts, res, verbose=0)
    for n, per_story in enumerate(bleu, start=1):
        for sid, value in zip(ids, per_story, strict=True):
            scores[sid][f"BLEU-{n}"] = float(value)
    _, rouge = Rouge().compute_score(gts, res)
    _, cider = Cider().compute_score(gts, res)
    for sid, r_value, c_value in zip(ids, np.asarray(rouge), np.asarray(cider), strict=True):
        scores[sid]["ROUGE-L"] = float(r_value)
        scores[sid]["CIDEr"] = float(c_value)
    if not meteor:
        return scores, unavailable
    values, reason = _meteor(gts, res, ids)
    if values is None:
        unavailable["METEOR"] = reason
    else:
        for sid, value in zip(ids, values, strict=True):
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
