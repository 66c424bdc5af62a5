"""Memory of hostile and large images: each case runs in a fresh process and prints its peak
resident memory above the interpreter's baseline, and how long it took.

    python benchmarks/image_budget.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = r"""
import json, sys, time
from pathlib import Path
import PIL.Image
from vst_core.data.paths import check_image
from vst_core.data.uploads import story_set_from_upload
from vst_core.data.images import open_image
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])
case, path = sys.argv[1], Path(sys.argv[2])
open("/proc/self/clear_refs", "w").write("5")  # reset the peak to what is resident now
base = status("VmRSS")
start = time.perf_counter()
if case == "check":
    result = check_image(path)
elif case == "upload":
    found, messages = story_set_from_upload([(path.name, path.read_bytes())], "We went out.", path.parent / "up")
    result = messages[0] if messages else "kept"
elif case == "budget":
    result = "decoded %dx%d" % open_image(path).size
else:  # what a plain Pillow decode costs
    with PIL.Image.open(path) as im:
        im.load()
        result = "decoded %dx%d" % im.convert("RGB").size
peak = status("VmHWM") - base
print(json.dumps({"result": str(result)[:110], "peak_mb": round(peak / 1024, 1), "seconds": round(time.perf_counter() - start, 2)}))
"""


def main() -> None:
    from PIL import Image

    with tempfile.TemporaryDirectory(prefix="vst-images-bench-") as tmp:
        folder = Path(tmp)
        Image.new("1", (13000, 13000)).save(folder / "bomb_13000.png")
        Image.new("RGB", (9000, 9000), (200, 30, 30)).save(folder / "near_limit_81mp.jpg", quality=80)
        Image.new("RGB", (9000, 9000), (200, 30, 30)).save(folder / "near_limit_81mp.png")
        os.mkfifo(folder / "fifo.jpg")
        cases = [
            ("check", "bomb_13000.png"),
            ("upload", "bomb_13000.png"),
            ("check", "fifo.jpg"),
            ("budget", "near_limit_81mp.jpg"),
            ("pillow", "near_limit_81mp.jpg"),
            ("check", "near_limit_81mp.png"),
        ]
        for case, name in cases:
            size = (folder / name).stat().st_size if name != "fifo.jpg" else 0
            out = subprocess.run(
                [sys.executable, "-c", CASE, case, str(folder / name)], capture_output=True, text=True, timeout=300, check=False
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"error": out.stderr[-300:]}
            print(f"{case:7} {name:22} {size / 1e6:6.2f} MB on disk  {figures}", flush=True)


if __name__ == "__main__":
    main()
