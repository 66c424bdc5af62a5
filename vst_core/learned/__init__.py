"""What the metrics learned from human judgements share: ``pairs.py`` (training pairs from judgement
files, split by image sequence), ``card.py`` (a model folder's card: what it was trained on, held-out accuracy with
intervals, recomputable from the saved predictions). A trained model is a folder; its identity in
a signature is :func:`vst_core.hashing.folder_signature`. Each metric's own training is in its
package: Vrank's ``metrics/vrank/train.py``, COSMic's ``metrics/cosmic/train.py``.
"""

from __future__ import annotations
