"""Study files on disk and the raters' tokens: a study is saved whole or not at all, read back
with a clear error, found by a rater's token among the studies of a folder, and its raters added
or revoked.

>>> token_shape(new_token())
True
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from vst_core.data.exports import write_text_whole
from vst_core.study.records import (
    MAX_STUDY_BYTES,
    Rater,
    Study,
    StudyError,
    _key,
    study_limit,
    token_shape,
)

__all__ = [
    "STUDY_SUFFIX",
    "add_rater",
    "add_raters",
    "copy_photos",
    "photos_folder",
    "revoke",
    "study_photo",
    "answers_path",
    "find_study",
    "load_study",
    "new_token",
    "rater_for",
    "rater_link",
    "revoke_rater",
    "save_study",
    "studies_folder",
]

#: The end of a study file's name: :func:`find_study` reads the files of a folder that end so.
STUDY_SUFFIX = ".study.json"


def new_token() -> str:
    """A rater's secret: 24 random bytes, URL-safe (32 characters)."""
    return secrets.token_urlsafe(24)


def save_study(study: Study, path: str | Path, *, photos_from: str | Path | None = None) -> Path:
    """Write ``study`` to ``path`` whole or not at all (a temporary file renamed into place); the
    file carries the study's signature. Returns the path.

    ``photos_from``: the folder the items' photo references are relative to (a story set's); each
    photo found there is copied into the study's own photo folder (:func:`photos_folder`), under
    the same reference, so the rater page finds it after the data it came from is gone. A reference
    that leaves that folder, or names no file, is not copied (the page shows a grey box)."""
    path = Path(path)
    data: dict[str, Any] = {**study.to_json(), "signature": study.signature}
    if photos_from is not None:
        copy_photos(study, Path(photos_from), photos_folder(path))
    write_text_whole(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    return path


def photos_folder(study_path: str | Path) -> Path:
    """The folder beside a study file that holds its photos: ``<name>.photos``.

    >>> photos_folder("runs/pilot.study.json").name
    'pilot.photos'
    """
    path = Path(study_path)
    stem = path.name.removesuffix(STUDY_SUFFIX) if path.name.endswith(STUDY_SUFFIX) else path.stem
    return path.with_name(f"{stem}.photos")


def copy_photos(study: Study, source: Path, target: Path) -> tuple[int, list[str]]:
    """Copy every photo the study's items name from ``source`` into ``target`` (same relative
    references; a file there already is kept). Returns how many were copied and the references
    that were not (outside ``source``, missing, over the image byte budget)."""
    import shutil

    from vst_core.data.images import max_bytes
    from vst_core.data.paths import ImagePathError, resolve_image

    refs = dict.fromkeys(p for item in study.items for story in item.stories for p in story.photos)
    copied, skipped = 0, []
    base = source.resolve()
    for ref in refs:
        try:
            found = resolve_image(source, ref, base=base)
            into = resolve_image(target, ref)
        except ImagePathError:
            skipped.append(ref)
            continue
        if not found.is_file() or found.stat().st_size > max_bytes():
            skipped.append(ref)
            continue
        if into.exists():
            continue
        into.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found, into)
        copied += 1
    return copied, skipped


def study_photo(study_path: str | Path, ref: str) -> Path | None:
    """The copy of photo ``ref`` in the study's photo folder, or None when it is not there or the
    reference leaves the folder."""
    from vst_core.data.paths import ImagePathError, resolve_image

    try:
        found = resolve_image(photos_folder(study_path), ref)
    except ImagePathError:
        return None
    return found if found.is_file() else None


