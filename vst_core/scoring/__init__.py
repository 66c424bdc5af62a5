"""Scoring stories: every metric on one story or a batch (story), runs over a story set with resume
and shards (runs), the model registry (registry), pure results to records (builders), θ/−P/−C
re-applied to stored evidence (reaggregate)."""
