"""Model files are read as data, never run: every weights file of vst_core goes through one guarded
loader (``vst_core/models/checkpoints.py``); a TorchScript archive is read for its tensors only (or
refused with how to convert it), a checkpoint with a NaN or infinite weight is refused naming the
file while the other metrics are scored (exit 6), a folder, FIFO or device is said to be what it is
and never opened, torch's advice to load with ``weights_only=False`` is never shown, and
``--clip-model`` is a name, never a path."""

from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import ROOT, SAMPLE, clip_args
from test_typed_paths import in_time

from vst_core.models.hub import ModelLoadError

if TYPE_CHECKING:
    from vst_core.models.checkpoints import CheckpointFormat

#: The formats of a loader that takes TorchScript archives alone.
SCRIPT: tuple[CheckpointFormat, ...] = ("torchscript",)

TORCH = pytest.mark.slow  # builds torch files and tiny CLIP models


def _in_time(call: Callable[[], Any], seconds: float = 10.0) -> Any:
    """``call()``'s result or exception, failing (not hanging: the file was opened) when it takes
    longer than ``seconds`` (:func:`test_typed_paths.in_time`)."""

    def caught() -> Any:
        try:
            return call()
        except BaseException as exc:
            return exc

    return in_time(caught, seconds)


# ------------------------------------------------------------------ one guarded loader

#: Calls that read a model file (by the last parts of their dotted name) and the imports that bring
#: them in under another name: only the guarded loader makes them.
_READERS = ("torch.load", "jit.load", "serialization.load", "pickle.load", "pickle.loads", "pickle.Unpickler",
            "np.load", "numpy.load", "load_file", "safe_open", "load_checkpoint")  # fmt: skip
_READER_IMPORTS = {("torch", "load"), ("torch.jit", "load"), ("pickle", "load"), ("pickle", "loads"),
                   ("pickle", "Unpickler"), ("safetensors.torch", "load_file"), ("safetensors", "safe_open")}  # fmt: skip
GUARDED = "models/checkpoints.py"
#: open_clip's conversions of other layouts, handed the tensors the guarded loader read (its file
#: reader swapped for the call): the one place another module calls a checkpoint reader.
CONVERSIONS = ("models/clip_build.py", "load_converted", "load_checkpoint")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _readers_outside_the_loader() -> list[str]:
    found = []
    for path in sorted((ROOT / "vst_core").rglob("*.py")):
        where = path.relative_to(ROOT / "vst_core").as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = {id(n): f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = _dotted(node.func)
                unsafe = any(
                    k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords
                )
                reader = next((r for r in _READERS if name == r or name.endswith("." + r)), None)
                allowed = where == GUARDED or (where, functions.get(id(node)), reader) == CONVERSIONS
                if unsafe or (reader and not allowed):
                    found.append(f"{where}:{node.lineno} {name}(...)")
            elif isinstance(node, ast.ImportFrom) and where != GUARDED:
                found += [
                    f"{where}:{node.lineno} from {node.module} import {a.name}"
                    for a in node.names
                    if (node.module, a.name) in _READER_IMPORTS
                ]
    return found


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_no_model_file_is_read_outside_the_guarded_loader() -> None:
    """No ``torch.load``, ``torch.jit.load``, pickle, safetensors or open_clip file read anywhere in
    vst_core but the guarded loader (a grep over the sources, by their syntax tree), and no
    ``weights_only=False`` even there."""
    assert _readers_outside_the_loader() == []
    calls = [
        _dotted(n.func)
        for n in ast.walk(ast.parse((ROOT / "vst_core" / GUARDED).read_text(encoding="utf-8")))
        if isinstance(n, ast.Call)
    ]
    assert "torch.load" in calls and "load_file" in calls and not any(c.endswith("jit.load") for c in calls)


def test_the_source_check_sees_a_reader_written_anywhere_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: a reader in any other module is found."""
    fake = tmp_path / "vst_core"
    (fake / "models").mkdir(parents=True)
    (fake / "models" / "checkpoints.py").write_text("import torch\nx = torch.load('a', weights_only=True)\n")
    (fake / "models" / "clip_build.py").write_text(
        "import torch\nfrom safetensors.torch import load_file\n"
        "def build(p):\n    return torch.jit.load(p), torch.load(p, weights_only=False), load_file(p)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = _readers_outside_the_loader()
    assert len(found) == 4 and all(f.startswith("models/clip_build.py:") for f in found), found


# ------------------------------------------------------------------ TorchScript: read as data, never run

_EVIL = '''
import sys
from typing import Tuple

import torch


class Evil(torch.nn.Module):
    """Loading it with torch.jit.load runs __setstate__, which creates the file it names."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(2, 2))
        self.marker = marker

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight

    @torch.jit.export
    def __getstate__(self) -> Tuple[torch.Tensor, str, bool]:
        return (self.weight, self.marker, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, str, bool]) -> None:
        self.weight = state[0]
        self.marker = state[1]
        self.training = state[2]
        self.weight = self.weight + torch.from_file(self.marker, True, 4).view(2, 2) * 0.0


