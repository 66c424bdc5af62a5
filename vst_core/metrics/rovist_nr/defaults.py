"""RoViST-NR's name and its own settings, for its modules that the package's ``__init__`` imports
(no circle): the intra-sentence n-gram window, the definition (the paper's or the public code's) and
whether the records keep the repeated spans.

>>> from vst_core.config import Settings
>>> NAME, ngram_of(Settings()), variant_of(Settings(nr_variant="reference", nr_ngram=3)), ngram_of(Settings(nr_ngram=3))
('redundancy', 4, 'reference', 3)
>>> spans_of(Settings()), spans_of(Settings(spans=False)), SPANS.cli_flag
(True, False, '--no-spans')
"""

from __future__ import annotations

from typing import cast

from vst_core.contract.protocols import SettingsLike
from vst_core.contract.spec import Option, at_least_one
from vst_core.formulas.variants import NRVariant

#: The metric's name (in ``--metrics`` and on disk).
NAME = "redundancy"


#: The n-gram window of the intra-sentence part (Eq. 8). Signed in every run, as earlier versions
#: did, so the ids of their runs stay; ``--nr-n`` and the sidebar's ``ngram`` as before.
NGRAM = Option(
    "nr_ngram",
    4,
    help="n-gram window size of the intra-sentence part of RoViST-NR",
    kind="int",
    flag="--nr-n",
    label="n-gram window (intra part)",
    signed="always",
    metavar="N",
    check=at_least_one,
    bounds=(2, 8),
    key="ngram",
)
#: Which definition: the paper's Eq. 7 or the public code's counting.
VARIANT = Option(
    "nr_variant",
    "paper",
    help="paper: Eq. 7 of RoViST (unique lower-cased words, no punctuation); "
    "reference: the public RoViST code (token-pair counting, last token dropped, case-sensitive)",
    label="Definition",
    signed="always",
    choices=("paper", "reference"),
    key="variant",
)
#: Whether the records keep the repeated spans: ``--no-spans`` (``Settings(spans=False)``) gives the
#: numbers only, from one vectorised pass per chunk. Not signed: the numbers are the same either way,
#: and a run's id with it is the one without it, as before it was the metric's own.
SPANS = Option(
    "spans",
    True,
    help="RoViST-NR numbers only, from one vectorised pass per chunk (several times faster); the records "
    "hold no repeated spans, which the dashboard recomputes for the stories it shows",
    kind="bool",
    flag="--no-spans",
    signed=False,
)
OPTIONS: tuple[Option, ...] = (VARIANT, NGRAM, SPANS)


def ngram_of(settings: SettingsLike) -> int:
    """The run's n-gram window (``nr_ngram``)."""
    return int(settings.option(NGRAM.setting))


def variant_of(settings: SettingsLike) -> NRVariant:
    """The run's definition (``nr_variant``): ``"paper"`` or ``"reference"``."""
    return cast(NRVariant, settings.option(VARIANT.setting))


def spans_of(settings: SettingsLike) -> bool:
    """Whether the run's records keep the repeated spans (``spans``; ``--no-spans`` turns it off)."""
    return bool(settings.option(SPANS.setting))
