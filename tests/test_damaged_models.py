"""Damaged model folders and caches: every file a loader reads that is missing, truncated, of the
wrong type or shape, a pickle where safetensors is expected, or a FIFO, ends in one ModelLoadError
(exit 4 on the CLI, one notice on the page); a damaged judge cache is set aside or its bad entries
asked again, and no judge run fails because of it."""

from __future__ import annotations

import doctest
import json
import math
import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SAMPLE, WORDS, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vst_core.metrics.judge.cache
import vst_core.models.folders
import vst_core.stores
from vst_core.metrics.judge.cache import JudgeCache, valid_answer
from vst_core.models.hub import ModelLoadError

TORCH = pytest.mark.slow  # builds tiny transformers models


def test_module_examples_hold() -> None:
    for module in (vst_core.models.folders, vst_core.stores, vst_core.metrics.judge.cache):
        failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried and not failed, module.__name__


# ------------------------------------------------------------------ building good folders


def _tiny_bert(folder: Path, tokenizer_dir: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(folder)
    BertTokenizerFast.from_pretrained(tokenizer_dir).save_pretrained(folder)


def make_vrank(folder: Path, tokenizer_dir: Path) -> Path:
    import torch
    from safetensors.torch import save_file

    from vst_core.metrics.vrank.ranker import ENCODER_DIR, HEAD_FILE, META_FILE

    folder.mkdir(parents=True)
    _tiny_bert(folder / ENCODER_DIR, tokenizer_dir)
    head = torch.nn.Linear(32, 1)
    save_file({k: v.contiguous() for k, v in head.state_dict().items()}, str(folder / HEAD_FILE))
    (folder / META_FILE).write_text(json.dumps({"format": 1, "pooling": "cls", "max_length": 48, "base": "tiny"}))
    return folder


def make_cosmic(folder: Path, tokenizer_dir: Path) -> Path:
    import torch
    from safetensors.torch import save_file

    from vst_core.metrics.cosmic.rater import CONFIG_FILE, FORMAT, LABELS, WEIGHTS_FILE, _rater_module

    folder.mkdir(parents=True)
    _tiny_bert(folder, tokenizer_dir)
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["cosmic"] = {"format": FORMAT, "caption_dim": 32, "image_dim": 16, "hidden_size": 8, "clip": "tiny", "max_length": 48}
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    rater, labels = _rater_module(32, 16, 8), torch.nn.Linear(32, len(LABELS))
    state = {
        **{f"rater.{k}": v for k, v in rater.state_dict().items()},
        **{f"labels.{k}": v for k, v in labels.state_dict().items()},
    }
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / WEIGHTS_FILE))
    return folder


@pytest.fixture(scope="module")
def good_vrank(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    return make_vrank(tmp_path_factory.mktemp("vrank") / "good", tokenizer_dir)


@pytest.fixture(scope="module")
def good_cosmic(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    return make_cosmic(tmp_path_factory.mktemp("cosmic") / "good", tokenizer_dir)


def _copy(good: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(good, to)
    return to


def _pickle(path: Path) -> None:
    import torch

    path.unlink()
    torch.save({"weight": torch.zeros(1, 32), "bias": torch.zeros(1)}, path)


def _wrong_shape(path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"weight": torch.zeros(2, 32), "bias": torch.zeros(2)}, str(path))


def _nan(path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"weight": torch.full((1, 32), float("nan")), "bias": torch.zeros(1)}, str(path))


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _only_bin(encoder: Path) -> None:
    import torch
    from safetensors.torch import load_file

    state = load_file(str(encoder / "model.safetensors"))
    (encoder / "model.safetensors").unlink()
    torch.save(state, encoder / "pytorch_model.bin")


def _truncate(n: int) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(path.read_bytes()[:n])


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text)


#: (name, file in the Vrank folder, damage): each must end in ModelLoadError.
VRANK_DAMAGE: list[tuple[str, str, Callable[[Path], None]]] = [
    ("head truncated to 20 bytes", "head.safetensors", _truncate(20)),
    ("head truncated in its tensors", "head.safetensors", _truncate(-8)),
    ("head a pickle", "head.safetensors", _pickle),
    ("head of the wrong shape", "head.safetensors", _wrong_shape),
    ("head with NaN weights", "head.safetensors", _nan),
    ("head missing", "head.safetensors", Path.unlink),
    ("head a FIFO", "head.safetensors", _fifo),
    ("head a folder", "head.safetensors", _folder),
    ("settings a list", "vrank.json", _text("[1,2]")),
    ("settings null", "vrank.json", _text("null")),
    ("settings not JSON", "vrank.json", _text("{max_length: 1")),
    ("settings empty", "vrank.json", _text("")),
    ("max_length a string", "vrank.json", _text('{"max_length": "96"}')),
    ("pooling unknown", "vrank.json", _text('{"pooling": "max"}')),
    ("settings deeply nested", "vrank.json", _text("[" * 100_000 + "]" * 100_000)),
    ("encoder weights truncated", "encoder/model.safetensors", _truncate(1000)),
    ("encoder only a pickle .bin", "encoder", _only_bin),
    ("encoder config a list", "encoder/config.json", _text("[1]")),
    ("encoder config garbage", "encoder/config.json", _text("\x00\xff garbage")),
    ("tokenizer garbage", "encoder/tokenizer.json", _text("{not json")),
    ("encoder folder missing", "encoder", lambda p: __import__("shutil").rmtree(p)),
]