torch.jit.save(torch.jit.script(Evil(sys.argv[1])), sys.argv[2])
'''


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a TorchScript archive whose loading writes a file, that file's path): built in a subprocess."""
    folder = tmp_path_factory.mktemp("evil")
    script, archive, marker = folder / "build_evil.py", folder / "clip.pt", folder / "MARKER"
    script.write_text(_EVIL)
    done = subprocess.run([sys.executable, str(script), str(marker), str(archive)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and archive.is_file() and not marker.exists(), done.stderr
    return archive, marker


@TORCH
def test_a_torchscript_checkpoint_that_writes_a_file_when_run_never_runs(
    evil: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vst score --clip-checkpoint`` with a TorchScript archive whose code writes a file: the
    archive is read as data (its state is kept in a form only its code reads, so it is refused with
    how to convert it), redundancy is scored (exit 6), and no file appears; torch.jit.load on the
    same archive does write it."""
    from vst_core.cli import main
    from vst_core.metrics.rovist_c.scorers import read_rovist_checkpoint

    archive, marker = evil
    out = tmp_path / "scores.jsonl"
    args = ["score", str(SAMPLE), "--metrics", "redundancy,clipscore", "--clip-checkpoint", str(archive), "--device", "cpu"]
    code = main([*args, "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "cache")])
    assert not marker.exists(), "the archive's code ran"
    assert code == 6
    err = capsys.readouterr().err
    assert f"{archive} is a TorchScript archive" in err and "torch.save(torch.jit.load(" in err and "Traceback" not in err, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 8 and all(r["metrics"]["redundancy"]["score"] is not None for r in records)
    from vst_core.models.checkpoints import read_checkpoint
    from vst_core.models.clip_build import OPENAI_FORMATS

    with pytest.raises(ModelLoadError, match="cannot be read without running its code"):
        read_checkpoint(archive, "OpenAI CLIP weights", formats=OPENAI_FORMATS)
    with pytest.raises(ModelLoadError, match="torchscript file, not a RoViST-C checkpoint"):
        read_rovist_checkpoint(archive)
    assert not marker.exists()
    ran = subprocess.run(
        [sys.executable, "-c", f"import torch; torch.jit.load({str(archive)!r})"], capture_output=True, timeout=300
    )
    assert ran.returncode == 0 and marker.exists()  # the archive is a real one: loaded as torch.jit does, it writes


def test_a_torchscript_data_pkl_naming_any_other_global_is_refused_unrun(tmp_path: Path) -> None:
    """The archive's data.pkl is read by a restricted unpickler: a global that is neither a
    tensor's nor the archive's own class (here ``os.system``) is refused, never called."""
    from vst_core.models.checkpoints import read_checkpoint, sniff_checkpoint

    marker = tmp_path / "MARKER"

    class Runs:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    archive = tmp_path / "clip.pt"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("clip/data.pkl", pickle.dumps(Runs(), protocol=2))
        z.writestr("clip/constants.pkl", pickle.dumps((), protocol=2))
        z.writestr("clip/code/__torch__.py", "class M(Module):\n  __parameters__ = []\n")
        z.writestr("clip/version", "3\n")
    assert sniff_checkpoint(archive) == "torchscript"
    with pytest.raises(ModelLoadError, match=r"global (posix|nt)\.system is neither a tensor's") as caught:
        read_checkpoint(archive, "OpenAI CLIP weights", formats=SCRIPT)
    assert "torch.save(torch.jit.load(" in str(caught.value) and not marker.exists()


@TORCH
def test_a_torchscript_archives_tensors_are_what_torch_jit_reads(tmp_path: Path) -> None:
    """A traced archive (parameters, a buffer, a submodule, fp16 and int tensors) read as data
    gives exactly ``torch.jit.load(...).state_dict()``: the same names, dtypes and values."""
    import torch

    from vst_core.models.checkpoints import read_checkpoint

    class Inner(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(3, 4)
            self.register_buffer("steps", torch.tensor([7, 8], dtype=torch.int64))
            self.scratch = torch.ones(2)  # neither parameter nor buffer: not in the state dict

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x) + self.scratch.sum()

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Inner()
            self.scale = torch.nn.Parameter(torch.randn(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) * self.scale

    torch.manual_seed(0)
    path = tmp_path / "traced.pt"
    torch.jit.save(torch.jit.trace(Outer(), torch.zeros(1, 3)).half(), str(path))
    ours = read_checkpoint(path, "weights", formats=SCRIPT)
    theirs = torch.jit.load(str(path)).state_dict()  # a file this test built
    assert list(sorted(ours)) == sorted(theirs) == ["inner.linear.bias", "inner.linear.weight", "inner.steps", "scale"]
    for name, tensor in theirs.items():
        assert ours[name].dtype == tensor.dtype and torch.equal(ours[name], tensor), name


@TORCH
def test_openai_clip_torchscript_file_builds_the_model_its_converted_state_dict_builds(tmp_path: Path) -> None:
    """OpenAI's ``clip.load`` file format (a traced archive of the whole model) read as data builds
    the same CLIP, vector for vector, as the state dict the docs' conversion writes from it."""
    import numpy as np
    import open_clip
    import torch
    from PIL import Image
    from real_layout import _OpenAIArchive

    from vst_core.models.clip import load_clip

    config = {"embed_dim": 16, "quick_gelu": True, "vision_cfg": {"image_size": 32, "layers": 1, "width": 64, "patch_size": 16},
              "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1}}  # fmt: skip
    (tmp_path / "vst-openai-tiny.json").write_text(json.dumps(config))
    open_clip.add_model_config(str(tmp_path / "vst-openai-tiny.json"))
    torch.manual_seed(0)
    archive = _OpenAIArchive(open_clip.create_model("vst-openai-tiny")).eval()
    script, converted = tmp_path / "ViT-tiny.pt", tmp_path / "clip.pt"
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(archive, torch.zeros(1, 3, 32, 32), check_trace=False), str(script))
    torch.save(torch.jit.load(str(script)).state_dict(), converted)  # the conversion the docs give
    read, told = load_clip(checkpoint=script, device="cpu"), load_clip(checkpoint=converted, device="cpu")
    assert read.signature.startswith("openai-clip/file/quickgelu/") and told.signature.startswith("openai-clip/file/quickgelu/")
    images = [Image.new("RGB", (40, 30), "red"), Image.new("RGB", (30, 50), "blue")]
    assert np.array_equal(read.encode_images(images), told.encode_images(images))
    assert np.array_equal(read.encode_text(["a dog", "a red cat"]), told.encode_text(["a dog", "a red cat"]))


# ------------------------------------------------------------------ non-finite weights


@TORCH
@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=["NaN", "inf"])
@pytest.mark.parametrize("memo", ["fresh cache", "built before the checks"])
def test_a_clip_checkpoint_with_a_non_finite_weight_is_refused_naming_it_and_redundancy_is_kept(
    tiny_clip: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float, memo: str
) -> None:
    """A CLIP checkpoint with one NaN (or infinite) weight: CLIPScore is not run, with the file and
    the tensor named, and redundancy's records of every story are written (exit 6), also when an
    earlier run's memo says the same file built."""
    import torch

    from vst_core.cli import main
    from vst_core.hashing import file_digest
    from vst_core.images.memo import FILE_NAME, InputMemo, regular_stamp
    from vst_core.models.clip_weights import resolve_clip_weights

    config, good = tiny_clip
    state = torch.load(good, weights_only=True)
    state["visual.conv1.weight"] = state["visual.conv1.weight"].clone()
    state["visual.conv1.weight"].view(-1)[3] = value
    bad = tmp_path / "damaged-clip.pt"
    torch.save(state, bad)
    cache = tmp_path / "cache"
    if memo == "built before the checks":  # what a run before the finite check remembered of this file
        cache.mkdir()
        weights = resolve_clip_weights("vst-tiny-clip", None, bad, "auto")
        InputMemo(cache / FILE_NAME).put_model(weights.signature, f"{regular_stamp(bad)}|config:{file_digest(config)}")
    out = tmp_path / "scores.jsonl"
    args = ["score", str(SAMPLE), "--metrics", "redundancy,clipscore", "--device", "cpu", "--no-progress"]
    clip = ["--clip-model", "vst-tiny-clip", "--clip-checkpoint", str(bad), "--clip-config", str(config)]
    assert main([*args, *clip, "--out", str(out), "--cache-dir", str(cache)]) == 6
    err = capsys.readouterr().err
    assert f"CLIP weights {bad}: tensor 'visual.conv1.weight' holds NaN or infinite values" in err, err
    assert "JSON compliant" not in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 8 and all(r["metrics"]["redundancy"]["score"] is not None for r in records)
    assert all(r["errors"]["clipscore"].startswith(f"not run: CLIP weights {bad}: tensor") for r in records)


@TORCH
def test_every_loader_refuses_a_non_finite_tensor_naming_the_file(tmp_path: Path) -> None:
    """The guarded loader checks every floating tensor of every format it reads (a finite sum that
    overflowed is looked at value by value, so a large finite weight still loads)."""
    import torch
    from safetensors.torch import save_file

    from vst_core.models.checkpoints import read_checkpoint

    nested = {"model": {"head.weight": torch.tensor([[1.0, float("-inf")]])}, "epoch": 3}
    torch.save(nested, tmp_path / "nested.pt")
    torch.save(nested, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    save_file({"w": torch.tensor([float("nan")], dtype=torch.bfloat16)}, str(tmp_path / "w.safetensors"))
    files: list[tuple[str, tuple[CheckpointFormat, ...]]] = [
        ("nested.pt", ("torch-zip",)),
        ("legacy.pt", ("torch-legacy",)),
        ("w.safetensors", ("safetensors",)),
    ]
    for name, formats in files:
        with pytest.raises(ModelLoadError, match=f"{tmp_path / name}: tensor .* holds NaN or infinite values"):
            read_checkpoint(tmp_path / name, "weights", formats=formats)
    torch.save({"w": torch.full((1000,), 60000.0, dtype=torch.float16)}, tmp_path / "large.pt")
    assert read_checkpoint(tmp_path / "large.pt", "weights")["w"].shape == (1000,)  # its fp16 sum overflows; values do not


# ------------------------------------------------------------------ not a file


@pytest.fixture
def not_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """A FIFO, a device and a folder, each with what it should be called."""
    fifo = tmp_path / "clip.pt"
    os.mkfifo(fifo)
    (tmp_path / "folder.pt").mkdir()
    return {
        "FIFO": (fifo, "is not a regular file (a FIFO); it was not opened"),
        "device": (Path("/dev/zero"), "is not a regular file (a device); it was not opened"),
        "folder": (tmp_path / "folder.pt", "is a folder, not a file"),
    }


@pytest.mark.parametrize("kind", ["FIFO", "device", "folder"])
def test_a_fifo_device_or_folder_given_as_a_checkpoint_is_said_to_be_what_it_is(
    not_files: dict[str, tuple[Path, str]], kind: str, tmp_path: Path
) -> None:
    """Not "not found": each is named as what it is, found without opening it (a FIFO would block)."""
    from vst_core.models.clip_weights import resolve_clip_weights
    from vst_core.models.folders import regular_file
    from vst_core.models.hub import WeightsUnavailableError

    path, said = not_files[kind]

    def read(path: Path) -> Any:
        from vst_core.models.checkpoints import read_checkpoint

        return read_checkpoint(path, "a RoViST-C checkpoint (a torch.save'd dict)")

    for call in (lambda: resolve_clip_weights("ViT-B-32", None, path), lambda: read(path)):
        error = _in_time(call)
        assert isinstance(error, ModelLoadError) and not isinstance(error, WeightsUnavailableError), error
        assert f"{path} {said}" in str(error) and "not found" not in str(error)
    error = _in_time(lambda: regular_file(path, "Vrank head"))
    assert isinstance(error, ModelLoadError) and kind.lower() in str(error).lower()
    missing = _in_time(lambda: resolve_clip_weights("ViT-B-32", None, tmp_path / "absent.pt"))
    assert isinstance(missing, WeightsUnavailableError) and "CLIP checkpoint not found" in str(missing)


@TORCH
def test_the_cli_says_what_a_fifo_given_as_clip_checkpoint_is_and_scores_the_rest(
    not_files: dict[str, tuple[Path, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vst_core.cli import main

    for kind, (path, said) in not_files.items():
        out = tmp_path / f"{kind}.jsonl"
        args = ["score", str(SAMPLE), "--metrics", "redundancy,clipscore", "--clip-checkpoint", str(path), "--device", "cpu"]
        assert _in_time(lambda: main([*args, "--out", str(out), "--no-progress"]), 120) == 6  # noqa: B023  # run at once
        assert f"clipscore is not run: CLIP checkpoint {path} {said}" in capsys.readouterr().err
        assert len(out.read_text().splitlines()) == 8


# ------------------------------------------------------------------ torch's advice is never shown

#: What torch 2.6 and later say when a weights-only load meets a global it does not allow.
TORCH_ADVICE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those steps only "
    "if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the default value of the "
    "`weights_only` argument in `torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to "
    "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
    "following error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL fractions.Fraction was not an "
    "allowed global by default. Please use `torch.serialization.add_safe_globals([fractions.Fraction])` or the "
    "`torch.serialization.safe_globals([fractions.Fraction])` context manager to allowlist this global if you trust "
    "this class/function.\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/notes/serialization.html#weights-only-unpickler."
)


def _advises_unsafe_loading(text: str) -> bool:
    lowered = text.lower()
    return any(s in lowered for s in ("weights_only=false", "set to `false`", "safe_globals", "trust", "\x1b["))


def test_a_model_error_never_advises_loading_with_weights_only_false() -> None:
    """Whatever a library says, a ModelLoadError keeps what the file holds and drops the advice."""
    from vst_core.models.clip_weights import short_error

    for text in (str(ModelLoadError(f"CLIP weights x.pt do not load: {TORCH_ADVICE}")), short_error(RuntimeError(TORCH_ADVICE))):
        assert not _advises_unsafe_loading(text), text
        assert "Unsupported global: GLOBAL fractions.Fraction was not an allowed global by default." in text
    assert str(ModelLoadError("CLIP weights x.pt: not found")) == "CLIP weights x.pt: not found"  # other messages as they are


@TORCH
def test_the_cli_shows_what_a_checkpoint_holds_without_torchs_advice(
    tiny_clip: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import fractions

    import torch

    from vst_core.cli import main

    config, good = tiny_clip
    holding = tmp_path / "clip.pt"
    torch.save({**torch.load(good, weights_only=True), "ratio": fractions.Fraction(1, 2)}, holding)
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):  # what torch itself says of it
        torch.load(holding, weights_only=True)
    out = tmp_path / "scores.jsonl"
    clip = [a if a != str(good) else str(holding) for a in clip_args(tiny_clip)]
    code = main(
        ["score", str(SAMPLE), "--metrics", "redundancy,clipscore", *clip, "--device", "cpu", "--out", str(out), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 6 and f"{holding} holds objects CLIP weights does not" in err and "fractions.Fraction" in err, err
    assert not _advises_unsafe_loading(err), err


# ------------------------------------------------------------------ --clip-model is a name


@pytest.mark.parametrize("name", ["../x", "a/b", "/tmp/ViT-B-32", "..", "ViT\\B", "ViT-B-32\x00", "", "ViT\n32"])
def test_a_clip_model_is_a_name_never_a_path(name: str) -> None:
    from vst_core.models.clip_weights import resolve_clip_weights

    with pytest.raises(ModelLoadError, match="is not a model name"):
        resolve_clip_weights(name, "openai")
    from vst_core.models.clip_torch import is_model_name
    from vst_core.models.clip_weights import clip_model_name

    assert not is_model_name(name)
    with pytest.raises(ModelLoadError, match="--clip-model .* is not a model name"):
        clip_model_name(name)


def test_a_model_name_reaches_no_json_file_outside_open_clips_configurations(tmp_path: Path) -> None:
    """A plain configuration copied outside open_clip's folder, named by a relative path from it,
    is not found (it was built before), and a FIFO named so is never opened."""
    from vst_core.models.clip_torch import open_clip_folder, plain_config
    from vst_core.models.clip_weights import resolve_clip_weights

    folder = open_clip_folder()
    assert folder is not None
    configs = folder / "model_configs"
    (tmp_path / "planted.json").write_text((configs / "ViT-B-32.json").read_text())
    os.mkfifo(tmp_path / "blocks.json")
    for stem in ("planted", "blocks"):
        relative = os.path.relpath(tmp_path / stem, configs)
        assert ".." in relative and (configs / f"{relative}.json").resolve() == (tmp_path / f"{stem}.json").resolve()
        assert _in_time(lambda: plain_config(relative)) is None  # noqa: B023  # run at once
        with pytest.raises(ModelLoadError, match="is not a model name"):
            resolve_clip_weights(relative, "openai")
    assert (
        plain_config("ViT-B-32") is not None and resolve_clip_weights("ViT-B-32-quickgelu", "openai").arch == "ViT-B-32-quickgelu"
    )


@TORCH
def test_a_clip_config_that_is_not_there_or_not_a_file_is_said(tmp_path: Path) -> None:
    """A --clip-config that is missing, a FIFO or a device is refused naming it, where open_clip
    passed over it in silence and the model's name was then said to be unknown."""
    from vst_core.models.clip import load_clip

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for path, words in ((tmp_path / "missing.json", "not found"), (fifo, "a FIFO"), ("/dev/zero", "a device")):
        with pytest.raises(ModelLoadError, match=f"CLIP model config.*{words}"):
            load_clip("vst-tiny-clip", None, checkpoint=tmp_path / "none.pt", model_config=path)


@TORCH
def test_an_attention_masks_minus_infinity_is_read_and_nan_in_it_is_not(tmp_path: Path) -> None:
    """open_clip's TorchScript archives keep a causal mask of -inf: such a mask is read; NaN or +inf
    in it, or -inf in any weight, still refuses the file."""
    import torch

    from vst_core.models.checkpoints import read_checkpoint

    mask = torch.full((4, 4), float("-inf")).triu(1)
    good = tmp_path / "good.pt"
    torch.save({"transformer.attn_mask": mask, "proj": torch.ones(2)}, good)
    assert torch.equal(read_checkpoint(good, "CLIP weights")["transformer.attn_mask"], mask)
    for bad in ({"transformer.attn_mask": mask.nan_to_num(nan=0.0).fill_diagonal_(float("nan"))}, {"proj": mask}):
        path = tmp_path / "bad.pt"
        torch.save(bad, path)
        with pytest.raises(ModelLoadError, match="NaN or infinite"):
            read_checkpoint(path, "CLIP weights")


def test_an_archives_code_is_scanned_in_time_linear_in_its_length() -> None:
    """The scan of a TorchScript archive's code for its classes' declared parameters does not
    backtrack over a long line: 200,000 spaces after a class took the earlier pattern about 20 s
    (its work grew with the square of the line), and take it milliseconds now."""
    from vst_core.models import checkpoints

    text = 'class A(Module):\n  __parameters__ = ["w", ]\n' + " " * 200_000
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(len(checkpoints._CLASS.findall(text))), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done == [1]
