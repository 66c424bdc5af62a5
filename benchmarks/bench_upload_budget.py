"""Hostile uploads against the upload budget: each case builds a zip in a temporary folder, runs
``story_set_from_files`` on it in a fresh process (into a session-like folder, so the session and
server budgets apply) and prints the peak resident memory above the process's baseline (the zip's
bytes already loaded, as Streamlit hands them over), the bytes left under the upload folder and
the largest partial file a limit stopped (removed at once), beside the documented budget.

    python benchmarks/bench_upload_budget.py

Cases: a story file unpacking to 600 MiB from about 0.6 MB (1,000:1); the same with the ratio
limit off, so the 200 MiB story-file limit stops it; ten zero-filled 99 MiB ``.jpg`` members named
by the story file; the same ten not named; the bundled sample with its images (what should work).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MIB = 2**20

CASE = r"""
import json, os, resource, sys, time
from pathlib import Path
from vst_core.data import uploads
from vst_core.data.uploads import SESSION_PREFIX, UploadBudget, story_set_from_files

partial = [0]  # the largest partial file removed when a limit stopped it
remove = uploads._remove
def spy(path):
    partial[0] = max(partial[0], path.stat().st_size if path.is_file() else 0)
    remove(path)
uploads._remove = spy

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return 0

zip_path, ratio = Path(sys.argv[1]), sys.argv[2] == "ratio"
data = zip_path.read_bytes()  # the upload as Streamlit hands it over
folder = zip_path.parent / f"{SESSION_PREFIX}{os.getpid()}-bench" / "upload"
budget = UploadBudget.from_env()
if not ratio:
    budget = UploadBudget(**{**budget.__dict__, "ratio": 10.0**9})
try:
    open("/proc/self/clear_refs", "w").write("5")  # the peak starts from what is resident now
    base, reset = status("VmRSS"), True
except OSError:
    base, reset = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, False
start = time.perf_counter()
found, error, messages = story_set_from_files([(zip_path.name, data)], folder, budget=budget)
seconds = time.perf_counter() - start
peak = (status("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) - base
written = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
said = error or (messages[0] if messages else "kept")
print(json.dumps({
    "stories": len(found) if found is not None else 0, "messages": len(messages), "first": said[:150],
    "peak_rss_mib": round(peak / 2**20, 1), "baseline_rss_mib": round(base / 2**20, 1),
    "written_mib": round(written / 2**20, 2), "largest_partial_mib": round(partial[0] / 2**20, 2),
    "data_file_budget_mib": budget.data_file / 2**20, "upload_budget_mib": budget.upload / 2**20,
    "seconds": round(seconds, 2),
}))
"""


def _story(images: list[str]) -> bytes:
    return (json.dumps({"story_id": "a", "sentences": ["We went out."] * len(images), "images": images}) + "\n").encode()


def _zip(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """``members``: name -> (block, copies), streamed into the zip (never held whole)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (block, copies) in members.items():
            with archive.open(name, "w") as out:
                for _ in range(copies):
                    out.write(block)
    return path


def _cases(folder: Path) -> list[tuple[str, Path, str]]:
    names = [f"images/{k}.jpg" for k in range(10)]
    zeros = {name: (bytes(MIB), 99) for name in names}
    bomb = _zip(folder / "bomb.zip", {"stories.jsonl": (_story([]) + b" " * (MIB - 100), 600)})
    named = _zip(folder / "zero_jpgs_named.zip", {"stories.jsonl": (_story(names), 1), **zeros})
    unnamed = _zip(folder / "zero_jpgs_unnamed.zip", {"stories.jsonl": (_story([]), 1), **zeros})
    sample = Path(__file__).resolve().parent.parent / "assets/sample"
    happy = folder / "sample.zip"
    with zipfile.ZipFile(happy, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(sample / "stories.jsonl", "my-set/stories.jsonl")
        for image in sorted((sample / "images").iterdir()):
            archive.write(image, f"my-set/images/{image.name}")
    return [
        ("story 600 MiB from 0.6 MB (1000:1)", bomb, "ratio"),
        ("same, ratio limit off", bomb, "no-ratio"),
        ("ten 99 MiB zero .jpg, named", named, "ratio"),
        ("ten 99 MiB zero .jpg, not named", unnamed, "ratio"),
        ("sample with its 10 images", happy, "ratio"),
    ]


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="vst-bench-uploads-") as tmp:
        for title, path, mode in _cases(Path(tmp)):
            run = Path(tmp) / path.stem / mode
            run.mkdir(parents=True)
            zip_path = path.rename(run / path.name)
            out = subprocess.run(
                [sys.executable, "-c", CASE, str(zip_path), mode],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
                env=env,
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-400:]}
            zip_path.rename(path)
            print(f"{title:36} zip {path.stat().st_size / 1e6:7.3f} MB  {json.dumps(figures)}", flush=True)


if __name__ == "__main__":
    main()
