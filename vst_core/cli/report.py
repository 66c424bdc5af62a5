"""``vst report SCORES... --out report.html``: one self-contained HTML report (tables, figures drawn
as inline SVG, or plotly's interactive ones with --interactive, story cards with their evidence and
thumbnails, the signature) that opens offline; with ``--latex`` / ``--markdown`` the tables for a paper, with ``--figures`` the
figures as SVG and PNG."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vst_core.analysis.meta_eval import METHODS, JudgementsError, MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.versus import VersusSettings, versus_correlations
from vst_core.cli.common import EXIT_INPUT, DefaultsHelp, error, note, outputs_unwritable, story_set_given, wrong_file
from vst_core.data import load_records
from vst_core.data.exports import cannot_write, write_text_whole
from vst_core.data.merge import merge_records
from vst_core.records import StoryScores
from vst_core.viz.report import build_report, once, report_exports, write_figure
from vst_core.viz.tables import scores_table


def card_records(records: Sequence[StoryScores], k: int, how: str = "sequences") -> list[StoryScores]:
    """The stories that get cards: ``file``: the first ``k``; ``sequences``: every system's story
    of the first image sequences in file order, until ``k`` (so one sequence's stories sit side by
    side and every system is seen).

    >>> rs = [StoryScores(s, q, m, ("A.",)) for s, q, m in [("1", "a", "x"), ("2", "b", "x"), ("3", "a", "y")]]
    >>> [r.story_id for r in card_records(rs, 2)], [r.story_id for r in card_records(rs, 2, "file")]
    (['1', '3'], ['1', '2'])
    """
    if how == "file":
        return list(records[:k])
    by_sequence: dict[str, list[StoryScores]] = {}
    for r in records:
        by_sequence.setdefault(r.sequence_id, []).append(r)
    return [r for group in by_sequence.values() for r in group][:k]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (tables, figures, story cards, signature); LaTeX/Markdown tables; SVG/PNG figures",
        description=(
            "Write one HTML file that opens offline and loads nothing from outside it: per-system means with "
            "bootstrap intervals, a box plot per metric (drawn as SVG in the file; --interactive: plotly's), with --judgements the "
            "agreement with people and the metric-vs-metric matrices, story cards with their evidence and "
            "thumbnails embedded, and the signature."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("scores", type=Path, nargs="+", metavar="SCORES", help="scores JSONL files (merged per story)")
    p.add_argument("--out", type=Path, required=True, help="the HTML report to write")
    p.add_argument("--title", default="Visual story evaluation report", help="the report's title")
    p.add_argument("--judgements", type=Path, default=None, help="human judgements (any layout meta-eval reads)")
    p.add_argument("--judgements-format", default="auto", help="layout of --judgements (see meta-eval)")
    p.add_argument("--images", type=Path, default=None, help="folder the stories' image paths are relative to (thumbnails)")
    p.add_argument("--stories", type=int, default=8, help="story cards to include")
    p.add_argument(
        "--cards",
        choices=("sequences", "file"),
        default="sequences",
        help="which stories get cards: every system's story of the first image sequences (side by side), or the "
        "first stories of the files",
    )
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the intervals")
    p.add_argument("--permutations", type=int, default=1000, help="permutations of the metric-vs-metric tests")
    p.add_argument("--method", default="spearman", choices=tuple(METHODS), help="correlation of the agreement table")
    p.add_argument("--no-baselines", action="store_true", help="leave the BLEU/ROUGE-L/CIDEr baselines out of the agreement")
    p.add_argument("--latex", type=Path, default=None, help="also write the tables as LaTeX (booktabs) to this file")
    p.add_argument("--markdown", type=Path, default=None, help="also write the tables as Markdown to this file")
    p.add_argument("--figures", type=Path, default=None, metavar="DIR", help="also write every figure as SVG and PNG into DIR")
    p.add_argument(
        "--interactive",
        action="store_true",
        help="plotly's interactive figures (zoom, hover) instead of static SVG: plotly.js, 4.8 MB, inline in the report",
    )


def _records(paths: list[Path]) -> tuple[list[StoryScores], list[str]]:
    found: list[tuple[StoryScores, str]] = []
    warnings = []
    for path in paths:
        records, problems = load_records(path)
        warnings += [str(p) for p in problems]
        found += [(r, path.name) for r in records]
    merged, conflicts = merge_records(found)
    return merged, warnings + [str(c) for c in conflicts]


def run(args: argparse.Namespace) -> int:
    missing = [str(p) for p in args.scores if not p.is_file()]
    if missing:
        error(f"no scores file at {', '.join(missing)}")
        return EXIT_INPUT
    if story_set_given(args.scores) or (args.judgements is not None and wrong_file([args.judgements], "judgements")):
        return EXIT_INPUT
    if outputs_unwritable([args.out, args.latex, args.markdown], [args.figures]):  # before anything is written
        return EXIT_INPUT
    records, warnings = _records(args.scores)
    for warning in warnings[:5]:
        note(f"warning: {warning}")
    if not records:
        error("the scores files hold no score records")
        return EXIT_INPUT
    metrics = list(dict.fromkeys(m for r in records for m in r.metrics))
    table = scores_table(records, metrics)
    signatures = {str(r.signature.get("id", "")): dict(r.signature) for r in records if r.signature}
    signature: dict[str, Any] = {"scores": signatures}
    description = f"scores sig {'+'.join(sorted(signatures)) or 'none'} · {len(records):,} stories from {', '.join(p.name for p in args.scores)}"
    meta = versus = None
    if args.judgements is not None:
        try:
            judgements = read_judgements(args.judgements, layout=args.judgements_format)
        except (OSError, JudgementsError) as exc:
            error(f"{args.judgements}: {exc}")
            return EXIT_INPUT
        settings = MetaSettings(resamples=args.resamples, baselines=not args.no_baselines)
        meta = run_meta_eval(records, judgements, settings)
        versus_settings = VersusSettings(permutations=max(args.permutations, 1))
        versus = versus_correlations(meta.data, meta.metrics, meta.aspects, versus_settings) if args.permutations > 0 else None
        signature["meta_eval"] = meta.signature
        signature["metric_vs_metric"] = versus_settings.describe()
        description = once(f"{description} · {meta.description}")  # both name the scores' signature: once
    html, figures, tables = build_report(
        args.title,
        table,
        card_records(records, max(args.stories, 0), args.cards),
        signature,
        description,
        metrics=metrics,
        meta=meta,
        versus=versus,
        images_root=args.images,
        resamples=args.resamples,
        method=args.method,
        interactive=args.interactive,
    )
    if args.images is None:
        note("no --images: the story cards have no thumbnails (give the folder the stories' image paths are relative to)")
    exports = report_exports(tables, description)
    try:
        write_text_whole(args.out, html)
        note(
            f"wrote {args.out} ({len(html.encode()) / 1e6:.1f} MB, {len(figures)} figures, {min(args.stories, len(records))} story cards)"
        )
        if args.latex:
            write_text_whole(args.latex, exports["tex"])
            note(f"wrote {args.latex}")
        if args.markdown:
            write_text_whole(args.markdown, exports["md"])
            note(f"wrote {args.markdown}")
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    if args.figures:
        try:
            args.figures.mkdir(parents=True, exist_ok=True)
            written = [p for name, fig in figures.items() for p in write_figure(fig, args.figures / name)]
        except RuntimeError as exc:
            error(str(exc))
            return EXIT_INPUT
        except OSError as exc:
            error(f"cannot write the figures in {args.figures}: {exc.strerror or exc}")
            return EXIT_INPUT
        note(f"wrote {len(written)} figure files in {args.figures}")
    return 0
