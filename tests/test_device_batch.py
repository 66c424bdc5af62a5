"""The model batch size follows the device unless given: 256 on CUDA (the benchmark's fastest CLIP
batch), 32 on a CPU; the stories a chunk holds follow it, and the setting stays out of the
signature (a speed knob)."""

from __future__ import annotations

import pytest

from vst_core.config import DEVICE_BATCH, Settings, SettingsError


def test_the_default_batch_is_the_devices() -> None:
    assert Settings().batch_size == 0
    assert Settings().batch_for("cuda") == DEVICE_BATCH["cuda"] == 256
    assert Settings().batch_for("cpu") == Settings().batch_for(None) == 32
    assert Settings(batch_size=64).batch_for("cuda") == 64
    with pytest.raises(SettingsError):
        Settings(batch_size=-1)


def test_a_chunk_holds_32_batches_of_the_devices_size(monkeypatch: pytest.MonkeyPatch) -> None:
    import vst_core.scoring.runs as runs

    monkeypatch.setattr(runs, "likely_device", lambda device: "cuda")
    assert runs.chunk_size_for(Settings()) == 164  # 32 batches of 256 crops at 50 crops a story
    monkeypatch.setattr(runs, "likely_device", lambda device: "cpu")
    assert runs.chunk_size_for(Settings()) == 21
    assert runs.chunk_size_for(Settings(batch_size=256)) == 164


def test_the_batch_size_is_not_signed() -> None:
    grounding = ("grounding", "clipscore")
    assert Settings(metrics=grounding).as_dict() == Settings(metrics=grounding, batch_size=256).as_dict()


def test_the_score_command_leaves_the_batch_to_the_device() -> None:
    from vst_core.cli import build_parser

    args = build_parser().parse_args(["score", "stories.jsonl", "--out", "x.jsonl"])
    assert args.batch_size == 0


def test_the_device_is_guessed_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from vst_core.models.device import likely_device

    monkeypatch.setitem(sys.modules, "torch", None)  # type: ignore[arg-type]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert likely_device("auto") == "cpu"
    assert likely_device("cuda") == "cuda"
