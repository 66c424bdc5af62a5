"""The rubric judge's data side: the rubric template (:mod:`.rubric`) and the cache of its answers
(:mod:`.cache`). The G-Eval rule is in :mod:`vst_core.metrics.judge`, the models in
:mod:`vst_core.models.judge`, the scoring in :mod:`vst_core.scoring.judge`."""
