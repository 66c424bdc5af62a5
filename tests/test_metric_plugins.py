"""Metrics are modules: the built-in ones declare everything in one place, and another package adds
one through the ``vst_eval.metrics`` entry-point group with no change to the product.

The slow test installs the example package (``examples/vst-toy-metric``) with pip into a temporary
folder and runs the CLI and the dashboard's pages in processes that see it, as a user who
installed it would."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from conftest import APP, PAGES, ROOT, SAMPLE

from vst_core import metric_spec
from vst_core.config import Settings
from vst_core.metric_spec import BUILTIN, MetricField, MetricSpec, registry

EXAMPLE = ROOT / "examples" / "vst-toy-metric"


def test_vst_metrics_lists_the_builtin_metrics_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import main

    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("redundancy       RoViST-NR  [text only]  vst_core.metric_modules.rovist_nr")
    assert "    inter                  lower  repetition across sentences" in out


def test_every_builtin_metric_is_one_module_with_its_card_fields_and_settings() -> None:
    reg = registry()
    assert [s.module for s in reg.specs.values()][: len(BUILTIN)] == list(BUILTIN)
    settings = {f.name for f in dataclasses.fields(Settings)}
    columns = [f.column for f in reg.fields]
    assert len(columns) == len(set(columns))
    for spec in reg.specs.values():
        if spec.module.startswith("vst_core."):
            assert (ROOT / spec.card).is_file(), spec.card
            assert spec.score is not None and spec.description
        assert all(f.metric == spec.name and f.attr in spec.record.__dataclass_fields__ for f in spec.fields)
        assert set(spec.settings) <= settings, set(spec.settings) - settings
        assert spec.main_value in spec.record.__dataclass_fields__


def _module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Entry points of this test's choosing; the registry is rebuilt from them, and again after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    monkeypatch.undo()
    metric_spec.reload()


GOOD = """
from dataclasses import dataclass
from vst_core.metric_spec import MetricField, MetricSpec

@dataclass(frozen=True)
class Count:
    score: float | None
    words: int

def score(stories, run):
    return {s.key: Count(float(len(s.text.split())), len(s.text.split())) for s in stories}

METRIC = MetricSpec("word_count", "Words", "number of words", Count,
                    (MetricField("words n", "word_count", "score", "words", direction="none"),), score=score)
