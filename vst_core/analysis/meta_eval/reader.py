"""Reading a human-judgement file in any of its layouts: the tidy layouts of
:mod:`.judgements` and the released files of :mod:`.released_layouts` (VIST-Edit, VHED), told apart
by the header. Each reader keeps the file's digest and reports every row it could not use."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from vst_core.analysis.meta_eval.judgements import (
    LAYOUTS,
    Judgements,
    JudgementsError,
    _finite_only,
    _judgements,
    _read_bytes,
    _read_table,
)
from vst_core.analysis.meta_eval.released_layouts import _source_name, _vhed, _vist_edit, detect_layout
from vst_core.data.tables import TableBudget
from vst_core.hashing import text_digest


def read_judgements(
    source: str | Path | bytes | IO[Any],
    *,
    aspects: Sequence[str] | None = None,
    layout: str = "auto",
    model: str | None = None,
    budget: TableBudget | None = None,
) -> Judgements:
    """Read a judgements CSV in any of the five layouts (:data:`LAYOUTS`).

    * long: ``story_id, rater, aspect, value`` (``rater`` and ``system`` optional);
    * wide: ``story_id`` plus one column per aspect (``rater``, ``system``, ``sequence_id`` optional);
    * pairwise: ``story_a, story_b, rank_a, rank_b`` (``sequence_id``, ``agreement`` optional),
      lower rank = better;
    * vist-edit: a VIST-Edit ``Human_eval`` file (:func:`read_vist_edit` states the ids);
    * vhed: the VHED ``VHED.csv`` of story pairs (:func:`read_vhed` states the ids).

    ``layout="auto"`` tells them apart by the header (:func:`detect_layout`); a named layout the
    file does not fit is a :class:`JudgementsError`. ``model`` names the system that generated the
    stories of a VIST-Edit file (``AREL`` or ``GLAC``; by default read from the file name).

    Aspects named after the VHED error taxonomy hold binary error labels. Exact duplicate rows,
    empty cells and text in numeric columns are dropped and reported in ``problems``. In the wide
    layout ``aspects`` names the aspect columns; without it, identifier-like columns (``album_id``,
    ``worker``) are left out and reported, and a file with several groups' ratings under one id
    (a ``team`` or ``condition`` column) is refused naming the column.

    A file over ``budget`` (:meth:`~vst_core.data.tables.TableBudget.from_env` when None: its rows
    and bytes) is refused with a :class:`~.judgements.JudgementsTooLarge` before the rows past it are parsed.
    """
    if layout not in LAYOUTS:
        raise JudgementsError(f"unknown judgements layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    raw = _read_bytes(source)
    frame, problems = _read_table(raw, budget)
    chosen = detect_layout(frame.columns) if layout == "auto" else layout
    if chosen == "vist-edit":
        judgements = _vist_edit(frame, aspects, model, _source_name(source), problems)
    elif chosen == "vhed":
        judgements = _vhed(frame, problems)
    else:
        judgements = _judgements(frame, aspects, problems, chosen)
    judgements = _finite_only(judgements)
    judgements.digest = text_digest(raw)
    return judgements


def read_vist_edit(
    source: str | Path | bytes | IO[Any], *, aspects: Sequence[str] | None = None, model: str | None = None
) -> Judgements:
    """Read a VIST-Edit ``Human_eval`` file (Hsu et al. 2019, github.com/tingyaohsu/VIST-Edit).

    Layout: a comma-separated header ``team,story_id,album_id,workerId,focused,coherent,share,
    human,grounded,detailed`` (``AREL.csv`` ends it and every row in six empty fields; CRLF line
    ends; no newline after the last row), one row per (team, story, rater) with the six aspects
    rated 1-5. ``story_id`` is the photo sequence (five Flickr photo ids joined by ``-``, the name
    of the story's JSON file in the repository's ``AREL/test`` or ``GLAC/test`` folder);
    ``album_id`` is left unread (a spreadsheet rounded it to ``7.22E+16``); ``workerId`` is the
    rater (a de-identified UUID). ``team`` says which story of the sequence was rated: ``auto-gen``
    the model's story (``auto_story_text_normalized``), ``human-edit`` a crowd worker's edit of it
    (one of the five ``edited_stories``; the release does not say which), the others the edits of
    automatic post-editing models (LSTM or Transformer, text or text and image), whose texts are not
    released.

    Ids: the file holds no system name, so the system is ``model`` (``AREL`` or ``GLAC``, by default
    read from the file name) for ``auto-gen`` and ``<model>-<team>`` for the others
    (``AREL-human-edit``, ``GLAC-trans-text-img``); the story id is ``<sequence>:<system>``
    (:func:`vist_edit_story_id`). A scores file matches when each story carries that ``story_id``,
    the sequence as ``sequence_id`` and the system as ``system``. The two files rate the same 97
    sequences, so the system is part of the id.
    """
    return read_judgements(source, aspects=aspects, layout="vist-edit", model=model)


def read_vhed(source: str | Path | bytes | IO[Any]) -> Judgements:
    """Read VHED's ``VHED.csv`` (Hsu et al. 2022, Vrank; github.com/AcademiaSinicaNLPLab/VHED) as pairs.

    Layout: ``sent1, sent2, label, story_id, model_base, model_comp, agreement, img_seq,
    avg_rank_base, avg_rank_comp, order, rank_norm``; one row per story pair of one ranking task:
    the texts of story 1 and 2, the systems that wrote them (``model_base``, ``model_comp``), their
    average human ranks (lower = better), how many of the rankers agree on the order (3-5), the
    image sequence and the ranking gap (``rank_norm``, the paper's normalised gap; ``label`` is the
    gap before normalisation and ``order`` the number of rankers, neither read).

    Pairs: the better story is the one with the lower average rank; equal ranks give no pair (VHED
    removed them). Story ids are ``<story_id>:<model>`` (:func:`vhed_story_id`), so a scores file
    matches when it holds each story text (``sent1`` under the ``model_base`` id, ``sent2`` under
    the ``model_comp`` id) with that ``story_id``; give it ``system`` = the model to compare
    systems. ``gap`` is ``|rank_norm|`` (without that column, the difference of the average ranks);
    ``sequence_id`` the photo ids of ``img_seq`` joined by ``-``. Ids whose texts differ between rows
    are reported (scores can match one text only).
    """
    return read_judgements(source, layout="vhed")
