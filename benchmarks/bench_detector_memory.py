"""Peak memory of the region detector against the number of images it is given.

``python benchmarks/bench_detector_memory.py [--images 4 20] [--batch 4]`` builds torchvision's
Faster R-CNN ResNet-50 FPN v2 with random weights (the cost of a forward does not depend on the
weights) under a temporary ``TORCH_HOME``, then, in a fresh process per image count, loads it
through the product's ``Detector`` and runs ``boxes`` on that many sample photos. It prints one
JSON object: per count, the process's peak resident memory after loading and after detecting, the
growth, and the seconds taken. Peak memory should be bounded by ``--batch``, not by the count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from PIL import Image
from vst_core.models.detector import Detector

n, batch = int(sys.argv[1]), int(sys.argv[2])
paths = sorted(Path(sys.argv[3]).glob("*.jpg"))
images = [Image.open(paths[k % len(paths)]).convert("RGB") for k in range(n)]
detector = Detector("cpu", batch_size=batch)
loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
boxes = detector.boxes(images, 10)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"images": n, "batch": batch, "rss_loaded_mb": round(loaded), "rss_peak_mb": round(peak),
                  "growth_mb": round(peak - loaded), "seconds": round(seconds, 1), "boxes": sum(map(len, boxes))}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, nargs="+", default=[4, 20])
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    import torch
    from torchvision.models.detection import (
        FasterRCNN_ResNet50_FPN_V2_Weights,
        fasterrcnn_resnet50_fpn_v2,
    )

    with tempfile.TemporaryDirectory(prefix="vst-bench-det-") as home:
        target = Path(home) / "hub" / "checkpoints" / os.path.basename(FasterRCNN_ResNet50_FPN_V2_Weights.DEFAULT.url)
        target.parent.mkdir(parents=True)
        torch.save(fasterrcnn_resnet50_fpn_v2(weights=None, weights_backbone=None).state_dict(), target)
        rows = []
        for n in args.images:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(n), str(args.batch), str(ROOT / "assets/sample/images")],
                env={**os.environ, "TORCH_HOME": home},
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"{n} images: {rows[-1]}", file=sys.stderr)
    base = rows[0]["rss_peak_mb"]
    print(json.dumps({"runs": rows, "peak_ratio_to_first": [round(r["rss_peak_mb"] / base, 3) for r in rows]}, indent=1))


if __name__ == "__main__":
    main()
