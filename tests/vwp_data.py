"""A small VWP-layout data set made here (VWP's film frames are for academic use: none is shipped):
people's stories in the release's CSV (10 and 6 shots, named characters with crops cut from the
shots) and a model's stories in the same sentence-group alignment (``groups``), with drawn frames."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from test_vwp import COLUMNS, vwp_row

#: scene -> (shots, {character: the shot its crop is cut from}, people's groups, the model's groups)
SCENES: dict[str, tuple[int, dict[str, int], list[str], list[str]]] = {
    "tt0100157_0001": (
        10,
        {"Ann": 0, "Bob": 3},
        [
            "Ann arrives at the old station. She carries a red suitcase.",
            "The platform is empty.",
            "A train pulls in slowly.",
            "Bob steps off the train. He looks for someone.",
            "Ann waves at Bob.",
            "They hug on the platform.",
            "Bob takes the red suitcase.",
            "They walk out into the rain.",
            "A taxi waits at the corner. Ann opens the door.",
            "Bob and Ann drive away together.",
        ],
        [
            "A woman is at a station.",
            "The station is empty.",
            "There is a train.",
            "A man gets off the train.",
            "The woman waves.",
            "They hug.",
            "The man has a suitcase.",
            "It is raining.",
            "There is a taxi.",
        ],  # nine groups for ten shots: said, not hidden
    ),
    "tt0100157_0002": (
        6,
        {"Cleo": 2},
        [
            "The kitchen is quiet in the morning.",
            "Coffee drips into a blue pot.",
            "Cleo reads the letter twice.",
            "She puts it down on the table.",
            "Cleo looks out of the window.",
            "Then she smiles and picks up the phone.",
        ],
        [
            "A kitchen in the morning.",
            "Cleo makes coffee. Cleo makes coffee.",
            "Cleo reads a letter.",
            "The letter is on the table.",
            "Cleo looks out of the window.",
            "Cleo calls someone on the phone.",
        ],
    ),
}


def _frame(rng: np.random.Generator, size: tuple[int, int] = (320, 180)) -> Image.Image:
    """A drawn film frame: a two-colour sky and ground and a few shapes."""
    top, bottom = rng.integers(30, 230, 3), rng.integers(30, 230, 3)
    image = Image.new("RGB", size, tuple(int(v) for v in top))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, size[1] * 0.6, size[0], size[1]), fill=tuple(int(v) for v in bottom))
    for _ in range(4):
        x, y = int(rng.integers(0, size[0] - 40)), int(rng.integers(0, size[1] - 40))
        w, h = int(rng.integers(20, 80)), int(rng.integers(20, 80))
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x, y, x + w, y + h), fill=colour)
    return image


def write_vwp_set(folder: Path) -> tuple[Path, Path]:
    """(people's VWP CSV, the model's JSONL) in ``folder``, shots and crops in ``folder/images``."""
    rng = np.random.default_rng(11)
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows, model = [], []
    for n, (scene, (shots, characters, people, written)) in enumerate(SCENES.items()):
        row = vwp_row(scene, f"A{n + 1}", people, list(characters), shots=shots)
        for k in range(shots):
            frame = _frame(rng)
            frame.save(images / f"{scene}_{k}.jpg", quality=90)
            for c, shot in enumerate(characters.values()):
                if shot == k:
                    crop = f"{scene}_char_{c}.jpg"
                    row[f"char{c}_url"] = f"https://example.org/vwp/characters/{crop}"
                    frame.crop((40, 20, 200, 160)).save(images / crop, quality=90)
        rows.append(row)
        model.append(
            {
                "story_id": f"A{n + 1}",
                "sequence_id": scene,
                "system": "llava",
                "images": [f"images/{scene}_{k}.jpg" for k in range(shots)],
                "groups": written,
                "characters": [[name, f"{scene}_char_{c}.jpg"] for c, name in enumerate(characters)],
            }
        )
    people_path, model_path = folder / "vwp_test.csv", folder / "llava.jsonl"
    with people_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    model_path.write_text("".join(json.dumps(m) + "\n" for m in model), encoding="utf-8")
    return people_path, model_path
