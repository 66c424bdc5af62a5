"""Metrics learned from human judgements: training, model folders with their cards, scoring.

``vrank.py`` (Hsu et al., 2022: a story-pair ranker), ``cosmic.py`` (Inan et al., 2021: a
reference-based caption rater), ``pairs.py`` (training pairs from judgement files, split by image
sequence), ``card.py`` (a model folder's card: what it was trained on, held-out accuracy with
intervals, recomputable from the saved predictions). A trained model is a folder; its identity in
a signature is :func:`folder_signature`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: Files of a model folder whose bytes identify the model (weights, config, tokenizer).
_IDENTITY_SUFFIXES = (".safetensors", ".bin", ".pt", ".json", ".txt", ".model")


def folder_signature(folder: str | Path | None, kind: str) -> str:
    """``<kind>:<folder name>@<digest>``: sha256 over the names and bytes of the folder's weights,
    config and tokenizer files (not its card's figures or saved predictions), or
    ``<kind>:not-downloaded`` when there is no such folder.

    >>> folder_signature(None, "vrank")
    'vrank:not-downloaded'
    """
    path = Path(folder) if folder else None
    if path is None or not path.is_dir():
        return f"{kind}:not-downloaded"
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _IDENTITY_SUFFIXES):
        if file.name.startswith(("card", "predictions", "trainer_state")):
            continue
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return f"{kind}:{path.name}@{digest.hexdigest()[:16]}"
