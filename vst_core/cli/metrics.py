"""``vst metrics``: the metrics this installation knows (built-in and installed packages), what
each needs, its numbers and which way is better, the module that declares it; and the installed
metric packages that were left out, with the reason. ``--json`` for scripts. Exit 0, or 7 when a
package was left out (so a CI that installs one notices).

>>> [m["name"] for m in listing()["metrics"]][:3]
['redundancy', 'coherence', 'grounding']
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from vst_core.cli.common import EXIT_PLUGIN, DefaultsHelp
from vst_core.config import Settings
from vst_core.contract import MetricSpec, registry


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "metrics",
        help="list the metrics this installation knows, and any installed metric package left out",
        description="The metrics vst score can compute and the dashboard can show: built-in ones and those other "
        "packages add through the vst_eval.metrics entry-point group.",
        formatter_class=DefaultsHelp,
    )
    p.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    p.add_argument("--markdown", action="store_true", help="a Markdown table (the README's, for the built-in metrics) instead")


def listing() -> dict[str, Any]:
    """The registry as JSON data: each metric's name, title, module, version, needs, settings,
    fields (column, attribute, direction, whether meta-evaluation ranks it) and its own options (the
    setting, its ``vst score`` flag, kind, default, whether it is signed), and the problems."""
    reg = registry()

    def signed_settings(spec: MetricSpec) -> list[str]:  # what a run of the metric alone signs, by its rules
        if spec.computing.score is None:  # only read from files
            return list(spec.signing.settings)
        return [k for k in Settings(metrics=(spec.name,)).as_dict() if k != "metrics"]

    return {
        "metrics": [
            {
                "name": s.name,
                "title": s.title,
                "description": s.description,
                "module": s.module,
                "version": s.signing.version,
                "installed": s in reg.plugins,
                "computable": s.computing.score is not None,
                "needs": sorted(s.computing.needs),
                "settings": signed_settings(s),
                "card": s.card,
                "fields": [
                    {"column": f.column, "attr": f.attr, "direction": f.direction, "report": f.report, "help": f.help}
                    for f in s.fields
                ],
                "options": [
                    {
                        "setting": o.setting,
                        "flag": o.cli_flag,
                        "kind": o.kind,
                        "default": o.default,
                        "signed": bool(o.signed),
                        "signed_in_every_run": o.signed == "always",
                        "help": o.help,
                    }
                    for o in s.signing.options
                ],
            }
            for s in reg.specs.values()
        ],
        "problems": list(reg.problems),
    }


#: What each need means to a user, in the order shown.
_NEEDS = {
    "images": "the photos",
    "clip": "CLIP",
    "idf": "an idf table",
    "sequence": "the other stories of its sequence",
    "model": "its own model",
}
_ARROWS = {"higher": " ↑", "lower": " ↓", "none": ""}


def markdown_table(specs: Sequence[MetricSpec]) -> str:
    """The metrics as a Markdown table: name (``--metrics``), what it measures, its numbers with
    which way is better, what it needs and its card; every text escaped (an installed metric's
    description is the package's, not ours).

    >>> print(markdown_table([registry().spec("redundancy")]).splitlines()[2])
    | RoViST-NR (`redundancy`) | RoViST-NR non-redundancy: 1 - mean(inter-, intra-sentence Jaccard), with repeated spans | NR ↑, inter ↓, intra ↓ | the text only | [rovist\\_nr.md](docs/metrics/rovist_nr.md) |
    """
    from vst_core.viz.report import markdown_text

    def code(text: str) -> str:
        return f"`{text}`" if "`" not in text and text.isprintable() else markdown_text(text)

    lines = ["| metric (`--metrics`) | measures | numbers (↑ higher is better) | needs | card |", "|---|---|---|---|---|"]
    for spec in specs:
        numbers = ", ".join(markdown_text(f.column) + _ARROWS[f.direction] for f in spec.fields)
        needs = ", ".join(text for need, text in _NEEDS.items() if need in spec.computing.needs) or "the text only"
        card = f"[{markdown_text(spec.card.rsplit('/', 1)[-1])}]({spec.card})" if spec.card and "(" not in spec.card else ""
        name = f"{markdown_text(spec.title)} ({code(spec.name)})"
        lines.append(f"| {name} | {markdown_text(spec.description)} | {numbers} | {needs} | {card} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    data = listing()
    if args.markdown:
        print(markdown_table(list(registry().specs.values())), end="")
    elif args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for m in data["metrics"]:
            needs = ", ".join(m["needs"]) or "text only"
            origin = f"{m['module']} {m['version']}".strip() if m["installed"] else m["module"]
            print(f"{m['name']:<16} {m['title']}  [{needs}]  {origin}")
            for f in m["fields"]:
                ranked = f"  (ranked as {f['report']!r})" if f["report"] else ""
                print(f"    {f['column']:<22} {f['direction']:<6} {f['help']}{ranked}")
            for o in m["options"]:
                print(f"    {o['flag']:<29} {o['help']}")
    for problem in data["problems"]:
        print(f"warning: {problem}", file=sys.stderr)
    return EXIT_PLUGIN if data["problems"] else 0
