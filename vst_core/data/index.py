"""A columnar index of one or more scores JSONL files: the per-story numbers in a table, the
evidence read only for the stories shown.

Building it reads every line once (orjson), keeps the numbers of :data:`vst_core.records.FIELDS`,
the ids, the text and the byte range of each line, and merges the lines of one story
``(system, story_id)`` metric by metric with the rule of :mod:`vst_core.data.merge` (conflicts
reported). The table and the byte ranges are stored as Parquet under the cache folder, keyed by the
files' content digests, so a second load reads two small files instead of parsing the evidence
again. :meth:`ScoresIndex.record` reads, validates and merges one story's lines when it is shown.

Why Parquet (pyarrow) rather than DuckDB or SQLite: the pages filter and plot pandas frames, and a
Parquet file of 100,000 rows is read into one in a few tens of milliseconds with no server, no
query language and no second copy of the numbers; pyarrow is already what pandas stores strings in.

>>> index = load_index(["scores.jsonl"])                     # doctest: +SKIP
>>> index.table[["system", "story", "NR"]].head()            # doctest: +SKIP
>>> index.record(index.row_of("llava", "45530")).redundancy  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from vst_core.data.merge import MAIN_VALUE, Conflict, differ, is_imported, merge_story
from vst_core.data.readers import MAX_LINE_BYTES
from vst_core.data.scores_io import _score_line
from vst_core.hashing import file_digest, json_digest
from vst_core.problems import Problem
from vst_core.records import EXPECTED_FIELDS, FIELDS, SCORES_FORMAT, StoryScores, read_record

#: Bumped when the stored layout changes (old indexes are then rebuilt, not misread).
INDEX_FORMAT = 1
ID_COLUMNS = ["story", "sequence", "system"]
TAIL_COLUMNS = ["sentences", "text", "error", "problems"]
_BY_METRIC: dict[str, list[tuple[str, str]]] = {}
for _f in FIELDS:
    _BY_METRIC.setdefault(_f.metric, []).append((_f.column, _f.attr))

Progress = Callable[[int, int], None]


class IndexError_(ValueError):
    """A scores file that cannot be indexed at all (missing, unreadable, not a file)."""


@dataclass(frozen=True)
class IndexedFile:
    """A file the index was built from: its path, content digest and the stat it had then."""

    path: str
    sha256: str
    size: int
    mtime_ns: int


@dataclass
class ScoresIndex:
    """The numbers of every story of some scores files, one row per ``(system, story_id)``.

    ``table``: story, sequence, system, one column per registry field present (NaN: undefined),
    sentences, text, error, problems. ``sources``: row, file, offset, length of every line behind
    a row (a merged story has several), sorted by row."""

    files: tuple[IndexedFile, ...]
    table: pd.DataFrame
    sources: pd.DataFrame
    conflicts: list[Conflict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    _rows: dict[tuple[str, str], int] | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        """Content digest of the indexed files, in order (what the index is keyed by)."""
        return index_key([f.sha256 for f in self.files])

    def __len__(self) -> int:
        return len(self.table)

    def row_of(self, system: str, story_id: str) -> int | None:
        """The row of a story, or None."""
        if self._rows is None:
            self._rows = {(s, i): k for k, (s, i) in enumerate(zip(self.table["system"], self.table["story"], strict=True))}
        return self._rows.get((system, story_id))

    def rows_of_story(self, story_id: str) -> list[int]:
        """Every row with this story id (one per system that has it)."""
        return [int(k) for k in np.flatnonzero((self.table["story"] == story_id).to_numpy())]

    def record(self, row: int) -> tuple[StoryScores | None, list[Problem]]:
        """The full record of row ``row`` (evidence included), read from its lines now, validated and
        merged; a file changed since indexing is a problem, not a wrong record."""
        starts = np.searchsorted(self.sources["row"].to_numpy(), [row, row + 1])
        parts: list[tuple[StoryScores, str]] = []
        problems: list[Problem] = []
        for file_no, offset, length in self.sources.iloc[starts[0] : starts[1]][["file", "offset", "length"]].itertuples(
            index=False
        ):
            source = self.files[int(file_no)]
            name = Path(source.path).name
            try:
                stat = os.stat(source.path)
                if (stat.st_size, stat.st_mtime_ns) != (source.size, source.mtime_ns):
                    problems.append(Problem(f"{name} changed since it was indexed; load it again", "file"))
                    continue
                with open(source.path, "rb") as fh:
                    fh.seek(int(offset))
                    raw = fh.read(int(length))
            except OSError as exc:
                problems.append(Problem(f"cannot read {name}: {exc}", "file"))
                continue
            data, problem = _score_line(raw, 2)
            if data is None:
                problems.append(problem or Problem(f"unreadable line in {name}", "line"))
                continue
            record, found = read_record(data)
            problems.extend(found)
            if record is not None:
                parts.append((record, name))
        if not parts:
            return None, problems
        merged, _ = merge_story(parts)
        return merged, problems

    def records(self, rows: Iterable[int]) -> list[StoryScores]:
        """The full records of ``rows`` (those that can still be read)."""
        out = []
        for row in rows:
            record, _ = self.record(int(row))
            if record is not None:
                out.append(record)
        return out

    def first_signature(self) -> dict[str, Any]:
        """The signature of the first computed record (else the first): the settings shown."""
        for sig in self.signatures.values():
            if not is_imported(sig):
                return sig
        return next(iter(self.signatures.values()), {})


def describe_recorded(signature: dict[str, Any]) -> str:
    """One line on how a signature's scores were made: imported (file, variant) or computed (the
    metrics, NR definition, coherence model, CLIP and θ)."""
    imported = _dict(signature.get("imported"))
    if imported:
        variants = imported.get("variants") or {}
        what = ", ".join(f"{m} ({v})" for m, v in variants.items()) if isinstance(variants, dict) else "scores"
        return f"imported from {imported.get('file')}: {what} · sig {signature.get('id')}"
    settings = _dict(signature.get("settings"))
    metrics = settings.get("metrics") or []
    parts = [f"computed: {', '.join(map(str, metrics)) or 'no metric'}"]
    if "redundancy" in metrics:
        parts.append(f"NR {settings.get('nr_variant')} n={settings.get('nr_ngram')}")
    if "coherence" in metrics:
        parts.append(f"coherence {settings.get('coherence_model')}")
    if "grounding" in metrics:
        parts.append(f"CLIP {settings.get('clip_arch')}/{settings.get('clip_pretrained')} θ {settings.get('theta')}")
    return " · ".join(parts) + f" · sig {signature.get('id')}"


def index_key(digests: Sequence[str]) -> str:
    return json_digest({"format": INDEX_FORMAT, "files": list(digests)}, 24)


# --------------------------------------------------------------------------- building


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return math.nan


def _lines(path: Path) -> Iterable[tuple[int, int, bytes]]:
    """(line number, byte offset, line bytes) of a file, read in large blocks."""
    offset, number = 0, 0
    with path.open("rb") as fh:
        for raw in fh:
            number += 1
            yield number, offset, raw
            offset += len(raw)


def build_index(paths: Sequence[str | Path], progress: Progress | None = None) -> ScoresIndex:
    """Index ``paths`` in order (see the module). Unreadable lines are problems; a missing or
    unreadable file is :class:`IndexError_`."""
    files: list[IndexedFile] = []
    for p in paths:
        path = Path(p)
        try:
            stat = path.stat()
            if not path.is_file():
                raise IndexError_(f"not a file: {path}")
            files.append(IndexedFile(str(path.resolve()), file_digest(path), stat.st_size, stat.st_mtime_ns))
        except OSError as exc:
            raise IndexError_(f"cannot read {path}: {exc}") from None
    total = sum(f.size for f in files)
    done = 0
    rows: dict[tuple[str, str], int] = {}
    ids: list[list[str]] = [[], [], []]
    numbers: dict[str, list[float]] = {f.column: [] for f in FIELDS}
    tail: dict[str, list[Any]] = {c: [] for c in TAIL_COLUMNS}
    origin: list[dict[str, tuple[str, bool]]] = []  # per row: metric -> (file name, imported)
    src_row: list[int] = []
    src_file: list[int] = []
    src_offset: list[int] = []
    src_length: list[int] = []
    conflicts: list[Conflict] = []
    problems: list[Problem] = []
    signatures: dict[str, dict[str, Any]] = {}
    present: set[str] = set()
    for file_no, source in enumerate(files):
        name = Path(source.path).name
        for number, offset, raw in _lines(Path(source.path)):
            done += len(raw)
            if progress is not None and number % 5000 == 0:
                progress(done, total)
            if not raw.strip():
                continue
            data = _fast_line(raw, number)
            if not isinstance(data, dict):
                problems.append(data if isinstance(data, Problem) else Problem("unreadable line", "line", line=number))
                continue
            sentences = data.get("sentences")
            sid = str(data["story_id"])
            if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
                problems.append(Problem(f"{name}: scores record without sentences; skipped", "line", line=number, story_id=sid))
                continue
            if data.get("format") != SCORES_FORMAT or any(k not in data for k in EXPECTED_FIELDS):
                missing = ", ".join(k for k in EXPECTED_FIELDS if k not in data) or "nothing"
                problems.append(
                    Problem(
                        f"{name}: record from another version (format {data.get('format', 'none')}; missing {missing})",
                        "line", "warning", line=number, story_id=sid,
                    )
                )  # fmt: skip
            system = str(data.get("system") or "unknown")
            signature: dict[str, Any] = _dict(data.get("signature"))
            sig_id = str(signature.get("id"))
            if sig_id not in signatures:
                signatures[sig_id] = signature
            imported = is_imported(signature)
            metrics = _dict(data.get("metrics"))
            errors = _dict(data.get("errors"))
            key = (system, sid)
            row = rows.get(key)
            if row is None:
                row = rows[key] = len(ids[0])
                ids[0].append(sid)
                ids[1].append(str(data.get("sequence_id") or sid))
                ids[2].append(system)
                for column in numbers:
                    numbers[column].append(math.nan)
                tail["sentences"].append(len(sentences))
                tail["text"].append(" ".join(sentences))
                tail["error"].append("; ".join(f"{k}: {v}" for k, v in errors.items() if k not in metrics))
                kinds = [f"{k} error" for k in errors if k not in metrics]
                if data.get("problems"):
                    kinds.append("input")
                tail["problems"].append(",".join(kinds))
                origin.append({})
            else:
                if sentences and not tail["sentences"][row]:
                    tail["sentences"][row] = len(sentences)
                    tail["text"][row] = " ".join(sentences)
                sequence = data.get("sequence_id")
                if sequence and str(sequence) != sid and ids[1][row] == sid:
                    ids[1][row] = str(sequence)
            src_row.append(row)
            src_file.append(file_no)
            src_offset.append(offset)
            src_length.append(len(raw))
            for metric, value in metrics.items():
                columns = _BY_METRIC.get(str(metric))
                if columns is None or not isinstance(value, dict):
                    continue
                present.add(str(metric))
                new = {column: _number(value.get(attr)) for column, attr in columns}
                seen = origin[row].get(metric)
                if seen is not None:
                    main = next(c for c, a in columns if a == MAIN_VALUE[metric])
                    old_v, new_v = _opt(numbers[main][row]), _opt(new[main])
                    if not (seen[1] and not imported):  # the earlier source stays
                        if differ(old_v, new_v):
                            conflicts.append(Conflict(system, sid, metric, old_v, seen[0], new_v, name))
                        continue
                    if differ(old_v, new_v):
                        conflicts.append(Conflict(system, sid, metric, new_v, name, old_v, seen[0]))
                origin[row][metric] = (name, imported)
                for column, v in new.items():
                    numbers[column][row] = v
    if progress is not None:
        progress(total, total)
    table = pd.DataFrame({"story": ids[0], "sequence": ids[1], "system": ids[2]})
    kept = [f.column for f in FIELDS if f.metric in present]
    for column in kept:
        table[column] = np.asarray(numbers[column], dtype=float)
    table["sentences"] = np.asarray(tail["sentences"], dtype=np.int32)
    for column in ("text", "error", "problems"):
        table[column] = tail[column]
    sources = pd.DataFrame(
        {
            "row": np.asarray(src_row, dtype=np.int64),
            "file": np.asarray(src_file, dtype=np.int32),
            "offset": np.asarray(src_offset, dtype=np.int64),
            "length": np.asarray(src_length, dtype=np.int64),
        }
    ).sort_values("row", kind="stable", ignore_index=True)
    metrics_present = tuple(m for m in dict.fromkeys(f.metric for f in FIELDS) if m in present)
    return ScoresIndex(tuple(files), table, sources, conflicts, problems, signatures, metrics_present)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _opt(value: float) -> float | None:
    return None if math.isnan(value) else value


def _fast_line(raw: bytes, number: int) -> dict[str, Any] | Problem:
    """A line as a JSON object (orjson; the exact reader's message when orjson refuses it)."""
    if len(raw) <= MAX_LINE_BYTES:
        try:
            data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw)
            if isinstance(data, dict) and data.get("story_id") not in (None, ""):
                return data
        except orjson.JSONDecodeError:
            pass
    record, problem = _score_line(raw, number)
    if record is not None and record.get("story_id") not in (None, ""):
        return record
    return problem or Problem("scores line without story_id; skipped", "line", line=number)


