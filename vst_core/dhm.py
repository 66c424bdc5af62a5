"""dHM: how far a system's stories are from people's, metric by metric (Surikuchi, Fernández,
Pezzelle, Findings of EMNLP 2024).

For a system story and the human story (or stories) it is paired with:

    d_G = |tanh(G_human) − tanh(G_system)|     G: GROOVIST before tanh (``unbounded``)
    d_C = |C_human − C_system|                 C: RoViST-C (the paper's release: prefix context)
    d_R = |R_human − R_system|                 R: RoViST-NR (the paper's release: public code)
    dHM = (d_G + d_C + d_R) / 3

A system's figures are the means over its stories that have all six scores, with percentile
bootstrap intervals over stories; signed differences (system − human) say in which direction a
system departs. Pairing: ``story`` pairs stories with the same id (the release's layout: one
model story per human story), ``sequence`` pairs a system story with every human story of its
image sequence and averages the distances (the default: it also covers sets with several human
stories per sequence, and equals ``story`` when each sequence has one human story).
Stories left out are counted by reason, never dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from vst_core.records import StoryScores

Pairing = Literal["sequence", "story"]
ASPECTS: tuple[str, ...] = ("G", "C", "R")
#: Systems whose stories are the human ones, unless told otherwise.
HUMAN_SYSTEMS: tuple[str, ...] = ("reference",)


@dataclass(frozen=True, slots=True)
class Triple:
    """The three scores of one story (None where missing): G unbounded, C, R."""

    story_id: str
    sequence_id: str
    system: str
    G: float | None
    C: float | None
    R: float | None

    def has(self, aspects: Sequence[str]) -> bool:
        return all(getattr(self, a) is not None for a in aspects)

    def value(self, aspect: str) -> float:
        """The value a distance compares: tanh(G), C or R."""
        v = getattr(self, aspect)
        return math.tanh(v) if aspect == "G" else float(v)


def triples(records: Iterable[StoryScores]) -> list[Triple]:
    """One triple per (system, story), merging the metrics of records from several files (a later
    record fills what an earlier one lacks and replaces what it has)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        row = merged.setdefault((r.system, r.story_id), {"sequence_id": r.sequence_id})
        if r.sequence_id and r.sequence_id != r.story_id:
            row["sequence_id"] = r.sequence_id
        if r.grounding is not None and r.grounding.unbounded is not None:
            row["G"] = r.grounding.unbounded
        if r.coherence is not None and r.coherence.score is not None:
            row["C"] = r.coherence.score
        if r.redundancy is not None and r.redundancy.score is not None:
            row["R"] = r.redundancy.score
    return [
        Triple(sid, row["sequence_id"], system, row.get("G"), row.get("C"), row.get("R")) for (system, sid), row in merged.items()
    ]


@dataclass(frozen=True, slots=True)
class Distance:
    """One system story against its human counterpart(s): absolute and signed differences."""

    system: str
    story_id: str
    sequence_id: str
    humans: tuple[str, ...]
    d: dict[str, float]  # G, C, R, dHM
    signed: dict[str, float]  # system − human, G (tanh), C, R


def pair(
    system: Sequence[Triple], human: Sequence[Triple], pairing: Pairing = "sequence", aspects: Sequence[str] = ASPECTS
) -> tuple[list[Distance], dict[str, int]]:
    """Distances of every system story that has the ``aspects``' scores (the paper: all three) and
    a human counterpart that has them too; the others counted by reason. dHM is the mean over
    ``aspects``."""
    complete_humans = [h for h in human if h.has(aspects)]
    by_key: dict[str, list[Triple]] = {}
    for h in complete_humans:
        by_key.setdefault(h.story_id if pairing == "story" else h.sequence_id, []).append(h)
    out: list[Distance] = []
    every = "all three scores" if tuple(aspects) == ASPECTS else f"the {'/'.join(aspects)} scores"
    lacking, alone = f"system story without {every}", f"no human story with {every}"
    missing = {lacking: 0, alone: 0}
    for s in system:
        if not s.has(aspects):
            missing[lacking] += 1
            continue
        partners = by_key.get(s.story_id if pairing == "story" else s.sequence_id, [])
        if not partners:
            missing[alone] += 1
            continue
        d = {a: float(np.mean([abs(h.value(a) - s.value(a)) for h in partners])) for a in aspects}
        d["dHM"] = sum(d[a] for a in aspects) / len(aspects)
        signed = {a: float(np.mean([s.value(a) - h.value(a) for h in partners])) for a in aspects}
        out.append(Distance(s.system, s.story_id, s.sequence_id, tuple(h.story_id for h in partners), d, signed))
    return out, missing


