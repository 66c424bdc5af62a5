"""Tables of records and reports, the view a page renders, and exports that carry the signature."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vst_core.analysis.intervals import MIN_INTERVAL_N, SMALL_N_MARK
from vst_core.config import Settings
from vst_core.contract import AgainKey, registry
from vst_core.data import Story, StorySet, story_of_record
from vst_core.data.csv_out import frame_csv
from vst_core.data.index import ScoresIndex, rows_with_id, story_rows
from vst_core.data.paths import resolve_image
from vst_core.hashing import json_digest
from vst_core.records import StoryScores, fields_of
from vst_core.signature import Inputs, describe, describe_signature, inputs_of, recorded_inputs, signature


class RunView:
    """What the dashboard pages render: one row per story ``(system, story_id)`` in :attr:`table`
    (the numbers, from the scored records or from a :class:`~vst_core.data.index.ScoresIndex`),
    and each story's full record and :class:`Story` read only when a page shows it.

    Build it with :meth:`of_records` (a set scored in this process: small, all in memory) or
    :meth:`of_index` (scores files: the numbers indexed, the evidence read lazily)."""

    def __init__(
        self,
        table: pd.DataFrame,
        settings: Settings,
        device: str,
        *,
        root: Path,
        inputs: dict[str, str],
        key: str,
        records: Sequence[StoryScores] | None = None,
        story_set: StorySet | None = None,
        index: ScoresIndex | None = None,
    ) -> None:
        self.table = table
        self.settings = settings
        self.device = device
        self.root = root
        self.inputs = inputs
        self.key = key
        self._records = list(records) if records is not None else None
        self._stories = {(s.system, s.story_id): s for s in story_set} if story_set is not None else None
        self.index = index
        self._rows: dict[tuple[str, str], int] | None = None
        self._sequences: dict[str, np.ndarray] | None = None
        self._again: AgainKey | None = None  # the re-aggregated metric's settings (GROOVIST's θ, −P, −C) re-applied
        self._again_rows: np.ndarray = np.zeros(0, dtype=bool)  # row -> whether its record keeps its items

    @classmethod
    def of_records(cls, story_set: StorySet, records: Sequence[StoryScores], settings: Settings, device: str) -> RunView:
        """A view of records scored in this process (``records[k]`` is the k-th story's)."""
        kinds = {(s.system, s.story_id): ",".join(sorted({str(p.kind) for p in s.problems})) for s in story_set}
        table = scores_table(records, settings.metrics)
        table["problems"] = [kinds.get((r.system, r.story_id), "") for r in records]
        found = recorded_inputs(records)
        inputs = found if found is not None else inputs_of(story_set)
        key = json_digest([story_set.digest(), json_digest([r.to_json() for r in records])], 24)
        return cls(
            table, settings, device, root=story_set.root, inputs=inputs, key=key,
            records=records, story_set=story_set,
        )  # fmt: skip

    @classmethod
    def of_index(cls, index: ScoresIndex, root: Path, settings: Settings, recorded: Settings | None = None) -> RunView:
        """A view of indexed scores files: the signature names every file by its digest. When
        ``settings`` ask for another θ, penalty or weighting than ``recorded`` (the file's), GROOVIST
        is re-applied to every story's stored similarities (computed records; imported scores have
        none and stay as released), in the table at once and in each record when it is read."""
        inputs = {f"scores {k + 1}": f.sha256[:16] for k, f in enumerate(index.files)}
        if len(index.files) == 1:
            inputs = {"scores": index.files[0].sha256[:16]}
        table, again, has, found = index.table, None, np.zeros(0, dtype=bool), registry().reaggregated
        if recorded is not None and found is not None and len(index.phrases) and found[1].key(settings) != found[1].key(recorded):
            again = found[1].key(settings)
            items = index.phrases
            rows = items["row"].to_numpy()
            columns = found[1].columns(items["cosine"].to_numpy(), items["weight"].to_numpy(), rows, len(table), again)
            has = np.zeros(len(table), dtype=bool)
            has[rows] = True
            table = table.copy()
            for column, values in columns.items():
                table.loc[has, column] = values[has]
        view = cls(
            table, settings, "none (no model in use)", root=root, inputs=inputs,
            key=json_digest([index.digest, str(root), list(again or ())], 24), index=index,
        )  # fmt: skip
        view._again, view._again_rows = again, has
        return view

    def __len__(self) -> int:
        return len(self.table)

    def row_of(self, system: str, story_id: str) -> int | None:
        """The row of the story ``(system, story_id)``, or None."""
        if self._rows is None:
            self._rows = story_rows(self.table)
        return self._rows.get((system, story_id))

    def rows_of_story(self, story_id: str) -> list[int]:
        """Every row with this story id, one per system that has it (the release's shared ids)."""
        return rows_with_id(self.table, story_id)

    def find(self, story_id: str | None, system: str | None = None) -> int | None:
        """The row a link names: ``story`` with its ``system``, or a story id only one system has."""
        if not story_id:
            return None
        if system:
            return self.row_of(system, story_id)
        rows = self.rows_of_story(story_id)
        return rows[0] if len(rows) == 1 else None

    def sequences(self) -> dict[str, np.ndarray]:
        """Sequence id -> its rows (ascending), in first-seen order; built once per view with one
        factorize and one stable sort (no per-sequence Python work at 100,000 stories)."""
        if self._sequences is None:
            codes, names = pd.factorize(self.table["sequence"].astype(str))
            if not len(names):
                return {}
            order = np.argsort(codes, kind="stable")
            bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
            self._sequences = dict(zip((str(n) for n in names), np.split(order, bounds[1:-1]), strict=True))
        return self._sequences

    def record(self, row: int) -> StoryScores | None:
        """The full record (evidence included) of a row; None when it can no longer be read."""
        if self._records is not None:
            return self._records[row]
        assert self.index is not None
        record = self.index.record(row)[0]
        found = registry().reaggregated
        if record is not None and self._again is not None and self._again_rows[row] and found is not None:
            name, again = found
            value = record.metrics.get(name)
            if value is not None:  # computed records keep the items; imported scores stay as released
                record = record.with_metric(name, again.record(value, self._again))
        return record

    def metric_records(self, rows: Sequence[int], metric: str) -> dict[int, Any]:
        """One metric's record of many rows (row -> record; rows without it left out), read in one
        pass over the files for scores files (:meth:`ScoresIndex.metric_records`)."""
        if self._records is not None:
            found = {row: self._records[row].metrics.get(metric) for row in rows}
            return {row: value for row, value in found.items() if value is not None}
        assert self.index is not None
        return self.index.metric_records(rows, metric)

    def records_at(self, rows: Iterable[int]) -> list[StoryScores]:
        return [r for r in (self.record(int(k)) for k in rows) if r is not None]

    @property
    def records(self) -> list[StoryScores]:
        """Every record: only for sets scored in this process (an index reads its evidence lazily)."""
        if self._records is None:
            raise RuntimeError("an indexed view holds no records: read them with record(row) or records_at(rows)")
        return self._records

    def story(self, row: int, record: StoryScores | None = None) -> Story | None:
        """The story of a row (its images checked under :attr:`root`)."""
        key = (str(self.table["system"].iat[row]), str(self.table["story"].iat[row]))
        if self._stories is not None:
            return self._stories.get(key)
        record = record or self.record(row)
        if record is None:
            return None
        try:
            return story_of_record(record, self.root)
        except ValueError:
            return None

    def signature_ids(self) -> tuple[str, ...]:
        """The signature ids of the scores shown: for scores files the one of :meth:`recorded`
        (every file's sha256, the signature each was written with, a re-applied θ); else the records'."""
        if (recorded := self.recorded()) is not None:
            return (str(recorded[1]["id"]),)
        return tuple(sorted({r.signature_id for r in self.records if r.signature_id}))

    def image_path(self, ref: str) -> Path:
        return resolve_image(self.root, ref)

    def recorded(self) -> Recorded | None:
        """For scores files: (one line, the signature) naming every file by its sha256 and the
        signature each was written with (computed settings and weights digests, or the imported
        file and variant); what footers, captions and exports carry. None for a set scored here."""
        if self.index is None:
            return None
        found = registry().reaggregated
        again = (found[1], self._again) if found is not None and self._again is not None else None
        sig = self.index.provenance(again[0].provenance(again[1]) if again is not None else None)
        names = " + ".join(f"{f['file']} sha256 {f['sha256'][:12]}" for f in sig["scores_files"])
        made = " + ".join(f"[{describe_signature(self.index.signatures[i])}]" for i in sorted(self.index.signatures))
        line = f"sig {sig['id']} · from {names} · made with {made}"
        if again is not None:
            line += f" · {again[0].describe(again[1])}"
        return line, sig

    def footer(self) -> str:
        if (recorded := self.recorded()) is not None:
            return f"Scores: {recorded[0]} · device: {self.device}"
        return f"Settings: {describe(self.settings, self.inputs)} · device: {self.device}"


def table_columns() -> dict[str, tuple[str, str]]:
    """Table column -> (metric, attribute) of every number in the registry, in its order."""
    return {f.column: (f.metric, f.attr) for f in registry().fields}


def scores_table(records: Sequence[StoryScores], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per story: ids, text, every number of the metrics run (NaN = undefined), errors."""
    columns = fields_of(metrics)
    rows = []
    for r in records:
        row: dict[str, Any] = {"story": r.story_id, "sequence": r.sequence_id, "system": r.system}
        for f in columns:
            value = f.value(r)
            row[f.column] = float("nan") if value is None else value
        row["sentences"] = len(r.sentences)
        row["text"] = " ".join(r.sentences)
        row["error"] = "; ".join(f"{k}: {v}" for k, v in r.errors.items())
        rows.append(row)
    return pd.DataFrame(rows, columns=["story", "sequence", "system", *(f.column for f in columns), "sentences", "text", "error"])


#: (one line, the signature) of scores read from files: :meth:`RunView.recorded`.
Recorded = tuple[str, dict[str, Any]]


def export_json(
    records: Sequence[StoryScores], settings: Settings, inputs: Inputs | None = None, *, recorded: Recorded | None = None
) -> str:
    """The records with the signature that produced them (``recorded``'s for scores files), as one
    JSON document."""
    sig = recorded[1] if recorded is not None else signature(settings, inputs)
    return json.dumps({"signature": sig, "stories": [r.to_json() for r in records]}, ensure_ascii=False, indent=1)


def export_csv(table: pd.DataFrame, settings: Settings, inputs: Inputs | None = None, *, recorded: Recorded | None = None) -> str:
    """The table as CSV, headed by comment lines with the signature (``recorded``'s for scores files)."""
    line, sig = recorded if recorded is not None else (describe(settings, inputs), signature(settings, inputs))
    return frame_csv(table, [line, f"signature {json.dumps(sig, sort_keys=True)}"])


def correlation_cells(table: pd.DataFrame, method: str, min_n: int = MIN_INTERVAL_N) -> pd.DataFrame:
    """Metric × aspect grid for one method: 'value [low, high] * (N n)'; with N < ``min_n`` the
    interval is left out and the cell flagged '†'; an undefined coefficient gives its reason."""
    part = table[table["method"] == method]
    cells: dict[str, dict[str, str]] = {}
    for row in part.itertuples():
        n = int(row.n) if not pd.isna(row.n) else 0
        if pd.isna(row.value):
            text = f"undefined: {row.undefined or 'no value'} (N {n})"
        else:
            text = f"{row.value:+.3f}"
            if n < min_n:
                text += f" (N {n}){SMALL_N_MARK}"
            else:
                if not pd.isna(row.ci_low):
                    text += f" [{row.ci_low:+.2f}, {row.ci_high:+.2f}]"
                if not pd.isna(row.p) and row.p < 0.05:
                    text += " *"
                text += f" (N {n})"
        cells.setdefault(str(row.metric), {})[str(row.aspect)] = text
    aspects = list(dict.fromkeys(part["aspect"]))
    return pd.DataFrame.from_dict(cells, orient="index").reindex(columns=aspects).rename_axis("metric")


def pairwise_cells(pairwise: pd.DataFrame) -> pd.DataFrame:
    """Metric × subset grid of 'accuracy (N pairs)' strings; '–' where a subset has no pair."""
    part = pairwise[pairwise["group"] != "gap"]
    text = ["–" if pd.isna(a) else f"{a:.3f} ({n})" for a, n in zip(part["accuracy"], part["n"])]
    grid = part.assign(cell=text).pivot(index="metric", columns="subset", values="cell")
    return grid.reindex(index=list(dict.fromkeys(part["metric"])), columns=list(dict.fromkeys(part["subset"])))
