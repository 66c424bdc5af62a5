"""Errors carry data, and each front end words them: a model's message names the settings it
means (:func:`vst_core.models.hub.option`), the command line says its options, the Python API the
``Settings`` fields and the dashboard its boxes; no message of the product's model code spells a
setting's command-line option itself."""

from __future__ import annotations

import argparse
import ast
import re
from dataclasses import fields
from pathlib import Path

from vst_core.config import Settings
from vst_core.models.hub import ModelLoadError, cli_words, option, python_words

ROOT = Path(__file__).resolve().parent.parent / "vst_core"
#: Where a model's message is made (the commands and the metrics' declarations say options themselves).
MESSAGE_FOLDERS = ("models", "grounding", "scoring", "learned", "judge", "text", "data")


def every_option() -> set[str]:
    """Every option of every ``vst`` command."""
    from vst_core.cli import build_parser

    parser = build_parser()
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.update(o for a in sub._actions for o in a.option_strings)
    return found


def named_settings() -> set[str]:
    """The settings named with :func:`option` anywhere in vst_core."""
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        found.update(re.findall(r"option\(\s*['\"]([a-z][a-z0-9_]*)['\"]", path.read_text(encoding="utf-8")))
    return found


def test_every_named_setting_is_a_field_and_the_cli_words_are_a_real_option() -> None:
    named = named_settings()
    assert len(named) >= 15
    from vst_core.config import metric_options

    settings = {f.name for f in fields(Settings)} | set(metric_options())  # shared fields and the metrics' own options
    options = every_option()
    assert named <= settings, named - settings
    assert {s for s in named if cli_words(s) not in options} == set()


def test_a_message_is_worded_by_each_front_end() -> None:
    from dashboard.choices import in_sidebar_terms

    exc = ModelLoadError(f"CLIP weights are missing: pass {option('clip_checkpoint', 'PATH')} or {option('clip_model')}")
    assert str(exc) == "CLIP weights are missing: pass --clip-checkpoint PATH or --clip-model"
    assert (
        exc.phrased(python_words) == "CLIP weights are missing: pass Settings(clip_checkpoint=PATH) or Settings(clip_model=...)"
    )
    assert (
        in_sidebar_terms(exc) == "CLIP weights are missing: pass the sidebar's “…or local checkpoint file” or “CLIP architecture”"
    )
    assert exc.settings == ["clip_checkpoint", "clip_model"]


def test_no_model_message_spells_a_settings_option_itself() -> None:
    settings = {f.name for f in fields(Settings)}
    flags = {cli_words(s) for s in settings}
    spelled = []
    for folder in MESSAGE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and node.body
                and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and node.value not in flags  # a declaration: the option itself
                ):
                    for flag in re.findall(r"--[a-z][a-z0-9-]*", node.value):
                        if flag in flags:
                            spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {flag}")
    assert spelled == []
