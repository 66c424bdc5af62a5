"""What every command says on the terminal, below the commands themselves (the CLI's and a
metric package's own, such as ``vst train-vrank``): exit codes, errors and notes on stderr, a
progress bar, a comma-separated option, ``--help`` with defaults.

>>> EXIT_USAGE, EXIT_WEIGHTS
(2, 4)
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

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
