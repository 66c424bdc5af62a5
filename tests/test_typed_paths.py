"""Typed server paths never lose a page and only what was checked is read: every OS error on a typed
path (too long, a name over NAME_MAX, a NUL, a loop of links, a folder, a FIFO, a device, no
permission) is a message; a file or a parent folder swapped for a link after the check is refused,
by the open and by the index (in its worker processes too); scores files over the size limit are
refused before they are read; no message shows an allowed folder. A property test over typed
strings, and the page itself in AppTest."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard import loading
from dashboard.choices import Choices, confined, scores_paths, typed_paths
from vst_core.data import ScoresWriter, index_lines
from vst_core.data import access as access_module
from vst_core.data.access import FileIdentity, PathNotAllowed, confine, open_confined, probe
from vst_core.data.index import IndexError_
from vst_core.data.index_store import load_index
from vst_core.data.scores_io import LIMIT_ENV, MAX_SCORES_BYTES, checked_scores, max_scores_bytes, read_scores
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores

EXAMPLES = int(os.environ.get("VST_HYPOTHESIS_EXAMPLES", "150"))
LONG = "a/" * 3000  # 6,000 characters
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def record(sid: str, system: str = "x") -> StoryScores:
    metrics = {"redundancy": RedundancyScores(0.5, 0.5, 0.5, "paper", 4)}
    return StoryScores(sid, sid, system, ("One.", "Two."), metrics=metrics, signature={"id": "sig01"})


def write(path: Path, *sids: str) -> Path:
    with ScoresWriter(path) as out:
        for sid in sids:
            out.write(record(sid))
    return path


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes go under this test's folder, never the user's cache."""
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """An allowed folder holding a scores file, a folder, a FIFO and a loop of links; beside it,
    outside, a secret scores file."""
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    write(folder / "s.jsonl", "inside")
    os.mkfifo(folder / "fifo")
    (folder / "loop").symlink_to(folder / "loop")
    (tmp_path / "outside").mkdir()
    write(tmp_path / "outside" / "s.jsonl", "secret")
    return folder


def refusal(call: Callable[[], Any]) -> str:
    """The message of the PathNotAllowed that ``call`` raises."""
    with pytest.raises(PathNotAllowed) as caught:
        call()
    return str(caught.value)


