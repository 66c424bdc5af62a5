"""The rubric judge's default models, hub names (:mod:`.local` says why these).

>>> JUDGE_MODEL
'Qwen/Qwen2.5-0.5B-Instruct'
"""

#: The metric's name (in ``--metrics`` and on disk).
NAME = "judge"
#: The rubric judge's default models (hub names; see .local for why these).
JUDGE_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
JUDGE_VLM = "HuggingFaceTB/SmolVLM-256M-Instruct"
