"""Agreement of automatic metrics with human judgements: pure functions over pandas/numpy.

:mod:`.judgements` holds the human side and :mod:`.reader` reads it in every layout, :mod:`.stats` holds the statistics of the papers,
:mod:`.scored` turns scores into one row per story (and Vrank's margins), :mod:`.report` joins them
with judgements into the report the CLI writes and the page shows,
:mod:`.settings` the settings and their signature, :mod:`.versus` metric against metric (Williams' test,
PERM-BOTH). The names are re-exported here.
"""

from vst_core.analysis.meta_eval.judgements import ERROR_TAGS, LAYOUTS, Judgements, JudgementsError
from vst_core.analysis.meta_eval.ratings import aggregate, inter_rater
from vst_core.analysis.meta_eval.reader import read_judgements, read_vhed, read_vist_edit
from vst_core.analysis.meta_eval.released_layouts import detect_layout, vhed_story_id, vist_edit_story_id
from vst_core.analysis.meta_eval.report import MetaReport, covariate_fields, metric_fields, run_meta_eval
from vst_core.analysis.meta_eval.scored import match_report, score_frame
from vst_core.analysis.meta_eval.settings import METHODS, MetaSettings, Method
from vst_core.analysis.meta_eval.stats import (
    Correlation,
    best_per_aspect,
    binned_correlations,
    bootstrap_samples,
    correlate,
    correlation_table,
    error_table,
    gap_edges,
    mode_split,
    pairs_from_ratings,
    pairwise_accuracy,
    pairwise_table,
    system_means,
)
from vst_core.analysis.meta_eval.versus import (
    VersusSettings,
    versus_accuracy,
    versus_correlations,
    versus_matrix,
    williams_test,
)

__all__ = [
    "covariate_fields",
    "metric_fields",
    "ERROR_TAGS",
    "LAYOUTS",
    "METHODS",
    "Correlation",
    "Judgements",
    "JudgementsError",
    "MetaReport",
    "MetaSettings",
    "VersusSettings",
    "Method",
    "aggregate",
    "best_per_aspect",
    "binned_correlations",
    "bootstrap_samples",
    "correlate",
    "correlation_table",
    "detect_layout",
    "error_table",
    "gap_edges",
    "inter_rater",
    "match_report",
    "mode_split",
    "pairs_from_ratings",
    "pairwise_accuracy",
    "pairwise_table",
    "read_judgements",
    "read_vhed",
    "read_vist_edit",
    "run_meta_eval",
    "score_frame",
    "system_means",
    "vhed_story_id",
    "versus_accuracy",
    "versus_correlations",
    "versus_matrix",
    "vist_edit_story_id",
    "williams_test",
]
