"""The image pipeline's settings (CLIP's weights, the regions, how crops are preprocessed), declared
once as :class:`~vst_core.contract.Option`: each is a ``vst score`` flag, a keyword of
:class:`vst_core.config.Settings` and signed in every run with a metric that needs what it changes
(CLIP, the images). :func:`image_settings` reads them typed.

>>> o = COMPONENT.options[0]
>>> o.setting, o.cli_flag, o.default, o.signed_name
('clip_model', '--clip-model', 'ViT-B-32', 'clip_arch')
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast

from vst_core.contract.protocols import SettingsLike
from vst_core.contract.spec import Component, Need, Option, OptionValue, at_least_one
from vst_core.data.options import RegionsKind, parse_regions
from vst_core.terminal import add_option, metric_options_from_args

#: Device nodes one of which a machine where CUDA can run has (Linux, WSL).
_GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")


def _regions(value: OptionValue) -> Mapping[str, OptionValue]:
    """``--regions`` / the sidebar's “Regions”: a keyword, or a regions CSV's path (csv and the file)."""
    found = parse_regions(None if value is None else str(value))
    return {"regions": found.kind, "regions_file": found.file}


def _check(settings: SettingsLike) -> str | None:
    """Why the image settings cannot be used together, or None."""
    if settings.option("regions") == "csv" and not settings.option("regions_file"):
        return "regions 'csv' needs regions_file"
    if settings.option("preprocess") == "device" and settings.option("grounding_profile") == "reference":
        return (
            "the reference grounding profile crops and resizes with Pillow, as the GROOVIST code does; "
            "use preprocess 'pil' (or 'auto') with it"
        )
    return None


_CLIP: tuple[Need, ...] = ("clip",)
_IMAGES: tuple[Need, ...] = ("clip", "images")

#: The image pipeline's settings.
COMPONENT = Component(
    name="images",
    title="CLIP and image regions",
    options=(
        Option(
            "clip_model",
            "ViT-B-32",
            "open_clip architecture",
            needs=_CLIP,
            signed_as="clip_arch",
            metavar="NAME",
            label="CLIP architecture",
            key="clip_arch",  # the dashboard's field and link parameter, as earlier versions named it
        ),
        Option(
            "clip_pretrained",
            "openai",
            "open_clip pretrained tag",
            needs=_CLIP,
            metavar="TAG",
            nullable=True,
            label="Pretrained tag",
        ),
        Option(
            "clip_checkpoint",
            None,
            "local CLIP checkpoint file instead of the pretrained tag",
            kind="file",
            needs=_CLIP,
            label="…or local checkpoint file",
        ),
        Option(
            "clip_config",
            None,
            "open_clip model-config JSON that defines --clip-model",
            kind="file",
            needs=_CLIP,
            label="open_clip model config",
        ),
        Option(
            "clip_activation",
            "auto",
            "auto: as the weights say (OpenAI's files and the openai tags: QuickGELU); a --clip-checkpoint that does not "
            "say must name it: quickgelu for OpenAI's weights and fine-tunes of them, gelu for open_clip's",
            choices=("auto", "gelu", "quickgelu"),
            needs=_CLIP,
        ),
        Option(
            "regions",
            "grid",
            "image regions: a regions CSV (image_name,image_id,bbox,object,score), 'detector' (torchvision Faster R-CNN, "
            "needs its weights) or 'grid' (ten weight-free proposals)",
            choices=("grid", "csv", "detector"),
            metavar="FILE|detector|grid",
            needs=_IMAGES,
            expand=_regions,
            label="Regions",
        ),
        Option("regions_file", None, "the regions CSV of --regions csv", kind="file", needs=_IMAGES),
        Option("top_b", 10, "regions kept per image", kind="int", check=at_least_one, needs=_IMAGES),
        Option("whole_image", False, "add the whole image to each image's regions", kind="bool", needs=_IMAGES),
        Option(
            "preprocess",
            "auto",
            "how region crops are resized for CLIP: pil (Pillow in the worker threads, the GROOVIST code's pixels), "
            "device (each image decoded once, crops cut, resized and normalised on the model's device: the fast path on "
            "a GPU; max |Δ cosine| 2.4e-7 against pil, see docs/performance.md), auto (device on CUDA, pil on a CPU); "
            "recorded in the signature",
            choices=("auto", "pil", "device"),
            needs=_CLIP,
            signed_value=lambda settings: image_preprocess(settings),
        ),
    ),
    check=_check,
)


#: The options naming CLIP's weights, which a command that loads CLIP takes as ``vst score`` does.
CLIP_OPTIONS: tuple[str, ...] = ("clip_model", "clip_pretrained", "clip_checkpoint", "clip_config", "clip_activation")


@dataclass(frozen=True)
class ImageSettings:
    """The image pipeline's settings of a run, typed (:data:`COMPONENT`'s options)."""

    clip_model: str
    clip_pretrained: str | None
    clip_checkpoint: str | None
    clip_config: str | None
    clip_activation: Literal["auto", "gelu", "quickgelu"]
    regions: RegionsKind
    regions_file: str | None
    top_b: int
    whole_image: bool
    preprocess: Literal["auto", "pil", "device"]


def image_settings(settings: SettingsLike) -> ImageSettings:
    """The image pipeline's settings of ``settings``, each set or at its default.

    >>> from vst_core.config import Settings
    >>> image_settings(Settings(clip_model="ViT-L-14", top_b=5)).clip_model, image_settings(Settings()).top_b
    ('ViT-L-14', 10)
    """
    return ImageSettings(**{o.setting: settings.option(o.setting) for o in COMPONENT.options})


def image_preprocess(settings: SettingsLike) -> Literal["pil", "device"]:
    """The preprocessing a run uses: ``pil`` for GROOVIST's reference profile, the choice when one was
    made, else ``device`` where the models run on CUDA and ``pil`` on a CPU.

    >>> from vst_core.config import Settings
    >>> image_preprocess(Settings(preprocess="device")), image_preprocess(Settings(device="cpu"))
    ('device', 'pil')
    """
    if settings.option("grounding_profile") == "reference":
        return "pil"
    chosen = settings.option("preprocess")
    if chosen != "auto":
        return cast(Literal["pil", "device"], chosen)
    if settings.device != "auto":
        return "device" if settings.device == "cuda" else "pil"
    if not any(os.path.exists(node) for node in _GPU_NODES):
        return "pil"  # no NVIDIA device on this machine: CUDA cannot be there, and torch need not load to say so
    import torch  # where "auto" runs the models, as vst_core.models.device resolves it

    return "device" if torch.cuda.is_available() else "pil"


def clip_arguments(p: argparse.ArgumentParser, names: tuple[str, ...] = CLIP_OPTIONS) -> None:
    """The CLIP options ``names`` as a command's own (``vst fetch-models``, ``vst train-cosmic``): the
    same flags, help and defaults as ``vst score``'s, read back with :func:`clip_from_args`."""
    chosen = {o.setting: o for o in COMPONENT.options}
    for name in names:
        add_option(p, chosen[name])


def clip_from_args(args: argparse.Namespace) -> ImageSettings:
    """The image settings a command's :func:`clip_arguments` gave (the others at their defaults)."""
    from vst_core.config import Settings

    return image_settings(Settings(options=metric_options_from_args(args)))
