"""Model folders and files read the same way by every loader (Vrank, COSMic, RoViST-VG, the judge,
a pair-scorer folder): every check here fails with one :class:`ModelLoadError` naming the file and
what was expected, never with a library's own exception.

The checks: a folder is a folder; a file the loader needs is a regular, non-empty file (never a FIFO
or a device, which would block); a JSON settings file is an object whose entries have the expected
types; a weights file is safetensors where safetensors is expected (a pickle is refused unread), its
tensors are finite and fit the module they are loaded into; a transformers folder holds safetensors
weights, not only a pickle ``.bin``.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "m.json").write_text("[1, 2]")
>>> read_settings(folder / "m.json", "Vrank settings", {"max_length": int})
Traceback (most recent call last):
...
vst_core.models.hub.ModelLoadError: ... is not a JSON object ...
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from vst_core.models.checkpoints import SAFETENSORS, file_kind, read_checkpoint
from vst_core.models.hub import (
    ModelLoadError,
    WeightsUnavailableError,
    hub_reachable,
    missing_weights_message,
)

T = TypeVar("T")

#: Settings files are small: anything larger is not one of ours.
MAX_SETTINGS_BYTES = 1_000_000
#: Weight files transformers reads from a folder, safetensors first; the pickle ones are refused.
SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


def _fix(fix: str) -> str:
    return f"; {fix}" if fix else ""


def model_folder(folder: str | Path, what: str, fix: str = "") -> Path:
    """``folder`` as a Path when it is a folder (links resolved); ModelLoadError otherwise."""
    path = Path(folder)
    if not path.is_dir():
        raise ModelLoadError(f"{what} needs a folder, and {path} is not one{_fix(fix)}")
    return path


def regular_file(path: Path, what: str, fix: str = "") -> Path:
    """``path`` when it is a regular, non-empty file (a FIFO, device or folder is never opened)."""
    try:
        info = os.stat(path)
    except OSError:
        raise ModelLoadError(f"{what}: {path.name} is missing in {path.parent}{_fix(fix)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelLoadError(f"{what}: {path.name} is not a regular file ({file_kind(info.st_mode)}){_fix(fix)}")
    if info.st_size == 0:
        raise ModelLoadError(f"{what}: {path.name} is empty{_fix(fix)}")
    return path


def read_settings(
    path: Path,
    what: str,
    required: Mapping[str, type | tuple[type, ...]],
    optional: Mapping[str, type | tuple[type, ...]] | None = None,
    fix: str = "",
) -> dict[str, Any]:
    """A JSON object from ``path`` whose ``required`` entries exist with those types and whose
    ``optional`` ones, when present, have theirs (``bool`` never passes for ``int``)."""
    regular_file(path, what, fix)
    try:
        if os.stat(path).st_size > MAX_SETTINGS_BYTES:
            raise ValueError(f"over {MAX_SETTINGS_BYTES:,} bytes")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelLoadError(
            f"{what}: {path.name} cannot be read as JSON ({type(exc).__name__}: {str(exc)[:200]}){_fix(fix)}"
        ) from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"{what}: {path.name} is not a JSON object (found {type(data).__name__}){_fix(fix)}")
    for entries, needed in ((required, True), (optional or {}, False)):
        for key, kind in entries.items():
            if key not in data:
                if needed:
                    raise ModelLoadError(f"{what}: {path.name} has no entry {key!r}{_fix(fix)}")
                continue
            value = data[key]
            kinds = kind if isinstance(kind, tuple) else (kind,)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                names = " or ".join(k.__name__ for k in kinds)
                raise ModelLoadError(f"{what}: entry {key!r} of {path.name} should be {names}, not {value!r:.80}{_fix(fix)}")
    return data


def read_safetensors(path: Path, what: str, fix: str = "") -> dict[str, Any]:
    """The tensors of a safetensors file (:func:`~vst_core.models.checkpoints.read_checkpoint`); a
    pickle, a truncated or damaged file, or a tensor with a non-finite value is a ModelLoadError (a
    pickle is never unpickled)."""
    regular_file(path, what, fix)
    try:
        tensors: dict[str, Any] = read_checkpoint(path, "safetensors", formats=SAFETENSORS)
    except ModelLoadError as exc:
        raise ModelLoadError(f"{what}: {exc}{_fix(fix)}") from None
    return tensors


def load_state(module: Any, state: Mapping[str, Any], what: str, fix: str = "") -> None:
    """``module.load_state_dict(state, strict=True)``; a missing, extra or misshapen tensor is a
    ModelLoadError naming them."""
    try:
        module.load_state_dict(dict(state), strict=True)
    except (RuntimeError, ValueError, TypeError, KeyError) as exc:
        first = str(exc).replace("\n", " ")[:300]
        raise ModelLoadError(f"{what}: the weights do not fit the model ({first}){_fix(fix)}") from None


def check_transformers_folder(folder: Path, what: str, fix: str = "") -> None:
    """A transformers folder must hold ``config.json`` and safetensors weights; a folder with only a
    pickle ``.bin`` is refused (it could run code when read)."""
    regular_file(folder / "config.json", what, fix)
    for name in SAFE_WEIGHTS:
        if (folder / name).exists():
            regular_file(folder / name, what, fix)
            return
    pickles = [name for name in PICKLE_WEIGHTS if (folder / name).exists()]
    if pickles:
        raise ModelLoadError(
            f"{what}: {folder.name} holds only {', '.join(pickles)}, not safetensors; it was not loaded (a pickle can run "
            f"code). Save it again with save_pretrained(..., safe_serialization=True){_fix(fix)}"
        )
    raise ModelLoadError(f"{what}: {folder.name} holds no weights (no {SAFE_WEIGHTS[0]}){_fix(fix)}")


@contextmanager
def loading(what: str, fix: str = "") -> Iterator[None]:
    """Turns any failure inside into one ModelLoadError naming ``what`` (a ModelLoadError passes)."""
    try:
        yield
    except ModelLoadError:
        raise
    except (Exception, RecursionError) as exc:
        raise ModelLoadError(f"{what} does not load: {type(exc).__name__}: {str(exc)[:300]}{_fix(fix)}") from None


__all__ = [
    "check_transformers_folder",
    "load_state",
    "loading",
    "model_folder",
    "read_safetensors",
    "read_settings",
    "regular_file",
]


def load_hf(name: str, loader: Callable[..., T], what: str, extra: str = "", *, weights: bool = False) -> T:
    """``loader(name, local_files_only=...)`` from a path or the cache, downloading only when reachable.

    A local folder is checked first when it should hold ``weights`` (config and safetensors, see
    :func:`vst_core.models.folders.check_transformers_folder`); any failure to read what is there
    is one :class:`ModelLoadError` naming ``what``, absent weights a :class:`WeightsUnavailableError`."""
    if Path(name).exists():
        if weights and Path(name).is_dir():
            check_transformers_folder(Path(name), f"{what} folder {name}")
        with loading(f"{what} from {name}"):
            return loader(name)
    try:
        return loader(name, local_files_only=True)
    except OSError:
        pass
    except Exception as exc:  # a damaged file in the cache
        raise ModelLoadError(
            f"{what} {name!r} in the local cache does not load: {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    if not hub_reachable():
        raise WeightsUnavailableError(missing_weights_message(what, name, extra))
    try:
        with loading(f"{what} {name!r}"):
            return loader(name)
    except ModelLoadError as exc:
        if isinstance(exc.__context__, OSError):
            raise WeightsUnavailableError(f"{missing_weights_message(what, name, extra)} ({exc})") from None
        raise


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' load report and progress bars off while loading (errors still raise)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
