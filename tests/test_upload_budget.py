"""Uploads bounded by what they unpack to: zip bombs, fake images, members the story file does not
name, members lying about their size, the upload, session and server budgets, the ratio and member
limits, each refusal one message without server paths. Budgets are lowered for speed; one slow test
runs the real ones."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vst_core.data import upload_files
from vst_core.data.uploads import CHUNK, SESSION_PREFIX, UploadBudget, place_upload, story_set_from_files

KIB, MIB = 2**10, 2**20
IMAGES = ROOT / "assets/sample/images"
#: Small budgets: a test unpacks at most a few MiB.
SMALL = UploadBudget(
    data_file=256 * KIB, image=256 * KIB, upload=MIB, session=MIB, server=2 * MIB, ratio=50, ratio_floor=64 * KIB, members=20
)


def _zip(members: dict[str, bytes | tuple[bytes, int]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip of ``members``; a (block, n) value is written as n copies of block, streamed."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            with archive.open(name, "w") as out:
                block, copies = data if isinstance(data, tuple) else (data, 1)
                for _ in range(copies):
                    out.write(block)
    return buffer.getvalue()


def _story(*images: str) -> bytes:
    return (json.dumps({"story_id": "a", "sentences": ["We went out."] * len(images), "images": list(images)}) + "\n").encode()


def _fake_jpeg(size: int, seed: int = 0) -> bytes:
    """A JPEG's first bytes, then ``size`` random bytes (no ratio to speak of)."""
    return b"\xff\xd8\xff\xe0" + random.Random(seed).randbytes(size)


