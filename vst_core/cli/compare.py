"""``vst compare SCORES... [--judgements FILE] [--json OUT] [--csv DIR]``: the leaderboard of every
system on every metric and the paired tests between them; the numbers the Leaderboard page shows."""

from __future__ import annotations

import argparse
from pathlib import Path

from vst_core.analysis.dhm import HUMAN_SYSTEMS
from vst_core.analysis.intervals import SMALL_N_MARK, SMALL_N_NOTE, has_interval
from vst_core.analysis.leaderboard import (
    ALPHA,
    FAMILIES,
    PERMUTATION_BUDGET,
    PERMUTATION_CAP,
    PERMUTATIONS,
    RESAMPLES,
    Leaderboard,
    cluster_name,
    fixed,
    leaderboard,
    story_ratings,
)
from vst_core.analysis.meta_eval import LAYOUTS, JudgementsError, read_judgements
from vst_core.cli.common import (
    EXIT_INPUT,
    EXIT_USAGE,
    DefaultsHelp,
    bar,
    csv_list,
    error,
    note,
    note_conflicts,
    outputs_unwritable,
    story_set_given,
    wrong_file,
)
from vst_core.data.exports import cannot_write, json_text, write_text_whole
from vst_core.data.index import IndexError_
from vst_core.data.index_store import load_index


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="which system is better: a leaderboard of every system on every metric, with paired tests",
        description=(
            "Per metric, over the image sequences every compared system wrote for (a system's stories of one "
            "sequence averaged): each system's mean with a percentile bootstrap interval over sequences, its rank "
            "by the metric's direction (lower is better for inter, intra and T; descriptors such as P are shown, "
            "not ranked) and significance clusters; for every two systems the mean difference a - b with its paired "
            "bootstrap interval, a paired approximate-randomization p-value (random sign flips of the differences, "
            "two-sided; shown with its Monte-Carlo standard error, and more permutations are drawn while --alpha "
            "is within 3 standard errors), Holm-adjusted p-values over a stated family (--holm-family: the "
            "pairs of each metric by default) and the effect size d_z = mean / sd of the differences. "
            "dHM per system when the human system is loaded, and the mean human rating per system and aspect "
            "with --judgements. The numbers are the ones the dashboard's Leaderboard page shows."
        ),
        formatter_class=DefaultsHelp,
    )
    p.add_argument("scores", type=Path, nargs="+", metavar="SCORES", help="scores JSONL files (merged per story)")
    p.add_argument("--judgements", type=Path, default=None, metavar="FILE", help="human judgements (any layout meta-eval reads)")
    p.add_argument("--judgements-format", choices=LAYOUTS, default="auto", help="layout of --judgements")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the leaderboard and the tests as JSON")
    p.add_argument("--csv", type=Path, default=None, metavar="DIR", help="write leaderboard.csv and pairwise.csv into DIR")
    p.add_argument("--latex", type=Path, default=None, metavar="FILE", help="write both tables as booktabs LaTeX")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="write both tables as Markdown")
    p.add_argument(
        "--systems",
        default=None,
        help='comma-separated systems to compare, a name holding a comma in double quotes: a,"b,c" (default: all)',
    )
    p.add_argument("--metrics", default=None, help="comma-separated metric columns (default: all present)")
    p.add_argument("--human", default=",".join(HUMAN_SYSTEMS), help="comma-separated systems whose stories are human (dHM)")
    p.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples (0: no intervals)")
    p.add_argument("--permutations", type=int, default=PERMUTATIONS, help="sign-flip permutations of the paired test")
    p.add_argument(
        "--permutation-budget",
        type=int,
        default=PERMUTATION_BUDGET,
        metavar="DRAWS",
        help="permutations every test of the run may draw together, the first ones and those added near --alpha; a "
        "test the budget stops says so and keeps the p and standard error of what it drew",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar of the permutations")
    p.add_argument("--seed", type=int, default=0, help="seed of the resamples and permutations")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level")
    p.add_argument("--alpha", type=float, default=ALPHA, help="significance level of the clusters (on Holm-adjusted p)")
    p.add_argument(
        "--holm-family",
        choices=FAMILIES,
        default="metric",
        help="which tests one Holm adjustment covers: the pairs of systems of each metric, or every test shown",
    )


def one_line(text: object) -> str:
    """A name from a file as printable characters: a control character (a line break, a terminal
    escape) is written as its escape, so the table cannot be broken or recoloured."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _num(value: float | None, width: int = 8, digits: int = 4) -> str:
    return f"{'—':>{width}}" if value is None else f"{fixed(value, digits):>{width}}"


def _interval(low: float | None, high: float | None, n: int) -> str:
    if low is not None and high is not None:
        return f"[{low:.4f}, {high:.4f}]"
    return SMALL_N_MARK if not has_interval(n) else "—"


def _dagger(n: int, value: float | None) -> str:
    """``†`` after a statistic computed on fewer sequences than an interval needs, else a space."""
    return SMALL_N_MARK if value is not None and not has_interval(n) else " "


def _short(value: float) -> str:
    """A p or its standard error in 7 characters: 4 decimals, or 1.0e-06 below 0.0001."""
    return f"{value:.4f}" if round(value, 4) >= 1e-4 or value == 0 else f"{value:.1e}"


def _p(value: float | None) -> str:
    return f"{'—':>8}" if value is None else f"{_short(value):>8}"


def _p_se(value: float | None, se: float | None) -> str:
    """p ± its Monte-Carlo standard error, 18 wide.

    >>> _p_se(0.04841, 0.00021), _p_se(1e-06, 1e-06)
    ('  0.0484 ± 0.0002 ', ' 1.0e-06 ± 1.0e-06')
    """
    if value is None:
        return f"{'—':>18}"
    return f"{_short(value):>8} ± {_short(se):<7}" if se is not None else f"{_short(value):>18}"


def print_board(board: Leaderboard) -> None:
    """The leaderboard, dHM, human ratings and the pairwise table, as plain text on stdout."""
    width = max([6, *(len(one_line(s)) for s in board.systems)])
    for metric in board.metrics:
        rows = [s for s in board.standings if s.metric == metric]
        direction = rows[0].direction
        better = {"higher": "higher is better", "lower": "lower is better"}.get(direction, "a descriptor: not ranked")
        print(f"\n{metric} ({better}) · {rows[0].n} sequences every compared system wrote for")
        print(f"  {'rank':>4} {'cluster':>7}  {'system':<{width}} {'mean':>8}  95% interval")
        for s in rows:
            rank = str(s.rank) if s.rank is not None else "—"
            interval = _interval(s.ci_low, s.ci_high, s.n)
            print(f"  {rank:>4} {cluster_name(s.cluster):>7}  {one_line(s.system):<{width}} {s.mean:>8.4f}  {interval}")
    if board.dhm:
        print("\ndHM (distance from the human stories, lower is more human-like; over each system's own stories)")
        for d in board.dhm:
            print(f"  {one_line(d.system):<{width}} N {d.n:>6}  {_num(d.dhm)}  {_interval(d.ci_low, d.ci_high, d.n)}")
    if board.ratings:
        print("\nhuman ratings (mean over each system's rated stories)")
        for r in board.ratings:
            print(
                f"  {one_line(r.system):<{width}} {one_line(r.aspect):<16} N {r.n:>6}  {r.mean:>8.4f}"
                f"  {_interval(r.ci_low, r.ci_high, r.n)}"
            )
    if board.pairs:
        named = max([14, *(len(one_line(t.metric)) for t in board.pairs)])
        print("\npairwise: d = A - B per sequence")
        print(
            f"  {'metric':<{named}} {'A':<{width}} {'B':<{width}} {'N':>6} {'mean d':>9}  {'95% interval':<22}"
            f" {'p ± MC SE':>18} {'p Holm':>8} {'d_z':>8}  better"
        )
        for t in board.pairs:
            interval = f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]" if t.ci_low is not None and t.ci_high is not None else SMALL_N_MARK
            print(
                f"  {one_line(t.metric):<{named}} {one_line(t.system_a):<{width}} {one_line(t.system_b):<{width}} {t.n:>6}"
                f" {t.mean_difference:>+9.4f}  {interval:<22} {_p_se(t.p, t.p_se)} {_p(t.p_holm)} {_num(t.effect_size, 7, 2)}{_dagger(t.n, t.effect_size)}"
                f"  {one_line(t.better) if t.better else '—'}" + ("  (stopped early)" if t.stopped_early else "")
            )
    settings = board.signature
    print(
        f"\npaired approximate randomization with {settings['permutations']:,} sign-flip permutations, "
        f"paired bootstrap with {settings['resamples']:,} resamples (seed {settings['seed']}), "
        f"p two-sided ± its Monte-Carlo standard error (permutations doubled, up to {PERMUTATION_CAP:,}, while "
        f"{settings['alpha']} was within 3 SE; most drawn: {max((t.permutations for t in board.pairs), default=0):,}); Holm over "
        + (
            (lambda k: f"the {k} pair{'s' if k != 1 else ''} of systems of each metric")(
                len(board.systems) * (len(board.systems) - 1) // 2
            )
            if settings.get("holm_family") == "metric"
            else f"all {len(board.pairs)} tests"
        )
        + f"; clusters: no two systems of one cluster differ at p_holm < {settings['alpha']}. {SMALL_N_NOTE}"
    )
    budget = board.permutation_budget
    if budget:
        limit = "no limit" if budget["budget"] is None else f"{budget['budget']:,} draws"
        print(
            f"permutation budget: {limit}, {budget['drawn']:,} drawn"
            + (
                f"; reached: {budget['stopped_tests']} test(s) stopped early, marked (stopped early)"
                if budget["reached"]
                else "; not reached"
            )
        )
    for message in board.notes:
        print(f"note: {message}")
    print(f"compare sig {settings['id']}", flush=True)


def run(args: argparse.Namespace) -> int:
    if (
        min(args.permutations, args.resamples, args.permutation_budget) < 0
        or not 0 < args.confidence < 1
        or not 0 < args.alpha < 1
    ):
        error("--permutations, --resamples and --permutation-budget must be 0 or more, --confidence and --alpha between 0 and 1")
        return EXIT_USAGE
    for path in args.scores:
        if not path.is_file():
            error(f"no scores file at {path}")
            return EXIT_INPUT
    if story_set_given(args.scores) or (args.judgements is not None and wrong_file([args.judgements], "judgements")):
        return EXIT_INPUT
    if outputs_unwritable([args.json, args.latex, args.markdown], [args.csv]):
        return EXIT_INPUT
    try:  # read once per content, stories merged per (system, story_id) and metric
        index = load_index(args.scores)
    except IndexError_ as exc:
        error(str(exc))
        return EXIT_INPUT
    for problem in index.problems:
        note(f"warning: {problem}")
    note_conflicts(index.conflicts)  # two files giving one story different values: which one is used
    table = index.table
    systems = csv_list(args.systems)
    known = set(table["system"].astype(str))
    if systems and not set(systems) <= known:
        error(f"no stories of {', '.join(sorted(set(systems) - known))} in the scores")
        return EXIT_INPUT
    if len(systems or known) < 2:
        error("the scores hold fewer than two systems: nothing to compare")
        return EXIT_INPUT
    ratings, digest = None, ""
    if args.judgements is not None:
        try:
            judgements = read_judgements(args.judgements, layout=args.judgements_format)
        except (OSError, JudgementsError) as exc:
            error(f"{args.judgements}: {exc}")
            return EXIT_INPUT
        ratings, digest = story_ratings(table, judgements), judgements.digest
        if not len(ratings):
            note(f"warning: no rated story of {args.judgements} is in the scores")
    human = tuple(h.strip() for h in args.human.split(",") if h.strip())
    board = leaderboard(
        table,
        systems=systems,
        metrics=csv_list(args.metrics),
        resamples=args.resamples,
        permutations=args.permutations,
        seed=args.seed,
        confidence=args.confidence,
        alpha=args.alpha,
        family=args.holm_family,
        human=human,
        ratings=ratings,
        scores_signatures=[index.provenance()["id"]],  # as the dashboard signs the same files
        judgements_digest=digest,
        permutation_budget=args.permutation_budget,
        progress=None if args.no_progress else lambda total: bar(total, "draw", "permutations"),
    )
    print_board(board)
    try:
        if args.json:
            write_text_whole(args.json, json_text(board.to_json(), ensure_ascii=False, indent=1))  # NaN -> null
            note(f"wrote {args.json}")
        if args.csv:  # the Leaderboard page's files: its words, cluster letters, the signature's id on every row
            from vst_core.viz.report import leaderboard_csv

            for name, text in leaderboard_csv(board).items():
                write_text_whole(args.csv / name, text)
            note(f"wrote leaderboard.csv and pairwise.csv in {args.csv}")
        if args.latex or args.markdown:
            from vst_core.viz.report import leaderboard_exports

            exports = leaderboard_exports(board)
            for path, name in ((args.latex, "leaderboard.tex"), (args.markdown, "leaderboard.md")):
                if path:
                    write_text_whole(path, exports[name])
                    note(f"wrote {path}")
    except OSError as exc:
        error(cannot_write(exc))
        return EXIT_INPUT
    return 0