def in_time(call: Callable[[], Any], seconds: float = 10.0) -> Any:
    """``call()``'s result, failing (not hanging) when it takes longer than ``seconds``."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked"
    if "error" in out:
        raise out["error"]
    return out["value"]


def no_root_in(messages: list[str], *folders: Path) -> None:
    for message in messages:
        for folder in folders:
            assert str(folder) not in message and str(folder.resolve()) not in message, message


# --------------------------------------------------------------------------- every OS error a message


def test_a_6000_character_path_is_a_message(data: Path) -> None:
    roots = (data,)
    messages = [refusal(lambda: confine(LONG, roots, what="scores file")), scores_paths(LONG, "", roots)[2] or ""]
    messages.append(scores_paths("s.jsonl", LONG, roots)[2] or "")
    messages.append(probe(data / LONG) or "")
    messages.append(refusal(lambda: open_confined(data / LONG, roots)))
    assert "too long" in messages[0] and "scores file" in messages[0] and "images folder" in messages[2]
    assert all(m and len(m) < 400 and LONG[:100] not in m for m in messages)  # said briefly, the value not echoed
    with pytest.raises(IndexError_, match="too long"):
        load_index([data / LONG])
    no_root_in(messages, data)


def test_a_name_over_name_max_and_a_nul_byte_are_messages(data: Path) -> None:
    roots = (data,)
    assert "longer than 255 bytes" in refusal(lambda: confine("x" * 256, roots))
    assert "longer than 255 bytes" in refusal(lambda: confine("sub/" + "é" * 128, roots))  # bytes, not characters
    assert confine("x" * 255, roots) == data / ("x" * 255)
    assert "NUL" in (scores_paths("s.jsonl;a\x00b", "", roots)[2] or "")
    assert "cannot have" in refusal(lambda: confine("\ud800", roots))  # a lone surrogate no file system encodes
    assert probe(data / ("x" * 256)) is not None and probe("a\x00b") is not None


def test_a_loop_of_links_a_folder_and_a_fifo_are_messages(data: Path) -> None:
    roots = (data,)
    assert "loop" in (scores_paths("loop", "", roots)[2] or "")
    assert "is a folder, not a file" in (scores_paths("sub", "", roots)[2] or "")
    assert "is a file, not a folder" in (scores_paths("s.jsonl", "s.jsonl", roots)[2] or "")
    assert "loop" in refusal(lambda: open_confined(data / "loop", roots))
    assert "a folder" in refusal(lambda: open_confined(data / "sub", roots))
    assert scores_paths(" s.jsonl ; sub/../s.jsonl;", "sub", roots) == ([data / "s.jsonl"] * 2, data / "sub", None)


def test_a_fifo_is_refused_without_waiting_for_a_writer(data: Path) -> None:
    roots, fifo = (data,), data / "fifo"
    assert "not a regular file" in in_time(lambda: scores_paths("fifo", "", roots)[2])
    assert "not a regular file" in in_time(lambda: refusal(lambda: open_confined(fifo, roots)))
    assert "not a regular file" in in_time(lambda: loading.scores_index([fifo], roots)[1])
    with pytest.raises(IndexError_, match="not a regular file"):
        in_time(lambda: load_index([fifo]))


def test_a_device_is_refused() -> None:
    devices = (Path("/dev").resolve(),)
    if not (devices[0] / "null").exists():
        pytest.skip("no /dev/null here")
    assert "not a regular file" in refusal(lambda: open_confined(devices[0] / "null", devices))
    assert "not a regular file" in (scores_paths("null", "", devices)[2] or "")


@pytest.mark.skipif(ROOT_USER, reason="root reads a file of mode 000")
def test_a_file_without_permission_is_a_message(data: Path) -> None:
    locked = write(data / "locked.jsonl", "a")
    locked.chmod(0)
    try:
        assert "permission denied" in (scores_paths("locked.jsonl", "", (data,))[2] or "")
        assert "permission denied" in refusal(lambda: open_confined(locked, (data,)))
    finally:
        locked.chmod(0o644)


def test_a_permission_error_from_the_os_is_a_message(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as above, whoever runs the tests: the OS refuses the open and the stat."""

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", str(args[0]))

    with monkeypatch.context() as patch:
        patch.setattr(access_module.os, "open", denied)
        message = refusal(lambda: open_confined(data / "s.jsonl", (data,)))
    with monkeypatch.context() as patch:
        patch.setattr(access_module.os, "stat", denied)
        why = probe(data / "s.jsonl")
    assert "permission denied" in message and why == "cannot be read (permission denied)"
    no_root_in([message], data)


def test_sidebar_model_paths_that_exist_but_cannot_be_used_go_back_to_their_defaults(data: Path) -> None:
    (data / "loop.json").symlink_to(data / "loop.json")
    choices = Choices(regions="fifo", clip_checkpoint="sub", clip_config="loop.json", coherence_model="rovist-c:loop")
    kept, notices = confined(choices, (data,))
    assert (kept.regions, kept.clip_checkpoint, kept.clip_config, kept.coherence_model) == ("grid", "", "", "bert-nsp")
    said = " ".join(notices)
    assert len(notices) == 4 and "not a regular file" in said and "a folder, not a file" in said and "loop" in said
    kept, notices = confined(Choices(regions=LONG, clip_checkpoint="x" * 300), (data,))
    assert (kept.regions, kept.clip_checkpoint, len(notices)) == ("grid", "", 2)
    # a name that is not there is left to its loader (a hub name, or the loader's own message)
    assert confined(Choices(coherence_model="sub", clip_checkpoint="missing.pt", regions="s.jsonl"), (data,))[1] == []
    no_root_in(notices, data)


