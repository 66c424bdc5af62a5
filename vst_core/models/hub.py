"""Loading weights: local cache first, a fast reachability check, clear errors, weight digests."""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

from vst_core.hashing import weights_digest

T = TypeVar("T")


#: How a front end words a setting an error names: (``Settings`` field, placeholder) -> its words.
OptionWords = Callable[[str, str], str]
_OPTION = re.compile(r"⟦([a-z][a-z0-9_]*)(?: ([^⟧]*))?⟧")


def option(setting: str, placeholder: str = "") -> str:
    """A setting named in a model's message, as data rather than as one front end's words: the
    ``Settings`` field and the placeholder of its value, which :meth:`ModelLoadError.phrased` words
    as each front end says it (``str()``: the command line's option).

    >>> str(ModelLoadError(f"pass {option('vrank_model', 'DIR')}"))
    'pass --vrank-model DIR'
    """
    return f"⟦{setting} {placeholder}⟧" if placeholder else f"⟦{setting}⟧"


#: The command line's option of each shared setting whose option is not its name with dashes (a
#: metric's own settings give theirs in their :class:`~vst_core.contract.Option`).
CLI_OPTIONS = {
    "regions_file": "--regions",
}


def cli_words(setting: str, placeholder: str = "") -> str:
    """The command line's words for a setting: its option, then its placeholder.

    >>> cli_words("glove_file", "PATH"), cli_words("clip_activation", "gelu")
    ('--glove PATH', '--clip-activation gelu')
    """
    from vst_core.contract import RegistryBusyError, registry

    try:
        own = registry().options.get(setting)
    except RegistryBusyError:  # a message made while a metric module loads: its own flag is not known yet
        own = None
    flag = CLI_OPTIONS.get(setting) or (own[1].cli_flag if own else "--" + setting.replace("_", "-"))
    return f"{flag} {placeholder}" if placeholder else flag


def in_cli_words(text: str) -> str:
    """A text naming settings as data (:func:`option`) in the command line's words.

    >>> in_cli_words(f"pass {option('glove_file', 'PATH')}")
    'pass --glove PATH'
    """
    return _OPTION.sub(lambda m: cli_words(m.group(1), m.group(2) or ""), text)


def python_words(setting: str, placeholder: str = "") -> str:
    """The Python API's words for a setting: the ``Settings`` field to pass.

    >>> python_words("clip_checkpoint", "PATH"), python_words("clip_activation", "quickgelu")
    ('Settings(clip_checkpoint=PATH)', "Settings(clip_activation='quickgelu')")
    """
    if not placeholder:
        return f"Settings({setting}=...)"
    value = placeholder if placeholder.isupper() or "|" in placeholder else repr(placeholder)
    return f"Settings({setting}={value})"


