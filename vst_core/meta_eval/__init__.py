"""Agreement of automatic metrics with human judgements: pure functions over pandas/numpy.

:mod:`.judgements` reads the human side, :mod:`.stats` holds the statistics of the papers,
:mod:`.report` joins scores with judgements into the report the CLI writes and the page shows,
:mod:`.settings` the settings and their signature. The names are re-exported here.
"""

from vst_core.meta_eval.judgements import (
    ERROR_TAGS,
    Judgements,
    JudgementsError,
    aggregate,
    inter_rater,
    read_judgements,
)
from vst_core.meta_eval.report import (
    COVARIATE_FIELDS,
    COVARIATES,
    METRIC_COLUMNS,
    METRIC_FIELDS,
    MetaReport,
    match_report,
    run_meta_eval,
    score_frame,
)
from vst_core.meta_eval.settings import METHODS, MetaSettings, Method
from vst_core.meta_eval.stats import (
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

__all__ = [
    "COVARIATES",
    "COVARIATE_FIELDS",
    "ERROR_TAGS",
    "METHODS",
    "METRIC_COLUMNS",
    "METRIC_FIELDS",
    "Correlation",
    "Judgements",
    "JudgementsError",
    "MetaReport",
    "MetaSettings",
    "Method",
    "aggregate",
    "best_per_aspect",
    "binned_correlations",
    "bootstrap_samples",
    "correlate",
    "correlation_table",
    "error_table",
    "gap_edges",
    "inter_rater",
    "match_report",
    "mode_split",
    "pairs_from_ratings",
    "pairwise_accuracy",
    "pairwise_table",
    "read_judgements",
    "run_meta_eval",
    "score_frame",
    "system_means",
]
