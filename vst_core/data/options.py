"""Option texts shared by the CLI and the dashboard, parsed once into typed values (pure: no
files are read here; the reader of a named file checks it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RegionsKind = Literal["grid", "csv", "detector"]

#: The region sources named by a keyword; any other text names a regions CSV.
REGION_KEYWORDS: tuple[RegionsKind, ...] = ("grid", "detector")


@dataclass(frozen=True)
class Regions:
    """Where image regions come from: ``kind``, and for ``csv`` the file (``file`` is None otherwise)."""

    kind: RegionsKind
    file: str | None = None


def parse_regions(text: str | None, default: str = "grid") -> Regions:
    """The regions option (``--regions``, the sidebar's “Regions”): ``grid`` (ten weight-free
    proposals), ``detector`` (Faster R-CNN) or any other text, a regions CSV path. Surrounding
    spaces are ignored; empty or None is ``default`` (parsed the same way)."""
    value = (text or "").strip() or default.strip()
    for keyword in REGION_KEYWORDS:
        if value == keyword:
            return Regions(keyword)
    return Regions("csv", value)
