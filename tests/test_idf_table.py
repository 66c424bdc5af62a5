"""RoViST-VG's idf table as the authors release it (``idf_dict.pkl``), or as JSON or CSV: read without
running pickle code, refused with a reason when it is anything but noun -> finite number; and the
crops preprocessed as their ``ViTFeatureExtractor`` did."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from vst_core.metrics.rovist_vg.idf_table import idf_source, read_idf_table
from vst_core.models.hub import ModelLoadError


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.mark.parametrize("protocol", [0, 1, 2, 4, 5])
def test_the_released_pickle_reads_in_every_protocol(tmp_path: Path, protocol: int) -> None:
    table = {"dog": 2.5, "park": np.float64(1.25), "beach": 3}
    read = read_idf_table(write(tmp_path / "idf_dict.pkl", pickle.dumps(table, protocol=protocol)))
    assert dict(read.weights) == {"dog": 2.5, "park": 1.25, "beach": 3.0}
    assert read.signature.startswith("idf_dict.pkl@") and len(read.digest) == 12


def test_json_and_csv_tables_read_as_the_pickle(tmp_path: Path) -> None:
    want = {"dog": 2.5, "park": 1.25}
    assert dict(read_idf_table(write(tmp_path / "a.json", json.dumps(want))).weights) == want
    assert dict(read_idf_table(write(tmp_path / "b.csv", "noun,idf\ndog,2.5\npark,1.25\n")).weights) == want
    assert dict(read_idf_table(write(tmp_path / "c.tsv", "dog\t2.5\npark\t1.25\n")).weights) == want


def test_lookup_falls_back_to_lower_case_then_the_largest_idf(tmp_path: Path) -> None:
    table = read_idf_table(write(tmp_path / "t.json", json.dumps({"dog": 2.0, "tripod": 7.5})))
    assert table.weight("dog") == (2.0, True)
    assert table.weight("Dog") == (2.0, True)
    assert table.weight("galaxy") == (7.5, False)


class Runs:
    """A pickle payload that would create a file when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize(
    "payload, reason",
    [
        ("code", "was not loaded"),
        (["dog", 1.0], "was not loaded"),
        ({"dog": float("nan")}, "not noun -> finite number"),
        ({"dog": float("inf")}, "not noun -> finite number"),
        ({"dog": "2.5"}, "not noun -> finite number"),
        ({"dog": True}, "not noun -> finite number"),
        ({3: 1.0}, "not noun -> finite number"),
        ({}, "empty idf table"),
        ({"dog": np.array([1.0, 2.0])}, "was not loaded"),
    ],
)
def test_a_pickle_other_than_noun_to_number_is_refused(tmp_path: Path, payload: Any, reason: str) -> None:
    marker = tmp_path / "ran"
    data = {"dog": Runs(marker)} if payload == "code" else payload
    path = write(tmp_path / "idf_dict.pkl", pickle.dumps(data))
    with pytest.raises(ModelLoadError, match=reason):
        read_idf_table(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"dog": NaN}', "not valid JSON"),
        ('{"dog": {"a": 1}}', "not noun -> finite number"),
        ("noun,idf\ndog,2.5,7\n", "expected two columns"),
        ("dog,2.5\ncat,many\n", "'many' is not a finite number"),
        ("dog,2.5\ndog,3\n", "given twice"),
        ('{"dog": 2.5, "dog": 3}', "given twice"),
        ("dog,2.5\n,1.0\n", "not noun -> finite number"),
        ("dog,2.5\ncat\x00,1.0\n", "not noun -> finite number"),
        ("dog," + "9" * 200_000 + "\n", "cannot be read as CSV"),
        ("[" * 100_000, "not valid JSON|expected two columns"),
    ],
)
def test_a_damaged_text_table_is_refused_with_its_reason(tmp_path: Path, text: str, reason: str) -> None:
    with pytest.raises(ModelLoadError, match=reason):
        read_idf_table(write(tmp_path / "t.json", text))


def _text(s: str) -> bytes:
    raw = s.encode()
    return b"X" + len(raw).to_bytes(4, "little") + raw


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _one_entry(value: bytes) -> bytes:
    """A protocol-2 pickle of {"dog": <value>}, the value given as opcodes."""
    return b"\x80\x02}" + _text("dog") + value + b"s."


