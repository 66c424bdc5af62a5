"""Metrics learned from human judgements: training, model folders with their cards, scoring.

``vrank.py`` (Hsu et al., 2022: a story-pair ranker), ``cosmic.py`` (Inan et al., 2021: a
reference-based caption rater), ``pairs.py`` (training pairs from judgement files, split by image
sequence), ``card.py`` (a model folder's card: what it was trained on, held-out accuracy with
intervals, recomputable from the saved predictions). A trained model is a folder; its identity in
a signature is :func:`vst_core.hashing.folder_signature`.
"""

from __future__ import annotations
