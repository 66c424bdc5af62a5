"""Tables of records and reports, the view a page renders, and exports that carry the signature."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from vst_core.config import Settings
from vst_core.data import StorySet
from vst_core.records import (
    FIELDS,
    StoryScores,
    fields_of,
)
from vst_core.signature import Inputs, describe, inputs_of, recorded_inputs, signature, signature_id


@dataclass(frozen=True)
class RunView:
    """What the dashboard pages render: the loaded set, its score records and their settings."""

    story_set: StorySet
    records: list[StoryScores]
    settings: Settings
    device: str
    recorded_id: str | None = None  # signature id written in a loaded scores file, when shown as is

    def by_id(self) -> dict[str, StoryScores]:
        return {r.story_id: r for r in self.records}

    @property
    def inputs(self) -> dict[str, str]:
        """The input the records name (a scores file's own), else the loaded stories' digest."""
        found = recorded_inputs(self.records)
        return found if found is not None else inputs_of(self.story_set)

    def footer(self) -> str:
        text = describe(self.settings, self.inputs)
        if self.recorded_id:
            computed = signature_id(self.settings, self.inputs)
            text = text.replace(f"sig {computed}", f"sig {self.recorded_id} (from the scores file)", 1)
        return f"Settings: {text} · device: {self.device}"


#: Table column -> (metric, field) of a score record (from the one registry, :data:`FIELDS`).
TABLE_COLUMNS: dict[str, tuple[str, str]] = {f.column: (f.metric, f.attr) for f in FIELDS}


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


def export_json(records: Sequence[StoryScores], settings: Settings, inputs: Inputs | None = None) -> str:
    """The records with the signature that produced them, as one JSON document."""
    return json.dumps(
        {"signature": signature(settings, inputs), "stories": [r.to_json() for r in records]}, ensure_ascii=False, indent=1
    )


def export_csv(table: pd.DataFrame, settings: Settings, inputs: Inputs | None = None) -> str:
    """The table as CSV, headed by a comment line with the settings signature."""
    header = f"# {describe(settings, inputs)}\n# signature {json.dumps(signature(settings, inputs), sort_keys=True)}\n"
    return header + table.to_csv(index=False)


#: Below this many stories (or systems) a bootstrap interval is not shown: it would look certain
#: (three systems give intervals of zero width) without meaning anything.
MIN_INTERVAL_N = 10


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
                text += f" (N {n})†"
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