def load_study(path: str | Path) -> Study:
    """The study in ``path``; a missing, oversized, unreadable or edited-by-hand file is a
    :class:`StudyError` saying which (an edit that changes what raters see changes the signature
    the file states).

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "x.study.json"
    >>> _ = bad.write_text("{}")
    >>> load_study(bad)
    Traceback (most recent call last):
    ...
    vst_core.study.records.StudyError: x.study.json: not a study file (no "format": "vst-study")
    """
    path = Path(path)
    if not path.is_file():
        raise StudyError(f"no study file at {path}")
    limit = study_limit("VST_MAX_STUDY_BYTES", MAX_STUDY_BYTES)
    size = path.stat().st_size
    if limit is not None and size > limit:
        raise StudyError(f"{path.name}: {size:,} bytes, over the limit of {limit:,} a study file (VST_MAX_STUDY_BYTES raises it)")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise StudyError(f"{path.name}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise StudyError(f"{path.name}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise StudyError(f"{path.name}: nested too deeply to be a study file") from None
    except OSError as exc:
        raise StudyError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    try:
        study = Study.from_json(data)
    except StudyError as exc:
        raise StudyError(f"{path.name}: {exc}") from None
    stated = data.get("signature")
    if stated is not None and stated != study.signature:
        raise StudyError(
            f"{path.name}: its content does not match its signature ({stated} stated, {study.signature} found): "
            "it was edited after it was made; make a new study instead"
        )
    return study


def answers_path(study_path: str | Path) -> Path:
    """Where a study's answers are kept by default: beside it, its suffix ``.answers.sqlite``.

    >>> answers_path("runs/pilot.study.json").name
    'pilot.study.answers.sqlite'
    """
    return Path(study_path).with_suffix(".answers.sqlite")


def rater_for(study: Study, token: Any) -> Rater | None:
    """The live rater whose token is ``token`` (compared in constant time), or None: a wrong,
    malformed or revoked token finds nobody."""
    if not token_shape(token):
        return None
    found = None
    given = str(token).encode()
    for rater in study.raters:  # every token compared, found or not
        if hmac.compare_digest(rater.token.encode(), given) and not rater.revoked:
            found = rater
    return found


def studies_folder() -> Path:
    """The folder of the studies the rater page serves: ``VST_STUDIES``, else
    ``~/.local/share/vst/studies``."""
    given = os.environ.get("VST_STUDIES", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".local" / "share" / "vst" / "studies"


_LOADED: dict[Path, tuple[tuple[int, int], Study]] = {}


def _cached_study(path: Path) -> Study | None:
    """The study in ``path`` read once per (size, modification time); None when it cannot be read."""
    try:
        stat = path.stat()
    except OSError:
        return None
    stamp = (stat.st_size, stat.st_mtime_ns)
    held = _LOADED.get(path)
    if held is not None and held[0] == stamp:
        return held[1]
    try:
        study = load_study(path)
    except StudyError:
        return None
    if len(_LOADED) > 256:
        _LOADED.clear()
    _LOADED[path] = (stamp, study)
    return study


def find_study(token: Any, folder: str | Path | None = None) -> tuple[Study, Path] | None:
    """The study (and its file) among ``*.study.json`` in ``folder`` (default
    :func:`studies_folder`) whose live rater holds ``token``; None for a wrong, malformed or
    revoked token, and for a folder with no such study. Files that cannot be read are passed over."""
    if not token_shape(token):
        return None
    where = Path(folder) if folder is not None else studies_folder()
    try:
        files = sorted(p for p in where.iterdir() if p.name.endswith(STUDY_SUFFIX) and p.is_file())
    except OSError:
        return None
    for path in files:
        study = _cached_study(path)
        if study is not None and rater_for(study, token) is not None:
            return study, path
    return None


def add_rater(study: Study, name: str) -> Study:
    """``study`` with one more rater, ``name``, holding a new token (StudyError when the name is
    taken or not a name). Adding a rater deals the items again (:func:`~vst_core.study.plan.plan_for`)."""
    _key(name, "a rater's name")
    if study.rater(name) is not None:
        raise StudyError(f"the study has a rater named {name!r} already")
    return study.with_raters([*study.raters, Rater(name, new_token())])


def revoke_rater(study: Study, name: str) -> Study:
    """``study`` with rater ``name``'s link revoked: their token finds nothing from then on; the
    answers they gave are kept, and no other rater's items change."""
    if study.rater(name) is None:
        known = ", ".join(r.name for r in study.raters) or "none"
        raise StudyError(f"no rater named {name!r} (raters: {known})")
    return study.with_raters([replace(r, revoked=True) if r.name == name else r for r in study.raters])


def add_raters(study: Study, names: Sequence[str]) -> Study:
    """:func:`add_rater` for each of ``names``."""
    for name in names:
        study = add_rater(study, name)
    return study


def revoke(study: Study, token: Any) -> Study:
    """``study`` with the live rater holding ``token`` revoked (StudyError when none holds it)."""
    rater = rater_for(study, token)
    if rater is None:
        raise StudyError("no live rater holds that token")
    return revoke_rater(study, rater.name)


def rater_link(base_url: str, rater: Rater) -> str:
    """The rater's link: ``base_url`` with ``?rater=<token>`` (or ``&rater=`` when it has a query).

    >>> rater_link("http://localhost:8501/study", Rater("r1", "A" * 32))
    'http://localhost:8501/study?rater=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    """
    joiner = "&" if "?" in base_url else "?"
    return f"{base_url}{joiner}rater={rater.token}"
