"""A study's answers exported in the layouts the product reads with no conversion, written whole
or not at all: every file is written beside its place first and renamed into it only when all were
written.

* ``<id>-judgements.csv`` (likert, best-worst): the long layout, ``story_id, system, sequence_id,
  rater, aspect, value``; or ``<id>-pairwise.csv`` (pairwise): ``story_a, story_b, rank_a,
  rank_b, sequence_id, agreement, raters`` — what ``vst meta-eval`` and ``vst compare
  --judgements`` read. Each starts with ``#`` lines naming the study's signature and the exclusion
  rule (the readers pass over them).
* ``<id>-raters.csv`` and ``<id>-items.csv``: the live view's tables, spreadsheet-safe, with the
  study's signature on every row and the provenance on the first.
* ``<id>-answers.csv``: every revision of every answer (rater, item, stories in the order shown,
  value, seconds, time, revision).
* ``<id>-provenance.json``: the study's signature and source, the exclusion rule, who it left out,
  the counts and when the export was made.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from vst_core.data.csv_out import frame_csv
from vst_core.data.exports import _umask, json_text
from vst_core.study.frames import judgements_frame, pairwise_frame
from vst_core.study.live import ExclusionRule, live_view
from vst_core.study.records import Answer, Study, StudyError

__all__ = ["export_study", "judgement_file_text", "write_whole"]


def write_whole(files: dict[Path, str]) -> list[Path]:
    """Write every ``path: text`` or none: each text to a temporary file beside its path, then all
    renamed into place; an OSError on the way removes the temporary files and leaves every path as
    it was."""
    import errno

    for path in files:
        if path.exists() and not path.is_file():  # a folder or a device: refused before anything is written
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    written: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            written.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())  # the mode an open() would give, not mkstemp's 0600
    except BaseException:
        for tmp, _ in written:
            Path(tmp).unlink(missing_ok=True)
        raise
    try:
        for tmp, path in written:
            os.replace(tmp, path)
    finally:
        for tmp, _ in written:
            Path(tmp).unlink(missing_ok=True)
    return [path for _, path in written]


def _comment(text: str) -> str:
    return "# " + " ".join(text.split())


def judgement_file_text(study: Study, frame: pd.DataFrame, head: Sequence[str]) -> str:
    """A judgements file: ``#`` lines of provenance, then the table as spreadsheet-safe CSV."""
    return "".join(_comment(line) + "\r\n" for line in head) + frame_csv(frame)


def export_study(
    study: Study,
    answers: Sequence[Answer],
    folder: str | Path,
    *,
    exclude: ExclusionRule | Collection[str] = ExclusionRule(),
    history: Sequence[Answer] | None = None,
) -> list[Path]:
    """Write the study's exports into ``folder`` (see the module) and return their paths.

    ``answers``: the latest answers (:meth:`AnswerStore.answers`); ``history``: every revision
    (the answers file; the latest only when None). ``exclude``: the rule that leaves raters out by
    their gold accuracy, or the names of the raters to leave out. StudyError when there is no
    answer to export."""
    mine = [a for a in answers if a.study_signature == study.signature]
    if not mine:
        raise StudyError(f"study {study.study_id} has no answers yet; nothing was written")
    rule = exclude if isinstance(exclude, ExclusionRule) else ExclusionRule()
    view = live_view(study, mine, rule=rule, n_boot=0)
    if isinstance(exclude, ExclusionRule):
        excluded = set(view.excluded)
        said = str(rule)
    else:
        excluded = set(exclude)
        unknown = sorted(excluded - {r.name for r in study.raters})
        if unknown:
            raise StudyError(f"no rater named {unknown[0]!r} to exclude")
        said = "raters excluded by name: " + (", ".join(sorted(excluded)) or "none")
    folder = Path(folder)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    head = [
        f"vst study {study.study_id} {study.signature} ({study.protocol}); exported {stamp}",
        f"exclusion: {said}; excluded: {', '.join(sorted(excluded)) or 'none'}",
        "gold items left out",
    ]
    sig = study.signature.removeprefix("study:")
    table_head = [f"study {study.study_id} sig {sig}", f"exclusion: {said}"]
    files: dict[Path, str] = {}
    if study.protocol == "pairwise":
        frame = pairwise_frame(study, mine, excluded)
        name = "pairwise"
    else:
        frame = judgements_frame(study, mine, excluded)
        name = "judgements"
    if frame.empty:
        raise StudyError("every answer is a gold item's or an excluded rater's; no judgements to export, nothing was written")
    files[folder / f"{study.study_id}-{name}.csv"] = judgement_file_text(study, frame, head)
    per_rater = view.per_rater.assign(excluded=view.per_rater["rater"].isin(excluded))
    files[folder / f"{study.study_id}-raters.csv"] = frame_csv(per_rater, table_head)
    files[folder / f"{study.study_id}-items.csv"] = frame_csv(view.per_item, table_head)
    every = [a for a in (history if history is not None else mine) if a.study_signature == study.signature]
    files[folder / f"{study.study_id}-answers.csv"] = frame_csv(_answers_table(study, every), table_head)
    provenance = {
        "study_id": study.study_id,
        "study_signature": study.signature,
        "title": study.title,
        "protocol": study.protocol,
        "source": study.source,
        "exclusion_rule": said,
        "excluded": sorted(excluded),
        "answers": len(mine),
        "revisions": len(every),
        "raters": len(study.raters),
        "items": len(study.items),
        "gold_items": len(study.gold_items),
        "exported": stamp,
        "files": [p.name for p in files],
    }
    files[folder / f"{study.study_id}-provenance.json"] = json_text(provenance, ensure_ascii=False, indent=1) + "\n"
    return write_whole(files)


def _answers_table(study: Study, answers: Sequence[Answer]) -> pd.DataFrame:
    rows = []
    for a in answers:
        item = study.item(a.item_id)
        rows.append(
            {
                "rater": a.rater,
                "item_id": a.item_id,
                "gold": item.gold is not None,
                "shown": " | ".join(f"{item.stories[i].system}/{item.stories[i].story_id}" for i in a.presented),
                "value": json.dumps(a.value, sort_keys=True),
                "seconds": a.seconds,
                "answered_at": a.answered_at,
                "revision": a.revision,
            }
        )
    columns = ["rater", "item_id", "gold", "shown", "value", "seconds", "answered_at", "revision"]
    return pd.DataFrame(rows, columns=columns)