# torch's advice when a weights-only load fails: load with weights_only=False, or allow the global
# ("if you trust the source"); and the terminal's bold/reset codes it wraps its warning in.
_UNSAFE_ADVICE = re.compile(
    r"weights.only\W*(?:set to\W*|=\W*)false|safe_globals|trust(?:ed)? (?:the )?(?:source|this)|"
    r"can still be loaded|two options|alternatively, to load|changed the default value|check the documentation of torch\.load",
    re.IGNORECASE,
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def without_unsafe_advice(text: str) -> str:
    r"""``text`` without the sentences that tell the reader to load a file with ``weights_only=False``
    or to allow its globals (torch's words when a weights-only load fails): the product never loads
    a file so, and a user should not be told to. What the file holds stays.

    >>> without_unsafe_advice(
    ...     "Weights only load failed. This file can still be loaded, to do so you have two options. "
    ...     "Re-running `torch.load` with `weights_only` set to `False` will likely succeed.\n"
    ...     "WeightsUnpickler error: Unsupported global: GLOBAL fractions.Fraction was not an allowed global by default. "
    ...     "Please use `torch.serialization.add_safe_globals([fractions.Fraction])` if you trust this class."
    ... )
    'Weights only load failed. WeightsUnpickler error: Unsupported global: GLOBAL fractions.Fraction was not an allowed global by default.'
    """
    if not _UNSAFE_ADVICE.search(text) and "\x1b" not in text:
        return text
    kept: list[str] = []
    for line in _ANSI.sub("", text).splitlines():
        sentences = re.split(r"(?<=[.!?])\s+", line.strip())
        kept.extend(s for s in sentences if s and not _UNSAFE_ADVICE.search(s))
    return " ".join(kept)


class Phrased(Exception):
    """An error whose message names settings as data (:func:`option`): ``str()`` words them as the
    command line does, :meth:`phrased` as another front end does (the Python API's ``Settings``
    fields, the dashboard's boxes), so no front end rewrites another's words.

    >>> exc = ModelLoadError(f"train one and pass {option('vrank_model', 'DIR')}")
    >>> str(exc), exc.phrased(python_words)
    ('train one and pass --vrank-model DIR', 'train one and pass Settings(vrank_model=DIR)')
    """

    def __init__(self, message: str = "", *args: object) -> None:
        self.template = message
        super().__init__(self.phrased(cli_words), *args)

    @property
    def settings(self) -> list[str]:
        """The ``Settings`` fields the message names, in order."""
        return [m.group(1) for m in _OPTION.finditer(self.template)]

    def phrased(self, words: OptionWords) -> str:
        """The message with each setting it names in ``words``."""
        return _OPTION.sub(lambda m: words(m.group(1), m.group(2) or ""), self.template)


class ModelLoadError(Phrased, RuntimeError):
    """A model could not be loaded; the message names the model, the path tried and how to fix it
    (and the settings to change, as data: :class:`Phrased`). A library's advice to load a file with
    ``weights_only=False`` is left out of it (:func:`without_unsafe_advice`): the product never does."""

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(without_unsafe_advice(message), *args)


class SettingValueError(Phrased, ValueError):
    """Settings that cannot work together; the message names the setting to change (:class:`Phrased`)."""


class SettingFileError(ValueError):
    """A file a metric's setting names cannot be used as what it should be (the judge's rubric
    template); the message names the file and what is wrong. A run stops on it before any work, as
    on a usage error (``vst score`` exits 2), whichever metric's file it is."""


class WeightsUnavailableError(ModelLoadError):
    """Weights are neither in the local cache nor downloadable; the message says how to get them."""


def torch_hub_dir() -> Path:
    """torch hub's folder (``$TORCH_HOME/hub``); downloaded weights sit in its ``checkpoints``."""
    import torch

    return Path(torch.hub.get_dir())


def hf_cache_dir() -> Path:
    """Where Hugging Face stores downloaded models on this machine."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except Exception:  # pragma: no cover - huggingface_hub ships with transformers
        return Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ).lower() in ("1", "true", "yes")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Can the model hub be reached? (a TCP connect, so an offline machine answers in seconds)."""
    if hub_offline():
        return False
    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    except Exception:  # pragma: no cover
        return False
    parsed = urlparse(endpoint)
    host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)
    if not host:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def missing_weights_message(what: str, name: str, extra: str = "") -> str:
    """Why weights are missing and the one command that fetches them (``vst fetch-models``)."""
    return (
        f"{what} weights {name!r} are not in the Hugging Face hub cache ({hf_cache_dir()}), and this machine "
        f"cannot download them. Run `vst fetch-models` where the hub can be reached and copy that cache here, "
        f"or give a local checkpoint folder{extra}."
    )


def hub_cache_from_env() -> Path:
    """The hub cache folder as huggingface_hub finds it (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``,
    ``HF_HOME``/hub, ``XDG_CACHE_HOME``/huggingface/hub, ~/.cache/huggingface/hub), without importing it;
    once it is imported, its own setting (which a program may have changed)."""
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None and getattr(constants, "HF_HUB_CACHE", None):
        return Path(constants.HF_HUB_CACHE)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def snapshot_file(repo: str, name: str) -> Path | None:
    """``name`` in the hub cache's snapshot of ``repo`` at ``refs/main`` (``models--org--name/
    snapshots/<commit>/name``), read from the folder layout alone; None when it is not there (the
    caller then asks huggingface_hub, which knows every other case)."""
    if not repo or repo.startswith(("/", ".")) or ".." in repo:
        return None
    folder = hub_cache_from_env() / ("models--" + repo.replace("/", "--"))
    try:
        commit = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not commit or "/" in commit or commit.startswith("."):
        return None
    path = folder / "snapshots" / commit / name
    return path if path.is_file() else None


def hub_file(repo: str, filenames: tuple[str, ...]) -> Path | None:
    """The first of ``filenames`` in the local hub cache of ``repo`` (or in the folder ``repo``)."""
    folder = Path(repo)
    if folder.is_dir():
        for name in filenames:
            if (folder / name).is_file():
                return folder / name
        return None
    for name in filenames:  # the hub cache's layout read directly: a rerun need not import huggingface_hub
        if (direct := snapshot_file(repo, name)) is not None:
            return direct
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - ships with transformers
        return None
    for name in filenames:
        try:
            found = try_to_load_from_cache(repo, name)
        except Exception:  # an id that is not a valid repo name
            return None
        if isinstance(found, str):
            return Path(found)
    return None


#: Weight files of a transformers model, in the order transformers prefers them.
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")


def hf_weights_id(name: str) -> str:
    """``name@digest`` of a transformers model's weights file (hub cache or folder), or
    ``name@not-downloaded`` when no local copy exists yet."""
    path = hub_file(name, HF_WEIGHT_FILES)
    return f"{name}@{weights_digest(path) if path else 'not-downloaded'}"
