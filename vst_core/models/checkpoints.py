"""Reading a model file: :func:`read_checkpoint`, the one guarded loader every weights file of
``vst_core`` goes through (CLIP, the detector, RoViST-C, RoViST-VG, the safetensors of a model
folder, Vrank's training state). Nothing in a checkpoint is ever run.

What a checkpoint may be:

* a PyTorch file (``torch.save``, zip or the legacy format) of tensors, numbers, strings and their
  containers, plus the few globals its loader names (RoViST-C's ``argparse.Namespace``, numpy
  scalars), read with ``torch.load(weights_only=True)``; any other object is refused unread;
* a safetensors file;
* where the loader accepts one (OpenAI CLIP's ``clip.load`` file), a TorchScript archive, of which
  only the tensors are read: its ``data.pkl`` by a restricted unpickler whose only globals are
  tensor rebuilders and inert placeholders for the archive's classes; its code is never compiled
  nor run, and an archive whose tensors cannot be read so is refused with how to convert it.

Before anything is opened the path must be a regular, non-empty file (a folder, FIFO or device is
named as what it is, never opened); the format is told from the first bytes (:func:`sniff_checkpoint`);
every floating tensor read must be finite. Every failure is one :class:`ModelLoadError` naming the
file, and torch's advice to load with ``weights_only=False`` is never passed on.
"""

from __future__ import annotations

import os
import pickle
import re
import stat
import sys
import zipfile
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Literal

from vst_core.data.access import file_kind
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError, without_unsafe_advice

CheckpointFormat = Literal["torchscript", "torch-zip", "torch-legacy", "safetensors"]

#: What ``torch.save`` writes: the formats a loader that names no other reads.
PICKLED: tuple[CheckpointFormat, ...] = ("torch-zip", "torch-legacy")
#: A safetensors file alone (a model folder's weights).
SAFETENSORS: tuple[CheckpointFormat, ...] = ("safetensors",)

# torch's legacy (pre-1.6) serialisation starts with the pickled magic number 0x1950a86a20f9469cfc6c.
_TORCH_LEGACY_MAGIC = bytes.fromhex("80028a0a6cfc9c46f9206aa850")
# torch.jit's flatbuffer (mobile) format: its identifier at bytes 4 to 8.
_TORCH_JIT_FLATBUFFER = b"PTMF"

#: What :func:`read_checkpoint` checks, named in a memo of weights that built (a rerun skips the
#: build only for a file read under the same checks).
READ_CHECKS = "read:regular,code-free,finite"
#: Tensors whose -inf is meant: a causal attention mask (open_clip keeps one in a TorchScript archive).
MASKS = frozenset({"attn_mask"})

#: How to turn a TorchScript archive into a file a loader reads, on a machine that trusts it.
CONVERT_TORCHSCRIPT = (
    "convert it once, on a machine where you trust the file: "
    "python -c \"import torch; torch.save(torch.jit.load('FILE').state_dict(), 'clip.pt')\", then give clip.pt"
)


def regular_checkpoint(path: str | Path, name: str) -> Path:
    """``path`` when it is a regular, non-empty file (links followed), found by ``stat`` alone, so a
    FIFO or a device is never opened; otherwise a :class:`ModelLoadError` saying what it is
    (:class:`WeightsUnavailableError` when nothing is there).

    >>> regular_checkpoint("/dev/null", "CLIP checkpoint")
    Traceback (most recent call last):
    ...
    vst_core.models.hub.ModelLoadError: CLIP checkpoint /dev/null is not a regular file (a device); it was not opened
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise WeightsUnavailableError(f"{name} not found: {path} (give the path of a weights file)") from None
    except (OSError, ValueError) as exc:  # a link loop, no permission, a NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ModelLoadError(f"{name} {path} cannot be read: {reason}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ModelLoadError(f"{name} {path} is a folder, not a file (give the path of a weights file)")
    if not stat.S_ISREG(info.st_mode):
        raise ModelLoadError(f"{name} {path} is not a regular file ({file_kind(info.st_mode)}); it was not opened")
    if info.st_size == 0:
        raise ModelLoadError(f"{name} {path} is empty")
    return path


def _is_torchscript(names: Sequence[str]) -> bool:
    """TorchScript's own records: ``constants.pkl`` (or a mobile ``bytecode.pkl``) and its ``code/`` folder."""
    for n in names:
        parts = n.split("/")
        if parts[-1] in ("constants.pkl", "bytecode.pkl") or "code" in parts[1:-1]:
            return True
    return False