def _files(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def _said(tmp_path: Path, error: str | None, messages: list[str]) -> str:
    """Every message in one string, checked to hold no server path."""
    text = "\n".join([error or "", *messages])
    assert str(tmp_path) not in text and "/tmp/" not in text
    return text


def test_a_1000_to_1_story_file_is_stopped_early_and_removed(tmp_path: Path) -> None:
    bomb = _zip({"s/stories.jsonl": (_story() + b" " * (MIB - 100), 8)})  # 8 MiB from ~8 KiB
    assert len(bomb) < 16 * KIB
    folder = tmp_path / "up"
    budget = UploadBudget(**{**SMALL.__dict__, "data_file": 4 * MIB})  # the ratio stops it first: at 50 × ~8 KiB
    found, error, messages = story_set_from_files([("u.zip", bomb)], folder, budget=budget)
    text = _said(tmp_path, error, messages)
    assert found is None and error is not None and "stories.jsonl left out" in error and "50 times its packed size" in text
    assert _files(folder) == {}


def test_a_story_file_stops_at_its_byte_limit_while_streaming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []  # the size of each partial file when it is removed
    remove = upload_files._remove

    def spy(path: Path) -> None:
        seen.append(path.stat().st_size)
        remove(path)

    monkeypatch.setattr(upload_files, "_remove", spy)
    bomb = _zip({"stories.jsonl": (b" " * MIB, 32)})  # 32 MiB unpacked
    budget = UploadBudget(data_file=4 * MIB, ratio=10**9)
    tracemalloc.start()
    found, error, messages = story_set_from_files([("u.zip", bomb)], tmp_path / "up", budget=budget)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert found is None and error is not None and "more than 4 MiB, the limit for a story file" in error
    assert seen and seen[0] <= 4 * MIB and _files(tmp_path / "up") == {}
    assert peak < 8 * CHUNK + MIB  # never the member whole: a few chunks at a time
    loose = story_set_from_files([("stories.jsonl", b" " * (4 * MIB + 1))], tmp_path / "loose", budget=budget)
    assert loose[1] is not None and "the limit for a story file" in loose[1]  # a loose file has the same limit


def test_ten_zero_filled_jpgs_are_refused_by_their_first_bytes(tmp_path: Path) -> None:
    names = [f"images/{k}.jpg" for k in range(10)]
    members: dict[str, bytes | tuple[bytes, int]] = {name: (bytes(64 * KIB), 2) for name in names}
    upload = _zip({"stories.jsonl": _story(*names), **members})
    found, error, messages = story_set_from_files([("u.zip", upload)], tmp_path / "up", budget=SMALL)
    text = _said(tmp_path, error, messages)
    assert error is None and found is not None
    assert _files(tmp_path / "up").keys() == {"stories.jsonl"}
    assert len(messages) == 10 and all("is not an image (JPEG, PNG, GIF, WebP, BMP or TIFF" in m for m in messages), text
    unnamed = story_set_from_files([("u.zip", _zip({"stories.jsonl": _story(), **members}))], tmp_path / "b", budget=SMALL)
    assert unnamed[2] == [] and _files(tmp_path / "b").keys() == {"stories.jsonl"}  # not named: never opened


def test_only_the_images_the_story_names_are_unpacked(tmp_path: Path) -> None:
    rocket, story = (IMAGES / "space_1_rocket.jpg").read_bytes(), _story("images/a.jpg")
    members: dict[str, bytes | tuple[bytes, int]] = {
        "set/stories.jsonl": story,
        "set/images/a.jpg": rocket,
        "set/images/b.jpg": rocket,
        "set/notes.txt": b"hello",
        "other/images/a.jpg": rocket,
        "a.jpg": rocket,
    }
    found, error, messages = story_set_from_files([("u.zip", _zip(members))], tmp_path / "up", budget=SMALL)
    assert error is None and found is not None and not found.stories[0].problems and messages == []
    assert _files(tmp_path / "up") == {"stories.jsonl": len(story), "images/a.jpg": len(rocket)}


def _declare_size(data: bytes, name: bytes, size: int) -> bytes:
    """A zip whose headers say member ``name`` unpacks to ``size`` bytes."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = out.find(signature)
        while at >= 0:
            if name in out[at : at + 64 + len(name)]:
                out[at + offset : at + offset + 4] = size.to_bytes(4, "little")
            at = out.find(signature, at + 4)
    return bytes(out)


def test_a_member_that_lies_about_its_size_is_counted_by_what_it_unpacks(tmp_path: Path) -> None:
    big = _fake_jpeg(512 * KIB)
    says_small = _declare_size(_zip({"s.jsonl": _story("x.jpg"), "x.jpg": big}), b"x.jpg", 100)
    found, error, messages = story_set_from_files([("u.zip", says_small)], tmp_path / "a", budget=SMALL)
    _said(tmp_path, error, messages)
    assert found is not None and "x.jpg" not in _files(tmp_path / "a")
    assert any(m.startswith("x.jpg cannot be read from its zip (BadZipFile") for m in messages), messages
    says_huge = _declare_size(_zip({"s.jsonl": _story("x.jpg"), "x.jpg": big}), b"x.jpg", 0xF0000000)
    found, error, messages = story_set_from_files([("u.zip", says_huge)], tmp_path / "b", budget=SMALL)
    assert any("x.jpg left out: it unpacks to more than 256 KiB, the limit for one image" in m for m in messages), messages
    fits = _fake_jpeg(100 * KIB)
    says_huge = _declare_size(_zip({"s.jsonl": _story("x.jpg"), "x.jpg": fits}), b"x.jpg", 0xF0000000)
    found, error, messages = story_set_from_files([("u.zip", says_huge)], tmp_path / "c", budget=SMALL)
    assert _files(tmp_path / "c")["x.jpg"] == len(fits)  # its real bytes fit: kept, whatever it declares


def test_the_upload_budget_stops_the_images_once_spent(tmp_path: Path) -> None:
    names = [f"{k}.jpg" for k in range(6)]
    upload = _zip({"s.jsonl": _story(*names), **{name: _fake_jpeg(200 * KIB, k) for k, name in enumerate(names)}})
    found, error, messages = story_set_from_files([("u.zip", upload)], tmp_path / "up", budget=SMALL)
    text = _said(tmp_path, error, messages)
    written = _files(tmp_path / "up")
    assert found is not None and sum(written.values()) <= SMALL.upload and len(written) == 1 + 5
    assert messages[0].startswith("5.jpg left out: it unpacks to more than the 1 MiB one upload may unpack"), text
    names = [f"{k}.jpg" for k in range(8)]
    upload = _zip({"s.jsonl": _story(*names), **{name: _fake_jpeg(200 * KIB, k) for k, name in enumerate(names)}})
    messages = story_set_from_files([("u.zip", upload)], tmp_path / "more", budget=SMALL)[2]
    assert messages[-1].endswith("; the 2 images named after it were not unpacked"), messages


def test_session_and_server_budgets_count_what_is_already_there(tmp_path: Path) -> None:
    session = tmp_path / f"{SESSION_PREFIX}1-a"
    (session / "old").mkdir(parents=True)
    (session / "old" / "x.bin").write_bytes(bytes(900 * KIB))
    story = _story() + b" " * (200 * KIB)
    upload = [("stories.jsonl", story)]
    found, error, messages = story_set_from_files(upload, session / "key", budget=SMALL)
    text = _said(tmp_path, error, messages)
    assert found is None and error is not None and "the 1 MiB one session may hold" in error, text
    assert not (session / "key" / "stories.jsonl").exists()
    other = tmp_path / f"{SESSION_PREFIX}2-b"
    other.mkdir()
    server = UploadBudget(**{**SMALL.__dict__, "session": 4 * MIB, "server": MIB})
    found, error, messages = story_set_from_files(upload, other / "key", budget=server)
    assert found is None and error is not None and "the 1 MiB this server keeps for all uploads" in error
    assert "try again later" in error
    plain = story_set_from_files(upload, tmp_path / "plain", budget=server)  # no session folder: the upload's budget only
    assert plain[0] is not None and plain[1] is None


def test_pasted_stories_images_stay_within_the_session_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vst_core.data import story_set_from_upload

    monkeypatch.setenv("VST_MAX_UPLOAD_BYTES", str(150 * KIB))
    session = tmp_path / f"{SESSION_PREFIX}1-a"
    images = [(p.name, p.read_bytes()) for p in sorted(IMAGES.iterdir())]  # 30-100 KB each
    found, messages = story_set_from_upload(images, "We went out.", session / "key")
    written = _files(session)
    assert found is not None and 0 < len(written) < len(images) and sum(written.values()) <= 150 * KIB
    assert any("the images after it left out: the 150 KiB one upload may unpack is used up" in m for m in messages)


def test_ratio_method_and_member_limits(tmp_path: Path) -> None:
    zeros = b"\xff\xd8\xff\xe0" + bytes(200 * KIB)  # a JPEG's start, then a run that packs 1000:1
    found, error, messages = story_set_from_files(
        [("u.zip", _zip({"s.jsonl": _story("z.jpg"), "z.jpg": zeros}))], tmp_path / "a", budget=SMALL
    )
    assert "z.jpg" not in _files(tmp_path / "a")
    assert messages == ["z.jpg left out: it unpacks to more than 50 times its packed size, the limit for a zip member "
                        "(the mark of a zip bomb); upload it on its own, not zipped"]  # fmt: skip
    stored = _zip({"s.jsonl": _story("z.jpg"), "z.jpg": zeros}, zipfile.ZIP_STORED)
    assert story_set_from_files([("u.zip", stored)], tmp_path / "b", budget=SMALL)[2] == []  # not packed: no ratio
    assert _files(tmp_path / "b")["z.jpg"] == len(zeros)
    bz = _zip({"s.jsonl": _story("z.jpg"), "z.jpg": zeros}, zipfile.ZIP_BZIP2)
    error = story_set_from_files([("u.zip", bz)], tmp_path / "c", budget=SMALL)[1]
    assert error is not None and "packed with a method other than deflate" in error
    many = _zip({"s.jsonl": _story(), **{f"{k}.jpg": b"x" for k in range(25)}})
    found, error, messages = story_set_from_files([("u.zip", many)], tmp_path / "d", budget=SMALL)
    assert messages == ["u.zip left out: it holds 26 files, over the limit of 20 files per zip; split it into several zips"]
    long_names = _zip({"s.jsonl": _story(), "x" * 2000 + ".jpg": b"x"})
    one = UploadBudget(**{**SMALL.__dict__, "members": 2})
    assert (
        "list of files, over the limit of 2 files per zip"
        in story_set_from_files([("u.zip", long_names)], tmp_path / "e", budget=one)[2][0]
    )


def test_a_zip_with_its_real_images_still_works(tmp_path: Path) -> None:
    sample = ROOT / "assets/sample"
    members: dict[str, bytes | tuple[bytes, int]] = {"my-set/stories.jsonl": (sample / "stories.jsonl").read_bytes()}
    members.update({f"my-set/images/{p.name}": p.read_bytes() for p in sorted(IMAGES.iterdir())})
    found, error, messages = story_set_from_files([("my-set.zip", _zip(members))], tmp_path / "up")
    assert error is None and found is not None and messages == []
    assert not [p for s in found.stories for p in s.problems]
    assert len(_files(tmp_path / "up" / "images")) == len(list(IMAGES.iterdir()))
    loose = [("stories.jsonl", (sample / "stories.jsonl").read_bytes()), *((p.name, p.read_bytes()) for p in IMAGES.iterdir())]
    found, error, messages = story_set_from_files(loose, tmp_path / "loose")
    assert error is None and found is not None and messages == [] and not [p for s in found.stories for p in s.problems]


def test_a_scores_file_in_a_zip_has_the_same_limit(tmp_path: Path) -> None:
    bomb = _zip({"scores.jsonl": (b" " * MIB, 2)})
    no_ratio = UploadBudget(**{**SMALL.__dict__, "ratio": 10**9})
    path, error, _ = place_upload(
        [("u.zip", bomb)], tmp_path / "up", lambda p: [], suffixes=(".jsonl",), what="scores file", budget=no_ratio
    )
    assert path is None and error == (
        "scores.jsonl left out: it unpacks to more than 256 KiB, the limit for a scores file (VST_MAX_DATA_FILE_BYTES "
        "raises it); upload a smaller scores file or split it"
    )


member_kinds = st.sampled_from(["zeros", "jpeg-zeros", "jpeg-random", "png-random", "text"])


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    members=st.lists(
        st.tuples(
            st.sampled_from(["a.jpg", "b.png", "c/d.jpg", "e.gif", "f.txt", "g.webp"]), member_kinds, st.integers(0, 300 * KIB)
        ),
        max_size=8,
    ),
    named=st.sets(st.sampled_from(["a.jpg", "b.png", "c/d.jpg", "e.gif", "missing.jpg"])),
    story_pad=st.integers(0, 300 * KIB),
)
def test_random_uploads_never_write_more_than_the_budget(
    tmp_path_factory: pytest.TempPathFactory, members: list[tuple[str, str, int]], named: set[str], story_pad: int
) -> None:
    heads = {
        "zeros": b"",
        "jpeg-zeros": b"\xff\xd8\xff",
        "jpeg-random": b"\xff\xd8\xff",
        "png-random": b"\x89PNG\r\n\x1a\n",
        "text": b"hi ",
    }
    content = {}
    for k, (name, kind, size) in enumerate(members):
        body = random.Random(k).randbytes(size) if kind.endswith("random") else bytes(size)
        content[name] = heads[kind] + body
    story = _story(*sorted(named)) + random.Random(story_pad).randbytes(story_pad).hex().encode()[:story_pad]
    folder = tmp_path_factory.mktemp("up")
    budget = UploadBudget(**{**SMALL.__dict__, "upload": 512 * KIB})
    found, error, messages = story_set_from_files([("u.zip", _zip({"s.jsonl": story, **content}))], folder, budget=budget)
    _said(folder, error, messages)
    written = _files(folder)
    assert sum(written.values()) <= budget.upload
    assert all(size <= SMALL.image for name, size in written.items() if name != "s.jsonl")
    assert set(written) - {"s.jsonl"} <= named  # nothing the story does not name
    for name in set(written) - {"s.jsonl"}:
        assert (folder / name).read_bytes()[:3] in (b"\xff\xd8\xff", b"\x89PN")


@pytest.mark.slow
def test_the_real_budget_against_the_reviewed_bombs(tmp_path: Path) -> None:
    bomb = _zip({"stories.jsonl": (b" " * MIB, 600)})  # 600 MiB from about 0.6 MB
    tracemalloc.start()
    found, error, messages = story_set_from_files([("u.zip", bomb)], tmp_path / "a")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert found is None and error is not None and "200 times its packed size" in error
    assert _files(tmp_path / "a") == {} and peak < 16 * MIB
    names = [f"images/{k}.jpg" for k in range(10)]
    zeros = _zip({"stories.jsonl": _story(*names), **{name: (bytes(MIB), 99) for name in names}})
    found, error, messages = story_set_from_files([("u.zip", zeros)], tmp_path / "b")
    assert found is not None and _files(tmp_path / "b").keys() == {"stories.jsonl"} and len(messages) == 10