@TORCH
@pytest.mark.parametrize("case", VRANK_DAMAGE, ids=[c[0] for c in VRANK_DAMAGE])
def test_a_damaged_vrank_folder_is_one_model_load_error(
    case: tuple[str, str, Callable[[Path], None]], good_vrank: Path, tmp_path: Path
) -> None:
    from vst_core.metrics.vrank.ranker import load_vrank

    name, file, damage = case
    bad = _copy(good_vrank, tmp_path / "bad")
    damage(bad / file)
    with pytest.raises(ModelLoadError) as caught:
        load_vrank(bad, device="cpu")
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) < 1000


@TORCH
def test_the_good_vrank_folder_loads(good_vrank: Path) -> None:
    from vst_core.metrics.vrank.ranker import load_vrank

    model = load_vrank(good_vrank, device="cpu")
    assert all(math.isfinite(v) for v in model.predict([("a dog ran .", "the sun .")]))


@TORCH
@pytest.mark.parametrize("case", [VRANK_DAMAGE[0], VRANK_DAMAGE[8], VRANK_DAMAGE[16]], ids=lambda c: c[0])
def test_the_cli_exits_4_and_the_page_turns_vrank_off_with_one_notice(
    case: tuple[str, str, Callable[[Path], None]], good_vrank: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dashboard.frame import _probe
    from vst_core.cli import main
    from vst_core.config import Settings

    _name, file, damage = case
    bad = _copy(good_vrank, tmp_path / "bad")
    damage(bad / file)
    out = tmp_path / "scores.jsonl"
    code = main(["score", str(SAMPLE), "--out", str(out), "--metrics", "vrank", "--vrank-model", str(bad), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 4 and "Traceback" not in err and "Vrank" in err, err
    notices: list[str] = []
    settings = _probe(Settings(metrics=("redundancy", "vrank"), vrank_model=str(bad), device="cpu"), notices, {})
    assert settings.metrics == ("redundancy",) and len(notices) == 1 and notices[0].startswith("Vrank is off")


COSMIC_DAMAGE: list[tuple[str, str, Callable[[Path], None]]] = [
    ("weights truncated", "cosmic.safetensors", _truncate(20)),
    ("weights a pickle", "cosmic.safetensors", _pickle),
    ("weights of another model", "cosmic.safetensors", _wrong_shape),
    ("weights a FIFO", "cosmic.safetensors", _fifo),
    ("config a list", "config.json", _text("[1,2]")),
    ("config without the trainer's entry", "config.json", _text('{"model_type": "bert"}')),
    ("BERT only a pickle .bin", ".", _only_bin),
    ("BERT weights truncated", "model.safetensors", _truncate(1000)),
    ("tokenizer garbage", "tokenizer.json", _text("{not json")),
]


@TORCH
@pytest.mark.parametrize("case", COSMIC_DAMAGE, ids=[c[0] for c in COSMIC_DAMAGE])
def test_a_damaged_cosmic_folder_is_one_model_load_error(
    case: tuple[str, str, Callable[[Path], None]], good_cosmic: Path, tmp_path: Path
) -> None:
    from vst_core.metrics.cosmic.rater import load_cosmic

    _name, file, damage = case
    bad = _copy(good_cosmic, tmp_path / "bad")
    damage(bad / file)
    with pytest.raises(ModelLoadError):
        load_cosmic(str(bad), device="cpu")
    load_cosmic(str(good_cosmic), device="cpu")  # the good folder still loads


@TORCH
def test_a_pickle_only_sentence_order_folder_and_judge_folder_are_refused(tmp_path: Path, tokenizer_dir: Path) -> None:
    from vst_core.metrics.judge.local import load_judge
    from vst_core.metrics.rovist_c.scorers import load_pair_scorer

    folder = tmp_path / "sop"
    folder.mkdir()
    _tiny_bert(folder, tokenizer_dir)
    _only_bin(folder)
    with pytest.raises(ModelLoadError, match="not safetensors"):
        load_pair_scorer(str(folder), device="cpu")
    with pytest.raises(ModelLoadError, match="not safetensors"):
        load_judge(str(folder), device="cpu")
    (folder / "config.json").write_text("[1, 2]")
    with pytest.raises(ModelLoadError):
        load_judge(str(folder), device="cpu")


# ------------------------------------------------------------------ random damage to model folders

DAMAGES = ("truncate", "flip", "random", "delete", "json", "fifo")


def _damage(path: Path, how: str, data: st.DataObject) -> None:
    if how == "delete":
        path.unlink()
    elif how == "fifo":
        _fifo(path)
    elif how == "json":
        value = data.draw(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                                       max_leaves=8))  # fmt: skip
        path.write_text(json.dumps(value))
    else:
        raw = bytearray(path.read_bytes())
        if how == "truncate":
            del raw[data.draw(st.integers(0, max(0, len(raw) - 1))) :]
        elif how == "flip" and raw:
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        else:
            raw = bytearray(data.draw(st.binary(max_size=200)))
        path.write_bytes(bytes(raw))


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@TORCH
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), how=st.sampled_from(DAMAGES), which=st.sampled_from(("vrank", "cosmic")))
def test_random_damage_to_a_model_folder_is_a_load_error_or_finite_numbers(
    good_vrank: Path, good_cosmic: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, how: str, which: str
) -> None:
    from vst_core.metrics.cosmic.rater import load_cosmic
    from vst_core.metrics.vrank.ranker import load_vrank

    good = good_vrank if which == "vrank" else good_cosmic
    bad = _copy(good, tmp_path_factory.mktemp("damaged") / which)
    file = data.draw(st.sampled_from(_files(good)))
    _damage(bad / file, how, data)
    try:
        if which == "vrank":
            values = load_vrank(bad, device="cpu").predict([("a dog ran .", "the sun ."), ("it was fun .", "a cat .")])
        else:
            model = load_cosmic(str(bad), device="cpu")
            values = model.cls(["a dog ran ."]).ravel()
    except ModelLoadError:
        return
    assert all(math.isfinite(float(v)) for v in values)  # what loads gives numbers, never NaN shown as a score


