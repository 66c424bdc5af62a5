"""The dashboard at scale: for generated scores files of 1,000 / 10,000 / 100,000 stories (two
systems sharing story ids, full evidence, ~5 KB a story; see :mod:`vst_core.scoring.synthetic`) and,
with ``--files``, any real scores files (e.g. the dHM release: computed NR + imported G/C/R),
print one JSON line per set with

* ``cold_load_s``: indexing the files with an empty index folder (digest, parse, Parquet);
* ``warm_load_s``: the same files again in a new process-like state (the stored index read back);
* ``pages``: per page, the server-side script time of its first run and of a rerun after a widget
  change (Streamlit's AppTest runs the app's script as the server does; browser time not included);
* ``inspect_story_s``: Inspect opened on one story by its link (``?story=ID&system=SYS``);
* ``peak_rss_mb``: the peak resident memory of the process (the server's Python, with torch and
  streamlit imported).

Each set runs in its own process, so memory and caches do not carry over.

``--release`` adds a release-like numbers-only set (:func:`write_release_like`: 101,100 stories of
five systems sharing ids, one imported line per metric as ``vst import-scores`` writes the dHM
release's G/C/R files, 300,140 lines, about 170 MB); ``--cold-only`` prints only the cold and warm
loads of each set (``cold_load_s``: the best of ``--repeat`` cold loads, each with an empty index
folder, and every one of them in ``cold_loads_s``), without the pages.

    python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--release] [--cold-only] [--files A.jsonl B.jsonl] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's vst_core, installed or not (the index's worker processes inherit it)
PAGES = {
    "inspect": "app_pages/inspect.py",
    "dataset": "app_pages/dataset.py",
    "agreement": "app_pages/agreement.py",
    "systems": "app_pages/systems.py",
    "human_likeness": "app_pages/human_likeness.py",
}


def _app(page: str, files: list[str], **state: Any) -> Any:
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).switch_page(PAGES[page])
    app.session_state["source"] = "Scores JSONL (no model needed)"
    app.session_state["scores_path"] = ";".join(files)
    for key, value in state.items():
        app.session_state[key] = value
    return app


def _timed(run: Any) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _judgements(table: Any, folder: Path, n: int = 2000) -> bytes:
    """Made-up wide ratings (story_id, system, overall) of ``n`` stories, for the Agreement page."""
    import numpy as np

    part = table.iloc[:: max(1, len(table) // n)].head(n)
    rng = np.random.default_rng(0)
    lines = ["story_id,system,overall"] + [
        f"{s},{y},{v:.2f}" for s, y, v in zip(part["story"], part["system"], rng.uniform(1, 5, len(part)), strict=True)
    ]
    return ("\n".join(lines) + "\n").encode()


def write_release_like(path: Path, stories: int = 101_100, lines: int = 300_140) -> int:
    """A numbers-only scores file shaped like the dHM release once imported: ``stories`` stories
    (five systems sharing each id), one imported record per metric and story (NR, then GROOVIST,
    then RoViST-C; the first stories' coherence lines left out to make ``lines`` lines); the values
    are a function of the story's place. Returns the number of lines written."""
    import hashlib

    import orjson

    from vst_core.data.importing import metric_record
    from vst_core.hashing import json_digest
    from vst_core.records import StoryScores

    systems = ("human", "llava", "arel", "glac", "gpt")
    left_out = 3 * stories - lines
    written = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for m_no, metric in enumerate(("redundancy", "grounding", "coherence")):
            source = f"dhm_release_{metric[0].upper()}.csv"
            digest = hashlib.sha256(source.encode()).hexdigest()
            payload = {
                "imported": {"file": source, "sha256": digest, "variants": {metric: "dHM release"}, "sequence_id": "story_id"}
            }
            signature = {"id": json_digest(payload, 12), **payload}
            note = f"imported from {source} (sha256 {digest[:12]}): the score only, no evidence"
            for k in range(stories):
                if m_no == 2 and k < left_out:
                    continue
                sid = str(40000 + k // len(systems))
                value = ((k * 7919 + m_no * 104729) % 100_000) / 100_000
                record = StoryScores(sid, sid, systems[k % len(systems)], (), metrics={metric: metric_record(metric, value, note)},
                                     signature=signature)  # fmt: skip
                fh.write(orjson.dumps(record.to_json()) + b"\n")
                written += 1
    return written


def cold_loads(files: list[str], repeat: int) -> dict[str, Any]:
    """The cold load (an empty index folder each time) ``repeat`` times and the warm load after."""
    from vst_core.data.index_store import load_index

    times = []
    for _ in range(repeat):
        folder = Path(tempfile.mkdtemp(prefix="vst-bench-index-"))
        start = time.perf_counter()
        index = load_index(files, folder=folder)
        times.append(round(time.perf_counter() - start, 3))
    start = time.perf_counter()
    load_index(files, folder=folder)
    return {
        "cold_load_s": min(times),
        "cold_loads_s": times,
        "warm_load_s": round(time.perf_counter() - start, 3),
        "stories": len(index),
        "lines": len(index.sources),
        "bytes": sum(Path(f).stat().st_size for f in files),
        "cpu_s": round(
            sum(
                resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
                for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
            ),
            1,
        ),  # fmt: skip
    }


def measure(files: list[str], label: str) -> dict[str, Any]:
    """Every figure of the module's list for one set of scores files (run in a fresh process)."""
    from vst_core.data.index_store import load_index

    out: dict[str, Any] = {"set": label, "files": [Path(f).name for f in files]}
    from streamlit.testing.v1 import AppTest

    start = time.perf_counter()  # the server's first run imports the app (torch among it): not a page's cost
    AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    out["server_first_run_s"] = round(time.perf_counter() - start, 3)
    out["bytes"] = sum(Path(f).stat().st_size for f in files)
    start = time.perf_counter()
    index = load_index(files)
    out["cold_load_s"] = round(time.perf_counter() - start, 3)
    out["stories"] = len(index)
    start = time.perf_counter()
    load_index(files)
    out["warm_load_s"] = round(time.perf_counter() - start, 3)
    table = index.table
    judgements = _judgements(table, Path(tempfile.mkdtemp()))
    llava = table[table["system"] != table["system"].iloc[0]]
    row = llava.iloc[len(llava) // 2] if len(llava) else table.iloc[len(table) // 2]
    pages: dict[str, dict[str, float]] = {}

    dataset = _app("dataset", files)
    first = _timed(dataset.run)
    change = _timed(lambda: dataset.selectbox(key="sort").set_value("NR").run())
    page2 = _timed(lambda: dataset.number_input(key="page").set_value(2).run())
    search = _timed(lambda: dataset.text_input(key="search").set_value("dog").run())
    pages["dataset"] = {"first_s": first, "sort_s": change, "page_s": page2, "search_s": search}

    inspect = _app("inspect", files)
    inspect.query_params["story"] = str(row["story"])
    inspect.query_params["system"] = str(row["system"])
    first = _timed(inspect.run)
    out["inspect_story_s"] = round(first, 3)
    widget = inspect.text_input(key="sequence") if len(index.table["sequence"].unique()) > 2000 else None
    other = str(table["sequence"].iloc[-1])
    if widget is not None:
        change = _timed(lambda: widget.set_value(other).run())
    else:
        change = _timed(lambda: inspect.selectbox(key="sequence").set_value(other).run())
    pages["inspect"] = {"first_s": first, "sequence_s": change}

    agreement = _app("agreement", files)
    agreement.run()
    agreement.file_uploader(key="judgements_upload").set_value(("human.csv", judgements, "text/csv"))
    agreement.session_state["resamples"] = 200
    agreement.session_state["baselines"] = False
    first = _timed(agreement.run)
    metrics = agreement.multiselect(key="meta_metrics")
    change = _timed(lambda: metrics.set_value(metrics.value[:1]).run()) if metrics.value else float("nan")
    pages["agreement"] = {"first_s": first, "metrics_s": change, "judged": 2000}

    systems = _app("systems", files)
    first = _timed(systems.run)
    change = _timed(lambda: systems.selectbox(key="system_metric").set_value("GROOVIST").run())
    pages["systems"] = {"first_s": first, "metric_s": change}

    human = _app("human_likeness", files, dhm_human=[str(table["system"].iloc[0])], dhm_resamples=1000)
    first = _timed(human.run)
    change = _timed(lambda: human.radio(key="dhm_pairing").set_value("story").run())
    pages["human_likeness"] = {"first_s": first, "pairing_s": change}
    for app in (dataset, inspect, agreement, systems, human):
        if app.exception:
            out.setdefault("exceptions", []).append(str(app.exception[0].value)[:300])
    out["pages"] = {p: {k: round(v, 3) for k, v in f.items()} for p, f in pages.items()}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--files", nargs="*", default=[], help="real scores files measured together as one set")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "vst-scale", help="where generated files go")
    parser.add_argument("--release", action="store_true", help="add the release-like numbers-only set (see the module)")
    parser.add_argument("--cold-only", action="store_true", help="only the cold and warm loads, no pages")
    parser.add_argument("--repeat", type=int, default=3, help="cold loads per set with --cold-only (the best is cold_load_s)")
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:  # one set, in this fresh process
        if args.cold_only:
            figures = {"set": args.worker[0], **cold_loads(args.worker[1:], args.repeat)}
        else:
            figures = measure(args.worker[1:], args.worker[0])
        print(json.dumps(figures), flush=True)
        return 0
    from vst_core.scoring.synthetic import write_scores_file

    sets: list[tuple[str, list[str]]] = []
    for n in args.sizes:
        path = args.data / f"scores_{n}.jsonl"
        if not path.is_file():
            print(f"writing {n:,} stories to {path}…", file=sys.stderr)
            write_scores_file(path, n, systems=("reference", "llava"))
        sets.append((f"generated {n}", [str(path)]))
    if args.release:
        path = args.data / "release_like.jsonl"
        if not path.is_file():
            print(f"writing the release-like set to {path}…", file=sys.stderr)
            write_release_like(path)
        sets.append(("release-like (numbers only)", [str(path)]))
    if args.files:
        sets.append(("files", [str(Path(f).resolve()) for f in args.files]))
    for label, files in sets:
        env = {
            **os.environ,
            "VST_CACHE_DIR": tempfile.mkdtemp(prefix="vst-bench-scale-"),  # an empty index folder: a cold first load
            "VST_DATA_DIRS": ":".join(sorted({str(Path(f).parent) for f in files})),
            "HF_HUB_OFFLINE": "1",
        }
        print(f"{label}…", file=sys.stderr)
        extra = ["--cold-only", "--repeat", str(args.repeat)] if args.cold_only else []
        done = subprocess.run(
            [sys.executable, __file__, *extra, "--worker", label, *files], env=env, capture_output=True, text=True, cwd=ROOT
        )
        line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode != 0 or not line:
            print(json.dumps({"set": label, "error": done.stderr[-2000:]}))
            continue
        figures = json.loads(line)
        figures["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
        figures["load_average"] = round(os.getloadavg()[0], 2)  # other work on the machine slows every figure
        print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
