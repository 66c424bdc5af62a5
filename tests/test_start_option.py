"""The folder a dashboard refuses to read is named with the start-up command that allows it, shown
on the page as one code span: copied, it runs as it is (no invisible joiner inside ``--``, no
curly quotes), and its option is one word, ``--data=FOLDER``, that never breaks across lines."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from dashboard.choices import scores_paths
from dashboard.frame import with_code
from vst_core.data.access import START_COMMAND, PathNotAllowed, confine, data_dirs_from_args
from vst_core.viz.safe import JOINER


def _spans(markdown: str) -> list[str]:
    return re.findall(r"(?<!`)`([^`]+)`(?!`)", markdown)


def test_the_start_command_is_one_code_span_copied_whole(tmp_path: Path) -> None:
    with pytest.raises(PathNotAllowed) as refused:
        confine("/etc/passwd", (tmp_path,), what="scores file")
    typed = scores_paths("/etc/hosts", "", (tmp_path,))[2] or ""
    for message in (str(refused.value), typed):
        page = with_code(message)  # as the page writes it (a notice or an error)
        assert START_COMMAND in _spans(page), page
        assert JOINER not in START_COMMAND and "“" not in message
    words = shlex.split(START_COMMAND)
    assert words[-2:] == ["--", "--data=FOLDER"]  # the option, one word
    assert data_dirs_from_args(words[words.index("--") + 1 :]) == ["FOLDER"]  # what the dashboard reads


@pytest.mark.slow  # the app run
def test_the_page_shows_the_start_command_as_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).switch_page("app_pages/dataset.py")
    app.session_state["source"] = "Scores JSONL (no model needed)"
    app.session_state["scores_path"] = "/etc/passwd"
    app.run()
    assert not app.exception, app.exception
    errors = [e.value for e in app.error]
    assert any(START_COMMAND in _spans(e) for e in errors), errors