def _numpy_scalar(kind: str, payload: bytes, state: bytes = b"") -> bytes:
    dtype = _global("numpy", "dtype") + _text(kind) + b"\x89\x88\x87R" + state
    return _global("numpy._core.multiarray", "scalar") + dtype + b"C" + bytes([len(payload)]) + payload + b"\x86R"


@pytest.mark.parametrize(
    "data, reason",
    [
        # a void dtype given an object field by its state: numpy would read the bytes as a pointer
        (_one_entry(_numpy_scalar("V8", b"A" * 8, b"(K\x03" + _text("|") + b"N" + _text("a") + b"\x85}K\x08K\x01K=tb")), "V8"),
        (
            _one_entry(
                _global("numpy._core.multiarray", "scalar")
                + _global("numpy", "dtype")
                + _text("V100000000")
                + b"\x89\x88\x87R\x85R"
            ),
            "V100000000",
        ),
        (_one_entry(_numpy_scalar("m8", b"\x01" * 8)), "m8"),
        (_one_entry(_numpy_scalar("f8", b"\x01" * 4)), "do not fit"),
        (_one_entry(_global("_codecs", "encode") + _text("x") + _text("rot13") + b"\x86R"), "call of encode"),
        (_one_entry(_global("builtins", "eval") + _text("1") + b"\x85R"), "builtins.eval"),
        # a key that is a deeply nested tuple, or one whose hash doubles per level: refused before it is hashed
        (b"\x80\x02}" + b"N" + b"\x85" * 50_000 + b"K\x01s.", "nested containers"),
        (b"\x80\x02}" + b"N" + b"q\x00h\x00\x86" * 60 + b"K\x01s.", "nested containers"),
        (b"\x80\x02]" + _text("dog") + b"a.", "EMPTY_LIST"),
        (b"\x80\x02}" + _text("dog") + b"K\x01" + _text("cat") + b"s.", "outside a dict"),
    ],
    ids=[
        "void-object-field",
        "void-100MB",
        "timedelta",
        "short-bytes",
        "rot13",
        "eval",
        "deep-key",
        "doubling-key",
        "list",
        "odd-entries",
    ],
)
def test_a_crafted_pickle_is_refused_without_numpy_or_pickle_running_it(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(ModelLoadError, match=reason):
        read_idf_table(write(tmp_path / "idf_dict.pkl", data))


def test_a_numpy_scalar_of_a_plain_kind_reads_in_either_byte_order(tmp_path: Path) -> None:
    big = _numpy_scalar(
        "f8", np.array([2.5], dtype=">f8").tobytes(), b"(K\x03" + _text(">") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
    )
    assert dict(read_idf_table(write(tmp_path / "a.pkl", _one_entry(big))).weights) == {"dog": 2.5}
    small = _numpy_scalar("i4", (7).to_bytes(4, "little"))
    assert dict(read_idf_table(write(tmp_path / "b.pkl", _one_entry(small))).weights) == {"dog": 7.0}


def test_text_tables_with_carriage_returns_a_bom_or_a_blank_first_line_read(tmp_path: Path) -> None:
    for text in ("dog,2.5\rpark,1.25\r", "\ufeffnoun,idf\ndog,2.5\npark,1.25\n", "\nnoun,idf\ndog,2.5\npark,1.25\n"):
        assert dict(read_idf_table(write(tmp_path / "t.csv", text)).weights) == {"dog": 2.5, "park": 1.25}


def test_a_folder_fifo_or_empty_file_is_never_opened(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "empty").touch()
    for name in ("fifo", "empty", "missing"):
        with pytest.raises(ModelLoadError):
            read_idf_table(tmp_path / name)
    with pytest.raises(ModelLoadError):
        read_idf_table(tmp_path)


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=400), st.integers(0, 60))
def test_any_damage_to_a_table_is_a_load_error_or_a_finite_table(data: bytes, cut: int) -> None:
    """Random bytes, and a real pickle cut short or with a byte changed: only ModelLoadError, and
    what loads is a non-empty dict of str -> finite float."""
    import tempfile

    real = pickle.dumps({"dog": 2.5, "park": np.float64(1.0)})
    mutated = bytearray(real[: max(1, len(real) - cut)])
    if data:
        mutated[data[0] % len(mutated)] = data[-1]
    with tempfile.TemporaryDirectory() as folder:
        for blob in (data, bytes(mutated)):
            path = write(Path(folder) / "idf_dict.pkl", blob)
            try:
                table = read_idf_table(path)
            except ModelLoadError:
                continue
            assert table.weights and all(isinstance(k, str) and np.isfinite(v) for k, v in table.weights.items())


