"""What belongs to one browser session: the folder its uploads are written to (removed when the
session ends) and the story sets read from them, and the server folders it may read.

A session's folder is named ``vst-upload-<pid>-…`` in the temporary folder: the upload functions of
:mod:`vst_core.data.uploads` find it above the folder they write to, and bound what it holds (one
upload at a time, see :func:`cached`) and what all such folders hold together."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from vst_core.data.access import allowed_roots
from vst_core.data.uploads import SESSION_PREFIX

_FOLDER = "_vst_uploads"
_RESULTS = "_vst_upload_results"
PREFIX = SESSION_PREFIX  # the upload budgets recognise a session folder by it
T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent


def roots() -> tuple[Path, ...]:
    """Server folders a typed path may point into: the working directory first, the bundled
    assets, ``VST_DATA_DIRS`` and ``streamlit run app.py -- --data FOLDER``."""
    return allowed_roots([Path.cwd(), ROOT / "assets"], os.environ.get("VST_DATA_DIRS"), sys.argv[1:])


class SessionFolder:
    """A temporary folder removed when this object is collected (the session ended) or at exit."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)

    def sub(self, key: str) -> Path:
        return self.path / key


def sweep_stale(tmp: Path | None = None) -> int:
    """Remove upload folders left by dashboard processes that are no longer running; how many."""
    removed = 0
    for folder in Path(tmp or tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = folder.name[len(PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        except OSError:
            continue  # alive under another user
    return removed


def folder() -> SessionFolder:
    """This session's upload folder (made on first use; stale ones of dead processes swept then)."""
    if _FOLDER not in st.session_state:
        sweep_stale()
        st.session_state[_FOLDER] = SessionFolder()
    found: SessionFolder = st.session_state[_FOLDER]
    return found


def cached(key: str, make: Callable[[Path], T]) -> T:
    """``make(subfolder)`` once per session and content ``key``; the result lives with the session.
    The session's folder is emptied first, so it holds one upload (within the session budget of
    :mod:`vst_core.data.uploads`)."""
    results: dict[str, Any] = st.session_state.setdefault(_RESULTS, {})
    if key not in results:
        results.clear()  # one upload at a time: a replaced upload's files go
        shutil.rmtree(folder().path, ignore_errors=True)
        folder().path.mkdir(parents=True, exist_ok=True)
        results[key] = make(folder().sub(key[:16]))
    value: T = results[key]
    return value
