"""dHM: how far a system's stories are from people's, metric by metric (Surikuchi, Fernández,
Pezzelle, Findings of EMNLP 2024).

For a system story and the human story (or stories) it is paired with:

    d_G = |tanh(G_human) − tanh(G_system)|     G: GROOVIST before tanh (``unbounded``)
    d_C = |C_human − C_system|                 C: RoViST-C (the paper's release: prefix context)
    d_R = |R_human − R_system|                 R: RoViST-NR (the paper's release: public code)
    dHM = (d_G + d_C + d_R) / 3
    d_J = |J_human − J_system|                 J: the rubric judge's overall score mapped to [0, 1],
                                               (J − 1) / 4; a fourth distance on request (not the paper's)

A system's figures are the means over its stories that have all six scores, with percentile
bootstrap intervals over stories; signed differences (system − human) say in which direction a
system departs. Pairing: ``story`` pairs stories with the same id (the release's layout: one
model story per human story), ``sequence`` pairs a system story with every human story of its
image sequence and averages the distances (the default: it also covers sets with several human
stories per sequence, and equals ``story`` when each sequence has one human story).
Stories left out are counted by reason, never dropped silently: a system story without the
scores, one that no human story shares its sequence (or story id) with, and one whose human
counterparts all lack a score are three different reasons.

Input: score records (several per story are merged with :func:`vst_core.data.merge.merge_records`:
computed beats imported, else the first source) or a table with one row per story (columns
``story``, ``sequence``, ``system``, ``GROOVIST raw``, ``coherence``, ``NR``; a missing metric
column means the metric was not run). Both go through one vectorised core (numpy: pairing by sorted
keys, distances by ``bincount``, the bootstrap in blocks of resamples), so they give the same
numbers and 100,000 stories take seconds.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd

from vst_core.analysis.dhm_aspects import (
    ASPECTS,
    ID_COLUMNS,
    Triple,
    columns,
    dhm_aspects,
    dhm_table,
    merged,
    partial_note,
    signature_ids,
)
from vst_core.analysis.intervals import has_interval
from vst_core.data.csv_out import frame_csv
from vst_core.data.merge import Conflict
from vst_core.records import StoryScores

Pairing = Literal["sequence", "story"]
#: The systems whose stories are people's unless told otherwise: VIST's references and VWP's
#: stories as the VWP reader names them (``human``).
HUMAN_SYSTEMS: tuple[str, ...] = ("reference", "human")


KEYS: tuple[str, ...] = ("G", "C", "R", "dHM")
#: Random draws held at once by the bootstrap (resamples × stories per block).
BOOTSTRAP_BLOCK = 1 << 22


@dataclass(frozen=True, slots=True)
class Distance:
    """One system story against its human counterpart(s): absolute and signed differences."""

    system: str
    story_id: str
    sequence_id: str
    humans: tuple[str, ...]
    d: dict[str, float]  # G, C, R, dHM
    signed: dict[str, float]  # system − human, G (tanh), C, R


def reasons(pairing: Pairing, aspects: Sequence[str] = ASPECTS) -> tuple[str, str, str]:
    """Why a system story is left out: it lacks a score; no human story shares its sequence (story
    id with ``story`` pairing); every human story that shares it lacks a score."""
    every = "all three scores" if tuple(aspects) == ASPECTS else f"the {'/'.join(aspects)} scores"
    one = "one of the three scores" if tuple(aspects) == ASPECTS else f"one of the {'/'.join(aspects)} scores"
    key = "story id" if pairing == "story" else "sequence"
    return (
        f"system story without {every}",
        f"no human story shares its {key}",
        f"every human story sharing its {key} lacks {one}",
    )


@dataclass(frozen=True)
class Paired:
    """The vectorised pairing of one system's stories: row ``i`` of ``d``/``signed`` (columns:
    the aspects, then dHM for ``d``) is story ``rows[i]`` of the system's table; its human
    partners are ``humans[offsets[i]:offsets[i + 1]]``."""

    rows: np.ndarray
    d: np.ndarray
    signed: np.ndarray
    humans: np.ndarray
    offsets: np.ndarray
    missing: dict[str, int]


def _values(table: pd.DataFrame, aspects: Sequence[str]) -> np.ndarray:
    """The compared values, one column per aspect: tanh(G), C, R (NaN: no score, or not run)."""
    n, named = len(table), columns()
    values = []
    for a in aspects:
        column = named[a]
        v = pd.to_numeric(table[column], errors="coerce").to_numpy(float) if column in table else np.full(n, np.nan)
        values.append(np.tanh(v) if a == "G" else (v - 1.0) / 4.0 if a == "J" else v)
    return np.column_stack(values) if values else np.empty((n, 0))


def pair_arrays(
    system_keys: np.ndarray,
    system_values: np.ndarray,
    human_keys: np.ndarray,
    human_values: np.ndarray,
    human_ids: np.ndarray,
    pairing: Pairing = "sequence",
    aspects: Sequence[str] = ASPECTS,
) -> Paired:
    """Distances of the system stories (keys: sequence or story ids; values as :func:`_values`)
    to the complete human stories of the same key, averaged over those humans; no loop per story."""
    lacking, alone, human_lacks = reasons(pairing, aspects)
    complete_h = ~np.isnan(human_values).any(axis=1)
    complete_s = ~np.isnan(system_values).any(axis=1)
    h_keys = human_keys[complete_h]
    order = np.argsort(h_keys, kind="stable")
    unique, starts, counts = np.unique(h_keys[order], return_index=True, return_counts=True)
    group = pd.Index(unique).get_indexer(system_keys) if len(unique) else np.full(len(system_keys), -1)
    shared = (
        pd.Index(pd.unique(human_keys)).get_indexer(system_keys) >= 0 if len(human_keys) else np.zeros(len(system_keys), bool)
    )
    paired = complete_s & (group >= 0)
    missing = {
        lacking: int((~complete_s).sum()),
        alone: int((complete_s & ~shared).sum()),
        human_lacks: int((complete_s & shared & (group < 0)).sum()),
    }
    rows = np.flatnonzero(paired)
    g = group[rows]
    k = counts[g]
    offsets = np.concatenate([[0], np.cumsum(k)])
    which = np.repeat(np.arange(len(rows)), k)
    within = np.arange(offsets[-1]) - np.repeat(offsets[:-1], k)
    partners = order[starts[g].repeat(k) + within]  # rows of the complete humans
    s_values = system_values[rows][which]
    h_values = human_values[complete_h][partners]
    diff = s_values - h_values
    size = len(rows)
    d = np.empty((size, len(aspects) + 1))
    signed = np.empty((size, len(aspects)))
    for i in range(len(aspects)):
        d[:, i] = np.bincount(which, np.abs(diff[:, i]), minlength=size) / k
        signed[:, i] = np.bincount(which, diff[:, i], minlength=size) / k
    total = np.zeros(size)
    for i in range(len(aspects)):
        total = total + d[:, i]
    d[:, -1] = total / len(aspects) if aspects else np.nan
    return Paired(rows, d, signed, human_ids[complete_h][partners], offsets, missing)


def pair(
    system: Sequence[Triple], human: Sequence[Triple], pairing: Pairing = "sequence", aspects: Sequence[str] = ASPECTS
) -> tuple[list[Distance], dict[str, int]]:
    """Distances of every system story that has the ``aspects``' scores (the paper: all three) and
    a human counterpart that has them too; the others counted by reason (see :func:`reasons`).
    dHM is the mean over ``aspects``."""

    def arrays(ts: Sequence[Triple]) -> tuple[np.ndarray, np.ndarray]:
        keys = np.array([t.story_id if pairing == "story" else t.sequence_id for t in ts], dtype=object)
        values = np.array([[t.value(a) if getattr(t, a) is not None else np.nan for a in aspects] for t in ts], float)
        return keys, values.reshape(len(ts), len(aspects))

    s_keys, s_values = arrays(system)
    h_keys, h_values = arrays(human)
    found = pair_arrays(s_keys, s_values, h_keys, h_values, np.array([h.story_id for h in human], dtype=object), pairing, aspects)
    out = [
        _distance(system[row].system, system[row].story_id, system[row].sequence_id, found, i, aspects)
        for i, row in enumerate(found.rows)
    ]
    return out, found.missing


def _distance(system: str, story_id: str, sequence_id: str, found: Paired, i: int, aspects: Sequence[str]) -> Distance:
    d = {a: float(found.d[i, j]) for j, a in enumerate(aspects)}
    d["dHM"] = float(found.d[i, -1])
    signed = {a: float(found.signed[i, j]) for j, a in enumerate(aspects)}
    humans = tuple(str(h) for h in found.humans[found.offsets[i] : found.offsets[i + 1]])
    return Distance(system, story_id, sequence_id, humans, d, signed)


@dataclass(frozen=True)
class SystemDHM:
    """A system's mean distances with bootstrap intervals, signed differences, N and what was left out."""

    system: str
    n: int
    mean: dict[str, float | None]
    interval: dict[str, tuple[float, float] | None]
    signed: dict[str, float | None]
    missing: dict[str, int] = field(default_factory=dict)


