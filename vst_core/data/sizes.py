"""Sizes in bytes as a person reads them, for the messages of every byte budget (scores files,
uploads, tables); no import beyond the standard library, so any reader may use it."""

from __future__ import annotations


def size_text(n: int) -> str:
    """Bytes as a person reads them, in the limit's binary units: 1 GiB, 303 MiB, 4 KiB.

    >>> size_text(3 << 30), size_text(1536), size_text(12)
    ('3 GiB', '1.5 KiB', '12 bytes')
    """
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
