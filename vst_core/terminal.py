"""What every command says and reads on the terminal, below the commands themselves (the CLI's and
a metric package's own, such as ``vst train-vrank``): exit codes, errors and notes on stderr, a
progress bar, a comma-separated option, ``--help`` with defaults, each metric's own settings
as flags (:func:`metric_arguments`, from its spec's ``Option`` rows), and the flags every trainer
shares (:func:`training_arguments`).

>>> EXIT_USAGE, EXIT_WEIGHTS
(2, 4)
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any, Protocol

from vst_core.config import SettingsError, metric_options
from vst_core.contract import Option, registry

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_WEIGHTS = 4
EXIT_DIVERGED = 5  # training met a non-finite loss; nothing written
EXIT_PARTIAL = 6  # some metrics' models could not load; the others were scored
EXIT_PLUGIN = 7  # an installed metric package could not be loaded (vst metrics)


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def note(message: str) -> None:
    print(message, file=sys.stderr)


def bar(total: int, unit: str, desc: str, disable: bool = False) -> Any:
    """A tqdm progress bar on stderr."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, disable=disable)


def csv_list(value: str | None) -> list[str] | None:
    """A comma-separated option as its items, read as one CSV row: a name holding a comma is given
    in double quotes.

    >>> csv_list('a, "b,c" ,d'), csv_list(""), csv_list("x")
    (['a', 'b,c', 'd'], None, ['x'])
    """
    if not value:
        return None
    row = next(csv.reader([value], skipinitialspace=True), [])
    items = [v.strip() for v in row if v.strip()]
    return items or None


class DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` with each option's default, unless its help already says it or there is none
    (a ``None`` or empty default means "decided at run time", which the help text explains)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text or action.default in (None, "", argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class TrainingDefaults(Protocol):
    """A trainer's config, where the flags every trainer shares take their defaults from."""

    @property
    def base(self) -> str: ...
    @property
    def epochs(self) -> int: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def learning_rate(self) -> float: ...
    @property
    def max_length(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def device(self) -> str: ...


def training_arguments(
    p: argparse.ArgumentParser,
    defaults: TrainingDefaults,
    *,
    base: str,
    epochs: str,
    batch_size: str,
    lr: str,
    held_out: tuple[float, str],
    max_length: str,
    seed: str,
) -> None:
    """The flags every trainer shares (``vst train-vrank``, ``train-cosmic``, ``train-sop``): --base,
    --epochs, --batch-size, --lr, --held-out, --max-length and --seed, each with its default from
    the trainer's config (``held_out``: the default and its help) and its help in the trainer's
    words, then --device (where to train) and --no-progress.

    >>> from types import SimpleNamespace
    >>> p = argparse.ArgumentParser()
    >>> config = SimpleNamespace(base="bert", epochs=3, batch_size=16, learning_rate=2e-5, max_length=128, seed=13, device="auto")
    >>> training_arguments(p, config, base="b", epochs="e", batch_size="n", lr="l", held_out=(0.1, "h"), max_length="m", seed="s")
    >>> args = p.parse_args(["--epochs", "5"])
    >>> args.epochs, args.lr, args.held_out, args.device, args.no_progress
    (5, 2e-05, 0.1, 'auto', False)
    """
    p.add_argument("--base", default=defaults.base, help=base)
    p.add_argument("--epochs", type=int, default=defaults.epochs, help=epochs)
    p.add_argument("--batch-size", type=int, default=defaults.batch_size, help=batch_size)
    p.add_argument("--lr", type=float, default=defaults.learning_rate, help=lr)
    p.add_argument("--held-out", type=float, default=held_out[0], help=held_out[1])
    p.add_argument("--max-length", type=int, default=defaults.max_length, help=max_length)
    p.add_argument("--seed", type=int, default=defaults.seed, help=seed)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=defaults.device, help="where to train")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def metric_arguments(p: argparse.ArgumentParser, only: str | None = None, components: bool = True) -> None:
    """The settings the components and the metrics own (their ``options``; of metric ``only`` alone
    when given), one group per owner: the components' first (with ``components``), then the metrics
    in the registry's order. A flag that takes no value (an on/off option, or one with a ``const``)
    sets its ``bare_value``."""
    reg = registry()
    owners: list[tuple[str, str, tuple[Option, ...]]] = []
    if components and only is None:
        owners += [(c.name, c.title, c.options) for c in reg.components.values()]
    owners += [(s.name, f"{s.title} ({s.name})", s.signing.options) for s in reg.specs.values() if only in (None, s.name)]
    for name, title, options in owners:
        if options:
            group = p.add_argument_group(title)
            for option in options:
                add_option(group, option, name)


def add_option(group: Any, option: Option, owner: str = "") -> None:
    """``option`` as a command-line option of ``group`` (an argparse parser or group), read back by
    :func:`metric_options_from_args`; a flag the command has already is left off with a warning."""
    shown = "" if option.default in (None, "") or option.bare_value is not None else f" (default: {option.default!r})"
    words = f"{owner}: {option.help}{shown}" if owner and owner not in ("text", "images") else f"{option.help}{shown}"
    words = words.replace("%", "%%")
    try:
        if option.bare_value is not None:  # the flag sets the other value than the default
            group.add_argument(
                option.cli_flag, dest=_dest(option.setting), action="store_const", const=option.bare_value, help=words
            )
            return
        group.add_argument(
            option.cli_flag,
            dest=_dest(option.setting),
            default=None,
            choices=None if option.expand or option.presets else option.choices or None,
            metavar=None
            if option.choices and not (option.expand or option.presets)
            else option.metavar or {"int": "N", "float": "X", "file": "FILE", "folder": "DIR"}.get(option.kind, "TEXT"),
            help=words,
        )
    except argparse.ArgumentError as exc:  # a flag the command has already: the command keeps working
        note(f"warning: {owner}'s option {option.setting} is not on this command: {exc}")


#: How the argparse destination of a component's or a metric's option begins (:func:`add_option`).
OPTION_DEST = "metric_option__"


def _dest(setting: str) -> str:
    return f"{OPTION_DEST}{setting}"


def metric_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The metrics' own settings the command line gave, read by their kinds (SettingsError with the
    option when one cannot be read)."""
    found: dict[str, Any] = {}
    for setting, (_spec, option) in metric_options().items():
        text = getattr(args, _dest(setting), None)
        if text is None:
            continue
        try:
            value = option.parse(text)
        except ValueError as exc:
            raise SettingsError(f"{option.cli_flag}: {exc}") from None
        found.update(option.expand(value) if option.expand is not None else {setting: value})
    return found


def given_option(args: argparse.Namespace, setting: str) -> Any:
    """The text the command line gave for the option ``setting`` (None: not given)."""
    return getattr(args, _dest(setting), None)
