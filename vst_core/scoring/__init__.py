"""Scoring stories: every metric on one story or a batch (story), runs over a story set with resume
and shards (runs) under one policy for every front end (policy: a metric whose model does not load,
θ dataset, the metrics' summaries), the model registry (registry), pure results to records
(builders), θ/−P/−C re-applied to stored evidence (reaggregate)."""
