"""``vst train-vrank JUDGEMENTS --out DIR``: train Vrank's story ranker from human judgements.
Defaults are the paper's recipe (:class:`~vst_core.metrics.vrank.train.VrankConfig`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.analysis.meta_eval.identity import story_key
from vst_core.analysis.meta_eval.judgements import LAYOUTS, JudgementsError
from vst_core.analysis.meta_eval.reader import read_judgements
from vst_core.data import StorySetError, read_story_set
from vst_core.hashing import text_digest
from vst_core.learned.pairs import PairsError, grouped_split, pairs_of, random_split, story_texts, vhed_texts
from vst_core.metrics.vrank.train import NonFiniteLossError, VrankConfig, train_vrank
from vst_core.models.hub import ModelLoadError, hf_weights_id
from vst_core.terminal import EXIT_DIVERGED, EXIT_INPUT, EXIT_WEIGHTS, DefaultsHelp, bar, error, note, training_arguments

DEFAULTS = VrankConfig()


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train-vrank",
        help="train Vrank's story ranker from human rankings or ratings",
        description=(
            "Train Vrank (Hsu et al., 2022): two stories of one image sequence joined with [SEP], a sentence "
            "encoder and a regression layer predicting the ranking gap, MSE, pairs balanced by swapping. From "
            "VHED's CSV (texts inside), or any pairwise or ratings file this tool reads with --stories for the "
            "texts. Held-out pairs are whole image sequences. Writes the model, its card (held-out accuracy "
            "overall, by agreement and by gap bin, with intervals) and the held-out predictions to --out; "
            "`score --metrics vrank --vrank-model DIR` uses it. Rerun the same command to resume."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("judgements", type=Path, metavar="JUDGEMENTS", help="VHED.csv, a pairwise CSV or a ratings file")
    p.add_argument("--out", type=Path, required=True, help="model folder to write")
    p.add_argument("--stories", type=Path, help="story set with the judged stories' texts (not needed for VHED)")
    p.add_argument("--layout", choices=LAYOUTS, default="auto", help="judgements layout")
    p.add_argument("--pooling", choices=("auto", "cls", "mean"), default=DEFAULTS.pooling, help="sentence embedding of the pair")
    p.add_argument(
        "--split",
        choices=("sequence", "pair"),
        default="sequence",
        help="hold out whole image sequences, or random pairs (as the papers did; stories leak across)",
    )
    p.add_argument("--no-swap", action="store_true", help="do not add the swapped pairs")
    p.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16"), default=DEFAULTS.precision, help="auto: fp16 on CUDA")
    p.add_argument(
        "--threads",
        type=int,
        default=DEFAULTS.threads,
        help="CPU threads while training (0: one on a CPU, where small steps stall on a busy machine; torch's default on a GPU)",
    )
    p.add_argument("--mlm", type=Path, help="story set for masked-LM pre-training first (the paper: SIND reference stories)")
    p.add_argument("--mlm-epochs", type=int, default=1, help="masked-LM epochs when --mlm is given")
    training_arguments(
        p,
        DEFAULTS,
        base="encoder: Hugging Face name or local folder",
        epochs="training epochs",
        batch_size="pairs per batch",
        lr="Adam learning rate",
        held_out=(0.1, "fraction of image sequences held out"),
        max_length="maximum tokens of a story pair",
        seed="seed of the split, shuffling and initialisation",
    )


def run(args: argparse.Namespace) -> int:
    try:
        judgements = read_judgements(args.judgements, layout=args.layout)
        if judgements.layout == "vhed":
            texts = vhed_texts(args.judgements)
            sequences = None
        elif args.stories is None:
            error(f"{args.judgements} ({judgements.layout}) holds no story texts: pass --stories FILE")
            return EXIT_INPUT
        else:
            story_set = read_story_set(args.stories, check_images=False)
            texts = story_texts(story_set)
            sequences = {k: s.sequence_id for s in story_set for k in (story_key(s.story_id, s.system), s.story_id)}
        pairs, problems = pairs_of(judgements, texts, sequences)
        mlm = [s.text for s in read_story_set(args.mlm, check_images=False) if not s.is_empty] if args.mlm else []
    except (OSError, JudgementsError, StorySetError, PairsError) as exc:
        error(str(exc))
        return EXIT_INPUT
    for problem in [*judgements.problems, *problems]:
        note(problem)
    splitter = grouped_split if args.split == "sequence" else random_split
    train, held = splitter(pairs, args.held_out, args.seed)
    note(f"{len(pairs)} pairs: {len(train)} for training, {len(held)} held out ({args.split} split)")
    config = VrankConfig(
        base=args.base,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        max_length=args.max_length,
        pooling=args.pooling,
        precision=args.precision,
        threads=max(args.threads, 0),
        device=args.device,
        swap=not args.no_swap,
        mlm_epochs=args.mlm_epochs if mlm else 0,
    )
    card = {
        "base": args.base,
        "base_weights": hf_weights_id(args.base),
        "data": args.judgements.name,
        "data_layout": judgements.layout,
        "data_digest": text_digest(args.judgements.read_bytes()),
        "stories_digest": text_digest(args.stories.read_bytes()) if args.stories else None,
        "mlm_stories": len(mlm),
        "split": {
            "by": args.split,
            "held_out": args.held_out,
            "seed": args.seed,
            "held_out_sequences": sorted({p.sequence_id for p in held}),
        },
        "deviations": "margins asked in both orders when scoring: m(a, b) = (f(a, b) - f(b, a)) / 2",
    }
    try:
        report = train_vrank(
            train,
            held,
            args.out,
            config,
            card=card,
            mlm_stories=mlm,
            progress=None if args.no_progress else (lambda total, desc: bar(total, "batch", desc)),
            log=note,
        )
    except ModelLoadError as exc:
        error(str(exc))
        return EXIT_WEIGHTS
    except NonFiniteLossError as exc:
        error(str(exc))
        return EXIT_DIVERGED
    except ValueError as exc:
        error(str(exc))
        return EXIT_INPUT
    last = report.epochs[-1] if report.epochs else {}
    accuracy = last.get("held_out_accuracy")
    shown = "n/a" if accuracy is None else f"{accuracy:.3f}"
    note(f"trained on {report.train_pairs} pairs; held-out accuracy {shown}; model and card in {report.out}")
    return 0
