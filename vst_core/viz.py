"""HTML and plotly builders from result records (no streamlit import)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from vst_core.config import Settings
from vst_core.data import StorySet

INTER_COLOUR = "#fbd38d"  # repeats an earlier sentence
INTRA_COLOUR = "#feb2b2"  # repeats the previous n-gram window of the same sentence


def contribution_colour(c: float) -> str:
    """Diverging colour for a GROOVIST contribution: blue positive, red negative."""
    if c >= 0:
        return f"rgba(43, 108, 176, {min(1.0, 0.25 + c / 3):.2f})"
    return f"rgba(197, 48, 48, {min(1.0, 0.35 + -c):.2f})"


def _render(text: str, labels: list[list[str]], kinds: list[set[str]], phrase: list[int | None], phrase_info: list[tuple[str, str]]) -> str:
    """Runs of characters with the same repeat labels and phrase, as nested highlighted spans."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and labels[j] == labels[i] and kinds[j] == kinds[i] and phrase[j] == phrase[i]:
            j += 1
        chunk = html.escape(text[i:j])
        if labels[i]:
            colour = INTRA_COLOUR if "intra" in kinds[i] else INTER_COLOUR
            title = html.escape(" | ".join(labels[i]), quote=True)
            chunk = (
                f'<mark class="vst-repeat" style="background:{colour};padding:0 1px;border-radius:3px" '
                f'title="{title}">{chunk}</mark>'
            )
        if phrase[i] is not None:
            colour, title = phrase_info[phrase[i]]  # type: ignore[index]
            chunk = (
                f'<span class="vst-np" data-phrase="{phrase[i]}" style="border-bottom:3px solid {colour};'
                f'padding-bottom:1px" title="{html.escape(title, quote=True)}">{chunk}</span>'
            )
        out.append(chunk)
        i = j
    return "".join(out)


def probability_colour(p: float) -> str:
    """Red (0) through amber (0.5) to green (1), as a CSS hsl colour."""
    return f"hsl({round(120 * max(0.0, min(1.0, p)))}, 70%, 42%)"


def coherence_chip(pair: dict[str, Any], weakest: bool) -> str:
    """A small badge between sentences i and i+1 with P(i+1 follows i)."""
    p = pair.get("probability")
    if p is None:
        return '<span class="vst-coh" title="not scored (empty sentence)" style="color:#a0aec0">·?·</span>'
    title = f"P(sentence {pair['to'] + 1} follows sentence {pair['from'] + 1}) = {p:.3f}"
    if pair.get("truncated"):
        title += " (pair truncated to the model's maximum length)"
    mark = " ▼ weakest" if weakest else ""
    border = "2px solid #1a202c" if weakest else "none"
    return (
        f'<span class="vst-coh{" vst-weakest" if weakest else ""}" title="{html.escape(title, quote=True)}" '
        f'style="background:{probability_colour(p)};color:white;font-size:0.75em;padding:1px 6px;'
        f'border-radius:9px;border:{border};white-space:nowrap">{p:.2f}{mark}</span>'
    )


def story_html(
    sentences: Sequence[str],
    record: dict[str, Any] | None,
    coherence: dict[str, Any] | None = None,
    grounding: dict[str, Any] | None = None,
) -> str:
    """Story sentences as HTML: repeated spans highlighted (hover: what they repeat), noun phrases
    underlined by grounding contribution (hover: score, concreteness, matched image), and a
    coherence chip between consecutive sentences."""
    labels = [[[] for _ in s] for s in sentences]
    kinds: list[list[set[str]]] = [[set() for _ in s] for s in sentences]
    for rep in (record or {}).get("inter_repeats", []):
        label = f"repeats sentence {rep['earlier'] + 1} (Jaccard {rep['jaccard']:.2f})"
        for start, end in rep["spans"]:
            for c in range(start, min(end, len(sentences[rep["sentence"]]))):
                if label not in labels[rep["sentence"]][c]:
                    labels[rep["sentence"]][c].append(label)
                kinds[rep["sentence"]][c].add("inter")
    for rep in (record or {}).get("intra_repeats", []):
        label = f"repeats the previous window of this sentence (Jaccard {rep['jaccard']:.2f})"
        for start, end in rep["spans"]:
            for c in range(start, min(end, len(sentences[rep["sentence"]]))):
                labels[rep["sentence"]][c].append(label)
                kinds[rep["sentence"]][c].add("intra")
    phrase = [[None for _ in s] for s in sentences]
    phrase_info: list[tuple[str, str]] = []
    for k, p in enumerate((grounding or {}).get("phrases", [])):
        start, end = p["span"]
        sign = "grounded" if p["positive"] else "below θ"
        phrase_info.append((
            contribution_colour(p["contribution"]),
            f"{p['text']}: contribution {p['contribution']:+.3f} ({sign}) · score {p['score']:.3f} · "
            f"concreteness {p['weight']:.2f} · matched image {p['image'] + 1}, {p.get('box_label') or 'box'} {p['box']}",
        ))
        for c in range(start, min(end, len(sentences[p["sentence"]]))):
            phrase[p["sentence"]][c] = k  # type: ignore[call-overload]
    pairs = {p["from"]: p for p in (coherence or {}).get("pairs", [])}
    weakest = (coherence or {}).get("weakest")
    parts = []
    for k, sentence in enumerate(sentences):
        body = _render(sentence, labels[k], kinds[k], phrase[k], phrase_info)
        parts.append(f'<span class="vst-sentence" data-index="{k}"><sup style="color:#718096">{k + 1}</sup> {body}</span>')
        if k in pairs:
            parts.append(coherence_chip(pairs[k], weakest == k))
    return '<div class="vst-story" style="line-height:1.8">' + " ".join(parts) + "</div>"


