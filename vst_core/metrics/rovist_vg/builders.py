"""RoViST-VG's result plus each noun's best region -> its record (:class:`.record.RovistVGScores`)."""

from __future__ import annotations

from collections.abc import Sequence

from vst_core.contract.protocols import BoxLike
from vst_core.formulas.grounding import RovistVG
from vst_core.metrics.rovist_vg.record import NounRegion, RovistVGScores


def rovist_vg_scores(
    result: RovistVG,
    nouns: Sequence[tuple[str, int, bool]],
    *,
    best: Sequence[float],
    idf: Sequence[float],
    images: Sequence[int],
    boxes: Sequence[BoxLike],
    model: str,
    tagger: str,
    notes: Sequence[str] = (),
) -> RovistVGScores:
    """RoViST-VG record: each noun (text, sentence, known to GloVe) with its best region, cosine and idf."""
    return RovistVGScores(
        score=result.score,
        lse=result.lse,
        nouns=tuple(
            NounRegion(
                noun=text,
                sentence=sentence,
                best_cosine=float(best[k]),
                idf=float(idf[k]),
                image=int(images[k]),
                box=tuple(boxes[k].as_list()),
                box_label=boxes[k].label,
                known=known,
            )
            for k, (text, sentence, known) in enumerate(nouns)
        ),
        notes=(*notes, *([] if nouns else ["no noun: undefined"])),
        model=model,
        tagger=tagger,
    )
