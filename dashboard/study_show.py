"""What the study pages draw the same way: a story as its photos in order with each sentence under
its photo (a missing photo as a grey box), text from a study file escaped, and the rater's link.
Nothing here decides anything about a study: that is :mod:`vst_core.study`."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from dashboard import loading
from vst_core.data.paths import ImagePathError, resolve_image
from vst_core.study import StoryShown, Study, study_photo
from vst_core.viz.safe import md

#: The grey box drawn where a photo cannot be shown (a constant: nothing from a file in it).
MISSING_PHOTO = (
    '<div style="background:#d9d9d9;color:#4a4a4a;aspect-ratio:4/3;display:flex;align-items:center;'
    'justify-content:center;border-radius:4px;font-size:0.9rem">photo not available</div>'
)

#: Every photo of a story in a box of one shape (4:3, the photo whole inside it), so the sentences
#: under a row of photos start on one line; the grey box of a missing photo has that shape too.
STYLE = """<style>
[class*="st-key-story-photos-"] [data-testid="stImage"] img {
  aspect-ratio: 4 / 3; object-fit: contain; background: #f3f3f3; border-radius: 4px; width: 100%; }
</style>"""

#: Letters the stories of an item are shown under, left to right.
LETTERS = "ABCD"


def paragraphs(text: str) -> str:
    """A researcher's text (instructions) as markdown that shows its characters exactly, its
    paragraphs (blank lines) kept apart.

    >>> paragraphs("Rate *each* story.\\n\\n<b>Be kind</b>")
    'Rate \\\\*each\\\\* story.\\n\\n\\\\<b\\\\>Be kind\\\\</b\\\\>'
    """
    parts = [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]
    return "\n\n".join(md(p) for p in parts)


#: A photo's reference -> its file, or None (refused, missing).
Resolver = Callable[[str], Path | None]


def photos_of(study_path: Path, study: Study) -> Resolver:
    """A study's photos: the copies in its own photo folder, else (a study made without copies) the
    folder its stories came from (``source["folder"]``); a reference that leaves the folder finds
    nothing."""
    folder = study.source.get("folder")
    origin = photo_resolver(Path(folder) if folder else None)

    def resolve(ref: str) -> Path | None:
        found = study_photo(study_path, ref)
        if found is not None:
            return found
        fallback = origin(ref)
        return fallback if fallback is not None and fallback.is_file() else None

    return resolve


def photo_resolver(root: Path | None) -> Resolver:
    """A function from a photo's reference to its file inside ``root`` (None: refused, or no root)."""

    def resolve(ref: str) -> Path | None:
        if root is None:
            return None
        try:
            return resolve_image(root, ref)
        except ImagePathError:
            return None

    return resolve


@st.cache_data(show_spinner=False, max_entries=1024)
def photo_bytes(path: str, version: tuple[int, ...]) -> bytes | None:
    """A photo as the page sends it: its thumbnail (:func:`dashboard.loading.thumbnail`) as JPEG bytes,
    made once per file version, so a rater's every answer sends the same bytes and encodes nothing
    again; None when it cannot be shown."""
    picture, _, _ = loading.thumbnail(path, version)
    if picture is None:
        return None
    out = io.BytesIO()
    picture.save(out, format="JPEG", quality=88)
    return out.getvalue()


def _photo(column: st.delta_generator.DeltaGenerator, path: Path | None) -> None:
    if path is not None:
        try:
            data = photo_bytes(str(path), loading.stamp(path))
        except OSError:
            data = None
        if data is not None:
            column.image(data, width="stretch")
            return
    column.html(MISSING_PHOTO)


#: The most photos drawn side by side: a longer story (a VWP scene's ten shots) goes on in a
#: second row, so a shot stays large enough to judge (ten in one row: 110 px wide at 1400 px).
ROW = 6


def per_row(count: int, most: int = ROW) -> int:
    """Photos a row for a story of ``count`` photos: as few rows as hold ``most`` each, shared
    evenly (the last row may hold fewer).

    >>> [per_row(n) for n in (1, 5, 6, 7, 9, 10, 12, 13)]
    [1, 5, 6, 4, 5, 5, 6, 5]
    """
    if count <= 0:
        return 0
    rows = -(-count // most)
    return -(-count // rows)


def story(shown: StoryShown, resolve: Resolver, key: str) -> None:
    """The story's photos in their order, each with its text under it (a photo's group of
    sentences, for a story written so), in rows of at most :data:`ROW` photos of one width; a
    story without photos as its text. ``key`` names its container (``story-photos-<key>``:
    :data:`STYLE` gives its photos one shape)."""
    texts = shown.photo_texts()
    if not shown.photos:
        st.markdown(" ".join(md(s) for s in shown.sentences))
        return
    box = st.container(key=f"story-photos-{key}")
    width = per_row(len(shown.photos))
    paired = len(texts) == len(shown.photos)
    for start in range(0, len(shown.photos), width):
        columns = box.columns(max(width, 3), gap="small")
        for k, ref in enumerate(shown.photos[start : start + width], start):
            _photo(columns[k - start], resolve(ref))
            if paired and texts[k]:
                columns[k - start].markdown(md(texts[k]))
    if not paired:  # photos and texts that do not pair up: the text under the photos
        st.markdown(" ".join(md(s) for s in shown.sentences))


def typed_base(text: str) -> str | None:
    """An address typed for the raters' links: an ``http(s)://`` address with a host and at most a
    path (ending in ``/``), or None (anything else: another scheme, a query, spaces).

    >>> typed_base("https://lab.example.org/vst"), typed_base("javascript:alert(1)"), typed_base("http://h/?x=1")
    ('https://lab.example.org/vst/', None, None)
    """
    found = re.fullmatch(r"(https?://[A-Za-z0-9.\-\[\]:]+)(/[A-Za-z0-9._~\-/]*)?", text.strip())
    if found is None:
        return None
    path = (found.group(2) or "").strip("/")
    return f"{found.group(1)}/{path}/" if path else f"{found.group(1)}/"


def base_url(url: str | None) -> str:
    """The dashboard's address a rater's link starts with: scheme, host and port of the page's
    own address (its path and query dropped).

    >>> base_url("http://localhost:8501/study?x=1"), base_url(None)
    ('http://localhost:8501/', '/')
    """
    found = re.match(r"^(https?://[^/?#]+)", url or "")
    return f"{found.group(1) if found else ''}/"
