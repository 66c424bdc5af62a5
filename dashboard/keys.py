"""The session-state keys the frame and the sidebar share (plain strings, no streamlit): the
sidebar reads what the frame wrote on the run before, so neither has to import the other."""

from __future__ import annotations

#: The frame of this run (:class:`dashboard.frame.Frame`), for the page to render.
FRAME = "_vst_frame"

#: Per model: (what was asked for, why it is unavailable or None), from the last probe; the
#: sidebar disables the controls of a model that cannot load.
MODEL_STATUS = "_vst_model_status"

#: Notices about the link, kept when the frame reruns the script (the link is clean by then).
LINK_NOTICES = "_vst_link_notices"

#: The judgements chosen on the Agreement page (bytes), shown beside the scores in Inspect.
JUDGEMENTS = "_vst_judgements"
#: A slice the slice finder proposed (``{"view": view key, "label": str, "conditions": [...], "systems": [...]}``),
#: applied by the Dataset page on top of its own slice until cleared.
FOUND_SLICE = "_vst_found_slice"
