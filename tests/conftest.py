"""Shared fixtures. Nothing here downloads anything: hubs are forced offline."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"
ARTIFACTS = ROOT / "tests" / "_artifacts"


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    """A folder with three small real images a.png, b.png, c.png."""
    for name, colour in (("a", "red"), ("b", "green"), ("c", "blue")):
        Image.new("RGB", (16, 12), colour).save(tmp_path / f"{name}.png")
    return tmp_path