def sniff_checkpoint(path: str | Path) -> CheckpointFormat:
    """What a weights file is, from its first bytes and, for a zip, its member names (a TorchScript
    archive by its ``code/`` and ``constants.pkl`` records or torch.jit's flatbuffer mark); nothing
    is unpickled. Anything else (a text file, an image, a truncated zip) is a :class:`ModelLoadError`.
    The file should have passed :func:`regular_checkpoint`.

    >>> import pathlib, tempfile
    >>> text = pathlib.Path(tempfile.mkdtemp()) / "clip.pt"
    >>> _ = text.write_text("not weights")
    >>> sniff_checkpoint(text)
    Traceback (most recent call last):
    ...
    vst_core.models.hub.ModelLoadError: ... is not a model checkpoint (neither a PyTorch file, a TorchScript archive nor safetensors)
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
        if head[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
            if _is_torchscript(names):
                return "torchscript"
            if any(n.endswith("/data.pkl") or n == "data.pkl" for n in names):
                return "torch-zip"
            raise ModelLoadError(f"{path} is a zip archive but not a PyTorch checkpoint (no data.pkl inside)")
        if head[4:8] == _TORCH_JIT_FLATBUFFER:
            return "torchscript"
        if head.startswith(_TORCH_LEGACY_MAGIC):
            return "torch-legacy"
        if len(head) >= 9:
            header_len = int.from_bytes(head[:8], "little")
            if 2 <= header_len < 100_000_000 and head[8:9] == b"{" and header_len + 8 <= path.stat().st_size:
                return "safetensors"
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise ModelLoadError(f"{path} cannot be read as a checkpoint: {exc}") from None
    raise ModelLoadError(f"{path} is not a model checkpoint (neither a PyTorch file, a TorchScript archive nor safetensors)")


def numpy_scalar_globals() -> list[Any]:
    """The globals a ``torch.save``'d numpy scalar needs under ``weights_only=True`` (numpy 1.x and
    2.x names): what training scripts' saved losses and accuracies are."""
    import numpy as np

    try:
        from numpy._core.multiarray import scalar  # numpy 2
    except ImportError:  # numpy 1.x, which requirements.txt still admits
        from numpy.core.multiarray import scalar  # type: ignore[no-redef]
    return [
        np.dtype,
        *{type(np.dtype(t)) for t in ("float64", "float32", "int64")},
        (scalar, "numpy.core.multiarray.scalar"),
        (scalar, "numpy._core.multiarray.scalar"),
    ]


def read_checkpoint(
    path: str | Path,
    what: str,
    *,
    allowed: Sequence[Any] = (),
    formats: Collection[CheckpointFormat] = PICKLED,
    map_location: str = "cpu",
    mmap: bool = False,
    wrong_format: type[ModelLoadError] = ModelLoadError,
) -> Any:
    """What the weights file ``path`` holds, read without running anything in it.

    ``what`` names what the file should be (``"CLIP weights"``, ``"a RoViST-C checkpoint (...)"``);
    ``formats`` the kinds this loader takes (a file of another kind is ``wrong_format``, unread);
    ``allowed`` the globals a PyTorch file may hold besides tensors and plain containers
    (``torch.serialization.safe_globals``); ``mmap`` maps a zip checkpoint instead of reading it;
    ``map_location="meta"`` reads the layout alone (no values, so nothing to check). The path must
    be a regular file (:func:`regular_checkpoint`) and every floating tensor finite.

    >>> import tempfile
    >>> read_checkpoint(tempfile.gettempdir(), "CLIP weights")
    Traceback (most recent call last):
    ...
    vst_core.models.hub.ModelLoadError: CLIP weights ... is a folder, not a file (give the path of a weights file)
    """
    name = what.split(" (")[0]
    path = regular_checkpoint(path, name)
    fmt = sniff_checkpoint(path)
    if fmt not in formats:
        extra = "; it was not loaded (a TorchScript archive holds code)" if fmt == "torchscript" else ""
        raise wrong_format(f"{path} is a {fmt} file, not {what}{extra}")
    if fmt == "torchscript":
        data: Any = _script_tensors(path)
    elif fmt == "safetensors":
        data = _safetensors(path, name, map_location)
    else:
        data = _torch_file(path, name, allowed, map_location, mmap and fmt == "torch-zip")
    if map_location != "meta":
        _refuse_non_finite(data, path, name)
    return data