def test_model_files_are_checked_again_right_before_their_readers(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint, a config or a regions CSV is read by code that takes a path: the dashboard
    checks it once more just before (a missing one is left to the reader's own message)."""
    monkeypatch.setenv("VST_DATA_DIRS", str(data))
    monkeypatch.chdir(data)  # the working directory is allowed too: relative values are taken from it
    loading.recheck(str(data / "s.jsonl"), "“Regions”")
    loading.recheck("missing.csv", "“Regions”")
    loading.recheck(LONG, "“Regions”")  # refused by the sidebar already; never an OS error here
    assert "not a regular file" in refusal(lambda: loading.recheck("fifo", "“Regions”"))
    assert "a folder" in refusal(lambda: loading.recheck(str(data / "sub"), "“Regions”"))
    (data / "swapped.csv").symlink_to(tmp_path / "outside" / "s.jsonl")  # after the sidebar's check
    message = refusal(lambda: loading.recheck("swapped.csv", "“Regions”"))
    assert message.startswith("“Regions”") and "outside the folders" in message
    no_root_in([message], data, tmp_path)


# --------------------------------------------------------------------------- only what was checked is read


def test_a_file_swapped_for_a_link_after_the_check_is_refused(data: Path, tmp_path: Path) -> None:
    roots = (data,)
    checked = confine("s.jsonl", roots)
    with open_confined(checked, roots) as fh:
        assert read_scores(fh)[0][0]["story_id"] == "inside"
    checked.unlink()
    checked.symlink_to(tmp_path / "outside" / "s.jsonl")
    messages = [refusal(lambda: open_confined(checked, roots)) for _ in range(200)]
    assert all("symbolic link" in m for m in messages)
    assert "symbolic link" in refusal(lambda: checked_scores([checked], roots))
    no_root_in(messages[:1], data, tmp_path)


@pytest.mark.parametrize("proc", [True, False], ids=["proc", "no-proc"])
def test_a_parent_folder_swapped_for_a_link_after_the_check_is_refused(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proc: bool
) -> None:
    if not proc:  # where /proc is not there: the real path and the file's identity are compared instead
        readlink = os.readlink

        def no_proc(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(path).startswith("/proc/"):
                raise OSError(errno.ENOENT, "no /proc")
            return readlink(path, *args, **kwargs)

        monkeypatch.setattr(access_module.os, "readlink", no_proc)
    roots = (data,)
    write(data / "sub" / "t.jsonl", "inside")
    checked = confine("sub/t.jsonl", roots)
    with open_confined(checked, roots) as fh:
        assert fh.read().startswith(b"{")
    (tmp_path / "elsewhere").mkdir()
    write(tmp_path / "elsewhere" / "t.jsonl", "secret")
    (data / "sub").rename(data / "sub.old")
    (data / "sub").symlink_to(tmp_path / "elsewhere")
    message = refusal(lambda: open_confined(checked, roots))
    assert "no longer inside the folders this dashboard may read" in message
    no_root_in([message], data, tmp_path)


def test_the_index_reads_only_the_files_that_were_checked(data: Path, tmp_path: Path) -> None:
    roots, path = (data,), data / "s.jsonl"
    checked = checked_scores([path], roots)
    assert checked == [FileIdentity.of(os.stat(path))]
    index = load_index([path], expected=checked)
    assert list(index.table["story"]) == ["inside"]
    path.rename(data / "old.jsonl")
    path.symlink_to(tmp_path / "outside" / "s.jsonl")  # swapped between the check and the indexing
    with pytest.raises(IndexError_, match="changed since it was checked"):
        load_index([path], expected=checked)
    with pytest.raises(IndexError_, match="changed since it was checked"):  # a worker's share, as it reads it
        index_lines._read_range(str(path), "s.jsonl", 0, 10, 1, checked[0])
    with pytest.raises(IndexError_, match="changed since it was checked"):
        index_lines._ranges(str(path), 10, 2, checked[0])
    found, problems = index.record(0)  # evidence read later: never the secret's
    assert found is None and "changed since it was indexed" in problems[0].message


# --------------------------------------------------------------------------- the size limit


def test_scores_over_the_size_limit_are_refused_before_they_are_read(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots, path = (data,), data / "s.jsonl"
    size = path.stat().st_size
    monkeypatch.setenv(LIMIT_ENV, str(size - 1))
    message = refusal(lambda: checked_scores([path], roots))
    assert LIMIT_ENV in message and "split the file" in message and "over the dashboard's limit of" in message
    assert loading.scores_index([path], roots) == (None, message)
    monkeypatch.setenv(LIMIT_ENV, str(size))
    assert len(checked_scores([path], roots)) == 1
    write(data / "t.jsonl", "two")
    assert "these 2 scores files are" in refusal(lambda: checked_scores([path, data / "t.jsonl"], roots))  # together
    monkeypatch.setenv(LIMIT_ENV, "0")
    assert len(checked_scores([path, data / "t.jsonl"], roots)) == 2  # 0: no limit
    no_root_in([message], data)


def test_the_size_limit_setting() -> None:
    assert MAX_SCORES_BYTES == 1 << 30 > 564_000_000  # the benchmark's 100,000 generated stories fit
    assert max_scores_bytes("") == MAX_SCORES_BYTES and max_scores_bytes("2G") == 2 << 30
    assert max_scores_bytes("500MB") == 500 << 20 and max_scores_bytes("1.5GiB") == 3 << 29
    assert max_scores_bytes("1000") == 1000 and max_scores_bytes("0") == 0
    assert max_scores_bytes("lots") == max_scores_bytes("-5") == max_scores_bytes("inf") == MAX_SCORES_BYTES


# --------------------------------------------------------------------------- what a visitor is told


def test_refusals_name_the_setting_and_the_fix_never_an_allowed_folder(data: Path, tmp_path: Path) -> None:
    roots = (data, tmp_path / "more")
    messages = [
        refusal(lambda: confine("/etc/passwd", roots, what="scores file")),
        refusal(lambda: confine("../outside/s.jsonl", roots)),
        refusal(lambda: confine("~/x", roots)),
        scores_paths("/etc/hosts;s.jsonl", "", roots)[2] or "",
        scores_paths("nope.jsonl", "", roots)[2] or "",
        *confined(Choices(regions="/etc/hosts", clip_config="../x.json"), roots)[1],
    ]
    assert "outside the folders this dashboard may read" in messages[0] and "VST_DATA_DIRS" in messages[0]
    assert "-- --data=FOLDER" in messages[0] and "'/etc/passwd'" in messages[0]  # the visitor's own short value
    assert messages[4] == "scores file not found: 'nope.jsonl'"
    no_root_in(messages, data, tmp_path)


def test_the_refusal_is_logged_for_whoever_runs_the_dashboard(data: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="vst_core.data.access"):
        refusal(lambda: confine("/etc/passwd", (data,)))
    assert str(data) in caplog.text and "/etc/passwd" in caplog.text


typed = st.one_of(
    st.lists(st.sampled_from([*"/\\;.~ \x00\n\tas-é漢\U0001f600", "\ud800", "..", "sub", "fifo", "loop", "s.jsonl"])).map(
        "".join
    ),
    st.text(max_size=30),
    st.builds(
        lambda c, n, tail: c * n + tail, st.sampled_from(["a", "/", "é", "a/", ";"]), st.integers(0, 5000), st.text(max_size=5)
    ),
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "sub").mkdir()
    write(folder / "s.jsonl", "a")
    os.mkfifo(folder / "fifo")
    (folder / "loop").symlink_to(folder / "loop")
    yield folder


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=typed, images=typed)
def test_typed_strings_never_raise(hostile: Path, text: str, images: str) -> None:
    roots = (hostile,)
    paths, folder, error = scores_paths(text, images, roots)
    assert (error is None) or (paths == [] and folder is None and len(error) < 600)
    assert all(p.is_relative_to(hostile) for p in paths) and len(paths) <= len(typed_paths(text))
    _, notices = confined(Choices(regions=text, clip_checkpoint=images, coherence_model=f"rovist-c:{text}"), roots)
    assert len(notices) <= 3 and all(len(n) < 600 for n in notices)
    no_root_in([error or "", *notices], hostile)


# --------------------------------------------------------------------------- the page


@pytest.mark.slow
def test_the_page_survives_a_long_path_and_an_outside_path(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("VST_DATA_DIRS", str(data))
    for value, said in [
        (LONG, "scores file is too long for a path"),
        ("/etc/passwd", "outside the folders this dashboard may read"),
        (str(data / "fifo"), "not a regular file"),
        (str(data / "sub"), "is a folder, not a file"),
    ]:
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).switch_page("app_pages/dataset.py")
        app.session_state["source"] = "Scores JSONL (no model needed)"
        app.session_state["scores_path"] = value
        app.session_state["regions"] = str(data / "fifo")
        app.run()
        assert not app.exception, app.exception
        errors = " ".join(e.value for e in app.error)
        assert said in errors and app.title[0].value == "Dataset"
        no_root_in([errors], data)
