"""Scores files at a realistic size and in the released layout, for benchmarks and slow tests.

:func:`write_scores_file` writes ``n`` stories as ``vst score`` would: several systems under the
same story ids (the layout of the dHM release: a human and a model story per id, the id being the
sequence's), full evidence per story (noun phrases with boxes, coherence pairs, repeated spans
with character offsets), one JSON line each, about 3.5 KB a story like the release's NR files.
The numbers are random but consistent with their evidence's shape; nothing here is a score.

>>> from pathlib import Path; import tempfile
>>> path = Path(tempfile.mkdtemp()) / "s.jsonl"
>>> write_scores_file(path, 6, systems=("human", "llava"))
6
>>> sum(1 for _ in path.open())
6
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from pathlib import Path

from vst_core.contract import registry
from vst_core.hashing import json_line
from vst_core.records import MetricScores, StoryScores, decode

_NOUNS = "family beach dog party cake friends park city lake mountain house car street tree dinner game church crowd".split()
_WORDS = "we went to the had a great time and then all of us were very happy at our it was fun day".split()
SYSTEMS: tuple[str, ...] = ("human", "llava", "arel", "glac", "gpt")
#: The metrics of a synthetic record, whose record types the registry gives (their JSON is built here).
METRICS: tuple[str, ...] = ("redundancy", "coherence", "grounding")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS if rng.random() < 0.7 else _NOUNS) for _ in range(rng.randint(6, 14))]
    return " ".join(words).capitalize() + "."


def _spans(sentence: str, word: str) -> tuple[tuple[int, int], ...]:
    return tuple((m.start(), m.end()) for m in re.finditer(rf"\b{re.escape(word)}\b", sentence, flags=re.IGNORECASE))


def synthetic_record(
    story_id: str, system: str, rng: random.Random, signature: dict[str, object], images: Sequence[str] = ()
) -> StoryScores:
    """One story with full evidence (see the module); the spans point at the words they name. Each
    metric's record is built as its JSON and read by the record type the registry gives it."""
    sentences = tuple(_sentence(rng) for _ in range(5))
    phrases: list[dict[str, object]] = []
    contributions: list[float] = []
    for k in range(rng.randint(6, 12)):
        sentence = rng.randrange(5)
        words = re.findall(r"[a-z]+", sentences[sentence].lower())
        nouns = [w for w in words if w in _NOUNS] or words[:1]
        noun = rng.choice(nouns)
        start, end = _spans(sentences[sentence], noun)[0]
        cosine = rng.uniform(0.15, 0.35)
        score = 2.5 * cosine - 0.6159241924121119
        phrases.append(
            {
                "text": f"the {noun}", "surface": sentences[sentence][start:end], "sentence": sentence,
                "span": [start, end], "best_cosine": cosine, "score": score, "image": rng.randrange(5),
                "box": [10.0 * k, 12.0, 10.0 * k + 80, 96.0], "box_label": noun, "weight": 4.5,
                "contribution": 4.5 * score, "positive": score >= 0,
            }
        )  # fmt: skip
        contributions.append(4.5 * score)
    unbounded = sum(contributions) / len(phrases)
    grounding = {
        "score": round(math.tanh(unbounded), 6), "unbounded": unbounded, "theta": 0.6159241924121119,
        "temporal_misalignment": rng.random(), "misalignment_per_sentence": [rng.random() for _ in range(5)],
        "np_proportion": rng.uniform(0.1, 0.4), "phrases": phrases,
    }  # fmt: skip
    probabilities = [rng.random() for _ in range(4)]
    pairs = [{"from": i, "to": i + 1, "probability": p} for i, p in enumerate(probabilities)]
    coherence = {"score": sum(probabilities) / 4, "pairs": pairs, "weakest": 0, "model": "bert-nsp"}
    inter: list[dict[str, object]] = []
    jaccards: list[float] = []
    for i in range(1, 5):
        now, before = (set(re.findall(r"[a-z]+", sentences[j].lower())) for j in (i, i - 1))
        shared = sorted(now & before)
        if shared:
            jaccards.append(len(shared) / len(now | before))
            inter.append(
                {
                    "sentence": i, "earlier": i - 1, "jaccard": jaccards[-1], "words": shared,
                    "spans": [list(sp) for w in shared for sp in _spans(sentences[i], w)],
                    "earlier_spans": [list(sp) for w in shared for sp in _spans(sentences[i - 1], w)],
                }
            )  # fmt: skip
    nr = 1 - (sum(jaccards) / 4) / 2
    redundancy = {
        "score": nr, "inter": 1 - nr, "intra": None, "variant": "paper", "n": 4, "notes": [],
        "inter_repeats": inter, "intra_repeats": [],
    }  # fmt: skip
    built: dict[str, object] = {"redundancy": redundancy, "coherence": coherence, "grounding": grounding}
    types = registry().types
    metrics: dict[str, MetricScores] = {name: decode(types[name], built[name], f"metrics.{name}") for name in METRICS}
    return StoryScores(
        story_id,
        story_id,
        system,
        sentences,
        tuple(images) or tuple(f"images/{story_id}_{k}.jpg" for k in range(5)),
        metrics,
        signature=signature,
    )


def write_scores_file(
    path: Path, n: int, systems: Sequence[str] = SYSTEMS[:2], seed: int = 0, images: Sequence[Sequence[str]] = ()
) -> int:
    """Write ``n`` stories (ids shared by ``systems`` in turn) to ``path``; returns ``n``. With
    ``images`` (lists of five image paths relative to ``path``'s folder), sequence k shows
    ``images[k % len(images)]``; else each story names images that do not exist."""
    from vst_core.config import Settings
    from vst_core.signature import signature as settings_signature

    rng = random.Random(seed)
    settings = Settings(metrics=METRICS)
    signature: dict[str, object] = settings_signature(settings, {"stories": f"synthetic-{n}-{seed}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for k in range(n):
            system = systems[k % len(systems)]
            story_id = str(40000 + k // len(systems))
            refs = images[(k // len(systems)) % len(images)] if images else ()
            fh.write(json_line(synthetic_record(story_id, system, rng, signature, refs).to_json()) + "\n")
    return n
