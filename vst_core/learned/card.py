"""A trained model folder's card: what it was trained on and how well it ranks held-out pairs.

The card (``card.json``, and ``card.md`` for people) names the base weights and the data by
digest, the split (by image sequence, the held-out sequences listed) and the held-out accuracy
overall, per agreement level and per ranking-gap bin, each with a 95% Wilson interval. Every
figure is recomputable from ``predictions.csv``, one row per held-out pair with the model's
outputs in both orders (:func:`held_out_table`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from vst_core.analysis.meta_eval.stats import gap_bins, gap_edges
from vst_core.data.csv_out import write_csv

CARD_FILE = "card.json"
CARD_TEXT = "card.md"
PREDICTIONS_FILE = "predictions.csv"
PREDICTION_COLUMNS = ["sequence_id", "better", "worse", "gap", "agreement", "forward", "backward", "margin"]


def wilson(correct: int, n: int, z: float = 1.959963984540054) -> tuple[float | None, float | None]:
    """95% Wilson score interval of a proportion ``correct / n``; (None, None) when n = 0.

    >>> tuple(round(x, 4) for x in wilson(8, 10))
    (0.4902, 0.9433)
    """
    if n <= 0:
        return None, None
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _row(group: str, subset: str, part: pd.DataFrame) -> dict[str, Any]:
    n = len(part)
    correct = int((part["margin"] > 0).sum())
    lo, hi = wilson(correct, n)
    return {
        "group": group,
        "subset": subset,
        "n": n,
        "correct": correct,
        "ties": int((part["margin"] == 0).sum()),
        "accuracy": correct / n if n else None,
        "low": lo,
        "high": hi,
    }


def held_out_table(predictions: pd.DataFrame, edges: list[float] | None = None) -> pd.DataFrame:
    """Pairwise accuracy of the predicted margins (correct when the better story's margin > 0; a
    tie is wrong, as in Vrank Eq. 1-2) over all pairs, per agreement level and per gap bin (quartile
    edges of the held-out gaps unless given), with Wilson intervals."""
    rows = [_row("all", "all pairs", predictions)]
    if predictions["agreement"].notna().any():
        for k, part in predictions.groupby("agreement", sort=True):
            rows.append(_row("agreement", f"agreement = {k:g}", part))
    for label, mask, _, _ in gap_bins(predictions["gap"], edges if edges is not None else gap_edges(predictions["gap"])):
        rows.append(_row("gap", label, predictions[mask]))
    return pd.DataFrame(rows, columns=["group", "subset", "n", "correct", "ties", "accuracy", "low", "high"])


def write_card(folder: Path, card: Mapping[str, Any], predictions: pd.DataFrame | None) -> None:
    """Write ``card.json``, ``card.md`` and (when given) ``predictions.csv`` into ``folder``; the
    accuracy tables are computed here from the predictions, so the card cannot disagree with them."""
    data = dict(card)
    if predictions is not None:
        write_csv(folder / PREDICTIONS_FILE, predictions[PREDICTION_COLUMNS])  # story ids safe in a spreadsheet
        table = held_out_table(predictions)
        data["held_out"] = json.loads(table.to_json(orient="records"))
    (folder / CARD_FILE).write_text(json.dumps(data, indent=2, default=str))
    (folder / CARD_TEXT).write_text(card_markdown(data))


def read_card(folder: str | Path) -> dict[str, Any]:
    """The card of a model folder ({} when it has none or it is not JSON)."""
    path = Path(folder) / CARD_FILE
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def card_markdown(card: Mapping[str, Any]) -> str:
    """The card as Markdown: the model, its data and split, then the held-out accuracy table."""
    lines = [f"# {card.get('kind', 'model')} card", ""]
    for key in (
        "base",
        "base_weights",
        "data",
        "data_digest",
        "split",
        "train_pairs",
        "held_out_pairs",
        "epochs_run",
        "deviations",
    ):
        if key in card:
            lines.append(f"- **{key}**: {card[key]}")
    held = card.get("held_out") or []
    if held:
        lines += [
            "",
            "## Held-out pairwise accuracy (95% Wilson intervals)",
            "",
            "| subset | n | accuracy | interval |",
            "|---|---|---|---|",
        ]
        for row in held:
            acc = "n/a" if row.get("accuracy") is None else f"{row['accuracy']:.3f}"
            ci = "" if row.get("low") is None else f"[{row['low']:.3f}, {row['high']:.3f}]"
            lines.append(f"| {row['subset']} | {row['n']} | {acc} | {ci} |")
    return "\n".join(lines) + "\n"


def held_out_cells(rows: list[Any]) -> pd.DataFrame:
    """A card's held-out rows as a table to show: subset, n, accuracy and its interval as text."""
    out = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        acc, lo, hi = row.get("accuracy"), row.get("low"), row.get("high")
        out.append(
            {
                "subset": str(row.get("subset", "")),
                "n": row.get("n"),
                "accuracy": None if acc is None else round(float(acc), 3),
                "95% interval": "" if lo is None or hi is None else f"[{float(lo):.3f}, {float(hi):.3f}]",
            }
        )
    return pd.DataFrame(out, columns=["subset", "n", "accuracy", "95% interval"])
