"""What pages draw, built from records with no streamlit import: story HTML and cards
(:mod:`.story`), tables, the page view and exports (:mod:`.tables`), plotly figures (:mod:`.figures`)."""

from vst_core.viz.figures import (
    bins_figure,
    caption_figure,
    correlation_bars,
    distributions_figure,
    error_heatmap,
    gap_accuracy_figure,
    metric_scatter,
    system_figure,
)
from vst_core.viz.story import (
    INTER_COLOUR,
    INTRA_COLOUR,
    coherence_chip,
    contribution_colour,
    draw_box,
    format_score,
    legend_html,
    probability_colour,
    score_cards_html,
    story_cards,
    story_html,
)
from vst_core.viz.tables import (
    TABLE_COLUMNS,
    RunView,
    correlation_cells,
    export_csv,
    export_json,
    pairwise_cells,
    scores_table,
)

__all__ = [
    "INTER_COLOUR",
    "INTRA_COLOUR",
    "TABLE_COLUMNS",
    "RunView",
    "bins_figure",
    "caption_figure",
    "coherence_chip",
    "contribution_colour",
    "correlation_bars",
    "distributions_figure",
    "correlation_cells",
    "draw_box",
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
    "story_html",
    "system_figure",
]
