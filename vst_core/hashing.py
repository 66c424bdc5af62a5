"""Every content hash of the project, in one place.

* :func:`text_digest` / :func:`json_digest`: sha256 of a string or of canonical JSON (sorted keys),
  used for settings signatures, records and judgements files;
* :func:`file_digest`: sha256 of a file's bytes, read in blocks (images: embedding-cache keys);
* :func:`weights_digest`: sha256 of the first 16 MiB of a weights file plus its size, memoised by
  (path, size, mtime): fast on multi-GB checkpoints and the same wherever the file lies;
* :func:`short_sha1`: 10 hex digits of sha1, the ids given to image sequences that have none
  (kept from the first format so ids in existing score files do not change);
* :func:`bucket`: a stable integer in ``[0, n)`` of a string (shards).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_WEIGHTS: dict[tuple[str, int, int], str] = {}


def text_digest(text: str | bytes, length: int | None = None) -> str:
    """sha256 hex digest of ``text`` (UTF-8), cut to ``length`` hex digits when given."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:length]


def json_digest(value: Any, length: int | None = None) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys; unknown types via ``str``)."""
    return text_digest(json.dumps(value, sort_keys=True, default=str), length)


def file_digest(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weights_digest(path: str | Path, limit: int = 1 << 24) -> str:
    """12 hex digits of sha256(first ``limit`` bytes + size) of a weights file; memoised."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _WEIGHTS:
        h = hashlib.sha256()
        with path.open("rb") as fh:
            h.update(fh.read(limit))
        h.update(str(stat.st_size).encode())
        _WEIGHTS[key] = h.hexdigest()[:12]
    return _WEIGHTS[key]


def bucket(text: str, n: int) -> int:
    """``sha256(text)`` as an integer mod ``n``: the same on every machine and Python run."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % n


def short_sha1(text: str) -> str:
    """10 hex digits of sha1(``text``): a sequence id derived from its image paths."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:10]


#: Characters that are valid inside a JSON string but end a line for ``str.splitlines``.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(value: object, **options: object) -> str:
    """``value`` as one JSON line (UTF-8 text kept readable) that every line splitter sees as one
    line: U+0085, U+2028 and U+2029 are escaped, as JSON allows."""
    return json.dumps(value, ensure_ascii=False, **options).translate(_LINE_BREAKS)  # type: ignore[arg-type]


#: Files of a model folder whose bytes identify the model (weights, config, tokenizer).
_IDENTITY_SUFFIXES = (".safetensors", ".bin", ".pt", ".json", ".txt", ".model")


def folder_signature(folder: str | Path | None, kind: str) -> str:
    """``<kind>:<folder name>@<digest>``: sha256 over the names and bytes of the folder's weights,
    config and tokenizer files (not its card's figures or saved predictions), or
    ``<kind>:not-downloaded`` when there is no such folder.

    >>> folder_signature(None, "vrank")
    'vrank:not-downloaded'
    """
    path = Path(folder) if folder else None
    if path is None or not path.is_dir():
        return f"{kind}:not-downloaded"
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _IDENTITY_SUFFIXES):
        if file.name.startswith(("card", "predictions", "trainer_state")):
            continue
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return f"{kind}:{path.name}@{digest.hexdigest()[:16]}"
