"""Opening images within a memory budget.

An image is opened only when it is a regular file (a FIFO would block, a device never ends) of
at most :func:`max_bytes` bytes. Its pixel count comes from the header, before any decoding:

* up to :func:`max_pixels` pixels it is decoded at full size;
* a larger JPEG is decoded reduced by 2, 4 or 8 (libjpeg's ``draft``), the smallest factor that
  fits the budget; callers scale boxes by :func:`scale_of`;
* any other larger image is refused with the reason and the setting that raises the budget.

So one decoded image takes at most ``3 × max_pixels`` bytes (RGB; twice that while a non-RGB file
is converted): 120 MB at the default 40 megapixels, below Pillow's own decompression-bomb limit (89.5 megapixels warns, twice that
refuses). ``VST_MAX_IMAGE_PIXELS`` and ``VST_MAX_IMAGE_BYTES`` set the budget.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from PIL import Image

DEFAULT_MAX_PIXELS = 40_000_000
DEFAULT_MAX_BYTES = 100 * 1024 * 1024


class ImageBudgetError(ValueError):
    """An image that cannot be decoded within the budget (or is not a regular file)."""


class NotRegularFileError(ImageBudgetError):
    """A FIFO, a device or a folder where an image file was expected (never opened)."""


def env_int(name: str, default: int) -> int:
    """The positive whole number in environment variable ``name``; ``default`` when unset, not a
    number, or not above 0."""
    try:
        value = int(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def max_pixels() -> int:
    """Pixels decoded at full size (``VST_MAX_IMAGE_PIXELS``, default 40,000,000)."""
    return env_int("VST_MAX_IMAGE_PIXELS", DEFAULT_MAX_PIXELS)


def max_bytes() -> int:
    """Largest image file opened (``VST_MAX_IMAGE_BYTES``, default 100 MiB)."""
    return env_int("VST_MAX_IMAGE_BYTES", DEFAULT_MAX_BYTES)


def check_bytes(size: int, name: str) -> None:
    """ImageBudgetError when an image file of ``size`` bytes is over the byte budget."""
    if size > max_bytes():
        raise ImageBudgetError(
            f"{name} is {size / 2**20:.3g} MiB, over the {max_bytes() / 2**20:.3g} MiB budget (VST_MAX_IMAGE_BYTES raises it)"
        )


def check_file(path: Path) -> None:
    """ImageBudgetError unless ``path`` is a regular file within the byte budget (OSError if absent)."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFileError(f"not a regular file (a FIFO, device or folder): {path.name}")
    check_bytes(info.st_size, path.name)


def reduction(size: tuple[int, int], fmt: str | None) -> int:
    """The factor (1, 2, 4 or 8) an image of ``size`` is decoded at; ImageBudgetError when none fits."""
    width, height = size
    budget = max_pixels()
    for factor in (1, 2, 4, 8):
        if factor > 1 and fmt != "JPEG":
            break
        if -(-width // factor) * -(-height // factor) <= budget:
            return factor
    raise ImageBudgetError(
        f"{width}×{height} is {width * height / 1e6:.1f} megapixels, over the {budget / 1e6:g} MP budget"
        + (" even decoded at 1/8" if fmt == "JPEG" else " (only JPEG can be decoded reduced)")
        + "; VST_MAX_IMAGE_PIXELS raises it"
    )


def image_size(path: Path) -> tuple[int, int]:
    """Width and height from the header, after the file and pixel budget checks (no decoding)."""
    return image_header(path)[0]


def image_header(path: Path) -> tuple[tuple[int, int], str | None]:
    """(width, height) and format from the header, after the file and pixel budget checks."""
    check_file(path)
    with Image.open(path) as im:
        reduction(im.size, im.format)
        return im.size, im.format


def open_image(path: Path) -> Image.Image:
    """The image as RGB within the budget: full size, or a JPEG reduced by :func:`reduction`."""
    check_file(path)
    im = Image.open(path)
    try:
        factor = reduction(im.size, im.format)
        if factor > 1:
            im.draft("RGB", (-(-im.width // factor), -(-im.height // factor)))
        im.load()  # a single-frame file is closed once loaded
    except BaseException:
        im.close()
        raise
    if im.mode == "RGB" and not getattr(im, "n_frames", 1) > 1:
        return im  # no second copy: the peak is one decoded image
    with im:
        return im.convert("RGB")


def scale_of(image: Image.Image, size: tuple[int, int]) -> tuple[float, float]:
    """(x, y) factors from original coordinates (``size``) to the decoded ``image``."""
    return (image.width / size[0] if size[0] else 1.0, image.height / size[1] if size[1] else 1.0)


def thumbnail(path: Path, longest: int) -> Image.Image:
    """The image for display, at most ``longest`` pixels on its longer side (decoded reduced
    where the format allows, so a large photo never decodes at full size for a preview)."""
    check_file(path)
    with Image.open(path) as im:
        reduction(im.size, im.format)
        im.draft("RGB", (longest, longest))
        im.load()
        out = im.convert("RGB")
    out.thumbnail((longest, longest))
    return out
