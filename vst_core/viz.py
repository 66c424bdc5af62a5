"""HTML and plotly builders from result records (no streamlit import)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

INTER_COLOUR = "#fbd38d"  # repeats an earlier sentence
INTRA_COLOUR = "#feb2b2"  # repeats the previous n-gram window of the same sentence


def _mark(text: str, labels: list[list[str]], kinds: list[set[str]]) -> str:
    """Wrap runs of characters that share the same labels in a highlighted ``<mark>``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and labels[j] == labels[i] and kinds[j] == kinds[i]:
            j += 1
        chunk = html.escape(text[i:j])
        if labels[i]:
            colour = INTRA_COLOUR if "intra" in kinds[i] else INTER_COLOUR
            title = html.escape(" | ".join(labels[i]), quote=True)
            out.append(
                f'<mark class="vst-repeat" style="background:{colour};padding:0 1px;border-radius:3px" '
                f'title="{title}">{chunk}</mark>'
            )
        else:
            out.append(chunk)
        i = j
    return "".join(out)


def redundancy_html(sentences: Sequence[str], record: dict[str, Any] | None) -> str:
    """Story sentences as HTML with repeated spans highlighted; hover says what they repeat."""
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
    parts = []
    for k, sentence in enumerate(sentences):
        body = _mark(sentence, labels[k], kinds[k])
        parts.append(f'<span class="vst-sentence" data-index="{k}"><sup style="color:#718096">{k + 1}</sup> {body}</span>')
    return '<div class="vst-story" style="line-height:1.8">' + " ".join(parts) + "</div>"


def legend_html() -> str:
    return (
        f'<span style="background:{INTER_COLOUR};padding:0 4px;border-radius:3px">repeats an earlier sentence</span> '
        f'<span style="background:{INTRA_COLOUR};padding:0 4px;border-radius:3px">repeats inside the sentence</span>'
    )


def format_score(value: float | None, digits: int = 3) -> str:
    """A score for display; ``None`` (undefined) is shown as such, never as 0."""
    return "undefined" if value is None else f"{value:.{digits}f}"