"""


def test_a_broken_or_clashing_plugin_is_left_out_with_its_reason(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(plugins, "good_metric", GOOD)
    _module(plugins, "broken_metric", "raise RuntimeError('no weights here')\n")
    _module(
        plugins,
        "clashing_metric",
        GOOD.replace('"word_count", "Words"', '"redundancy", "Words"').replace('"word_count", "score"', '"redundancy", "score"'),
    )
    _module(plugins, "column_metric", GOOD.replace('"word_count"', '"other_count"').replace('"words n"', '"NR"'))
    _module(plugins, "not_a_spec", "METRIC = 3\n")
    points = [
        metadata.EntryPoint(name, value, metric_spec.ENTRY_POINT_GROUP)
        for name, value in [
            ("a", "good_metric:METRIC"),
            ("b", "broken_metric:METRIC"),
            ("c", "clashing_metric:METRIC"),
            ("d", "column_metric:METRIC"),
            ("e", "not_a_spec:METRIC"),
        ]
    ]
    monkeypatch.setattr(
        metric_spec.metadata, "entry_points", lambda group: points if group == metric_spec.ENTRY_POINT_GROUP else []
    )
    reg = metric_spec.reload()
    assert "word_count" in reg.specs and reg.spec("word_count").module == "good_metric"
    assert reg.spec("redundancy").module == "vst_core.metric_modules.rovist_nr"  # a clash never replaces a built-in
    reasons = "\n".join(reg.problems)
    assert len(reg.problems) == 4, reasons
    assert "no weights here" in reasons and "name 'redundancy' is taken" in reasons
    assert "column 'NR' is another metric's" in reasons and "not a MetricSpec" in reasons
    from vst_core.cli import main

    assert main(["metrics", "--json"]) == 7  # a package left out: scripts notice
    listed = json.loads(capsys.readouterr().out)
    assert listed["problems"] == list(reg.problems) and "word_count" in [m["name"] for m in listed["metrics"]]
    assert {"column": "words n", "attr": "score", "direction": "none", "report": None, "help": "words"} in next(
        m["fields"] for m in listed["metrics"] if m["name"] == "word_count"
    )
    # the good plugin is a metric like the others: listed, read back, in the table's registry
    from vst_core.config import parse_metrics
    from vst_core.data import read_story_set
    from vst_core.records import FIELDS, read_record
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    assert parse_metrics("redundancy,word_count") == ("redundancy", "word_count")
    assert "words n" in [f.column for f in FIELDS]
    stories = read_story_set(SAMPLE).stories[:2]
    settings = Settings(metrics=("redundancy", "word_count"))
    records = score_batch(stories, settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert [r.metrics["word_count"].words for r in records] == [len(s.text.split()) for s in stories]  # type: ignore[attr-defined]
    back, problems = read_record(json.loads(json.dumps(records[0].to_json())))
    assert not problems and back is not None and back.metrics["word_count"] == records[0].metrics["word_count"]


def test_a_plugin_whose_hook_fails_gives_each_story_the_reason_and_the_others_are_written(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(plugins, "failing_metric", GOOD.replace("return {s.key", "raise OSError('disk gone'); return {s.key"))
    point = metadata.EntryPoint("f", "failing_metric:METRIC", metric_spec.ENTRY_POINT_GROUP)
    monkeypatch.setattr(metric_spec.metadata, "entry_points", lambda group: [point])
    metric_spec.reload()
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    settings = Settings(metrics=("redundancy", "word_count"))
    records = score_batch(read_story_set(SAMPLE).stories[:2], settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert all(r.errors["word_count"] == "OSError: disk gone" and r.redundancy is not None for r in records)


BAD = """
import math
from dataclasses import dataclass
from vst_core.metric_spec import MetricField, MetricSpec

@dataclass(frozen=True)
class Odd:
    score: float | None

def score(stories, run):
    out = {}
    for k, s in enumerate(stories):
        out[s.key] = [Odd(math.nan), "not a record", Odd(0.5)][k % 3] if k % 3 != 1 else 7
    return out

def cards(record):
    raise RuntimeError("drawing broke")

def evidence(record):
    raise KeyError("no evidence here")

METRIC = MetricSpec("odd", "Odd", "", Odd, (MetricField("odd", "odd", "score", "", report="odd"),),
                    score=score, cards=cards, evidence=evidence)
"""


def test_an_installed_metric_that_returns_garbage_or_cannot_draw_breaks_neither_the_file_nor_the_page(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(plugins, "odd_metric", BAD)
    point = metadata.EntryPoint("o", "odd_metric:METRIC", metric_spec.ENTRY_POINT_GROUP)
    monkeypatch.setattr(metric_spec.metadata, "entry_points", lambda group: [point])
    metric_spec.reload()
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch
    from vst_core.viz.story import evidence_blocks, story_cards

    settings = Settings(metrics=("redundancy", "odd"))
    records = score_batch(read_story_set(SAMPLE).stories[:3], settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert "cannot be written as JSON" in records[0].errors["odd"]  # NaN: JSON has none
    assert records[1].errors["odd"] == "TypeError: odd gave a int, not a Odd"
    assert records[2].metrics["odd"].score == 0.5  # type: ignore[attr-defined]
    assert all(json.dumps(r.to_json(), allow_nan=False) for r in records)  # every line can be written
    cards = story_cards(records[2], settings.metrics)
    assert cards[-1][0] == "Odd" and cards[-1][1] == "error" and "drawing broke" in cards[-1][2]
    assert evidence_blocks(records[2]) == [("Odd: evidence not drawn", "KeyError: &#x27;no evidence here&#x27;")]


SCRIPT = """
import json, sys
from pathlib import Path
from streamlit.testing.v1 import AppTest
import vst_core as vst
from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.data import load_records

