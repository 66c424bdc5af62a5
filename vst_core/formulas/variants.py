"""One type per variant, used alike by the formulas, the settings and the records.

>>> from typing import get_args
>>> get_args(NRVariant), get_args(CoherenceContext), get_args(GroundingProfile)
(('paper', 'reference'), ('pair', 'prefix'), ('paper', 'reference'))
>>> get_args(CoherenceProfile), get_args(RovistVGKind)
(('paper', 'reference'), ('model', 'clip'))
"""

from __future__ import annotations

from typing import Literal

#: RoViST-NR: ``paper`` (Eq. 4-5, words) or ``reference`` (the public code: NLTK tokens, pairs counted).
NRVariant = Literal["paper", "reference"]
#: The NR variant a record carries: a computed one, or ``imported`` (a released score, see ``vst import-scores``).
RecordedNRVariant = Literal["paper", "reference", "imported"]
#: RoViST-C: ``pair`` (P(s_i+1 | s_i), the paper) or ``prefix`` (P(s_i+1 | s_1..s_i), the dHM code).
CoherenceContext = Literal["pair", "prefix"]
#: GROOVIST: ``paper`` (as published) or ``reference`` (as the authors' code computes it).
GroundingProfile = Literal["paper", "reference"]

#: RoViST-C: ``paper`` (fast tokenizer, an over-long pair truncated with a warning) or ``reference`` (the
#: authors' code: the slow sentencepiece ALBERT tokenizer, a story with an over-long input left unscored).
CoherenceProfile = Literal["paper", "reference"]
#: RoViST-VG: ``model`` (the authors' Region2Phrase model: ViT + GloVe) or ``clip`` (CLIP cosines, RoViST's aggregation).
RovistVGKind = Literal["model", "clip"]

__all__ = ["CoherenceContext", "CoherenceProfile", "GroundingProfile", "NRVariant", "RecordedNRVariant", "RovistVGKind"]
