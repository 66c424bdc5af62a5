"""``vst fetch-models`` (check, download and locate the default weights) and ``vst cache`` (the
embedding cache)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import cast

from vst_core.cli.common import EXIT_WEIGHTS, DefaultsHelp, note
from vst_core.contract import FetchPlan
from vst_core.images.options import clip_arguments, clip_from_args
from vst_core.models.hub import ModelLoadError


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
    clip_arguments(fetch, ("clip_model", "clip_pretrained"))
    fetch.add_argument("--detector", action="store_true", help="also fetch torchvision's Faster R-CNN weights")
    _metric_arguments(fetch)

    cache = sub.add_parser("cache", help="report or clear the embedding cache")
    cache.add_argument(
        "--cache-dir", type=Path, default=None, help="cache folder (default $VST_CACHE_DIR, else ~/.cache/vst-eval)"
    )
    cache.add_argument("--clear", action="store_true", help="delete every cached embedding")


def _metric_arguments(fetch: argparse.ArgumentParser) -> None:
    """Each metric's own options of ``fetch-models`` (its spec's ``fetch``); a flag another metric or
    this command already has is left off with a note (the rest keep working)."""
    from vst_core.contract import registry

    for spec in registry().specs.values():
        for a in spec.tools.fetch.arguments if spec.tools.fetch is not None else ():
            words = a.help.replace("%", "%%")  # argparse formats help with %: a metric's text is shown as written
            try:
                if a.switch:
                    fetch.add_argument(a.flag, action="store_true", help=words)
                elif a.const is not None:
                    fetch.add_argument(a.flag, nargs="?", const=a.const, default=a.default, metavar=a.metavar or None, help=words)
                else:
                    fetch.add_argument(a.flag, default=a.default, metavar=a.metavar or None, help=words)
            except argparse.ArgumentError:
                note(f"metric {spec.name!r}: fetch-models option {a.flag} is taken; left off")


def run_fetch(args: argparse.Namespace) -> int:
    """Model by model: already cached (and loads), downloaded now, or missing; each is built once and
    checked by scoring one input. Exit 4 when any model is missing or does not load."""
    from vst_core.models.fetch import fetch_models

    image = clip_from_args(args)
    report = fetch_models(
        clip_arch=image.clip_model,
        clip_pretrained=image.clip_pretrained or "",
        detector=args.detector,
        more=_metric_plans(args),
        log=note,
    )
    print(report.summary())  # the result: what is cached and where, on stdout
    return 0 if report.ok else EXIT_WEIGHTS


def _metric_plans(args: argparse.Namespace) -> list[FetchPlan]:
    """What each metric's package checks of its own models, given its options' values (RoViST-C's
    next-sentence model always; the others when asked for)."""
    from vst_core.contract import registry

    plans = []
    for spec in registry().specs.values():
        if spec.tools.fetch is not None:
            values = {a.dest: getattr(args, a.dest, None) for a in spec.tools.fetch.arguments}
            try:
                plans.append(spec.tools.fetch.plan(values))
            except Exception as exc:  # one metric's broken plan is its broken line (exit 4); every other model is checked
                plans.append(FetchPlan(((f"metric {spec.name!r}'s models", True, _failed(exc)),)))
    return plans


def _failed(exc: Exception) -> Callable[[], str]:
    """A check that fails with why a metric's models could not be planned."""

    def check() -> str:
        raise ModelLoadError(f"its models could not be planned: {type(exc).__name__}: {exc}")

    return check


def run_cache(args: argparse.Namespace) -> int:
    from vst_core.config import default_cache_dir
    from vst_core.images.embeddings import EmbeddingCache

    path = (args.cache_dir or default_cache_dir()) / "embeddings.sqlite"
    if not path.exists():
        print(f"no embedding cache at {path}")
        return 0
    cache = EmbeddingCache(path)
    report = cache.report()
    if args.clear:
        cache.clear()
        print(f"cleared {report['entries']} embeddings ({report['bytes']} bytes) from {path}")
        return 0
    by_dim = cast(dict[int, int], report["by_dim"])
    dims = ", ".join(f"{c} of dim {d}" for d, c in by_dim.items()) or "none"
    print(
        f"{path}: {report['entries']} embeddings ({dims}), {report['bytes']} bytes "
        f"({cast(int, report['bytes']) / 1e6:.1f} MB); shared by `vst score` and the dashboard; clear with --clear"
    )
    return 0
