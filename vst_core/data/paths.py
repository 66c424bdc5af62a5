"""Image paths of a story set: resolved inside the set's folder only, and checked cheaply."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
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


#: Folders resolved by :func:`resolve_images`, by (root, folder): kept over one read of a story set.
Resolved = dict[tuple[str, str], str | None]


def resolve_images(
    root: Path,
    refs: Iterable[str],
    *,
    base: Path | None = None,
    folders: Resolved | None = None,
    stats: dict[str, os.stat_result] | None = None,
) -> dict[str, str | None]:
    """:func:`resolve_image` of many refs at once, as text (None for a ref it refuses): each folder
    is resolved once, and a file in it that is not a symbolic link is that folder's resolved path
    and its name (the rest go through :func:`resolve_image`), so the paths are the same at a small
    part of the cost: one ``lstat`` a file. ``folders`` keeps the folders (and ``root``) resolved
    over several calls: the stories of one file. ``stats`` receives the ``lstat`` of each path that
    is not a symbolic link (its ``stat``, read once).

    >>> import tempfile
    >>> top = Path(tempfile.mkdtemp()); (top / "images").mkdir(); _ = (top / "images" / "1.jpg").write_bytes(b"")
    >>> found = resolve_images(top, ["images/1.jpg", "../x.jpg", "images/2.jpg"])
    >>> found["images/1.jpg"] == str(resolve_image(top, "images/1.jpg")), found["../x.jpg"]
    (True, None)
    """
    refs = list(refs)
    folders = folders if folders is not None else {}
    if base is None:
        if (str(root), "\x00") not in folders:
            try:
                folders[(str(root), "\x00")] = str(root.resolve())
            except (OSError, RuntimeError):  # a symlink loop: resolve_image says why, ref by ref
                folders[(str(root), "\x00")] = None
        found = folders[(str(root), "\x00")]
        if found is None:
            return dict.fromkeys(refs)
        base = Path(found)
    out: dict[str, str | None] = {}
    for ref in refs:
        if ref in out:
            continue
        folder, _, name = ref.rpartition("/")
        simple = (
            ref.strip()
            and "\x00" not in ref
            and not ref.startswith("/")
            and "://" not in ref
            and len(name.encode("utf-8", "surrogatepass")) <= 255
        )
        parts = ref.split("/")
        if not simple or any(p in ("", ".", "..") for p in parts):
            out[ref] = _one(root, ref, base)
            continue
        known = (str(base), folder)
        if known not in folders:
            folders[known] = _one(root, folder, base) if folder else str(base)
        real = folders[known]
        if real is None:
            out[ref] = _one(root, ref, base)
            continue
        path = os.path.join(real, name)
        try:
            info = os.lstat(path)
            link = stat.S_ISLNK(info.st_mode)
            if stats is not None and not link:
                stats[path] = info
        except FileNotFoundError:
            link = False  # resolved as written, as resolve_image does
        except OSError:
            link = True  # resolve_image says why
        out[ref] = _one(root, ref, base) if link else path
    return out


def _one(root: Path, ref: str, base: Path) -> str | None:
    try:
        return str(resolve_image(root, ref, base=base))
    except ValueError:
        return None


def listed_ref(root: Path, ref: str, *, base: Path | None = None) -> str:
    """A path a release lists for one of its own files, as a reference relative to ``root`` (the
    listing file's folder): ``ref`` itself when ``root/ref`` is a file; else, for a release that
    writes its paths from the folder above (``sampled_60/images/1_img0.jpg`` listed in
    ``sampled_60/stories.json``, as the script that downloaded them was run there), that file as a
    path from ``root`` (``images/1_img0.jpg``; ``../…`` when it lies outside ``root``, which
    :func:`resolve_image` then refuses); else ``ref`` unchanged, so the reader says it is not found.
    A path written with backslashes is read with slashes when only that one is found.

    >>> import tempfile
    >>> top = Path(tempfile.mkdtemp()); (top / "set" / "images").mkdir(parents=True)
    >>> _ = (top / "set" / "images" / "1.jpg").write_bytes(b"")
    >>> listed_ref(top / "set", "set/images/1.jpg"), listed_ref(top / "set", "images/1.jpg"), listed_ref(top / "set", "x.jpg")
    ('images/1.jpg', 'images/1.jpg', 'x.jpg')
    """
    if not ref or "\x00" in ref or "://" in ref or Path(ref).is_absolute():
        return ref
    base = base if base is not None else root.resolve()
    candidates = [ref] + ([ref.replace("\\", "/")] if "\\" in ref else [])
    for folder in (base, base.parent):
        for candidate in candidates:
            try:
                path = (folder / candidate).resolve()
                if not path.is_file():
                    continue
            except (OSError, ValueError, RuntimeError):  # a name the file system refuses, a symlink loop
                continue
            if folder == base and candidate == ref:
                return ref
            return Path(os.path.relpath(path, base)).as_posix()
    return ref


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
