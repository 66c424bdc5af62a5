"""The parity table (docs/parity.md), generated from the parity tests.

Runs every test marked ``parity`` (each records what it compared and the figure it measured),
then prints the Markdown table, or with ``--write`` replaces the block between the
``<!-- parity-table -->`` markers of docs/parity.md. A failing parity test fails the command and
changes nothing.

    python benchmarks/parity_table.py --write
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
BEGIN, END = "<!-- parity-table -->", "<!-- /parity-table -->"


def collect(out: Path, extra: list[str]) -> list[dict[str, str]]:
    """Run the parity tests with rows written to ``out``; the rows in test order."""
    env = {**os.environ, "VST_PARITY_OUT": str(out)}
    cmd = [sys.executable, "-m", "pytest", "-m", "parity", "-q", "-p", "no:cacheprovider", *extra]
    done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"parity tests failed (exit {done.returncode}); the table is not written")
    rows: list[dict[str, str]] = []
    for path in sorted(out.glob("*.json")):
        rows.extend(json.loads(path.read_text(encoding="utf-8")))
    return rows


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict[str, str]]) -> str:
    """The Markdown table: metric, reference, what was compared, figure, how to rerun."""
    lines = [
        "| metric | reference | compared | figure | rerun |",
        "|---|---|---|---|---|",
    ]
    order = sorted(rows, key=lambda r: (r["metric"], r["reference"], r["test"]))
    for r in order:
        rerun = f"`python -m pytest '{r['test']}'`"
        lines.append(f"| {cell(r['metric'])} | {cell(r['reference'])} | {cell(r['compared'])} | {cell(r['figure'])} | {rerun} |")
    return "\n".join(lines)


def write(readme: Path, table: str) -> None:
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="replace the table in docs/parity.md")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (e.g. a file)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vst-parity-") as tmp:
        table = render(collect(Path(tmp), args.pytest_args))
    if args.write:
        write(ROOT / "docs" / "parity.md", table)
        print(f"docs/parity.md parity table: {table.count(chr(10)) - 1} rows")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
