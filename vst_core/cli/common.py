"""What every command shares: exit codes, error printing, progress bars."""

from __future__ import annotations

import sys
from typing import Any

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_WEIGHTS = 4
EXIT_DIVERGED = 5  # training met a non-finite loss; nothing written
EXIT_PARTIAL = 6  # some metrics' models could not load; the others were scored


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def note(message: str) -> None:
    print(message, file=sys.stderr)


def bar(total: int, unit: str, desc: str, disable: bool = False) -> Any:
    """A tqdm progress bar on stderr."""
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, disable=disable)


def csv_list(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None
