"""The loaded data as a study needs it: its stories (a story set's, or a scores file's records) and
what the study's ``source`` says of them. The stories are read once per view (a scores file's
records parsed once, not at every rerun of the page)."""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from vst_core.story import StoryFields
from vst_core.viz import RunView


@st.cache_resource(show_spinner="Reading the stories…", max_entries=4)
def stories_of(_view: RunView, key: str) -> tuple[StoryFields, ...]:
    """Every story of the view, in its table's order: a story set's stories, a scores file's records
    (which hold the sentences and photos); cached by the view's content ``key``."""
    found: list[StoryFields] = []
    for row in range(len(_view)):
        story = _view.story(row) if _view.index is None else _view.record(row)
        if story is not None:
            found.append(story)
    return tuple(found)


def source_of(view: RunView, signature_ids: tuple[str, ...]) -> dict[str, str]:
    """What a study made from ``view`` says of its stories: the kind, the input digests (every scores
    file by its sha256), the scores' signature ids, and the folder the photos resolve in."""
    if view.index is not None:
        files = " + ".join(Path(f.path).name for f in view.index.files)
        kind = "scores"
    else:
        files, kind = "", "stories"
    return {
        "kind": kind,
        "file": files,
        "inputs": json.dumps(view.inputs, sort_keys=True),
        "signature_ids": ",".join(signature_ids),
        "folder": str(view.root.resolve()),
    }
