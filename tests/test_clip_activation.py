"""A CLIP checkpoint gets the activation its weights were trained with, or is refused with the fix.

OpenAI's files (TorchScript, or a state dict with OpenAI's metadata) are QuickGELU whatever
``--clip-model`` says; an open_clip state dict says it through its hub snapshot's
``open_clip_config.json``, an ``-quickgelu`` architecture or ``--clip-activation``; a file that
does not say, for an architecture that exists with either activation, is refused (never GELU
silently, which moved GROOVIST scores by up to 0.15 on the parity stories)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE, TINY_CLIP_CONFIG

from vst_core.cli import main
from vst_core.models.clip import load_clip, resolve_clip_weights
from vst_core.models.clip_weights import ActivationUnknownError
from vst_core.models.hub import ModelLoadError

pytestmark = pytest.mark.slow  # builds open_clip models


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An architecture known in both versions (``vst-twin-clip`` and ``vst-twin-clip-quickgelu``, as
    open_clip knows ViT-B-32 and ViT-B-32-quickgelu) and a state dict of it that says nothing."""
    import open_clip
    import torch

    folder = tmp_path_factory.mktemp("twin")
    config = folder / "vst-twin-clip.json"
    config.write_text(json.dumps(TINY_CLIP_CONFIG))
    (folder / "vst-twin-clip-quickgelu.json").write_text(json.dumps({**TINY_CLIP_CONFIG, "quick_gelu": True}))
    open_clip.add_model_config(str(folder))
    torch.manual_seed(1)
    checkpoint = folder / "weights" / "twin.pt"
    checkpoint.parent.mkdir()
    torch.save(open_clip.create_model("vst-twin-clip").state_dict(), checkpoint)
    return config, checkpoint


def activation_of(encoder: object) -> str:
    from open_clip.transformer import QuickGELU

    gelu = encoder.model.visual.transformer.resblocks[0].mlp.gelu  # type: ignore[attr-defined]
    return "quickgelu" if isinstance(gelu, QuickGELU) else type(gelu).__name__.lower()


def test_a_file_that_does_not_say_is_refused_with_the_fix(twin: tuple[Path, Path]) -> None:
    _, checkpoint = twin
    with pytest.raises(ActivationUnknownError, match=r"--clip-activation quickgelu.*--clip-activation gelu"):
        resolve_clip_weights("vst-twin-clip", None, checkpoint)
    with pytest.raises(ActivationUnknownError):
        load_clip("vst-twin-clip", None, checkpoint=checkpoint, device="cpu")


def test_the_named_activation_is_built_and_signed(twin: tuple[Path, Path]) -> None:
    _, checkpoint = twin
    quick = load_clip("vst-twin-clip", None, checkpoint=checkpoint, device="cpu", activation="quickgelu")
    gelu = load_clip("vst-twin-clip", None, checkpoint=checkpoint, device="cpu", activation="gelu")
    by_name = load_clip("vst-twin-clip-quickgelu", None, checkpoint=checkpoint, device="cpu")
    assert (activation_of(quick), activation_of(gelu), activation_of(by_name)) == ("quickgelu", "gelu", "quickgelu")
    assert "/quickgelu/" in quick.signature and "/gelu/" in gelu.signature
    assert quick.signature.replace("vst-twin-clip/", "vst-twin-clip-quickgelu/") == by_name.signature
    texts = ["a dog on the beach"]
    assert abs(quick.encode_text(texts) - gelu.encode_text(texts)).max() > 1e-4  # the activation matters
    with pytest.raises(ModelLoadError, match="QuickGELU version"):
        resolve_clip_weights("vst-twin-clip-quickgelu", None, checkpoint, "gelu")


def test_a_hub_snapshot_says_it_in_its_open_clip_config(twin: tuple[Path, Path], tmp_path: Path) -> None:
    _, checkpoint = twin
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "open_clip_model.bin").write_bytes(checkpoint.read_bytes())
    (snapshot / "open_clip_config.json").write_text(
        json.dumps(
            {"model_cfg": {**TINY_CLIP_CONFIG, "quick_gelu": True}, "preprocess_cfg": {"mean": [0.5] * 3, "std": [0.25] * 3}}
        )
    )
    weights = resolve_clip_weights("vst-twin-clip", None, snapshot / "open_clip_model.bin")
    assert weights.quick_gelu and weights.preprocess == {"mean": [0.5] * 3, "std": [0.25] * 3}
    assert (
        activation_of(load_clip("vst-twin-clip", None, checkpoint=snapshot / "open_clip_model.bin", device="cpu")) == "quickgelu"
    )


