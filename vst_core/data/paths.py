"""Image paths of a story set: resolved inside the set's folder only, and checked cheaply."""

from __future__ import annotations

from pathlib import Path

IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


class ImagePathError(ValueError):
    """An image path that is absolute or leaves the story set's folder."""


def resolve_image(root: Path, ref: str) -> Path:
    """Resolve ``ref`` against ``root``; refuse absolute paths, URLs and paths leaving ``root``."""
    if not ref or not ref.strip():
        raise ImagePathError("empty image path")
    if "://" in ref:
        raise ImagePathError(f"image {ref!r} is a URL; give a path relative to the story file")
    candidate = Path(ref)
    if candidate.is_absolute():
        raise ImagePathError(f"image {ref!r} is absolute; give a path relative to the story file")
    base = root.resolve()
    resolved = (base / candidate).resolve()
    if not resolved.is_relative_to(base):
        raise ImagePathError(f"image {ref!r} leaves the dataset folder {base}")
    return resolved


def check_image(path: Path) -> str | None:
    """None when ``path`` is an image PIL can open, else why not (header check, cheap)."""
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        return f"image not found: {path}"
    try:
        with Image.open(path) as im:
            im.size  # noqa: B018 - forces header parsing
    except (UnidentifiedImageError, OSError) as exc:
        return f"image cannot be read ({type(exc).__name__}): {path}"
    return None
