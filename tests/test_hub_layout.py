"""The hub cache's layout read directly (``vst_core.models.hub.snapshot_file``) finds the file
huggingface_hub finds, so a rerun whose weights are cached need not import huggingface_hub."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vst_core.models.hub import hub_cache_from_env, hub_file, snapshot_file


def _cache(home: Path, repo: str, name: str, commit: str = "a" * 40) -> Path:
    folder = home / "hub" / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    target = folder / "snapshots" / commit / name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"weights")
    return target


def test_the_layout_gives_the_file_huggingface_hub_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants, try_to_load_from_cache

    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # once imported, its setting counts
    target = _cache(tmp_path, "org/model", "open_clip_model.safetensors")
    assert hub_cache_from_env() == tmp_path / "hub"
    found = snapshot_file("org/model", "open_clip_model.safetensors")
    assert found == target
    assert str(found) == try_to_load_from_cache("org/model", "open_clip_model.safetensors", cache_dir=str(tmp_path / "hub"))
    assert snapshot_file("org/model", "missing.bin") is None and snapshot_file("org/other", "x") is None
    assert snapshot_file("../org", "x") is None and snapshot_file("/etc", "passwd") is None
    assert hub_file("org/model", ("open_clip_pytorch_model.bin", "open_clip_model.safetensors")) == target


def test_a_cached_file_is_found_without_importing_huggingface_hub(tmp_path: Path) -> None:
    _cache(tmp_path, "org/model", "f.bin")
    code = (
        "import sys; from vst_core.models.hub import hub_file; "
        "p = hub_file('org/model', ('f.bin',)); print(p is not None, 'huggingface_hub' in sys.modules)"
    )
    env = {"HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
