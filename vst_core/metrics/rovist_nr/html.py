"""RoViST-NR in the story's text: each repeated span highlighted, hover saying what it repeats
(an earlier sentence, amber; the previous window of its own sentence, red, shown over amber)."""

from __future__ import annotations

from vst_core.contract import LegendEntry, Mark
from vst_core.metrics.rovist_nr.record import RedundancyScores

INTER_COLOUR = "#fbd38d"  # repeats an earlier sentence
INTRA_COLOUR = "#feb2b2"  # repeats the previous n-gram window of the same sentence

LEGEND = (
    LegendEntry("repeats an earlier sentence", "highlight", INTER_COLOUR),
    LegendEntry("repeats inside the sentence", "highlight", INTRA_COLOUR),
)


def marks(record: RedundancyScores) -> list[Mark]:
    """A highlight per repeated span (a ``word`` mark: "content words only" hides a function word's).

    >>> from vst_core.metrics.rovist_nr.record import InterRepeat
    >>> r = RedundancyScores(0.9, 0.1, 0.0, "paper", 4, (), (InterRepeat(1, 0, 0.5, ("dog",), ((4, 7),), ((4, 7),)),), ())
    >>> [(m.sentence, m.start, m.end, m.title) for m in marks(r)]
    [(1, 4, 7, 'repeats sentence 1 (Jaccard 0.50)')]
    """
    out = []
    for rep in record.inter_repeats or ():
        title = f"repeats sentence {rep.earlier + 1} (Jaccard {rep.jaccard:.2f})"
        out += [Mark(rep.sentence, a, b, "highlight", INTER_COLOUR, title, "vst-repeat", word=True) for a, b in rep.spans]
    for intra in record.intra_repeats or ():
        title = f"repeats the previous window of this sentence (Jaccard {intra.jaccard:.2f})"
        out += [
            Mark(intra.sentence, a, b, "highlight", INTRA_COLOUR, title, "vst-repeat", rank=1, word=True) for a, b in intra.spans
        ]
    return out