@dataclass(frozen=True)
class SystemDHM:
    """A system's mean distances with bootstrap intervals, signed differences, N and what was left out."""

    system: str
    n: int
    mean: dict[str, float | None]
    interval: dict[str, tuple[float, float] | None]
    signed: dict[str, float | None]
    missing: dict[str, int] = field(default_factory=dict)


def summarise(
    system: str,
    distances: Sequence[Distance],
    missing: dict[str, int],
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SystemDHM:
    """Means over stories; percentile bootstrap intervals (stories resampled with replacement)."""
    keys = ("G", "C", "R", "dHM")
    if not distances:
        return SystemDHM(system, 0, dict.fromkeys(keys), dict.fromkeys(keys), dict.fromkeys(ASPECTS), missing)
    values = np.array([[d.d.get(k, np.nan) for k in keys] for d in distances])
    present = [i for i, k in enumerate(keys) if not np.isnan(values[:, i]).any()]
    mean: dict[str, float | None] = dict.fromkeys(keys)
    mean.update({keys[i]: float(values[:, i].mean()) for i in present})
    interval: dict[str, tuple[float, float] | None] = dict.fromkeys(keys)
    if resamples > 0 and len(distances) > 1:
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(distances), size=(resamples, len(distances)))
        boot = values[picks].mean(axis=1)
        alpha = (1 - confidence) / 2
        for i in present:
            interval[keys[i]] = (float(np.quantile(boot[:, i], alpha)), float(np.quantile(boot[:, i], 1 - alpha)))
    signed: dict[str, float | None] = {
        a: float(np.mean([d.signed[a] for d in distances])) if a in distances[0].signed else None for a in ASPECTS
    }
    return SystemDHM(system, len(distances), mean, interval, signed, missing)


@dataclass(frozen=True)
class DHMReport:
    """Every system's dHM against the human systems, and the per-story distances behind it."""

    systems: list[SystemDHM]
    distances: list[Distance]
    human_systems: tuple[str, ...]
    pairing: Pairing
    signature: dict[str, Any]
    aspects: tuple[str, ...] = ASPECTS

    def table(self) -> list[dict[str, Any]]:
        """One row per system: N, the four means with intervals, signed differences, left-out counts."""
        rows = []
        for s in self.systems:
            row: dict[str, Any] = {"system": s.system, "N": s.n}
            for k in ("G", "C", "R", "dHM"):
                row[f"d_{k}" if k != "dHM" else "dHM"] = s.mean[k]
                lo_hi = s.interval[k]
                row[f"{'d_' + k if k != 'dHM' else 'dHM'} interval"] = list(lo_hi) if lo_hi else None
            for a in ASPECTS:
                row[f"signed {a}"] = s.signed[a]
            row["left out"] = {k: v for k, v in s.missing.items() if v}
            rows.append(row)
        return rows


def dhm_report(
    records: Sequence[StoryScores],
    *,
    human_systems: Sequence[str] = HUMAN_SYSTEMS,
    pairing: Pairing = "sequence",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    aspects: Sequence[str] = ASPECTS,
) -> DHMReport:
    """dHM of every system in ``records`` that is not human, against the stories of ``human_systems``
    (``aspects``: the paper's three by default; fewer when only some metrics were run, then said)."""
    from vst_core.hashing import json_digest

    all_triples = triples(records)
    humans = [t for t in all_triples if t.system in human_systems]
    systems = sorted({t.system for t in all_triples} - set(human_systems))
    summaries, distances = [], []
    for name in systems:
        found, missing = pair([t for t in all_triples if t.system == name], humans, pairing, aspects)
        distances.extend(found)
        summaries.append(summarise(name, found, missing, resamples, seed, confidence))
    scores_ids = sorted({str(r.signature.get("id")) for r in records if r.signature.get("id")})
    payload = {
        "method": "dHM (Surikuchi et al., 2024)",
        "human_systems": list(human_systems),
        "pairing": pairing,
        "aspects": list(aspects),
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "scores_signatures": scores_ids,
    }
    signature = {"id": json_digest(payload, 12), **payload}
    return DHMReport(summaries, distances, tuple(human_systems), pairing, signature, tuple(aspects))


def available_aspects(records: Iterable[StoryScores]) -> tuple[str, ...]:
    """The dHM aspects some record has a score for (G: grounding, C: coherence, R: NR), in order."""
    found = {a for t in triples(records) for a in ASPECTS if getattr(t, a) is not None}
    return tuple(a for a in ASPECTS if a in found)