out, app, pages, sample = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])
records, _ = vst.read_scores(out)
frame = vst.scores_frame(records)
report = run_meta_eval(load_records(out)[0], read_judgements(sample.parent / "human_example.csv"), MetaSettings(resamples=50))
widgets = {"source": "Scores JSONL (no model needed)", "scores_path": str(out), "scores_images": str(sample.parent)}

def page(name, preset=widgets):
    at = AppTest.from_file(app, default_timeout=120).switch_page(pages[name])
    for k, v in preset.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at

dataset, inspect, meta = page("dataset"), page("inspect"), page("meta")
live = page("dataset", {})  # the bundled sample, scored by the dashboard itself
cards = "".join(m.value for m in inspect.markdown)
print(json.dumps({
    "read": [r.metrics["lexical_variety"].score for r in records],
    "frame": list(frame.columns),
    "ranked": list(report.metrics),
    "dataset": list(dataset.dataframe[0].value.columns),
    "inspect_card": cards.count(">variety<"),
    "inspect_evidence": [e.label for e in inspect.expander if e.label.startswith("Lexical variety")],
    "evidence_html": "vst-toy-repeated" in cards,
    "meta": list(meta.dataframe[0].value.index),
    "live": list(live.dataframe[0].value.columns),
    "offered": [w.options for w in live.sidebar.multiselect if w.label == "Installed metrics"],
}))
"""


@pytest.mark.slow  # pip builds and installs the example package; AppTest runs three pages in a subprocess
def test_an_installed_metric_package_is_scored_read_back_shown_ranked_and_drawn(tmp_path: Path) -> None:
    source, target = tmp_path / "src", tmp_path / "site"
    shutil.copytree(EXAMPLE, source)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target"]
    subprocess.run([*pip, str(target), str(source)], check=True, capture_output=True, timeout=300)
    assert (target / "vst_toy_metric.py").is_file()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]), "VST_DATA_DIRS": str(tmp_path)}
    out = tmp_path / "scores.jsonl"
    cmd = [sys.executable, "-m", "vst_core", "score", str(SAMPLE), "--metrics", "redundancy,lexical_variety"]
    run = subprocess.run([*cmd, "--out", str(out), "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    words = [re.findall(r"[a-z0-9']+", " ".join(line["sentences"]).lower()) for line in lines]
    assert [line["metrics"]["lexical_variety"]["score"] for line in lines] == [len(set(w)) / len(w) for w in words]
    assert all(line["signature"]["metric_plugins"] == {"lexical_variety": "vst_toy_metric@0.1.0"} for line in lines)
    shown = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), APP, json.dumps(PAGES), str(SAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    got = json.loads(shown.stdout.strip().splitlines()[-1])
    assert got["read"] == [line["metrics"]["lexical_variety"]["score"] for line in lines]
    assert "variety" in got["frame"] and "variety" in got["dataset"] and "words" in got["dataset"]
    assert "variety" in got["ranked"] and "variety" in got["meta"]
    assert got["inspect_card"] == 4 and got["evidence_html"]  # one card per candidate of the first sequence
    assert got["inspect_evidence"] and all(re.search(r"\d+ repeated words?$", label) for label in got["inspect_evidence"])
    assert "variety" in got["live"] and got["offered"] == [["Lexical variety (lexical_variety)"]]
    # without the package the same file still opens: its records are reported as unknown, the rest is read
    plain = {**os.environ, "PYTHONPATH": str(ROOT)}
    check = (
        "import vst_core as vst, sys; r, p = vst.read_scores(sys.argv[1]); "
        "print(len(r), sorted(r[0].metrics), sum('unknown metric' in str(x) for x in p))"
    )
    alone = subprocess.run([sys.executable, "-c", check, str(out)], env=plain, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0 and alone.stdout.split("\n")[0] == "8 ['redundancy'] 8", alone.stderr


def test_metric_field_value_ignores_what_is_not_a_number() -> None:
    @dataclasses.dataclass(frozen=True)
    class R:
        score: object

    class Story:
        metrics = {"m": R("high")}

    assert MetricField("x", "m", "score", "").value(Story()) is None
    spec = MetricSpec("m", "M", "", R, (MetricField("x", "m", "score", "", report="x"),))
    assert spec.cards_of(Story()) == [("x", None, "")]