def test_the_card_names_which_idf() -> None:
    assert idf_source("rovist-vg:a@1|vit:v@2|glove:g@3|idf:idf_dict.pkl@0123") == "idf from idf_dict.pkl@0123"
    assert idf_source("rovist-vg:a@1|vit:v@2|glove:g@3|idf:fitted") == "idf fitted over the scored set"
    assert idf_source("rovist-vg:a@1|vit:v@2|glove:g@3") == "idf fitted over the scored set"  # records before the table


# --------------------------------------------------------------------------- the crops' pixels


def authors_feature_extractor(image: Image.Image) -> np.ndarray:
    """transformers 4.x ``ViTFeatureExtractor`` with google/vit-base-patch16-224-in21k's configuration
    (size 224, resample 2 = bilinear, mean = std = 0.5), transcribed: Pillow resize, uint8 -> float32
    / 255, channels first, normalise."""
    array = np.array(image.convert("RGB").resize((224, 224), resample=Image.BILINEAR)).astype(np.float32) / 255.0
    mean = np.array([0.5, 0.5, 0.5], dtype=np.float32)[:, None, None]
    return (array.transpose(2, 0, 1) - mean) / mean


def crops() -> list[Image.Image]:
    from conftest import ROOT

    rng = np.random.default_rng(3)
    out = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in ((31, 47), (224, 224), (600, 410))]
    photo = Image.open(next((ROOT / "assets/sample/images").glob("*.jpg")))
    out += [photo.crop((10, 20, 200, 170)), photo.convert("L"), photo.convert("RGBA")]
    return out


@pytest.mark.slow  # torch / spaCy
def test_crops_are_preprocessed_as_the_authors_feature_extractor() -> None:
    from transformers import ViTImageProcessor

    from vst_core.metrics.rovist_vg.region2phrase import CropPreprocess, feature_extractor_pixels

    processor = ViTImageProcessor(size={"height": 224, "width": 224}, resample=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    steps = CropPreprocess.of(processor)
    got = feature_extractor_pixels(crops(), steps)
    want = np.stack([authors_feature_extractor(c) for c in crops()])
    assert got.shape == want.shape == (len(crops()), 3, 224, 224)
    assert np.abs(got - want).max() <= 1e-6
    # transformers 5's processor (torchvision's resize) gives other pixels: the reason for the transcription
    theirs = processor(images=[c.convert("RGB") for c in crops()], return_tensors="np")["pixel_values"]
    assert np.abs(theirs - want).max() > 1e-3


def test_fetch_models_reports_nltks_tagger_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    from vst_core.metrics.rovist_vg import fetch_plan

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    asked = {"rovist_vg": True, "rovist_vg_vit": "no-such/vit", "rovist_vg_model": None, "glove": None}
    plan = fetch_plan(asked)
    assert [c[0] for c in plan.checks] == ["ViT no-such/vit"]
    assert "python -m nltk.downloader averaged_perceptron_tagger_eng" in plan.notes[0] and "download yourself" in plan.notes[1]
    (tmp_path / "taggers" / "averaged_perceptron_tagger_eng").mkdir(parents=True)
    plan = fetch_plan(asked)
    name, cached, run = plan.checks[1]
    assert name == "NLTK tagger averaged_perceptron_tagger_eng" and cached and "as the authors tag them" in run()
    assert plan.folders["NLTK_DATA"] == tmp_path
    assert fetch_plan({k: None for k in asked}).checks == ()  # nothing asked for, nothing checked
