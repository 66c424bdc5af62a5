"""``vst fetch-models`` (check, download and locate the default weights) and ``vst cache`` (the
embedding cache)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

from vst_core.cli.common import EXIT_WEIGHTS, DefaultsHelp, note
from vst_core.config import Settings
from vst_core.metric_modules.rovist_c.scorers import DEFAULT_NSP_MODEL
from vst_core.metric_modules.vrank.ranker import DEFAULT_BASE as VRANK_BASE

DEFAULTS = Settings()


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fetch = sub.add_parser(
        "fetch-models",
        help="check the default model weights, download what is missing, and say which folders to copy",
        description=(
            "For each model: report whether it is already in the local caches and loads, download it when it "
            "is missing and the model hub is reachable, check it by scoring one input, and print the cache "
            "folders to copy to an offline machine. Exit 4 when a model is missing or does not load."
        ),
        formatter_class=DefaultsHelp,
    )
    fetch.add_argument("--coherence-model", default=DEFAULT_NSP_MODEL, help="next-sentence model (hub id or folder)")
    fetch.add_argument("--clip-model", default=DEFAULTS.clip_arch, help="open_clip architecture")
    fetch.add_argument("--clip-pretrained", default=DEFAULTS.clip_pretrained, help="open_clip pretrained tag")
    fetch.add_argument(
        "--rovist-c",
        default=None,
        metavar="PATH",
        help="also check the authors' RoViST-C checkpoint file and fetch its ALBERT tokenizer",
    )
    fetch.add_argument("--coherence-tokenizer", default=None, help="tokenizer for --rovist-c (default albert-large-v1)")
    fetch.add_argument("--detector", action="store_true", help="also fetch torchvision's Faster R-CNN weights")
    fetch.add_argument(
        "--rovist-vg", action="store_true", help="also fetch the ViT of RoViST-VG's image encoder (--rovist-vg-vit)"
    )
    fetch.add_argument(
        "--rovist-vg-vit", default=DEFAULTS.option("rovist_vg_vit"), help="the ViT of RoViST-VG (hub name or folder)"
    )
    fetch.add_argument(
        "--rovist-vg-model", default=None, metavar="FILE", help="also check the authors' RoViST-VG checkpoint (with --glove)"
    )
    fetch.add_argument("--glove", default=None, metavar="FILE", help="GloVe vectors for --rovist-vg-model (glove.6B.300d.txt)")
    fetch.add_argument(
        "--vrank-base",
        nargs="?",
        const=VRANK_BASE,
        default=None,
        metavar="NAME",
        help=f"also fetch the encoder `train-vrank` starts from (default {VRANK_BASE})",
    )
    fetch.add_argument(
        "--judge",
        nargs="?",
        const=DEFAULTS.option("judge_model"),
        default=None,
        metavar="NAME",
        help=f"also fetch the rubric judge's chat model (default {DEFAULTS.option('judge_model')})",
    )
    fetch.add_argument(
        "--judge-vlm",
        nargs="?",
        const=DEFAULTS.option("judge_vlm"),
        default=None,
        metavar="NAME",
        help=f"also fetch the judge's vision-language model for --judge-images (default {DEFAULTS.option('judge_vlm')})",
    )

    cache = sub.add_parser("cache", help="report or clear the embedding cache")
    cache.add_argument(
        "--cache-dir", type=Path, default=None, help="cache folder (default $VST_CACHE_DIR, else ~/.cache/vst-eval)"
    )
    cache.add_argument("--clear", action="store_true", help="delete every cached embedding")


def run_fetch(args: argparse.Namespace) -> int:
    """Model by model: already cached (and loads), downloaded now, or missing; each is built once and
    checked by scoring one input. Exit 4 when any model is missing or does not load."""
    from vst_core.models.fetch import fetch_models

    report = fetch_models(
        clip_arch=args.clip_model,
        clip_pretrained=args.clip_pretrained,
        detector=args.detector,
        rovist_vg=args.rovist_vg,
        rovist_vg_vit=args.rovist_vg_vit,
        rovist_vg_checkpoint=args.rovist_vg_model,
        glove=args.glove,
        more=_metric_checks(args),
        log=note,
    )
    note(report.summary())
    return 0 if report.ok else EXIT_WEIGHTS


def _metric_checks(args: argparse.Namespace) -> list[tuple[str, bool, Any]]:
    """The metrics' own models asked for (the next-sentence model always, --rovist-c, --vrank-base,
    --judge, --judge-vlm), as their packages check them."""
    from vst_core.metric_modules import judge, rovist_c, vrank

    checks = rovist_c.fetch_checks(args.coherence_model, args.rovist_c, args.coherence_tokenizer)
    checks += [vrank.fetch_check(args.vrank_base)] if args.vrank_base else []
    checks += [judge.fetch_check(args.judge)] if args.judge else []
    checks += [judge.fetch_check(args.judge_vlm, vision=True)] if args.judge_vlm else []
    return checks


def run_cache(args: argparse.Namespace) -> int:
    from vst_core.config import default_cache_dir
    from vst_core.grounding.embeddings import EmbeddingCache

    path = (args.cache_dir or default_cache_dir()) / "embeddings.sqlite"
    if not path.exists():
        note(f"no embedding cache at {path}")
        return 0
    cache = EmbeddingCache(path)
    report = cache.report()
    if args.clear:
        cache.clear()
        note(f"cleared {report['entries']} embeddings ({report['bytes']} bytes) from {path}")
        return 0
    by_dim = cast(dict[int, int], report["by_dim"])
    dims = ", ".join(f"{c} of dim {d}" for d, c in by_dim.items()) or "none"
    note(
        f"{path}: {report['entries']} embeddings ({dims}), {report['bytes']} bytes "
        f"({cast(int, report['bytes']) / 1e6:.1f} MB); shared by `vst score` and the dashboard; clear with --clear"
    )
    return 0
