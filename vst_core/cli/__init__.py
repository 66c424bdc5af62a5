"""The ``vst`` command line, one module per command: :mod:`.score`, :mod:`.meta_eval`,
:mod:`.models` (fetch-models, cache), :mod:`.bench`, :mod:`.dhm` (import-scores, dhm), :mod:`.compare`
(the leaderboard and paired tests), :mod:`.report`, :mod:`.metrics` (the metrics this installation
knows) and :mod:`.study` (human-judgement studies: new, raters, status, export); a metric's own commands (train-sop, train-vrank, train-cosmic, judge-bias) come from its
spec's ``commands`` (:func:`commands`)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import NoReturn

from vst_core.cli.common import EXIT_INPUT, EXIT_USAGE, EXIT_WEIGHTS

__all__ = ["EXIT_INPUT", "EXIT_USAGE", "EXIT_WEIGHTS", "build_parser", "main"]

#: Each command: its module in this package, the function that adds its parser (several commands
#: of one module share it) and the function that runs it. A command's module is imported only when
#: the command is run (or when the whole parser is built, for ``vst --help``), so ``vst score``
#: never pays for the statistics and the report's imports.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "score": ("score", "add_parser", "run"),
    "fetch-models": ("models", "add_parsers", "run_fetch"),
    "cache": ("models", "add_parsers", "run_cache"),
    "bench": ("bench", "add_parser", "run"),
    "meta-eval": ("meta_eval", "add_parser", "run"),
    "import-scores": ("dhm", "add_parsers", "run_import"),
    "dhm": ("dhm", "add_parsers", "run_dhm"),
    "compare": ("compare", "add_parser", "run"),
    "report": ("report", "add_parser", "run"),
    "metrics": ("metrics", "add_parser", "run"),
    "study": ("study", "add_parser", "run"),
}


def _own() -> dict[str, tuple[str, str, str]]:
    """:data:`COMMANDS` with full module names."""
    return {k: (f"vst_core.cli.{m}", a, r) for k, (m, a, r) in COMMANDS.items()}


def commands() -> dict[str, tuple[str, str, str]]:
    """Each metric's own commands (its spec's ``commands``: full module names), then :data:`COMMANDS`,
    which always win."""
    from vst_core.contract import registry

    metrics = {
        name: (module, "add_parser", "run") for s in registry().specs.values() for name, module in s.tools.commands.items()
    }
    return {**metrics, **_own()}


def _table(command: str | None) -> dict[str, tuple[str, str, str]]:
    """The commands to look ``command`` up in: vst's own alone for one of them (no registry is built
    on the way to its parser), else every command."""
    return _own() if command in COMMANDS else commands()


def _runner(command: str) -> Callable[[argparse.Namespace], int]:
    module, _, run = _table(command)[command]
    found: Callable[[argparse.Namespace], int] = getattr(import_module(module), run)
    return found


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``vst`` parser: every command, or with ``only`` that command alone (its module alone imported)."""
    parser = argparse.ArgumentParser(
        prog="vst", description="Evaluate visual stories with reference-free metrics and write per-story evidence."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    added: set[tuple[str, str]] = set()
    for command, (module, add, _) in _table(only).items():
        if (only is not None and command != only) or (module, add) in added:
            continue
        added.add((module, add))
        getattr(import_module(module), add)(sub)
    return parser


def _command_parser(parser: argparse.ArgumentParser, command: str, words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``command``, or of its step when it has steps and ``words`` name one
    (``vst study new``)."""
    sub: argparse.ArgumentParser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    steps = next((a for a in sub._actions if isinstance(a, argparse._SubParsersAction)), None)
    step = next((w for w in words if not w.startswith("-")), None)
    if steps is not None and step in steps.choices:
        chosen: argparse.ArgumentParser = steps.choices[step]
        return chosen
    return sub


def _refuse(parser: argparse.ArgumentParser, command: str, unknown: list[str], words: Sequence[str] = ()) -> NoReturn:
    """Exit 2 with the command's own usage (not vst's) and, for a mistyped option, the nearest of
    its options: ``vst score --metrcs`` -> "did you mean --metrics?"."""
    import difflib

    sub = _command_parser(parser, command, words)
    options = [flag for action in sub._actions for flag in action.option_strings]
    hints = []
    for word in unknown:
        flag = word.partition("=")[0]
        near = difflib.get_close_matches(flag, options, n=1, cutoff=0.6) if flag.startswith("-") else []
        if near:
            hints.append(f"did you mean {near[0]} (not {flag})?")
    sub.error(f"unrecognized arguments: {' '.join(unknown)}" + "".join(f"; {h}" for h in hints))


def _unknown_options(parser: argparse.ArgumentParser, command: str, words: Sequence[str]) -> list[str]:
    """The words of ``words`` that look like options (``--name``) that ``command`` does not have,
    not even as an abbreviation argparse would take."""
    sub = _command_parser(parser, command, words)
    options = [flag for action in sub._actions for flag in action.option_strings if flag.startswith("--")]
    unknown = []
    for word in words:
        if word == "--":
            break
        flag = word.partition("=")[0]
        if flag.startswith("--") and len(flag) > 2 and not any(o == flag or o.startswith(flag) for o in options):
            unknown.append(word)
    return unknown


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    only = argv[0] if argv and argv[0] in _table(argv[0]) else None
    parser = build_parser(only)
    if only is not None and (mistyped := _unknown_options(parser, only, argv[1:])):
        _refuse(parser, only, mistyped, argv[1:])  # before argparse: a missing --out would hide the typo
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse(parser, args.command, unknown, argv[1:])
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    try:
        return _runner(args.command)(args)
    except BrokenPipeError:  # `vst metrics | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes at exit
        return 0