def bootstrap(
    values: np.ndarray, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> list[tuple[float, float] | None]:
    """Percentile bootstrap interval of the mean of each column of ``values`` (stories resampled
    with replacement, the same draws for every column); None below
    :data:`~vst_core.analysis.intervals.MIN_INTERVAL_N` stories (the one interval rule) or with no
    resamples. The draws come in blocks of resamples (at most :data:`BOOTSTRAP_BLOCK` at once);
    numpy's stream does not depend on the blocks, so the intervals equal one ``(resamples, n)`` draw."""
    n, width = values.shape
    if resamples <= 0 or not has_interval(n):
        return [None] * width
    rng = np.random.default_rng(seed)
    boot = np.empty((resamples, width))
    step = max(1, BOOTSTRAP_BLOCK // n)
    for start in range(0, resamples, step):
        picks = rng.integers(0, n, size=(min(step, resamples - start), n))
        for i in range(width):
            boot[start : start + len(picks), i] = values[:, i][picks].mean(axis=1)
    alpha = (1 - confidence) / 2
    return [(float(np.quantile(boot[:, i], alpha)), float(np.quantile(boot[:, i], 1 - alpha))) for i in range(width)]


def _summary(
    system: str,
    d: np.ndarray,
    signed: np.ndarray,
    missing: dict[str, int],
    aspects: Sequence[str],
    resamples: int,
    seed: int,
    confidence: float,
) -> SystemDHM:
    """Means over stories (``d``: columns aspects + dHM) with :func:`bootstrap` intervals."""
    names = [*aspects, "dHM"]
    mean: dict[str, float | None] = dict.fromkeys(KEYS)
    interval: dict[str, tuple[float, float] | None] = dict.fromkeys(KEYS)
    sign: dict[str, float | None] = dict.fromkeys(ASPECTS)
    if len(d):
        mean.update({k: float(d[:, i].mean()) for i, k in enumerate(names)})
        interval.update(dict(zip(names, bootstrap(d, resamples, seed, confidence), strict=True)))
        sign.update({a: float(signed[:, i].mean()) for i, a in enumerate(aspects)})
    return SystemDHM(system, len(d), mean, interval, sign, missing)


def summarise(
    system: str,
    distances: Sequence[Distance],
    missing: dict[str, int],
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> SystemDHM:
    """Means over stories; percentile bootstrap intervals (stories resampled with replacement)."""
    aspects = [a for a in ASPECTS if distances and a in distances[0].d]
    d = np.array([[x.d[k] for k in (*aspects, "dHM")] for x in distances], float).reshape(len(distances), len(aspects) + 1)
    signed = np.array([[x.signed[a] for a in aspects] for x in distances], float).reshape(len(distances), len(aspects))
    return _summary(system, d, signed, missing, aspects, resamples, seed, confidence)


@dataclass(frozen=True)
class DHMReport:
    """Every system's dHM against the human systems, and the per-story distances behind it
    (``frame``: one row per system story compared; ``distances``: the same as objects, built when
    first asked for)."""

    systems: list[SystemDHM]
    frame: pd.DataFrame
    human_systems: tuple[str, ...]
    pairing: Pairing
    signature: dict[str, Any]
    aspects: tuple[str, ...] = ASPECTS
    conflicts: tuple[Conflict, ...] = ()
    partners: tuple[np.ndarray, np.ndarray] = (np.zeros(1, int), np.empty(0, object))

    @property
    def note(self) -> str:
        """What every output of this report must say when it is not the paper's dHM ('' when it is)."""
        return partial_note(self.aspects)

    def humans_of(self, i: int) -> tuple[str, ...]:
        """The human stories the ``i``-th row of :attr:`frame` was compared with."""
        offsets, humans = self.partners
        return tuple(str(h) for h in humans[offsets[i] : offsets[i + 1]])

    def largest(self, column: str, k: int = 5) -> pd.DataFrame:
        """The ``k`` rows of :attr:`frame` with the largest ``column`` (``d_G``, ``dHM``, ...), with
        their position in the frame as ``row``; one sort, no object per story."""
        top = self.frame.nlargest(k, column) if len(self.frame) else self.frame
        return top.assign(row=top.index.to_numpy())

    def csv_head(self) -> list[str]:
        """What every CSV of this report is stamped with: its signature, and the partial-dHM note."""
        note = [f"note: {self.note}"] if self.note else []
        return [f"dHM sig {self.signature['id']}", *note, f"signature {json.dumps(self.signature, sort_keys=True)}"]

    def csv(self) -> str:
        """Every distance as CSV: system, story_id, sequence_id, the human stories compared with
        (``humans``), each distance, dHM and the signed differences; stamped by :meth:`csv_head`.
        ``vst dhm --csv`` writes it as ``distances.csv``, the dashboard offers it."""
        f = self.frame
        humans = [" ".join(self.humans_of(i)) for i in range(len(f))]
        ids = ["system", "story_id", "sequence_id"]
        columns = [*ids, "humans", *(c for c in f.columns if c not in ids)]
        return frame_csv(f.assign(humans=humans)[columns], self.csv_head())

    def systems_csv(self) -> str:
        """One row per system (:meth:`table`) as CSV, stamped by :meth:`csv_head`."""
        rows = self.table()
        frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=["system"])
        return frame_csv(frame, self.csv_head())

    @cached_property
    def distances(self) -> list[Distance]:
        offsets, humans = self.partners
        f = self.frame
        columns = {k: f[f"d_{k}" if k != "dHM" else "dHM"].to_numpy(float) for k in (*self.aspects, "dHM")}
        signed = {a: f[f"signed_{a}"].to_numpy(float) for a in self.aspects}
        return [
            Distance(
                system,
                story,
                sequence,
                tuple(str(h) for h in humans[offsets[i] : offsets[i + 1]]),
                {k: float(v[i]) for k, v in columns.items()},
                {a: float(v[i]) for a, v in signed.items()},
            )
            for i, (system, story, sequence) in enumerate(zip(f["system"], f["story_id"], f["sequence_id"], strict=True))
        ]

    def _repr_html_(self) -> str:
        """In a notebook: one row per system (:meth:`table`), every name from a file escaped by pandas,
        with the signature beneath."""
        sig = html.escape(str(self.signature.get("id", "")))
        return pd.DataFrame(self.table()).to_html(index=False, escape=True) + f"<p><small>dHM sig {sig}</small></p>"

    def table(self) -> list[dict[str, Any]]:
        """One row per system: N, the four means with intervals, signed differences, left-out counts."""
        rows = []
        for s in self.systems:
            row: dict[str, Any] = {"system": s.system, "N": s.n}
            for k in KEYS:
                row[f"d_{k}" if k != "dHM" else "dHM"] = s.mean[k]
                lo_hi = s.interval[k]
                row[f"{'d_' + k if k != 'dHM' else 'dHM'} interval"] = list(lo_hi) if lo_hi else None
            for a in ASPECTS:
                row[f"signed {a}"] = s.signed[a]
            row["left out"] = {k: v for k, v in s.missing.items() if v}
            rows.append(row)
        return rows


def dhm_report(
    records: Sequence[StoryScores] | pd.DataFrame,
    *,
    human_systems: Sequence[str] = HUMAN_SYSTEMS,
    pairing: Pairing = "sequence",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    aspects: Sequence[str] | None = None,
    judge: bool = False,
) -> DHMReport:
    """dHM of every system that is not human, against the stories of ``human_systems``.

    ``aspects``: by default those the scores have (:func:`dhm_aspects`: the paper's three when all
    were run, fewer when only some were, said in :attr:`DHMReport.note`; with ``judge`` also the
    judge's J when present). The CLI, the Python API and the page all take this default.

    ``records``: score records (several of one story are merged, the conflicts kept in the
    report), or a story table (see :func:`dhm_table`; rows of one (system, story) are merged
    column by column, the first value kept). Both give the same numbers."""
    from vst_core.hashing import json_digest

    conflicts: list[Conflict] = []
    if isinstance(records, pd.DataFrame):
        table = _unique(records)
        signatures = list(records.attrs.get("scores_signatures", []))
    else:
        found, conflicts = merged(records)
        table = dhm_table(found)
        signatures = signature_ids(records)
    if aspects is None:
        aspects = dhm_aspects(table, judge=judge)
    key_column = "story" if pairing == "story" else "sequence"
    names = table["system"].to_numpy(object)
    keys = table[key_column].to_numpy(object)
    stories = table["story"].to_numpy(object)
    sequences = table["sequence"].to_numpy(object)
    values = _values(table, aspects)
    present = set(pd.unique(names).tolist())
    # the human systems these stories have: a default naming a system the data lacks changes no number, nor the signature
    human_systems = [h for h in human_systems if h in present] or list(human_systems)
    is_human = np.isin(names, list(human_systems))
    systems = sorted(set(pd.unique(names[~is_human]).tolist()))
    summaries, frames, offsets, partners = [], [], [np.zeros(1, int)], []
    shift = 0
    for name in systems:
        rows = np.flatnonzero(names == name)
        found_pairs = pair_arrays(keys[rows], values[rows], keys[is_human], values[is_human], stories[is_human], pairing, aspects)
        picked = rows[found_pairs.rows]
        frame = pd.DataFrame({"system": names[picked], "story_id": stories[picked], "sequence_id": sequences[picked]})
        for i, a in enumerate(aspects):
            frame[f"d_{a}"] = found_pairs.d[:, i]
        frame["dHM"] = found_pairs.d[:, -1]
        for i, a in enumerate(aspects):
            frame[f"signed_{a}"] = found_pairs.signed[:, i]
        frames.append(frame)
        offsets.append(found_pairs.offsets[1:] + shift)
        shift += int(found_pairs.offsets[-1])
        partners.append(found_pairs.humans)
        summaries.append(
            _summary(name, found_pairs.d, found_pairs.signed, found_pairs.missing, aspects, resamples, seed, confidence)
        )
    columns = ["system", "story_id", "sequence_id", *(f"d_{a}" for a in aspects), "dHM", *(f"signed_{a}" for a in aspects)]
    distances = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    payload = {
        "method": "dHM (Surikuchi et al., 2024)",
        "human_systems": list(human_systems),
        "pairing": pairing,
        "aspects": list(aspects),
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "scores_signatures": signatures,
    }
    signature = {"id": json_digest(payload, 12), **payload}
    humans = np.concatenate(partners) if partners else np.empty(0, object)
    return DHMReport(
        summaries,
        distances,
        tuple(human_systems),
        pairing,
        signature,
        tuple(aspects),
        tuple(conflicts),
        (np.concatenate(offsets), humans),
    )


def _unique(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, story) of a story table: the first value of each column that has one."""
    absent = [c for c in ID_COLUMNS if c not in table]
    if absent:
        raise ValueError(f"a dHM story table needs the columns {', '.join(ID_COLUMNS)}; {', '.join(absent)} missing")
    table = table.astype({c: str for c in ID_COLUMNS})
    if not table.duplicated(["system", "story"]).any():
        return table.reset_index(drop=True)
    return table.groupby(["system", "story"], sort=False, as_index=False).first()
