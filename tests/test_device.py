"""Where models run, and the CPU memory they run in."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_FAULTS = """
import resource
import torch
from vst_core.models.device import keep_freed_memory, resolve_device
resolve_device("cpu")
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
torch.manual_seed(0)
# a transformer's MLP block over 2,048 tokens: two 16 MB activations freed after every forward
mlp = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512), torch.nn.LayerNorm(512))
x = torch.randn(2048, 512)
with torch.inference_mode():
    for _ in range(2):
        mlp(x)
    before = faults()
    for _ in range(5):
        mlp(x)
print(keep_freed_memory(), (faults() - before) // 5)
"""


def _run(env: dict[str, str]) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS], env={**os.environ, **env}, capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_a_cpu_model_keeps_freed_memory_for_the_next_forward_unless_told_not_to() -> None:
    """Resolving the CPU keeps what a forward frees for the next one (no page faults), and
    VST_SYSTEM_MALLOC=1 leaves glibc trimming it (hundreds of pages faulted in again per forward)."""
    kept, faults = _run({"VST_SYSTEM_MALLOC": ""})
    assert kept and faults < 50
    kept, faults = _run({"VST_SYSTEM_MALLOC": "1"})
    assert not kept and faults > 400
