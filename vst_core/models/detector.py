"""The region detector: torchvision's Faster R-CNN (ResNet-50 FPN v2, COCO), loaded only from local
weights, giving the top boxes of each image (:class:`vst_core.data.regions.Box`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vst_core.data.regions import Box


def detector_weights_path() -> Path | None:
    """Local file of torchvision's Faster R-CNN (ResNet-50 FPN v2) COCO weights, if downloaded."""
    try:
        import torch
        from torchvision.models.detection import FasterRCNN_ResNet50_FPN_V2_Weights
    except Exception:
        return None
    url = FasterRCNN_ResNet50_FPN_V2_Weights.DEFAULT.url
    path = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(url)
    return path if path.is_file() else None


#: Images per detector forward: peak memory grows with the batch (about 0.45 GB an image on a
#: CPU), so it is fixed and small whatever the size of a scoring chunk.
DETECTOR_BATCH = 4


class Detector:
    """torchvision Faster R-CNN (ResNet-50 FPN v2, COCO), loaded only from local weights; images go
    through in batches of ``batch_size`` so peak memory is bounded by the batch, not the input."""

    def __init__(self, device: str = "cpu", batch_size: int = DETECTOR_BATCH) -> None:
        import torch
        from torchvision.models.detection import (
            FasterRCNN_ResNet50_FPN_V2_Weights,
            fasterrcnn_resnet50_fpn_v2,
        )

        from vst_core.models.checkpoints import read_checkpoint
        from vst_core.models.hub import ModelLoadError, WeightsUnavailableError

        path = detector_weights_path()
        if path is None:
            raise WeightsUnavailableError(
                "Faster R-CNN weights are not in the torch cache "
                f"({Path(torch.hub.get_dir()) / 'checkpoints'}); run `vst fetch-models --detector` "
                "on a connected machine and copy that folder here, or use a regions CSV or the weight-free proposals"
            )
        weights = FasterRCNN_ResNet50_FPN_V2_Weights.DEFAULT
        self.categories = weights.meta["categories"]
        self.model = fasterrcnn_resnet50_fpn_v2(weights=None, weights_backbone=None)
        fix = "delete the file and run `vst fetch-models --detector` again"
        try:
            state = read_checkpoint(path, "Faster R-CNN weights")
        except ModelLoadError as exc:
            raise ModelLoadError(f"{exc}; {fix}") from None
        try:
            self.model.load_state_dict(state)
        except Exception as exc:
            raise ModelLoadError(
                f"detector weights {path} do not load into Faster R-CNN ResNet-50 FPN v2 ({type(exc).__name__}: "
                f"{str(exc)[:300]}); {fix}"
            ) from None
        self.model.eval().to(device)
        self.transform = weights.transforms()
        self.device = device
        self.batch_size = max(1, batch_size)
        self.path = path

    def boxes(self, images: Sequence[Any], top_b: int) -> list[list[Box]]:
        """The ``top_b`` most confident boxes per image, in score order."""
        import torch

        result = []
        for start in range(0, len(images), self.batch_size):
            batch = images[start : start + self.batch_size]
            with torch.inference_mode():
                out = self.model([self.transform(im.convert("RGB")).to(self.device) for im in batch])
            for det in out:
                boxes = []
                for (x1, y1, x2, y2), label, score in zip(det["boxes"].tolist(), det["labels"].tolist(), det["scores"].tolist()):
                    boxes.append(Box(x1, y1, x2, y2, self.categories[label], float(score)))
                result.append(boxes[:top_b])
        return result