# ------------------------------------------------------------------ the judge's cache


def test_valid_answers_are_log_probabilities_of_one_distribution() -> None:
    assert valid_answer("rating", [math.log(0.5), math.log(0.3), math.log(0.1), math.log(0.05), -1e30])
    assert valid_answer("pair", [-0.1, -2.5])
    for bad in (None, [1, 2], [0, 0, 0, 0, 0], [1e308] * 5, [-1e308, 0, 0, 0, float("nan")], ["-1"] * 5, [True] * 5, {"a": 1}):
        assert not valid_answer("rating", bad), bad
    assert valid_answer("rationale", {"text": "fine"}) and not valid_answer("rationale", {"text": 3})


def _fill(path: Path, value: str, keys: list[str]) -> None:
    """Store ``value`` under ``keys`` with a valid checksum (as a buggy writer would)."""
    from vst_core.metrics.judge.cache import _checksum

    with sqlite3.connect(path) as db:
        db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", [(k, value, _checksum(k, value)) for k in keys])


@pytest.mark.parametrize(
    "value",
    ["null", "[1e308, 1e308, 1e308, 1e308, 1e308]", "[1, 2]", "[0, 0, 0, 0, 0]", "NaN", '"text"', "[" * 5000 + "]" * 5000],
)
def test_a_bad_cached_answer_is_dropped_and_asked_again(tmp_path: Path, value: str) -> None:
    path = tmp_path / "judge.sqlite"
    good = [-0.5, -1.5, -2.5, -3.5, -4.5]
    JudgeCache(path).put_many({"a": good, "b": good})
    _fill(path, value, ["b"])
    cache = JudgeCache(path)
    assert cache.get_many(["a", "b"], "rating") == {"a": good}
    assert cache.dropped == 1 and cache.misses == 1 and cache.hits == 1


