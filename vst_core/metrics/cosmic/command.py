"""``vst train-cosmic TSV --images DIR --out DIR``: train COSMic's rater (Inan et al., 2021) on a
RaCCoon-layout TSV with the images downloaded into DIR. Defaults come from
:class:`~vst_core.metrics.cosmic.train.CosmicConfig`; the CLIP options are those of ``vst score``."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.images.options import clip_arguments, clip_from_args
from vst_core.metrics.cosmic.train import CosmicConfig, train_cosmic
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError
from vst_core.models.protocols import ImageTextEncoder
from vst_core.terminal import EXIT_INPUT, EXIT_WEIGHTS, DefaultsHelp, bar, error, note, training_arguments

DEFAULTS = CosmicConfig()


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train-cosmic",
        help="train the COSMic recipe's caption rater from RaCCoon-layout ratings",
        description=(
            "Train COSMic's rater (frozen BERT [CLS] of candidate and reference, their coherence labels and the CLIP "
            "image vector -> a rating in [0, 1]) and a coherence-label head, from a TSV in the layout of RaCCoon.tsv "
            "(github Merterm/COSMic) and a folder of its images, downloaded beforehand: a row's image is "
            "<id_annotation>.<suffix> or the file name of its URL. Rows whose image is missing are counted and skipped. "
            "Writes --out, a folder that `score --metrics cosmic --cosmic-model DIR` accepts; score with the same CLIP options."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("tsv", type=Path, metavar="TSV", help="training ratings (RaCCoon.tsv layout)")
    p.add_argument("--images", type=Path, required=True, help="folder of the TSV's images")
    p.add_argument("--out", type=Path, required=True, help="model folder to write")
    p.add_argument("--test", type=Path, default=None, help="held-out ratings in the same layout (default: hold out images)")
    p.add_argument("--hidden-size", type=int, default=DEFAULTS.hidden_size, help="width of the rating MLP")
    clip_arguments(p)
    training_arguments(
        p,
        DEFAULTS,
        base="BERT to encode captions (hub id or local directory), kept frozen",
        epochs="training epochs",
        batch_size="examples per step",
        lr="Adam learning rate",
        held_out=(DEFAULTS.held_out, "fraction of images held out without --test"),
        max_length="maximum tokens per caption",
        seed="random seed (split, shuffling, initialisation)",
    )


def run(args: argparse.Namespace) -> int:
    config = CosmicConfig(
        base=args.base,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        hidden_size=args.hidden_size,
        held_out=args.held_out,
        max_length=args.max_length,
        seed=args.seed,
        device=args.device,
    )

    def clip() -> ImageTextEncoder:
        from vst_core.models.clip import load_clip

        image = clip_from_args(args)
        return load_clip(
            image.clip_model,
            image.clip_pretrained,
            checkpoint=image.clip_checkpoint,
            model_config=image.clip_config,
            device=args.device,
            activation=image.clip_activation,
        )

    try:
        report = train_cosmic(
            args.tsv,
            args.images,
            args.out,
            config,
            clip=clip,
            test_tsv=args.test,
            progress=None if args.no_progress else (lambda total, desc: bar(total, "step", desc)),
            log=note,
        )
    except (WeightsUnavailableError, ModelLoadError) as exc:
        error(str(exc))
        return EXIT_WEIGHTS
    except ValueError as exc:
        error(str(exc))
        return EXIT_INPUT
    note(
        f"trained on {report.train_examples} examples ({report.held_out_examples} held out, {report.held_out_from}); "
        f"saved to {report.out}"
    )
    return 0
