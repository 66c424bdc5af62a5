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

from vst_core.hashing import json_line
from vst_core.metric_spec import registry
from vst_core.records import (
    CoherenceScores,
    GroundingScores,
    InterRepeat,
    PhraseMatch,
    RedundancyScores,
    StoryScores,
)

_NOUNS = "family beach dog party cake friends park city lake mountain house car street tree dinner game church crowd".split()
_WORDS = "we went to the had a great time and then all of us were very happy at our it was fun day".split()
SYSTEMS: tuple[str, ...] = ("human", "llava", "arel", "glac", "gpt")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS if rng.random() < 0.7 else _NOUNS) for _ in range(rng.randint(6, 14))]
    return " ".join(words).capitalize() + "."


def _spans(sentence: str, word: str) -> tuple[tuple[int, int], ...]:
    return tuple((m.start(), m.end()) for m in re.finditer(rf"\b{re.escape(word)}\b", sentence, flags=re.IGNORECASE))


def synthetic_record(
    story_id: str, system: str, rng: random.Random, signature: dict[str, object], images: Sequence[str] = ()
) -> StoryScores:
    """One story with full evidence (see the module); the spans point at the words they name."""
    sentences = tuple(_sentence(rng) for _ in range(5))
    phrases = []
    for k in range(rng.randint(6, 12)):
        sentence = rng.randrange(5)
        words = re.findall(r"[a-z]+", sentences[sentence].lower())
        nouns = [w for w in words if w in _NOUNS] or words[:1]
        noun = rng.choice(nouns)
        start, end = _spans(sentences[sentence], noun)[0]
        cosine = rng.uniform(0.15, 0.35)
        score = 2.5 * cosine - 0.6159241924121119
        phrases.append(
            PhraseMatch(
                f"the {noun}", sentences[sentence][start:end], sentence, (start, end), cosine, score, rng.randrange(5),
                (10.0 * k, 12.0, 10.0 * k + 80, 96.0), noun, 4.5, 4.5 * score, score >= 0,
            )
        )  # fmt: skip
    unbounded = sum(p.contribution for p in phrases) / len(phrases)
    grounding = GroundingScores(
        round(math.tanh(unbounded), 6), unbounded, 0.6159241924121119, rng.random(),
        tuple(rng.random() for _ in range(5)), rng.uniform(0.1, 0.4), tuple(phrases),
    )  # fmt: skip
    from vst_core.records import CoherencePair, CoherenceScores  # RoViST-C's, read through the registry

    pairs = tuple(CoherencePair(i, i + 1, rng.random()) for i in range(4))
    coherence = CoherenceScores(sum(p.probability or 0 for p in pairs) / 4, pairs, 0, "bert-nsp")
    inter = []
    for i in range(1, 5):
        now, before = (set(re.findall(r"[a-z]+", sentences[j].lower())) for j in (i, i - 1))
        shared = sorted(now & before)
        if shared:
            inter.append(
                InterRepeat(
                    i, i - 1, len(shared) / len(now | before), tuple(shared),
                    tuple(sp for w in shared for sp in _spans(sentences[i], w)),
                    tuple(sp for w in shared for sp in _spans(sentences[i - 1], w)),
                )
            )  # fmt: skip
    nr = 1 - (sum(r.jaccard for r in inter) / 4) / 2
    redundancy = RedundancyScores(nr, 1 - nr, None, "paper", 4, (), tuple(inter), ())
    return StoryScores(
        story_id,
        story_id,
        system,
        sentences,
        tuple(images) or tuple(f"images/{story_id}_{k}.jpg" for k in range(5)),
        {_name_of(type(r)): r for r in (redundancy, coherence, grounding)},
        signature=signature,
    )


def _name_of(kind: type) -> str:
    """The registry's name of the metric whose record type is ``kind``."""
    return next(name for name, t in registry().types.items() if t is kind)


def write_scores_file(
    path: Path, n: int, systems: Sequence[str] = SYSTEMS[:2], seed: int = 0, images: Sequence[Sequence[str]] = ()
) -> int:
    """Write ``n`` stories (ids shared by ``systems`` in turn) to ``path``; returns ``n``. With
    ``images`` (lists of five image paths relative to ``path``'s folder), sequence k shows
    ``images[k % len(images)]``; else each story names images that do not exist."""
    from vst_core.config import Settings
    from vst_core.signature import signature as settings_signature

    rng = random.Random(seed)
    settings = Settings(metrics=(_name_of(RedundancyScores), _name_of(CoherenceScores), _name_of(GroundingScores)))
    signature: dict[str, object] = settings_signature(settings, {"stories": f"synthetic-{n}-{seed}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for k in range(n):
            system = systems[k % len(systems)]
            story_id = str(40000 + k // len(systems))
            refs = images[(k // len(systems)) % len(images)] if images else ()
            fh.write(json_line(synthetic_record(story_id, system, rng, signature, refs).to_json()) + "\n")
    return n