def test_an_openai_state_dict_is_quickgelu_whatever_the_model_name(twin: tuple[Path, Path], tmp_path: Path) -> None:
    import torch

    _, checkpoint = twin
    state = torch.load(checkpoint, weights_only=True)
    state.update(input_resolution=torch.tensor(32), context_length=torch.tensor(16), vocab_size=torch.tensor(49408))
    path = tmp_path / "openai-state.pt"
    torch.save(state, path)
    for arch in ("vst-twin-clip", "ViT-B-32", "ViT-L-14"):
        weights = resolve_clip_weights(arch, None, path)
        assert weights.kind == "openai" and weights.quick_gelu and weights.preprocess["interpolation"] == "bicubic"
    with pytest.raises(ModelLoadError, match="drop --clip-activation gelu"):
        resolve_clip_weights("ViT-B-32", None, path, "gelu")


def test_the_cli_refuses_with_exit_4_and_scores_once_told(
    twin: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, checkpoint = twin
    base = ["score", str(SAMPLE), "--metrics", "clipscore", "--device", "cpu", "--no-progress"]
    clip = ["--clip-model", "vst-twin-clip", "--clip-checkpoint", str(checkpoint), "--clip-config", str(config)]
    assert main([*base, "--out", str(tmp_path / "a.jsonl"), *clip]) == 4
    assert "--clip-activation quickgelu" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "b.jsonl"), *clip, "--clip-activation", "quickgelu"]) == 0
    record = json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])
    assert "/quickgelu/" in record["signature"]["settings"]["clip_weights"]
    assert record["signature"]["settings"]["clip_activation"] == "quickgelu"


@pytest.mark.parametrize("layout", ["plain", "under state_dict", "module. prefix", "legacy format"])
def test_a_checkpoint_loads_the_same_tensors_by_memory_map_or_through_open_clip(
    twin: tuple[Path, Path], tmp_path: Path, layout: str
) -> None:
    """A file whose tensors are exactly the model's state dict is loaded as read (``load_exact``,
    a zip file by memory map); any other layout goes through open_clip's conversions, handed the
    tensors the guarded loader read; every one gives open_clip's own model."""
    import open_clip
    import torch

    from vst_core.models.checkpoints import read_checkpoint
    from vst_core.models.clip_build import load_exact

    _, checkpoint = twin
    state = torch.load(checkpoint, weights_only=True)
    path = tmp_path / "weights.pt"
    if layout == "plain":
        torch.save(state, path)
    elif layout == "under state_dict":
        torch.save({"state_dict": state, "epoch": 3}, path)
    elif layout == "module. prefix":
        torch.save({f"module.{k}": v for k, v in state.items()}, path)
    else:
        torch.save(state, path, _use_new_zipfile_serialization=False)
    reference = open_clip.create_model("vst-twin-clip", pretrained=str(path))
    fresh = open_clip.create_model("vst-twin-clip")
    assert load_exact(fresh, read_checkpoint(path, "CLIP weights", mmap=True)) is (layout != "module. prefix")
    built = load_clip("vst-twin-clip", None, checkpoint=path, activation="gelu", device="cpu").model
    for name, tensor in reference.state_dict().items():
        assert torch.equal(built.state_dict()[name], tensor), name


def test_the_pretrained_table_read_without_open_clip_is_open_clips() -> None:
    """Every (architecture, tag) open_clip knows has the configuration open_clip gives it, read
    from its table module alone (no torch, no open_clip package: a cached rerun names its weights
    without them)."""
    import open_clip
    from open_clip.pretrained import get_pretrained_cfg

    from vst_core.models.clip_weights import _open_clip_table, pretrained_cfg

    table = _open_clip_table()
    assert table is not None and table.__name__.startswith("_vst_open_clip_table")
    tags = open_clip.list_pretrained()
    assert len(tags) > 100
    for arch, tag in tags:
        assert table.get_pretrained_cfg(arch, tag) == get_pretrained_cfg(arch, tag), (arch, tag)
        assert pretrained_cfg(arch, tag) == get_pretrained_cfg(arch, tag)
    assert pretrained_cfg("ViT-B-32", "no-such-tag") == {}


def test_naming_a_pretrained_tag_imports_neither_torch_nor_open_clip() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from vst_core.config import Settings; from vst_core.signature import signature; "
        "signature(Settings()); print(sorted(m for m in ('torch', 'open_clip', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