def legend_html() -> str:
    return (
        f'<span style="background:{INTER_COLOUR};padding:0 4px;border-radius:3px">repeats an earlier sentence</span> '
        f'<span style="background:{INTRA_COLOUR};padding:0 4px;border-radius:3px">repeats inside the sentence</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(2)}">grounded phrase</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(-0.5)}">phrase below θ</span>'
    )


def draw_box(image: Any, box: Sequence[float], label: str) -> Any:
    """A copy of a PIL image with ``box`` outlined and labelled."""
    from PIL import ImageDraw

    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(2, round(min(out.size) / 100))
    draw.rectangle(list(box), outline=(255, 215, 0), width=width)
    draw.rectangle([box[0], box[1], box[0] + 7 * len(label) + 6, box[1] + 14], fill=(255, 215, 0))
    draw.text((box[0] + 3, box[1] + 1), label, fill=(0, 0, 0))
    return out


def score_cards_html(cards: Sequence[tuple[str, str, str]]) -> str:
    """Compact score cards (label, value, hover text) that wrap in narrow columns."""
    items = "".join(
        f'<div class="vst-card" title="{html.escape(tip, quote=True)}" style="flex:1 1 70px;min-width:70px;'
        f'border:1px solid #e2e8f0;border-radius:6px;padding:2px 6px">'
        f'<div style="font-size:0.72em;color:#718096">{html.escape(label)}</div>'
        f'<div style="font-size:1.3em;font-weight:600">{html.escape(value)}</div></div>'
        for label, value, tip in cards
    )
    return f'<div style="display:flex;flex-wrap:wrap;gap:6px;margin-bottom:8px">{items}</div>'


def format_score(value: float | None, digits: int = 3) -> str:
    """A score for display; ``None`` (undefined) is shown as such, never as 0."""
    return "undefined" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class RunView:
    """What the dashboard pages render: the loaded set, its score records and their settings."""

    story_set: StorySet
    records: list[dict[str, Any]]
    settings: Settings
    device: str
    recorded_id: str | None = None  # signature id written in a loaded scores file, when shown as is

    def by_id(self) -> dict[str, dict[str, Any]]:
        return {r["story_id"]: r for r in self.records}

    def footer(self) -> str:
        text = self.settings.describe()
        if self.recorded_id:
            text = text.replace(f"sig {self.settings.signature_id()}", f"sig {self.recorded_id} (from the scores file)", 1)
        return f"Settings: {text} · device: {self.device}"


#: Table column -> (metric, field) of a score record.
TABLE_COLUMNS: dict[str, tuple[str, str]] = {
    "NR": ("redundancy", "score"),
    "inter": ("redundancy", "inter"),
    "intra": ("redundancy", "intra"),
    "coherence": ("coherence", "score"),
    "GROOVIST": ("grounding", "score"),
    "GROOVIST raw": ("grounding", "unbounded"),
    "T": ("grounding", "temporal_misalignment"),
    "P": ("grounding", "np_proportion"),
    "CLIPScore": ("clipscore", "score"),
    "RoViST-VG": ("rovist_vg", "score"),
}


def scores_table(records: Sequence[dict[str, Any]], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per story: ids, text, every number of the metrics run (NaN = undefined), errors."""
    columns = [c for c, (m, _) in TABLE_COLUMNS.items() if m in metrics]
    rows = []
    for r in records:
        row: dict[str, Any] = {"story": r["story_id"], "sequence": r["sequence_id"], "system": r["system"]}
        for column in columns:
            metric, key = TABLE_COLUMNS[column]
            value = r["metrics"].get(metric, {}).get(key)
            row[column] = float("nan") if value is None else float(value)
        row["text"] = " ".join(r["sentences"])
        row["error"] = "; ".join(f"{k}: {v}" for k, v in r["errors"].items())
        rows.append(row)
    return pd.DataFrame(rows, columns=["story", "sequence", "system", *columns, "text", "error"])


def export_json(records: Sequence[dict[str, Any]], settings: Settings) -> str:
    """The records with the signature that produced them, as one JSON document."""
    return json.dumps({"signature": settings.signature(), "stories": list(records)}, ensure_ascii=False, indent=1)


def export_csv(table: pd.DataFrame, settings: Settings) -> str:
    """The table as CSV, headed by a comment line with the settings signature."""
    return f"# {settings.describe()}\n# signature {json.dumps(settings.signature(), sort_keys=True)}\n" + table.to_csv(index=False)


def system_figure(table: pd.DataFrame, column: str, settings: Settings) -> Any:
    """Box plot of one metric per system, captioned with the settings signature."""
    import plotly.express as px

    fig = px.box(table, x="system", y=column, points="all", hover_data=["story"], color="system")
    fig.update_layout(
        showlegend=False,
        margin={"t": 40, "b": 110},
        title=f"{column} per system",
        annotations=[{
            "text": settings.describe(), "xref": "paper", "yref": "paper", "x": 0, "y": -0.32,
            "showarrow": False, "font": {"size": 10, "color": "#718096"}, "xanchor": "left",
        }],
    )
    return fig
