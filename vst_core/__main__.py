"""``python -m vst_core COMMAND ...``: the command line of :mod:`vst_core.cli`."""

from __future__ import annotations

import sys

from vst_core.cli import EXIT_INPUT, EXIT_USAGE, EXIT_WEIGHTS, build_parser, main

__all__ = ["EXIT_INPUT", "EXIT_USAGE", "EXIT_WEIGHTS", "build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