def _torch_file(path: Path, name: str, allowed: Sequence[Any], map_location: str, mmap: bool) -> Any:
    import torch

    try:
        with torch.serialization.safe_globals(list(allowed)):
            return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as exc:
        raise ModelLoadError(
            f"{path} holds objects {name} does not ({_reason(exc)}); it was not loaded, since unpickling unknown objects can run code"
        ) from None
    except Exception as exc:
        raise ModelLoadError(f"{path} cannot be read as {name}: {type(exc).__name__}: {_reason(exc)}") from None


def _safetensors(path: Path, name: str, map_location: str) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device=map_location)
    except Exception as exc:  # safetensors' own error for a truncated or damaged file
        raise ModelLoadError(f"{path} is damaged: it cannot be read as {name} ({type(exc).__name__}: {_reason(exc)})") from None


def _reason(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(without_unsafe_advice(str(exc)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tensors(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(name, tensor) of every tensor in nested dicts, lists and tuples, each container once."""
    import torch

    seen: set[int] = set()
    todo: list[tuple[str, Any]] = [(prefix, data)]
    while todo:
        key, value = todo.pop()
        if isinstance(value, torch.Tensor):
            yield key, value
        elif isinstance(value, dict | list | tuple) and id(value) not in seen:
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            todo.extend((f"{key}.{k}" if key else str(k), v) for k, v in items)


def _refuse_non_finite(data: Any, path: Path, name: str) -> None:
    import torch

    for key, tensor in _tensors(data):
        if (tensor.is_floating_point() or tensor.is_complex()) and tensor.device.type != "meta":
            # a finite sum means every value is finite (NaN and infinity carry through a sum) and
            # costs a fifth of isfinite; a sum that overflowed is looked at value by value
            if bool(torch.isfinite(tensor.sum())) or bool(torch.isfinite(tensor).all()):
                continue
            if key.rsplit(".", 1)[-1] in MASKS and not bool((torch.isnan(tensor) | (tensor == float("inf"))).any()):
                continue  # an attention mask's -inf marks what a token may not see
            raise ModelLoadError(
                f"{name} {path}: tensor {key!r} holds NaN or infinite values; it was not loaded "
                "(a model with them gives no numbers)"
            )


# ------------------------------------------------------------------ TorchScript archives, read as data


class _Refused(Exception):
    """Why a TorchScript archive's tensors cannot be read without its code."""


class ScriptObject:
    """An object of a TorchScript archive as its ``data.pkl`` holds it: its class's qualified name
    and its attributes, nothing callable (built by :class:`_ScriptUnpickler` in place of the class)."""

    kind = ""
    attributes: dict[str, Any] | None = None

    def __setstate__(self, state: Any) -> None:
        # a module's attributes; a class with its own __getstate__ keeps another shape of state,
        # which only its code could read
        self.attributes = state if isinstance(state, dict) else None

    def __reduce__(self) -> Any:
        raise TypeError("a TorchScript placeholder is not pickled")


#: Storage classes of a tensor's persistent id -> torch dtype name.
_STORAGES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}


class _StorageKind:
    """A storage class named in a tensor's persistent id: its dtype, and nothing to call."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise pickle.UnpicklingError(f"a tensor's {what} is not a tuple of integers")
    return value


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> Any:
    """A view of a storage read from the archive (what ``torch._utils._rebuild_tensor_v2`` makes),
    its bounds checked by ``as_strided``."""
    import torch

    if not isinstance(storage, torch.Tensor) or not isinstance(offset, int) or isinstance(offset, bool):
        raise pickle.UnpicklingError("a tensor without a storage read from the archive")
    return storage.as_strided(_int_tuple(size, "size"), _int_tuple(stride, "stride"), offset)


def _rebuild_parameter(data: Any, *_rest: Any) -> Any:
    import torch

    if not isinstance(data, torch.Tensor):
        raise pickle.UnpicklingError("a parameter without a tensor")
    return data


def _hooks(*args: Any) -> dict[str, Any]:
    """The empty ``OrderedDict()`` of a tensor's backward hooks."""
    if args:
        raise pickle.UnpicklingError("a tensor with backward hooks")
    return {}


def _same(value: Any, *_type: Any) -> Any:
    """TorchScript's typed lists and type tags (``build_intlist``, ``restore_type_tag``): the value."""
    return value


_SCRIPT_HELPERS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): _hooks,
    ("torch.jit._pickle", "build_intlist"): _same,
    ("torch.jit._pickle", "build_doublelist"): _same,
    ("torch.jit._pickle", "build_boollist"): _same,
    ("torch.jit._pickle", "build_tensorlist"): _same,
    ("torch.jit._pickle", "restore_type_tag"): _same,
}


class _ScriptUnpickler(pickle.Unpickler):
    """The archive's ``data.pkl`` with a restricted ``find_class``: the archive's own classes
    (``__torch__.*``) become inert :class:`ScriptObject` placeholders, tensors are rebuilt from the
    archive's storages, and any other global is refused (pickle calls nothing but these)."""

    def __init__(self, file: IO[bytes], archive: zipfile.ZipFile, prefix: str) -> None:
        super().__init__(file)
        self._archive = archive
        self._prefix = prefix
        self._kinds: dict[str, type[ScriptObject]] = {}
        self._storages: dict[str, Any] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "__torch__" or module.startswith("__torch__."):
            qualified = f"{module}.{name}"
            if qualified not in self._kinds:
                self._kinds[qualified] = type("ScriptObject", (ScriptObject,), {"kind": qualified, "__slots__": ()})
            return self._kinds[qualified]
        if module == "torch" and name in _STORAGES:
            return _StorageKind(_STORAGES[name])
        helper = _SCRIPT_HELPERS.get((module, name))
        if helper is None:
            raise pickle.UnpicklingError(f"global {module}.{name} is neither a tensor's nor the archive's own class")
        return helper

    def persistent_load(self, pid: Any) -> Any:
        import torch

        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageKind)):
            raise pickle.UnpicklingError("a reference that is not a tensor storage")
        _, kind, key, _location, numel = pid
        if not (isinstance(key, str) and key.isdigit() and isinstance(numel, int) and numel >= 0):
            raise pickle.UnpicklingError(f"a storage named {key!r}")
        if key not in self._storages:
            dtype = getattr(torch, kind.dtype)
            try:
                info = self._archive.getinfo(f"{self._prefix}data/{key}")
            except KeyError:
                raise pickle.UnpicklingError(f"storage {key} is missing from the archive") from None
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != numel * torch.empty(0, dtype=dtype).element_size():
                raise pickle.UnpicklingError(f"storage {key} is not {numel} values stored as they are")
            raw = self._archive.read(info)
            self._storages[key] = torch.frombuffer(bytearray(raw), dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        return self._storages[key]


#: A class of the archive's code and its indented body; each body line is one alternative whose
#: first character decides it, so a long line costs its length once (no backtracking over it).
_CLASS = re.compile(r"^class (\w+)\(Module\):\n((?:[ \t][^\n]*\n|\n)*)", re.MULTILINE)
_DECLARED = re.compile(r"^[ \t]+__(parameters|buffers)__ = \[([^\]\n]*)\]", re.MULTILINE)
#: Bounds on what an archive's records may make this reader hold (OpenAI's are a few MB at most).
_MAX_PICKLE_BYTES = 64_000_000
_MAX_CODE_BYTES = 64_000_000


def _declared_state(archive: zipfile.ZipFile, prefix: str) -> dict[str, set[str]]:
    """Each module class of the archive -> the attributes its code declares as parameters and
    buffers (what ``state_dict()`` holds), read from the code's text, which is never compiled."""
    found: dict[str, set[str]] = {}
    code = f"{prefix}code/"
    budget = _MAX_CODE_BYTES
    for info in archive.infolist():
        if not (info.filename.startswith(code) and info.filename.endswith(".py")):
            continue
        budget -= info.file_size
        if budget < 0:
            raise _Refused("its code records are larger than any model's")
        module = info.filename[len(code) : -len(".py")].replace("/", ".")
        text = archive.read(info).decode("utf-8", errors="replace")
        for match in _CLASS.finditer(text):
            names = set()
            for _kind, listed in _DECLARED.findall(match.group(2)):
                names.update(re.findall(r'"([^"]*)"', listed))
            found[f"{module}.{match.group(1)}"] = names
    return found


def _script_state(root: Any, declared: dict[str, set[str]]) -> dict[str, Any]:
    """The state dict of a module tree of :class:`ScriptObject`: its parameters and buffers by
    dotted name (every tensor attribute of a class whose declaration was not found)."""
    import torch

    state: dict[str, Any] = {}
    seen: set[int] = set()
    todo: list[tuple[str, Any]] = [("", root)]
    while todo:
        prefix, obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if obj.attributes is None:
            raise _Refused(f"its {obj.kind} keeps its state in a form only its code reads")
        own = declared.get(obj.kind)
        for name, value in obj.attributes.items():
            if not isinstance(name, str):
                raise _Refused(f"its {obj.kind} has an attribute named {name!r}")
            if type(value) is torch.Tensor and (own is None or name in own):
                state[prefix + name] = value.detach()  # only its values: no hooks, no gradient
            elif isinstance(value, ScriptObject):
                todo.append((f"{prefix}{name}.", value))
    return state


def _script_tensors(path: Path) -> dict[str, Any]:
    """The parameters and buffers of a TorchScript archive, as ``torch.jit.load(path).state_dict()``
    names them, read as data (see the module's docstring); an archive that cannot be read so is a
    :class:`ModelLoadError` saying how to convert it."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
            if len(pickles) != 1:
                raise _Refused("it has no data.pkl of a current TorchScript archive")
            prefix = pickles[0][: -len("data.pkl")]
            if archive.getinfo(pickles[0]).file_size > _MAX_PICKLE_BYTES:
                raise _Refused("its data.pkl is larger than any model's")
            order = f"{prefix}byteorder"
            if order in archive.namelist() and archive.read(order).strip() != sys.byteorder.encode():
                raise _Refused("its tensors are stored in the other byte order")
            with archive.open(pickles[0]) as fh:
                root = _ScriptUnpickler(fh, archive, prefix).load()
            if not isinstance(root, ScriptObject):
                raise _Refused("its data.pkl does not hold a module")
            return _script_state(root, _declared_state(archive, prefix))
    except (_Refused, pickle.UnpicklingError) as exc:
        reason = str(exc)
    except Exception as exc:  # a damaged archive, a storage of the wrong size, out-of-bounds views
        reason = f"{type(exc).__name__}: {_reason(exc, 200)}"
    raise ModelLoadError(
        f"{path} is a TorchScript archive whose tensors cannot be read without running its code ({reason}); "
        f"it was not loaded. To use it, {CONVERT_TORCHSCRIPT}"
    )


__all__ = [
    "CONVERT_TORCHSCRIPT",
    "PICKLED",
    "READ_CHECKS",
    "SAFETENSORS",
    "CheckpointFormat",
    "ScriptObject",
    "file_kind",
    "numpy_scalar_globals",
    "read_checkpoint",
    "regular_checkpoint",
    "sniff_checkpoint",
]