# --------------------------------------------------------------------------- stored on disk


def _digest_memo(folder: Path) -> Path:
    return folder / "digests.json"


def _known_digests(folder: Path, paths: Sequence[Path]) -> list[str] | None:
    """The content digests of ``paths`` remembered for their current (size, mtime), else None."""
    try:
        memo = json.loads(_digest_memo(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    out = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            return None
        found = memo.get(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}") if isinstance(memo, dict) else None
        if not isinstance(found, str):
            return None
        out.append(found)
    return out


def _remember_digests(folder: Path, files: Sequence[IndexedFile]) -> None:
    try:
        memo = json.loads(_digest_memo(folder).read_text(encoding="utf-8"))
        memo = memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        memo = {}
    for f in files:
        memo[f"{f.path}|{f.size}|{f.mtime_ns}"] = f.sha256
    _atomic_write(_digest_memo(folder), json.dumps(dict(list(memo.items())[-2000:])).encode())


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def save_index(index: ScoresIndex, folder: Path) -> None:
    """Store ``index`` under ``folder`` by its key (written beside, then renamed into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    key = index.digest
    for name, frame in (("table", index.table), ("sources", index.sources)):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        os.close(fd)
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, folder / f"{key}.{name}.parquet")
    meta = {
        "format": INDEX_FORMAT,
        "files": [asdict(f) for f in index.files],
        "conflicts": [asdict(c) for c in index.conflicts],
        "problems": [asdict(p) for p in index.problems],
        "signatures": index.signatures,
        "metrics": list(index.metrics),
    }
    _atomic_write(folder / f"{key}.json", json.dumps(meta).encode())
    _remember_digests(folder, index.files)


def _read_stored(folder: Path, key: str, paths: Sequence[Path]) -> ScoresIndex | None:
    try:
        meta = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
        table = pd.read_parquet(folder / f"{key}.table.parquet")
        sources = pd.read_parquet(folder / f"{key}.sources.parquet")
    except (OSError, ValueError):
        return None
    if meta.get("format") != INDEX_FORMAT:
        return None
    files = []
    for path, stored in zip(paths, meta["files"], strict=True):  # the same content, perhaps moved
        stat = path.stat()
        files.append(IndexedFile(str(path.resolve()), stored["sha256"], stat.st_size, stat.st_mtime_ns))
    return ScoresIndex(
        tuple(files),
        table,
        sources,
        [Conflict(**c) for c in meta["conflicts"]],
        [Problem(**p) for p in meta["problems"]],
        meta["signatures"],
        tuple(meta["metrics"]),
    )


def index_folder() -> Path:
    """Where indexes are stored: ``$VST_CACHE_DIR/index`` (default ``~/.cache/vst-eval/index``)."""
    from vst_core.embeddings import default_cache_dir

    return default_cache_dir() / "index"


def load_index(paths: Sequence[str | Path], folder: Path | None = None, progress: Progress | None = None) -> ScoresIndex:
    """The index of ``paths``: read from ``folder`` when stored for these contents, else built and
    stored (a folder that cannot be written only costs the next load its speed)."""
    folder = folder or index_folder()
    files = [Path(p) for p in paths]
    for path in files:
        if not path.is_file():
            raise IndexError_(f"no scores file at {path}")
    digests = _known_digests(folder, files)
    if digests is not None:
        stored = _read_stored(folder, index_key(digests), files)
        if stored is not None:
            return stored
    index = build_index(files, progress)
    try:
        save_index(index, folder)
    except OSError:
        pass
    return index
