"""What pages draw, built from records with no streamlit import: story HTML and cards
(:mod:`.story`), tables, the page view and exports (:mod:`.tables`), plotly figures (:mod:`.figures`)."""

from typing import Any

from vst_core.viz import tables
from vst_core.viz.figures import (
    bins_figure,
    caption_figure,
    comparison_scatter,
    correlation_bars,
    differences_figure,
    distributions_figure,
    error_heatmap,
    gap_accuracy_figure,
    metric_scatter,
    system_figure,
)
from vst_core.viz.story import (
    annotated_story,
    between_sentences,
    draw_box,
    drawn_in_text,
    evidence_blocks,
    format_score,
    legend_html,
    probability_colour,
    score_cards_html,
    story_cards,
    story_html,
)
from vst_core.viz.tables import (
    MIN_INTERVAL_N,
    RunView,
    correlation_cells,
    export_csv,
    export_json,
    pairwise_cells,
    scores_table,
    table_columns,
)

__all__ = [
    "TABLE_COLUMNS",
    "table_columns",
    "RunView",
    "bins_figure",
    "caption_figure",
    "comparison_scatter",
    "annotated_story",
    "between_sentences",
    "correlation_bars",
    "differences_figure",
    "distributions_figure",
    "MIN_INTERVAL_N",
    "correlation_cells",
    "draw_box",
    "drawn_in_text",
    "error_heatmap",
    "export_csv",
    "export_json",
    "format_score",
    "gap_accuracy_figure",
    "legend_html",
    "metric_scatter",
    "pairwise_cells",
    "probability_colour",
    "score_cards_html",
    "scores_table",
    "story_cards",
    "evidence_blocks",
    "story_html",
    "system_figure",
]


def __getattr__(name: str) -> Any:
    """``TABLE_COLUMNS``: the registry's table columns (:func:`table_columns`), read when asked."""
    if name == "TABLE_COLUMNS":
        return tables.table_columns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
