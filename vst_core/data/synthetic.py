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
from collections.abc import Sequence
from pathlib import Path

from vst_core.hashing import json_line
from vst_core.records import (
    CoherencePair,
    CoherenceScores,
    GroundingScores,
    InterRepeat,
    IntraRepeat,
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


def synthetic_record(story_id: str, system: str, rng: random.Random, signature: dict[str, object]) -> StoryScores:
    """One story with full evidence (see the module)."""
    sentences = tuple(_sentence(rng) for _ in range(5))
    phrases = []
    for k in range(rng.randint(6, 12)):
        sentence = rng.randrange(5)
        noun = rng.choice(_NOUNS)
        start = max(0, sentences[sentence].find(noun))
        cosine = rng.uniform(0.15, 0.35)
        score = 2.5 * cosine - 0.6159241924121119
        phrases.append(
            PhraseMatch(
                f"the {noun}", noun, sentence, (start, start + len(noun)), cosine, score, rng.randrange(5),
                (10.0 * k, 12.0, 10.0 * k + 80, 96.0), noun, 4.5, 4.5 * score, score >= 0,
            )
        )  # fmt: skip
    unbounded = sum(p.contribution for p in phrases) / len(phrases)
    grounding = GroundingScores(
        round(math.tanh(unbounded), 6), unbounded, 0.6159241924121119, rng.random(),
        tuple(rng.random() for _ in range(5)), rng.uniform(0.1, 0.4), tuple(phrases),
    )  # fmt: skip
    pairs = tuple(CoherencePair(i, i + 1, rng.random()) for i in range(4))
    coherence = CoherenceScores(sum(p.probability or 0 for p in pairs) / 4, pairs, 0, "bert-nsp")
    inter = tuple(
        InterRepeat(i, i - 1, rng.random() / 3, ("the", "we"), ((0, 3), (8, 10)), ((0, 3), (5, 7))) for i in range(1, 5)
    )
    intra = tuple(IntraRepeat(i, rng.random() / 4, ("the",), (0, 20), (0, 10), ((4, 7),)) for i in range(3))
    nr = rng.uniform(0.6, 1.0)
    redundancy = RedundancyScores(nr, 1 - nr, 1 - nr, "paper", 4, (), inter, intra)
    return StoryScores(
        story_id,
        story_id,
        system,
        sentences,
        tuple(f"images/{story_id}_{k}.jpg" for k in range(5)),
        {"redundancy": redundancy, "coherence": coherence, "grounding": grounding},
        signature=signature,
    )


def write_scores_file(path: Path, n: int, systems: Sequence[str] = SYSTEMS[:2], seed: int = 0) -> int:
    """Write ``n`` stories (ids shared by ``systems`` in turn) to ``path``; returns ``n``."""
    from vst_core.config import Settings
    from vst_core.signature import signature as settings_signature

    rng = random.Random(seed)
    settings = Settings(metrics=("redundancy", "coherence", "grounding"))
    signature: dict[str, object] = settings_signature(settings, {"stories": f"synthetic-{n}-{seed}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for k in range(n):
            system = systems[k % len(systems)]
            story_id = str(40000 + k // len(systems))
            fh.write(json_line(synthetic_record(story_id, system, rng, signature).to_json()) + "\n")
    return n
