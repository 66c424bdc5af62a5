"""What every command says and reads on the terminal, below the commands themselves (the CLI's and
a metric package's own, such as ``vst train-vrank``): exit codes, errors and notes on stderr, a
progress bar, a comma-separated option, ``--help`` with defaults, and each metric's own settings
as flags (:func:`metric_arguments`, from its spec's ``Option`` rows).

>>> EXIT_USAGE, EXIT_WEIGHTS
(2, 4)
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from vst_core.config import SettingsError, metric_options
from vst_core.metric_spec import registry

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


def metric_arguments(p: argparse.ArgumentParser, only: str | None = None) -> None:
    """Each metric's own settings (its spec's ``options``; of metric ``only`` alone when given), one
    group per metric, in the registry's order: an on/off option is a flag that turns it on."""
    for spec in registry().specs.values():
        if not spec.signing.options or only not in (None, spec.name):
            continue
        group = p.add_argument_group(f"{spec.title} ({spec.name})")
        for option in spec.signing.options:
            shown = "" if option.default in (None, "") or option.kind == "bool" else f" (default: {option.default!r})"
            words = f"{spec.name}: {option.help}{shown}".replace("%", "%%")
            try:
                if option.kind == "bool":  # the flag sets the other value than the default
                    const = not option.default
                    group.add_argument(option.cli_flag, dest=_dest(option.setting), action="store_const", const=const, help=words)
                    continue
                group.add_argument(
                    option.cli_flag,
                    dest=_dest(option.setting),
                    default=None,
                    choices=option.choices or None,
                    metavar=None if option.choices else option.metavar or {"int": "N", "float": "X"}.get(option.kind, "TEXT"),
                    help=words,
                )
            except argparse.ArgumentError as exc:  # a flag the command has already: the command keeps working
                note(f"warning: {spec.name}'s option {option.setting} is not on this command: {exc}")


def _dest(setting: str) -> str:
    return f"metric_option__{setting}"


def metric_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The metrics' own settings the command line gave, read by their kinds (SettingsError with the
    option when one cannot be read)."""
    found: dict[str, Any] = {}
    for setting, (_spec, option) in metric_options().items():
        text = getattr(args, _dest(setting), None)
        if text is None:
            continue
        try:
            found[setting] = option.parse(text)
        except ValueError as exc:
            raise SettingsError(f"{option.cli_flag}: {exc}") from None
    return found
