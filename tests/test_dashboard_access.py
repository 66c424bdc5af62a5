"""What the dashboard lets a visitor reach: typed server paths confined to the allowed folders,
link values validated, upload folders removed with their session, uploads unpacked safely.
Pure parts only (no Streamlit runtime); the pages are covered in test_app and test_browser."""

from __future__ import annotations

import gc
import io
import os
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

from dashboard.choices import Choices, confined, url_notices
from dashboard.session import PREFIX, SessionFolder, sweep_stale
from vst_core.data.access import PathNotAllowed, allowed_roots, confine, data_dirs_from_args
from vst_core.data.uploads import story_set_from_files


def test_confine_follows_symlinks_and_never_looks_outside(tmp_path: Path) -> None:
    inside, outside = tmp_path / "data", tmp_path / "secret"
    inside.mkdir()
    outside.mkdir()
    (inside / "link").symlink_to(outside)
    roots = (inside,)
    assert confine("a/b.jsonl", roots) == inside / "a" / "b.jsonl"  # relative: from the first root
    for value in ["/etc/passwd", "../secret/x", "link/x", str(outside / "missing"), "~/x"]:
        with pytest.raises(PathNotAllowed, match="outside the folders"):
            confine(value, roots)
    with pytest.raises(PathNotAllowed, match="NUL"):
        confine("a\x00b", roots)
    # a refused path that exists and one that does not read the same: nothing is revealed
    messages = []
    for name in ("exists", "absent"):
        try:
            confine(str(outside / name), roots)
        except PathNotAllowed as exc:
            messages.append(str(exc).replace(name, "*"))
    (outside / "exists").write_text("x")
    assert messages[0] == messages[1]


def test_allowed_roots_from_env_and_arguments(tmp_path: Path) -> None:
    assert data_dirs_from_args(["--data", "a", "--data=b", "--other", "c"]) == ["a", "b"]
    roots = allowed_roots([tmp_path], os.pathsep.join([str(tmp_path / "x"), ""]), ["--data", str(tmp_path / "y")])
    assert roots == (tmp_path.resolve(), (tmp_path / "x").resolve(), (tmp_path / "y").resolve())


def test_sidebar_paths_outside_are_replaced_by_defaults_with_a_notice(tmp_path: Path) -> None:
    choices = Choices(
        coherence_model="rovist-c:/etc/shadow",
        clip_checkpoint="/root/weights.pt",
        clip_config=str(tmp_path / "ok.json"),
        regions="grid",
        clip_pretrained="openai",
    )
    kept, notices = confined(choices, (tmp_path,))
    assert kept.coherence_model == "bert-nsp" and kept.clip_checkpoint == "" and kept.clip_config == str(tmp_path / "ok.json")
    assert kept.regions == "grid" and kept.clip_pretrained == "openai" and len(notices) == 2
    assert "“Pair model” is back to bert-nsp" in notices[0]
    assert confined(Choices(coherence_model="bert-nsp:google-bert/bert-base-uncased"), (tmp_path,))[1] == []  # a hub name


def test_link_values_are_checked() -> None:
    good = {"ngram": "3", "theta_name": "slider", "theta_value": "0.3", "coherence": "false", "source": "Bundled sample"}
    assert url_notices(good) == []
    bad = {"ngram": "999", "theta_value": "inf", "variant": "x", "device": "tpu", "penalize": "1", "sequence": "any"}
    assert [n.split()[3].split("=")[0] for n in url_notices(bad)] == ["ngram", "theta_value", "variant", "device", "penalize"]


def test_an_upload_folder_goes_with_its_session(tmp_path: Path) -> None:
    folder = SessionFolder()
    path = folder.path
    (path / "x.png").write_bytes(b"x")
    del folder
    gc.collect()
    assert not path.exists()
    dead = tmp_path / f"{PREFIX}99999999-abc"  # a pid no process has
    alive = tmp_path / f"{PREFIX}{os.getpid()}-abc"
    dead.mkdir()
    alive.mkdir()
    assert sweep_stale(tmp_path) == 1 and not dead.exists() and alive.exists()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_an_upload_never_writes_outside_its_folder(tmp_path: Path) -> None:
    sample = ROOT / "assets/sample"
    story = b'{"story_id": "a", "sentences": ["A."], "images": ["../../escape.jpg", "images/space_1_rocket.jpg"]}\n'
    members = {
        "s/stories.jsonl": story,
        "s/images/space_1_rocket.jpg": (sample / "images/space_1_rocket.jpg").read_bytes(),
        "../evil.jpg": b"x",
        "/abs.jpg": b"x",
        "s/../../up.jpg": b"x",
    }
    folder = tmp_path / "upload"
    found, error, messages = story_set_from_files([("u.zip", _zip(members))], folder)
    assert error is None and found is not None
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == {"upload/stories.jsonl", "upload/images/space_1_rocket.jpg"}
    assert any("'..' path" in m for m in messages)
    assert any(p.kind == "image" and "leaves" in p.message for p in found.stories[0].problems)


def test_upload_shapes_are_explained(tmp_path: Path) -> None:
    assert (
        story_set_from_files([("a.png", b"x")], tmp_path / "a")[1]
        == "no story file (.json or .jsonl or .csv or .tsv or .parquet) among the uploaded files"
    )
    two = story_set_from_files([("a.json", b"{}"), ("b.jsonl", b"")], tmp_path / "b")[1]
    assert two is not None and "2 story files uploaded" in two
    assert "not a readable zip" in story_set_from_files([("a.zip", b"PK nope"), ("s.jsonl", b"")], tmp_path / "c")[2][0]


def test_a_corrupt_zip_member_is_a_message_not_a_crash(tmp_path: Path) -> None:
    members = {"s.jsonl": b'{"story_id": "a", "sentences": ["A."], "images": ["x.png"]}\n', "x.png": b"PNGDATA" * 100}
    data = bytearray(_zip(members))
    data[data.find(b"PNGDATA")] = ord("Q")  # the stored bytes no longer match the member's CRC
    found, error, messages = story_set_from_files([("u.zip", bytes(data))], tmp_path / "a")
    assert error is None and found is not None and len(found) == 1
    assert any("x.png cannot be read from its zip (BadZipFile" in m for m in messages)
    data = bytearray(_zip(members))
    data[data.find(b'"story_id"')] = ord("X")  # now the story file itself is corrupt
    found, error, _ = story_set_from_files([("u.zip", bytes(data))], tmp_path / "b")
    assert found is None and error is not None and "s.jsonl cannot be read from its zip" in error
