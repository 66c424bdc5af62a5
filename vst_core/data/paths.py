"""Image paths of a story set: resolved inside the set's folder only, and checked cheaply."""

from __future__ import annotations

from pathlib import Path

IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


class ImagePathError(ValueError):
    """An image path that is absolute or leaves the story set's folder."""


def resolve_image(root: Path, ref: str, *, base: Path | None = None) -> Path:
    """Resolve ``ref`` against ``root``; refuse absolute paths, URLs, NUL bytes, over-long names,
    symlink loops and paths leaving ``root`` (ImagePathError with the reason). ``base``: ``root``
    already resolved by the caller (one resolve per story set rather than one per image)."""
    if not ref or not ref.strip():
        raise ImagePathError("empty image path")
    if "\x00" in ref:
        raise ImagePathError(f"image {ref!r} holds a NUL byte")
    if "://" in ref:
        raise ImagePathError(f"image {ref!r} is a URL; give a path relative to the story file")
    candidate = Path(ref)
    if candidate.is_absolute():
        raise ImagePathError(f"image {ref!r} is absolute; give a path relative to the story file")
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in candidate.parts):
        raise ImagePathError(f"image {ref[:80]!r}...: a path component is longer than 255 bytes")
    try:
        base = base if base is not None else root.resolve()
        resolved = (base / candidate).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name the file system refuses
        raise ImagePathError(f"image {ref!r} cannot be resolved ({type(exc).__name__}: {exc})") from None
    if not resolved.is_relative_to(base):
        raise ImagePathError(f"image {ref!r} leaves the dataset folder {base}")
    return resolved


def check_image(path: Path) -> str | None:
    """None when ``path`` is a regular file PIL can open, check fully and decode within the memory
    budget of :mod:`vst_core.data.images`, else why not. A FIFO, a device or a folder is never opened
    (opening a FIFO blocks); a file over the byte or pixel budget and a truncated file are reported."""
    from PIL import Image

    from vst_core.data.images import ImageBudgetError, NotRegularFileError, image_size

    try:
        image_size(path)
    except FileNotFoundError:
        return f"image not found: {path}"
    except NotRegularFileError as exc:
        return f"image cannot be read: {exc}"
    except ImageBudgetError as exc:
        return f"image over the memory budget: {exc}"
    except Exception as exc:
        return f"image cannot be read ({type(exc).__name__}): {path}"
    try:
        with Image.open(path) as im:
            im.verify()  # headers and checksums without decoding the pixels: truncation shows here
    except Exception as exc:
        return f"image cannot be read ({type(exc).__name__}): {path}"
    return None
