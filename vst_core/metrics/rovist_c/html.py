"""RoViST-C's evidence drawn in the story: a chip between sentences i and i+1 with P(i+1 follows i),
coloured red to green, the weakest transition marked (every text from the record escaped)."""

from __future__ import annotations

from collections.abc import Mapping

from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores
from vst_core.viz.safe import html_text
from vst_core.viz.story import probability_colour


def coherence_chip(pair: CoherencePair, weakest: bool, context: str = "pair") -> str:
    """A small badge between sentences i and i+1 with P(i+1 follows i)."""
    p = pair.probability
    if p is None:
        return '<span class="vst-coh" title="not scored (empty sentence)" style="color:#a0aec0">·?·</span>'
    before = f"sentences 1-{pair.from_ + 1}" if context == "prefix" and pair.from_ > 0 else f"sentence {pair.from_ + 1}"
    title = f"P(sentence {pair.to + 1} follows {before}) = {p:.3f}"
    if pair.truncated:
        title += " (pair truncated to the model's maximum length)"
    mark = " ▼ weakest" if weakest else ""
    border = "2px solid #1a202c" if weakest else "none"
    return (
        f'<span class="vst-coh{" vst-weakest" if weakest else ""}" title="{html_text(title)}" '
        f'style="background:{probability_colour(p)};color:white;font-size:0.75em;padding:1px 6px;'
        f'border-radius:9px;border:{border};white-space:nowrap">{p:.2f}{mark}</span>'
    )


def transitions(record: CoherenceScores) -> Mapping[int, str]:
    """The chip after each scored sentence: ``{k: chip between sentence k and k+1}``.

    >>> from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores
    >>> r = CoherenceScores(0.8, (CoherencePair(0, 1, 0.8),), 0, "m")
    >>> 'title="P(sentence 2 follows sentence 1) = 0.800"' in transitions(r)[0]
    True
    """
    return {p.from_: coherence_chip(p, record.weakest == p.from_, record.context) for p in record.pairs}