@pytest.mark.parametrize("damage", ["truncate", "random", "fifo", "folder", "empty-header"])
def test_an_unreadable_judge_cache_is_set_aside_and_a_new_one_started(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "judge.sqlite"
    JudgeCache(path).put_many({f"k{i}": [-1.0, -2.0, -3.0, -4.0, -5.0] for i in range(2000)})
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:3000])
    elif damage == "random":
        path.write_bytes(random.Random(0).randbytes(50_000))
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif damage == "folder":
        path.unlink()
        path.mkdir()
    else:
        path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    cache = JudgeCache(path)
    found = cache.get_many([f"k{i}" for i in range(2000)], "rating")
    cache.put_many({"new": [-1.0, -2.0, -3.0, -4.0, -5.0]})
    assert cache.get_many(["new"], "rating") == {"new": [-1.0, -2.0, -3.0, -4.0, -5.0]}
    assert all(v == [-1.0, -2.0, -3.0, -4.0, -5.0] for v in found.values())
    assert cache.set_aside and (tmp_path / "judge.sqlite.damaged").exists()


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), how=st.sampled_from(("truncate", "flip", "random", "value")))
def test_random_damage_to_the_judge_cache_never_raises_nor_returns_a_bad_answer(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, how: str
) -> None:
    path = tmp_path_factory.mktemp("judge") / "judge.sqlite"
    answers = {f"k{i}": [-1.2 - i % 3, -2.0, -3.0, -4.0, -5.0] for i in range(300)}
    JudgeCache(path).put_many(answers)
    if how == "value":  # a value written with its checksum: kept when it is a valid answer, else dropped
        value = data.draw(st.one_of(st.text(max_size=30), st.lists(st.floats(), max_size=6).map(lambda v: json.dumps(v))))
        changed = f"k{data.draw(st.integers(0, 299))}"
        _fill(path, value, [changed])
        try:
            answers[changed] = json.loads(value)
        except ValueError:
            answers[changed] = None
    else:
        raw = bytearray(path.read_bytes())
        if how == "truncate":
            del raw[data.draw(st.integers(0, len(raw) - 1)) :]
        elif how == "flip":
            for _ in range(data.draw(st.integers(1, 8))):
                raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        else:
            raw = bytearray(data.draw(st.binary(max_size=5000)))
        path.write_bytes(bytes(raw))
    cache = JudgeCache(path)
    found = cache.get_many(list(answers), "rating")
    for key, value in found.items():
        assert value == answers[key] and valid_answer("rating", value), (key, value)  # never another number than stored
    good = [-1.2, -2.0, -3.0, -4.0, -5.0]
    cache.put_many({"after": good})
    assert cache.get_many(["after"], "rating") == {"after": good}


def test_loading_every_model_up_front_includes_cosmics_folder_whatever_the_metric_order() -> None:
    """``Models.load`` (what ``vst score`` runs before any story) reaches COSMic's own folder, not only
    the CLIP model it shares with GROOVIST, and loads in one fixed order."""
    from vst_core.config import Settings
    from vst_core.scoring.registry import Models

    class Encoder:  # stands in for the CLIP model COSMic shares with GROOVIST
        pass

    for metrics in (("cosmic",), ("judge", "cosmic", "coherence")):
        models = Models(Settings(metrics=metrics, cosmic_model=None), clip=Encoder())  # type: ignore[arg-type]
        assert [m for m in models._loaders()] == [m for m in ("coherence", "cosmic", "judge") if m in metrics]
    with pytest.raises(ModelLoadError, match="COSMic"):
        Models(Settings(metrics=("cosmic",), cosmic_model=None), clip=Encoder()).load()  # type: ignore[arg-type]
    assert "cosmic" in Models(Settings(metrics=("cosmic",), cosmic_model=None), clip=Encoder()).unloadable()  # type: ignore[arg-type]


def test_the_embedding_cache_leaves_out_vectors_that_are_not_dim_finite_floats(tmp_path: Path) -> None:
    """A stored vector with a NaN, too few bytes or a nonsense width is a miss (computed again); the
    good ones of every width come back equal to what was stored."""
    import numpy as np

    from vst_core.images.embeddings import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    good4, good8 = np.arange(4, dtype=np.float32), np.full(8, 2.0, np.float32)
    cache.put_many(
        {"a": good4, "nan": np.array([1, np.nan, 0, 0], np.float32), "c": good8, "inf": np.full(8, np.inf, np.float32)}
    )
    db = sqlite3.connect(tmp_path / "embeddings.sqlite")
    db.executemany("INSERT INTO emb VALUES (?, ?, ?)", [("short", 4, b"\0" * 12), ("zero", 0, b""), ("text", 4, "0" * 16)])
    db.commit()
    db.close()
    found = cache.get_many(["a", "nan", "c", "inf", "short", "zero", "text", "absent"])
    assert sorted(found) == ["a", "c"]
    assert np.array_equal(found["a"], good4) and np.array_equal(found["c"], good8)


def test_a_cache_whose_header_says_read_only_is_set_aside_not_kept_refusing_writes(tmp_path: Path) -> None:
    """A flipped bit in SQLite's write-version byte makes a writable file refuse writes as read-only:
    that is damage (set aside and started anew), not a full disk or a read-only folder."""
    path = tmp_path / "judge.sqlite"
    JudgeCache(path).put_many({"k": [-1.2, -2.0, -3.0, -4.0, -5.0]})
    raw = bytearray(path.read_bytes())
    raw[18] ^= 1 << 1  # the file format write version: 1 -> 3, unknown to SQLite, so read-only
    path.write_bytes(bytes(raw))
    cache = JudgeCache(path)
    good = [-1.2, -2.0, -3.0, -4.0, -5.0]
    cache.put_many({"after": good})
    assert cache.get_many(["after"], "rating") == {"after": good}
    assert path.with_name(path.name + ".damaged").exists()
