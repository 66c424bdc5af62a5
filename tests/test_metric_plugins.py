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
from typing import Any

import pytest
from conftest import APP, PAGES, ROOT, SAMPLE

from vst_core import contract
from vst_core.config import Settings, SettingsError
from vst_core.contract import BUILTIN, MetricField, MetricSpec, registry

EXAMPLE = ROOT / "examples" / "vst-toy-metric"


def test_vst_metrics_lists_the_builtin_metrics_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import main

    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("redundancy       RoViST-NR  [text only]  vst_core.metrics.rovist_nr")
    assert "    inter                  lower  repetition across sentences" in out
    assert "    --vrank-model                 a folder written by `vst train-vrank`" in out  # each metric's own options


def test_every_builtin_metric_is_one_module_with_its_card_fields_and_settings() -> None:
    reg = registry()
    assert [s.module for s in reg.specs.values()][: len(BUILTIN)] == list(BUILTIN)
    settings = {f.name for f in dataclasses.fields(Settings)} | {o.setting for c in reg.components.values() for o in c.options}
    columns = [f.column for f in reg.fields]
    assert len(columns) == len(set(columns))
    for spec in reg.specs.values():
        if spec.module.startswith("vst_core."):
            assert (ROOT / spec.card).is_file(), spec.card
            assert spec.computing.score is not None and spec.description
            home = spec.record.__module__  # its record beside its spec: the module, or its package's record.py
            assert home == spec.module or home.startswith(spec.module + "."), (spec.name, home)
        assert all(f.metric == spec.name and f.attr in spec.record.__dataclass_fields__ for f in spec.fields)
        own = {o.setting for o in spec.signing.options}  # its own options, declared in its module alone
        assert set(spec.signing.settings) <= settings | own, set(spec.signing.settings) - settings - own
        assert spec.reading.main_value in spec.record.__dataclass_fields__


def _module(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Entry points of this test's choosing; the registry is rebuilt from them, and again after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    monkeypatch.undo()
    contract.reload()


GOOD = """
from dataclasses import dataclass
from vst_core.contract import Computing, MetricField, MetricSpec, Reading, Showing, Signing, Tools

@dataclass(frozen=True)
class Count:
    score: float | None
    words: int

def score(stories, run):
    return {s.key: Count(float(len(s.text.split())), len(s.text.split())) for s in stories}

METRIC = MetricSpec("word_count", "Words", "number of words", Count,
                    (MetricField("words n", "word_count", "score", "words", direction="none"),),
                    computing=Computing(score=score))
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
        metadata.EntryPoint(name, value, contract.ENTRY_POINT_GROUP)
        for name, value in [
            ("a", "good_metric:METRIC"),
            ("b", "broken_metric:METRIC"),
            ("c", "clashing_metric:METRIC"),
            ("d", "column_metric:METRIC"),
            ("e", "not_a_spec:METRIC"),
        ]
    ]
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: points if group == contract.ENTRY_POINT_GROUP else [])
    reg = contract.reload()
    assert "word_count" in reg.specs and reg.spec("word_count").module == "good_metric"
    assert reg.spec("redundancy").module == "vst_core.metrics.rovist_nr"  # a clash never replaces a built-in
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
    from vst_core.records import read_record
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    assert parse_metrics("redundancy,word_count") == ("redundancy", "word_count")
    assert "words n" in [f.column for f in registry().fields]
    stories = read_story_set(SAMPLE).stories[:2]
    settings = Settings(metrics=("redundancy", "word_count"))
    records = score_batch(stories, settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert [r.metrics["word_count"].words for r in records] == [len(s.text.split()) for s in stories]  # type: ignore[attr-defined]
    back, problems = read_record(json.loads(json.dumps(records[0].to_json())))
    assert not problems and back is not None and back.metrics["word_count"] == records[0].metrics["word_count"]


@pytest.mark.parametrize(
    ("module", "failure", "reason"),
    [
        ("failing_metric", "raise OSError('disk gone')", "OSError: disk gone"),
        ("exiting_hook", "import sys; sys.exit(3)", "SystemExit: 3"),  # a module of its own: imports are cached
    ],
)
def test_a_plugin_whose_hook_fails_gives_each_story_the_reason_and_the_others_are_written(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, module: str, failure: str, reason: str
) -> None:
    """An exception, or sys.exit, in a plugin's hook is each story's error; the run goes on."""
    _module(plugins, module, GOOD.replace("return {s.key", f"{failure}; return {{s.key"))
    point = metadata.EntryPoint("f", f"{module}:METRIC", contract.ENTRY_POINT_GROUP)
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: [point])
    contract.reload()
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    settings = Settings(metrics=("redundancy", "word_count"))
    records = score_batch(read_story_set(SAMPLE).stories[:3], settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert len(records) == 3 and all(
        r.errors["word_count"] == reason and r.metrics.get("redundancy") is not None for r in records
    )


BAD = """
import math
from dataclasses import dataclass
from vst_core.contract import Computing, MetricField, MetricSpec, Showing

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
                    computing=Computing(score=score), showing=Showing(cards=cards, evidence=evidence))
"""


def test_an_installed_metric_that_returns_garbage_or_cannot_draw_breaks_neither_the_file_nor_the_page(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(plugins, "odd_metric", BAD)
    point = metadata.EntryPoint("o", "odd_metric:METRIC", contract.ENTRY_POINT_GROUP)
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: [point])
    contract.reload()
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch
    from vst_core.viz.story import evidence_blocks, story_cards

    settings = Settings(metrics=("redundancy", "odd"))
    records = score_batch(read_story_set(SAMPLE).stories[:3], settings, {"id": "t"}, Models(settings), SAMPLE.parent)
    assert "cannot be written: ValueError: Out of range float" in records[0].errors["odd"]  # NaN: JSON has none
    assert records[1].errors["odd"] == "TypeError: odd gave a int, not a Odd"
    assert records[2].metrics["odd"].score == 0.5  # type: ignore[attr-defined]
    assert all(json.dumps(r.to_json(), allow_nan=False) for r in records)  # every line can be written
    cards = story_cards(records[2], settings.metrics)
    assert cards[-1][0] == "Odd" and cards[-1][1] == "error" and "drawing broke" in cards[-1][2]
    assert evidence_blocks(records[2]) == [("Odd: evidence not drawn", "KeyError: &#x27;no evidence here&#x27;")]


DRAWN = """
from dataclasses import dataclass, replace
from vst_core.contract import Computing, MetricField, MetricSpec, Showing

@dataclass(frozen=True)
class Drawn:
    score: float | None
    words: tuple[str, ...] = ()

def score(stories, run):
    return {s.key: Drawn(float(len(s.sentences))) for s in stories}

def cards(record):
    return [("drawn", None, "no record")] if record is None else [("drawn", record.score, f"{len(record.words)} words")]

def evidence(record):
    return ("Drawn", ", ".join(record.words)) if record.words else None

def complete(record, story):
    return replace(record, words=tuple(story.sentences[0].split()))

METRIC = MetricSpec("drawn", "Drawn", "", Drawn, (MetricField("drawn", "drawn", "score", "", report="drawn"),),
                    computing=Computing(score=score), showing=Showing(cards=cards, evidence=evidence, complete=complete))
"""


def test_an_installed_metrics_drawing_hooks_are_given_its_own_record_or_none(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cards`` is given the story's record of the metric, or None when the story has none;
    ``evidence`` its record; ``complete`` its record and the story it is of."""
    from vst_core.records import StoryScores
    from vst_core.scoring.story import completed
    from vst_core.viz.story import evidence_blocks, story_cards

    reg = _install(plugins, monkeypatch, drawn_metric=DRAWN)
    kind = reg.spec("drawn").record
    record = StoryScores("s", "q", "m", ("A dog ran.", "It sat."), metrics={"drawn": kind(2.0)})
    assert story_cards(record, ("drawn",))[-1] == ("drawn", "2.000", "0 words")
    assert evidence_blocks(record) == []  # no words yet: its evidence says none
    shown = completed(record)
    assert shown.metrics["drawn"] == kind(2.0, ("A", "dog", "ran."))
    assert story_cards(shown, ("drawn",))[-1] == ("drawn", "2.000", "3 words")
    assert evidence_blocks(shown) == [("Drawn", "A, dog, ran.")]
    bare = StoryScores("s", "q", "m", ("A dog ran.",))
    assert story_cards(bare, ("drawn",))[-1] == ("drawn", "undefined", "no record") and evidence_blocks(bare) == []


def _good_as(name: str, column: str, keywords: str = "", *, computing: str = "") -> str:
    """GOOD's source as the metric ``name`` with the column ``column``, more MetricSpec ``keywords``
    (its groups: ``signing=Signing(...)``) and more fields of its ``computing`` group."""
    body = GOOD.replace('"word_count"', f'"{name}"').replace('"words n"', f'"{column}"')
    more = f"score=score{', ' + computing if computing else ''}){', ' + keywords if keywords else ''})"
    return body.replace("score=score))", more)


def _long_flags(command: str) -> set[str]:
    """Every ``--`` option of the ``vst`` command ``command``, as its parser has them now."""
    from vst_core.cli import build_parser

    parser = build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return {o for action in parser._actions for o in action.option_strings if o.startswith("--")}


def _install(plugins: Path, monkeypatch: pytest.MonkeyPatch, **modules: str) -> contract.Registry:
    """Modules as installed metric packages (one entry point each, named as the module), registry rebuilt."""
    for name, body in modules.items():
        _module(plugins, name, body)
    points = [metadata.EntryPoint(name, f"{name}:METRIC", contract.ENTRY_POINT_GROUP) for name in modules]
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: points)
    return contract.reload()


def test_a_clash_with_the_tables_own_columns_the_baselines_or_another_alias_is_refused(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = _install(
        plugins,
        monkeypatch,
        col_system=GOOD.replace('"words n"', '"system"'),
        col_bleu=GOOD.replace('"word_count"', '"bleu_like"').replace('"words n"', '"BLEU-4"'),
        col_report=GOOD.replace('"word_count"', '"rep"').replace('direction="none"', 'report="inter"'),
        alias_r=GOOD.replace('"word_count"', '"alias_r"').replace(
            "score=score))", "score=score), reading=Reading(aliases=('r',)))"
        ),
        twice=GOOD.replace('"word_count"', '"twice"').replace(
            '(MetricField("words n", "twice", "score", "words", direction="none"),)',
            '(MetricField("t1", "twice", "score", "w"), MetricField("t1", "twice", "words", "w"))',
        ),
        list_field=GOOD.replace('"word_count"', '"listy"').replace("    words: int", "    words: list[int]"),
        model_box=GOOD.replace('"word_count"', '"boxed"')
        .replace(
            "score=score))", "score=score), showing=Showing(model_fields=(ModelField('vrank_model', 'V', 'folder', '--v'),)))"
        )
        .replace("import Computing,", "import ModelField, Computing,"),
        switched=GOOD.replace('"word_count"', '"switched"')
        .replace("score=score))", "score=score), showing=Showing(switch=Switch('S', 'coherence_model', 'B', 'L')))")
        .replace("import Computing,", "import Switch, Computing,"),
        aspect=GOOD.replace('"word_count"', '"aspect"').replace('direction="none")', 'direction="none", dhm="C")'),
        regions=GOOD.replace('"word_count"', '"regions_too"').replace("score=score)", "score=score, region_model=print)"),
        taker=GOOD.replace('"word_count"', '"taker"').replace(
            "score=score))", "score=score), reading=Reading(formerly=('coherence',)))"
        ),
        again=GOOD.replace('"word_count"', '"again"')
        .replace("score=score)", "score=score, reaggregate=REAGGREGATION)")
        .replace("from vst_core.contract", "from vst_core.metrics.groovist import REAGGREGATION\nfrom vst_core.contract"),
    )
    joined = "\n".join(reg.problems)
    assert len(reg.problems) == 12 and not reg.plugins, joined
    assert "column 'system' is reserved" in joined and "column 'BLEU-4' is reserved" in joined
    assert "column 'inter' is another metric's" in joined and "alias 'r' is taken" in joined
    assert "column 't1' is another metric's" in joined
    assert "Count.words: list[int] cannot be read back from JSON (use a tuple)" in joined
    assert joined.count("a model field names one of the metric's own options") == 2
    assert "dhm aspects are the built-in metrics': R of RoViST-NR, C of RoViST-C, G of GROOVIST, J of rubric judge" in joined
    assert "a switch is the built-in RoViST-C's" in joined  # each refusal names the metric that holds it, from the registry
    assert "region_model is the built-in RoViST-VG's" in joined and "formerly 'coherence' is a name in use" in joined
    assert "reaggregate is the built-in GROOVIST's" in joined


def test_one_storys_failure_is_that_storys_error_and_a_failing_model_call_stops_the_run(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_bad = GOOD.replace(
        "def score(stories, run):\n",
        "def score(stories, run):\n    if any(s.story_id == 'space-generic' for s in stories): raise ValueError('this story')\n",
    )
    _install(plugins, monkeypatch, one_bad=one_bad)
    from vst_core.data import read_story_set
    from vst_core.metrics.rovist_nr import batch as nr
    from vst_core.scoring import story as scoring
    from vst_core.scoring.registry import Models

    stories = read_story_set(SAMPLE).stories[:4]
    settings = Settings(metrics=("redundancy", "word_count"))
    real = nr.redundancy_of

    def nr_fails_on_one(story: Any, n: int, variant: Any) -> Any:
        if story.story_id == "space-ref":
            raise ValueError("a tokenizer edge case")
        return real(story, n, variant)

    monkeypatch.setattr(nr, "redundancy_of", nr_fails_on_one)
    records = {r.story_id: r for r in scoring.score_batch(stories, settings, {"id": "t"}, Models(settings), SAMPLE.parent)}
    assert records["space-generic"].errors == {"word_count": "ValueError: this story"}
    assert records["space-ref"].errors == {"redundancy": "ValueError: a tokenizer edge case"}
    assert all(not r.errors for k, r in records.items() if k not in ("space-generic", "space-ref"))

    class Broken:  # a model call that fails for the whole batch (e.g. out of memory on the device)
        name = "broken"
        tokenizer = None

        def score_pairs_detailed(self, pairs: Any) -> Any:
            raise RuntimeError("CUDA out of memory")

    coherence = Settings(metrics=("redundancy", "coherence"))
    models = Models(coherence, coherence=Broken())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="out of memory"):  # the run stops; a rerun resumes where it stopped
        scoring.score_batch(stories, coherence, {"id": "t"}, models, SAMPLE.parent)


HEAVY = """
import vst_core.viz.story, vst_core.api, vst_core.data.index, vst_core.cli
from dataclasses import dataclass
from vst_core.contract import MetricField, MetricSpec

@dataclass(frozen=True)
class Heavy:
    score: float | None

METRIC = MetricSpec("heavy", "Heavy", "", Heavy, (MetricField("heavy", "heavy", "score", ""),))
"""


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
def test_a_plugin_that_imports_vst_core_modules_loads_and_one_that_asks_for_the_registry_is_left_out(tmp_path: Path) -> None:
    _module(tmp_path, "heavy_metric", HEAVY)
    _module(tmp_path, "asking_metric", "from vst_core.records import fields_of\nMETRIC = fields_of(['redundancy'])\n")
    script = (
        "import json\n"
        "from importlib import metadata\n"
        "import vst_core.contract as ms\n"
        "points = [metadata.EntryPoint(n, n + ':METRIC', ms.ENTRY_POINT_GROUP) for n in ('heavy_metric', 'asking_metric')]\n"
        "ms.metadata.entry_points = lambda group: points\n"
        "import vst_core.records as records\n"
        "print(json.dumps({'heavy': 'heavy' in ms.registry().specs, 'problems': list(ms.registry().problems), "
        "'fields': len(records.fields_of(ms.registry().names))}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["heavy"] and len(got["problems"]) == 1 and "RegistryBusyError" in got["problems"][0], got


@pytest.mark.slow  # imports every module of the package in a fresh interpreter
def test_importing_any_module_never_builds_the_registry() -> None:
    script = (
        "import pkgutil, importlib, vst_core, vst_core.contract as ms\n"
        "for m in pkgutil.walk_packages(vst_core.__path__, 'vst_core.'): importlib.import_module(m.name)\n"
        "import dashboard.choices, dashboard.sidebar, dashboard.loading, dashboard.frame\n"
        "print(ms._current is None)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "True", done.stderr[-2000:]


def test_an_installed_metric_that_cannot_load_is_not_run_and_what_it_imports_is_checked(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = "score=score, load=lambda m: 1 / 0), reading=Reading(from_score=lambda v, note: {'score': v}, aliases=('wc',)))"
    _install(plugins, monkeypatch, loads_badly=GOOD.replace("score=score))", hooks))
    from vst_core.data.importing import ImportError_, metric_record
    from vst_core.data.index import index_key
    from vst_core.scoring.registry import Models

    assert Models(Settings(metrics=("redundancy", "word_count"))).unloadable() == {
        "word_count": "Words (loads_badly) could not load: ZeroDivisionError: division by zero"
    }
    with pytest.raises(ImportError_, match="its from_score gave a dict, not a Count"):
        metric_record("word_count", 3.0, "imported")
    with_plugin = index_key(["abc"])
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: [])
    contract.reload()
    assert index_key(["abc"]) != with_plugin  # a file indexed with other metrics installed is indexed again


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
    "offered": [w.options for w in live.sidebar.multiselect if w.label == "More metrics"],
    "chosen": [w.value for w in live.sidebar.multiselect if w.label == "More metrics"],
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
    assert "variety" in got["live"]
    # offered beside the built-in metrics offered by name (character consistency and alignment), after
    # them, and on by default (the built-in ones are not)
    from vst_core.contract import BUILTIN_METRICS, registry

    by_name = [f"{s.title} ({s.name})" for s in registry().specs.values() if s.name in BUILTIN_METRICS]
    offered = got["offered"][0]
    assert offered[-1] == "Lexical variety (lexical_variety)" and set(offered[:-1]) <= set(by_name)
    assert {"Character consistency (characters)", "Character alignment (char_alignment)"} <= set(offered)
    assert got["chosen"] == [["lexical_variety"]]
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
    assert spec.cards_of(R("high")) == [("x", None, "")] and spec.cards_of(None) == [("x", None, "")]
    assert spec.cards_of(R(0.5)) == [("x", 0.5, "")]  # the default card reads the metric's own record


IMAGE_METRIC = """
from dataclasses import dataclass
import numpy as np
from vst_core.contract import Computing, MetricField, MetricSpec

@dataclass(frozen=True)
class Title:
    score: float | None

def texts(settings, story, phrases):
    return ["a photo of " + story.sentences[0]] if story.sentences else []

def record(grounder, story, entries):
    text = grounder.text_vector("a photo of " + story.sentences[0])
    regions = np.concatenate([e.region_emb for e in entries])
    return Title(float((regions @ text).max()))

METRIC = MetricSpec("title_match", "Title match", "the first sentence's best region", Title,
                    (MetricField("title", "title_match", "score", "best cosine of the first sentence"),),
                    computing=Computing(needs=frozenset({"images", "clip"}), image_record=record, texts=texts))
"""


@pytest.mark.slow  # torch / spaCy
def test_an_installed_image_metric_is_scored_over_the_images_the_image_metrics_share(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, tiny_clip: tuple[Path, Path]
) -> None:
    """An image metric declares ``image_record`` (and ``texts``) and no ``score``: its text is encoded
    with the others, its stories' regions are the ones GROOVIST uses, and its value is the best
    cosine an independent encoding of the same text and crops gives."""
    import numpy as np

    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    everything = metadata.entry_points
    reg = _install(plugins, monkeypatch, title_metric=IMAGE_METRIC)
    monkeypatch.setattr(contract.metadata, "entry_points", everything)  # spaCy reads its own (the registry is built)
    spec = reg.spec("title_match")
    assert spec.computing.score is not None and "title_match" in reg.with_need("clip")
    config, checkpoint = tiny_clip
    settings = Settings(
        metrics=("grounding", "title_match"),
        clip_model="vst-tiny-clip",
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        device="cpu",
    )
    stories = read_story_set(SAMPLE).stories[:3]
    models = Models(settings)
    records = score_batch(stories, settings, {"id": "t"}, models, SAMPLE.parent)
    grounder = models.grounder(SAMPLE.parent)
    grounder.prepare(stories)
    for story, rec in zip(stories, records, strict=True):
        assert rec.errors == {} and rec.metrics["grounding"] is not None
        text = models.clip.encode_text(["a photo of " + story.sentences[0]])[0]
        regions = np.concatenate([e.region_emb for e in grounder.entries(story)])
        assert rec.metrics["title_match"].score == pytest.approx(float((regions @ text).max()), abs=1e-5)
        assert rec.metrics["title_match"].score != rec.metrics["grounding"].score


def _image_variant(name: str, old: str, new: str) -> str:
    """:data:`IMAGE_METRIC` with ``old`` replaced by ``new``, declared as metric ``name`` (its column
    the name with a space)."""
    body = IMAGE_METRIC.replace(old, new)
    assert body != IMAGE_METRIC, f"{old!r} is not in IMAGE_METRIC"
    return body.replace("title_match", name).replace('"title"', f'"{name.replace("_", " ")}"')


@pytest.mark.slow  # spaCy
def test_an_image_metric_whose_texts_fail_or_that_writes_into_shared_vectors_harms_no_other_metric(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, tiny_clip: tuple[Path, Path]
) -> None:
    """A ``texts`` hook that raises, or gives what is not a string, is that metric's reason on every
    story of the batch; vectors the image metrics share are read-only, so a metric that writes into
    them fails alone; an image hook without the needs it works on is refused at registration."""
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.story import score_batch

    raising = _image_variant("t_raise", 'return ["a photo of "', 'raise RuntimeError("texts boom"); return [""')
    numbers = _image_variant("t_numbers", 'return ["a photo of " + story.sentences[0]]', "return [1, 2]")
    writer = _image_variant(
        "t_writer", "    return Title(float((regions @ text).max()))", "    text *= -1\n    return Title(0.0)"
    )
    no_needs = _image_variant("t_blind", 'needs=frozenset({"images", "clip"}), ', "")
    everything = metadata.entry_points
    reg = _install(plugins, monkeypatch, t_raise=raising, t_numbers=numbers, t_writer=writer, t_blind=no_needs)
    monkeypatch.setattr(contract.metadata, "entry_points", everything)
    assert "t_blind" not in reg.specs and any("t_blind" in p and "needs" in p for p in reg.problems)
    config, checkpoint = tiny_clip
    clip = dict(clip_model="vst-tiny-clip", clip_checkpoint=str(checkpoint), clip_config=str(config), device="cpu")
    stories = read_story_set(SAMPLE).stories[:3]
    only = Settings(metrics=("grounding",), **clip)
    alone = score_batch(stories, only, {"id": "t"}, Models(only), SAMPLE.parent)
    assert all(r.errors == {} for r in alone)
    for order in (("t_raise", "t_numbers", "t_writer", "grounding"), ("grounding", "t_writer", "t_numbers", "t_raise")):
        settings = Settings(metrics=order, **clip)
        records = score_batch(stories, settings, {"id": "t"}, Models(settings), SAMPLE.parent)
        for rec, before in zip(records, alone, strict=True):
            assert rec.errors["t_raise"] == "RuntimeError: texts boom"
            assert rec.errors["t_numbers"] == "TypeError: its texts hook gave a int, not a str"
            assert "read-only" in rec.errors["t_writer"]
            assert rec.metrics["grounding"] == before.metrics["grounding"]  # the same numbers, whatever ran beside


_CLIP_KEYS = {"clip_arch", "clip_pretrained", "clip_checkpoint", "clip_config", "clip_activation"}
_IMAGE_KEYS = {"theta", "penalize", "weighting", "units", "expressions", "grounding_profile", "preprocess"}
_REGION_KEYS = {"regions", "regions_file", "top_b", "whole_image"}
_ALWAYS = {"metrics", "nr_ngram", "nr_variant", "splitter", "spacy_model"}


@pytest.mark.parametrize(
    ("metrics", "served", "extra"),
    [
        (("redundancy",), False, set()),
        (
            ("coherence",),
            False,
            {"coherence_model", "coherence_tokenizer", "coherence_repeat_zero", "coherence_context", "coherence_profile"},
        ),
        (("grounding",), False, _CLIP_KEYS | _IMAGE_KEYS | _REGION_KEYS),
        (("clipscore",), False, _CLIP_KEYS | _IMAGE_KEYS | _REGION_KEYS | {"clipscore_prompt"}),
        (("rovist_vg",), False, _REGION_KEYS),
        (("cosmic",), False, _CLIP_KEYS | _IMAGE_KEYS | _REGION_KEYS | {"reference_system"}),
        (("vrank",), False, set()),
        (("judge",), False, {"judge_images"}),
        (("judge",), True, {"judge_images", "judge_top_logprobs"}),
    ],
)
def test_a_run_signs_the_settings_its_metrics_list_and_those_of_their_needs(
    metrics: tuple[str, ...], served: bool, extra: set[str]
) -> None:
    """The signature's settings of each built-in metric alone, as they were when the rule was written
    by metric name (an id never changes with the rule); paths, speed and served-judge fields never."""
    server = {"judge_endpoint": "http://127.0.0.1:8000/v1", "judge_served_model": "m"} if served else {}
    assert set(Settings(metrics=metrics, **server).as_dict()) == _ALWAYS | extra  # type: ignore[arg-type]


def test_an_installed_metric_signs_the_settings_it_lists_and_those_of_its_needs(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(
        plugins,
        monkeypatch,
        theta_reader=_good_as("theta_reader", "tr", "signing=Signing(settings=('theta',))"),
        clip_reader=_good_as("clip_reader", "cr", computing="needs=frozenset({'clip'})"),
    )
    assert set(Settings(metrics=("theta_reader",)).as_dict()) == _ALWAYS | {"theta"}
    assert Settings(metrics=("theta_reader",), theta="0.3").as_dict()["theta"] == 0.3
    assert set(Settings(metrics=("clip_reader",)).as_dict()) == _ALWAYS | _CLIP_KEYS | _IMAGE_KEYS | _REGION_KEYS
    assert set(Settings(metrics=("redundancy",), theta="0.3").as_dict()) == _ALWAYS


def test_every_setting_is_signed_by_a_rule() -> None:
    """A run setting (a Settings field) is in the signature always or never; every option of a
    component or a metric is signed by its rule (a component's by its needs, or in every run with
    none; a metric's in its runs, or never for a model's file the metric names by digest): a new
    field that neither set names would be left out of every signature without a word."""
    import dataclasses

    from vst_core.config import ALWAYS_SIGNED, UNSIGNED

    assert {f.name for f in dataclasses.fields(Settings)} == ALWAYS_SIGNED | UNSIGNED and not ALWAYS_SIGNED & UNSIGNED
    every = Settings(metrics=tuple(registry().specs)).as_dict()
    for name, (_owner, option) in registry().options.items():
        assert (option.signed_name in every) == (bool(option.signed) and not option.while_set), name


def test_an_installed_metrics_failing_summary_or_margins_stops_neither_the_run_nor_meta_evaluation(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vst_core.analysis.meta_eval.scored import pair_margins
    from vst_core.cli import main
    from vst_core.cli.common import EXIT_PARTIAL
    from vst_core.data import load_records

    body = _good_as("ranker", "rk").replace('direction="none"),)', 'report="ranker"),)')
    body += textwrap.dedent(
        """
        import dataclasses

        def summary(models):
            raise RuntimeError("summary boom")

        def margins(record):
            raise RuntimeError("margins boom")

        METRIC = dataclasses.replace(
            METRIC,
            computing=dataclasses.replace(METRIC.computing, summary=summary),
            reading=dataclasses.replace(METRIC.reading, margins=margins),
        )
        """
    )
    reg = _install(plugins, monkeypatch, ranker=body)
    assert "ranker" in reg.names and reg.ranked["ranker"].name == "ranker"
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "redundancy,ranker", "--out", str(out), "--no-progress"]) == EXIT_PARTIAL
    assert "Words: its run summary failed: RuntimeError: summary boom" in capsys.readouterr().err
    records, _ = load_records(out)
    assert len(records) == 8 and all("ranker" in r.metrics for r in records)
    assert pair_margins(records) == {}  # the hook failed on every story: no margins, no exception


def test_an_installed_metric_that_needs_clip_is_turned_on_and_off_under_more_metrics_only(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Grounding toggle turns on the built-in CLIP metrics; an installed one is offered by name, and
    deselecting it there leaves it off whatever the toggles say."""
    from dashboard.choices import Choices, plugin_metrics, settings_for

    _install(
        plugins,
        monkeypatch,
        clip_plugin=_good_as("clip_plugin", "cp", computing="needs=frozenset({'clip'})"),
    )
    assert "clip_plugin" in plugin_metrics() and "clip_plugin" not in Choices(extra_clip=True).clip_metrics
    assert "clip_plugin" not in settings_for(Choices(extra_clip=True)).metrics
    assert "clip_plugin" in settings_for(Choices(plugins=("clip_plugin",))).metrics


def test_models_takes_a_metrics_own_model_by_its_name_and_refuses_any_other_keyword() -> None:
    """``Models(settings, vrank=...)`` injects Vrank's model; ``None`` means "load it when used", as
    for CLIP; a keyword that names no metric (a misspelt ``cache``) is a TypeError, not ignored."""
    from vst_core.config import Settings
    from vst_core.metrics import vrank
    from vst_core.scoring.registry import Models

    settings = Settings(metrics=("vrank",), vrank_model="/nowhere/vrank")
    ranker = object()
    assert vrank.model(Models(settings, vrank=ranker)) is ranker  # type: ignore[arg-type]
    assert set(Models(settings, vrank=None).unloadable()) == {"vrank"}
    with pytest.raises(TypeError, match="cahce"):
        Models(settings, cahce=object())


def test_a_plugin_that_exits_at_import_is_left_out_and_the_rest_keeps_working(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = _install(plugins, monkeypatch, exiting_metric="import sys\nsys.exit(7)\n", good_metric=GOOD)
    assert "word_count" in reg.specs and "redundancy" in reg.specs
    assert any("exiting_metric" in p and "SystemExit: 7" in p for p in reg.problems), reg.problems


def test_a_plugin_number_outside_its_declared_range_is_that_storys_error(plugins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A field's ``bounds`` are its definition: a record outside them is refused with the reason,
    as that story's error, and the other stories are scored."""
    body = GOOD.replace('direction="none")', "bounds=(0.0, 10.0))").replace(
        "float(len(s.text.split()))", "float(len(s.text.split())) * (1e6 if s.story_id.startswith('space') else 0.1)"
    )
    _module(plugins, "bounded_metric", body)
    points = [metadata.EntryPoint("b", "bounded_metric:METRIC", contract.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: points if group == contract.ENTRY_POINT_GROUP else [])
    contract.reload()
    import vst_core as vst

    records = vst.score_stories(vst.read_story_set(SAMPLE), "word_count")
    refused = [r for r in records if "word_count" in r.errors]
    assert refused and all("is outside [0, 10], the range it is defined on" in r.errors["word_count"] for r in refused)
    assert len(refused) < len(records) and all(0 <= r.metrics["word_count"].score <= 10 for r in records if r not in refused)


def test_an_imported_score_outside_its_metrics_range_is_refused_naming_the_story(tmp_path: Path) -> None:
    from vst_core.data.importing import ImportError_, imported_records

    source = tmp_path / "nr_scores.json"
    source.write_text("{}", encoding="utf-8")
    values = {("model", "s1"): {"redundancy": 0.8}, ("model", "s2"): {"redundancy": 1e308}}
    with pytest.raises(ImportError_, match=r"story 's2' of 'model': redundancy: NR = 1e\+308 is outside \[0, 1\]"):
        imported_records(values, source, {})
    assert len(imported_records({("model", "s1"): {"redundancy": 0.8}}, source, {})) == 1


def test_no_module_of_a_metric_package_shadows_a_name_of_its_spec_module() -> None:
    """Importing ``pkg.model`` sets the attribute ``model`` of ``pkg``: a package whose ``__init__``
    defines a hook named like one of its modules would lose the hook once that module is imported."""
    import ast

    folder = ROOT / "vst_core" / "metrics"
    packages = [p for p in folder.iterdir() if (p / "__init__.py").is_file()]
    assert any(p.name == "vrank" for p in packages)
    for package in packages:
        tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
        assert not defined & modules, (package.name, defined & modules)


def test_the_example_plugins_own_setting_is_a_flag_a_keyword_a_sidebar_box_and_signed_by_its_file(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric's setting is declared once, in its package (the toy plugin's stopword file): the
    registry makes it a ``vst score`` option, a ``Settings`` keyword, a sidebar box, and the run's
    signature names the file by its content; no file of vst_core names it."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    point = metadata.EntryPoint("lexical_variety", "vst_toy_metric:METRIC", contract.ENTRY_POINT_GROUP)
    monkeypatch.setattr(contract.metadata, "entry_points", lambda group: [point])
    reg = contract.reload()
    assert "lexical_variety" in reg.specs and not reg.problems
    from dashboard.choices import Choices, path_fields, settings_for
    from vst_core.api import score_stories
    from vst_core.cli.score_options import settings_from_args
    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.signature import signature

    stop = tmp_path / "stop.txt"
    stop.write_text("the a\nan\n", encoding="utf-8")
    from vst_core.cli import build_parser

    args = build_parser("score").parse_args(
        ["score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "redundancy,lexical_variety"]
        + ["--lexical-variety-stopwords", str(stop)]
    )
    settings = settings_from_args(args)
    assert settings == Settings(metrics=("redundancy", "lexical_variety"), lexical_variety_stopwords=str(stop))
    assert path_fields()["lexical_variety_stopwords"][0] == "Lexical variety stopwords"
    chosen = settings_for(Choices(plugins=("lexical_variety",), files={"lexical_variety_stopwords": str(stop)}))
    assert chosen.option("lexical_variety_stopwords") == str(stop)
    records = score_stories(read_story_set(SAMPLE), settings=settings)
    plain = score_stories(read_story_set(SAMPLE), settings=settings.with_(options=()))
    assert all(
        r.metrics["lexical_variety"].words < p.metrics["lexical_variety"].words for r, p in zip(records, plain, strict=True)
    )
    signed = signature(settings)["settings"]["lexical_variety_stopwords"]
    stop.write_text("the\n", encoding="utf-8")
    assert signature(settings)["settings"]["lexical_variety_stopwords"] != signed  # the file's content, not its name
    assert "lexical_variety_stopwords" not in "".join(p.read_text(encoding="utf-8") for p in (ROOT / "vst_core").rglob("*.py"))


def test_a_metrics_own_settings_are_signed_under_the_keys_earlier_versions_wrote() -> None:
    """Settings that moved into their metric's ``options`` keep their names, values and rules in the
    signature (a scores file written before the move reads as the same settings): RoViST-C's are
    signed, a served judge's log-probabilities only with its endpoint, model files only by digest."""
    from vst_core.config import Settings

    coherence = Settings(metrics=("redundancy", "coherence"), coherence_context="prefix", coherence_repeat_zero=False)
    assert {k: v for k, v in coherence.as_dict().items() if k.startswith("coherence")} == {
        "coherence_model": "bert-nsp",
        "coherence_tokenizer": None,
        "coherence_repeat_zero": False,
        "coherence_context": "prefix",
        "coherence_profile": "paper",
    }
    assert Settings(metrics=("clipscore",)).as_dict()["clipscore_prompt"] == "A photo depicts "
    local = Settings(metrics=("judge",), judge_top_logprobs=5, judge_images=True).as_dict()
    served = Settings(metrics=("judge",), judge_endpoint="http://127.0.0.1:8000/v1", judge_served_model="m", judge_top_logprobs=5)
    assert "judge_top_logprobs" not in local and local["judge_images"] is True
    assert served.as_dict()["judge_top_logprobs"] == 5 and "judge_endpoint" not in served.as_dict()
    files = Settings(metrics=("vrank", "cosmic"), vrank_model="/x", cosmic_model="/y", reference_system="human").as_dict()
    assert "vrank_model" not in files and "cosmic_model" not in files and files["reference_system"] == "human"
    assert Settings(vrank_model=None) == Settings() and Settings(coherence_model="bert-nsp").options == ()
    with pytest.raises(SettingsError, match="unknown setting 'vrank_modle'"):
        Settings(vrank_modle="/x")
    with pytest.raises(SettingsError, match="coherence_context must be 'pair' or 'prefix'"):
        Settings(coherence_context="both")


def test_a_plugins_options_and_commands_cannot_take_what_is_shared_or_another_metrics(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An option named like a shared setting, a flag another metric's option has, or a command of vst
    itself or of another metric would break every command or silently replace one: the package is
    left out with the reason. A package that imports another metric's record type from that metric's
    package at its top still loads (importing a metric's package does not ask the registry)."""
    import dataclasses

    from vst_core.cli import COMMANDS, commands
    from vst_core.contract.spec import CLI_COMMANDS, RUN_SETTINGS

    assert RUN_SETTINGS == {f.name for f in dataclasses.fields(Settings)} and CLI_COMMANDS == set(COMMANDS)
    option = "from vst_core.contract import Option\n"
    reg = _install(
        plugins,
        monkeypatch,
        shared=option + _good_as("shared", "s1", "signing=Signing(options=(Option('top_b', 3, kind='int'),))"),
        flagged=option + _good_as("flagged", "s2", "signing=Signing(options=(Option('flag_x', flag='--vrank-model'),))"),
        scored=_good_as("scored", "s3", "tools=Tools(commands={'score': 'x'})"),
        trainer=_good_as("trainer", "s4", "tools=Tools(commands={'train-vrank': 'x'})"),
        record_import="from vst_core.metrics.rovist_c.record import CoherenceScores\n"
        + "from vst_core.metrics.vrank import VrankScores\n"
        + _good_as("record_import", "s5"),
        chosen=option
        + _good_as("chosen", "s6", "signing=Signing(options=(Option('chosen_mode', None, choices=('fast', 'exact')),))"),
    )
    reasons = "\n".join(reg.problems)
    assert "option 'top_b' is metric 'images''s" in reasons  # the image pipeline's
    assert "option flag '--vrank-model'" in reasons
    assert "command 'score' is vst's own" in reasons and "command 'train-vrank'" in reasons
    assert {"record_import", "chosen"} <= set(reg.specs) and len(reg.problems) == 4, reasons
    assert commands()["score"][0] == "vst_core.cli.score"
    assert Settings(chosen_mode="fast").option("chosen_mode") == "fast" and Settings().option("chosen_mode") is None


def test_a_plugins_fetch_option_is_a_fetch_models_flag_its_plan_runs_and_a_taken_flag_is_refused(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric's ``fetch`` adds its options to ``vst fetch-models`` and checks what its plan says,
    with no file of the command's; a flag of the command itself or of another metric is refused."""
    from vst_core.cli import build_parser, main

    fetch = (
        "from vst_core.contract import Fetch, FetchArgument, FetchPlan\n"
        "def _plan(v):\n"
        "    return FetchPlan(((f'toy model {v[\"toy_model\"]}', True, lambda: 'loads'),), ('a toy note',)) if v['toy_model'] else FetchPlan()\n"
        "FETCH = Fetch((FetchArgument('--toy-model', 'the toy model (100% random)', metavar='NAME', const='toy/base'),), _plan)\n"
    )
    clash = "from vst_core.contract import Fetch, FetchArgument, FetchPlan\nFETCH = Fetch((FetchArgument('--{}', 'x'),), lambda v: FetchPlan())\n"
    reg = _install(
        plugins,
        monkeypatch,
        toyfetch=fetch + _good_as("toyfetch", "f1", "tools=Tools(fetch=FETCH)"),
        ownflag=clash.format("detector") + _good_as("ownflag", "f2", "tools=Tools(fetch=FETCH)"),
        otherflag=clash.format("judge-vlm") + _good_as("otherflag", "f3", "tools=Tools(fetch=FETCH)"),
    )
    reasons = "\n".join(reg.problems)
    assert "'--detector' is not --lower-case-words, or it is the command's own" in reasons and "None" not in reasons
    assert "metric 'judge'" in reasons and set(reg.specs) >= {"toyfetch"} and len(reg.problems) == 2, reasons
    with pytest.raises(SystemExit):
        main(["fetch-models", "--help"])
    shown = capsys.readouterr().out
    assert "--toy-model [NAME]" in shown and "(100% random)" in shown
    from vst_core.contract.spec import FETCH_FLAGS

    metrics = {a.flag for sp in reg.specs.values() if sp.tools.fetch for a in sp.tools.fetch.arguments}
    assert _long_flags("fetch-models") - metrics == FETCH_FLAGS  # the command's own flags, which no metric may take
    from vst_core.cli.models import _metric_plans

    args = build_parser("fetch-models").parse_args(["fetch-models", "--toy-model"])
    plans = {p.checks[0][0]: p for p in _metric_plans(args) if p.checks}
    assert "toy model toy/base" in plans and plans["toy model toy/base"].notes == ("a toy note",)


def test_a_broken_fetch_plan_or_check_is_its_own_line_and_every_other_model_is_still_checked(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vst_core.cli import build_parser
    from vst_core.cli.models import _metric_plans
    from vst_core.contract import FetchPlan
    from vst_core.models import fetch

    def offline() -> str:
        raise OSError("no hub here")

    monkeypatch.setattr(fetch, "_check_clip", lambda report, arch, pretrained, log: None)
    for where in ("hf_cache_dir", "torch_hub_dir"):  # the folders to copy: no torch import in the fast tier
        monkeypatch.setattr(fetch, where, lambda: plugins)
    monkeypatch.setattr(fetch, "clip_cache_dirs", lambda: [plugins])
    report = fetch.fetch_models(
        more=[FetchPlan((("a", False, offline), ("b", True, lambda: "loads")), ("pass ⟦glove_file PATH⟧",))]
    )
    assert [(m.name, m.state, m.detail) for m in report.models] == [
        ("a", "missing", "OSError: no hub here"),
        ("b", "cached", "loads"),
    ]
    assert "note  pass --glove PATH" in report.summary()
    broken = (
        "from vst_core.contract import Fetch, FetchArgument\n"
        "def _plan(v):\n    raise RuntimeError('no plan')\n"
        "FETCH = Fetch((FetchArgument('--broken-model', 'x'),), _plan)\n"
    )
    _install(plugins, monkeypatch, brokenfetch=broken + _good_as("brokenfetch", "b1", "tools=Tools(fetch=FETCH)"))
    plans = _metric_plans(build_parser("fetch-models").parse_args(["fetch-models"]))
    broken = [c for p in plans for c in p.checks if c[0] == "metric 'brokenfetch''s models"]
    failed = fetch.fetch_models(more=[FetchPlan(tuple(broken))])
    assert not failed.ok and failed.models[0].state == "broken"  # fetch-models exits 4
    assert failed.models[0].detail == "its models could not be planned: RuntimeError: no plan"
    assert any(c[0].startswith("next-sentence model") for p in plans for c in p.checks)  # RoViST-C's is still planned


def test_the_hook_types_are_generic_at_runtime_and_the_contract_loads_no_numpy() -> None:
    """Every hook alias takes the record type (a plugin may annotate with ``ScoreHook[MyRecord]`` without
    postponed annotations), the spec's hints resolve, and reading the contract imports no numpy."""
    import subprocess
    import sys
    import typing

    from vst_core import contract

    hooks = [n for n in contract.__all__ if n.endswith("Hook")]
    generic = [n for n in hooks if typing.get_args(getattr(contract, n)) and getattr(getattr(contract, n), "__parameters__", ())]
    for name in generic:
        getattr(contract, name)[int]  # subscripting a generic alias of the record type works
    assert {"ScoreHook", "SetHook", "CompleteHook", "ImageRecordHook", "MarginsHook", "ImportHook"} <= set(generic)
    assert {"computing", "showing"} <= set(typing.get_type_hints(contract.MetricSpec))
    assert "score" in typing.get_type_hints(contract.Computing)
    code = "import sys, vst_core.contract, vst_core.records; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_blank_server_address_on_the_command_line_is_no_server_and_a_path_is_a_models_folder(tmp_path: Path) -> None:
    """``--judge-endpoint ""`` (a script's empty variable) means no served judge, as before the judge
    owned its options; a ``pathlib.Path`` names a model's folder as a string did."""
    from vst_core.cli import build_parser
    from vst_core.cli.score_options import settings_from_args

    args = build_parser("score").parse_args(
        ["score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--judge-endpoint", "", "--judge-served-model", " "]
    )
    settings = settings_from_args(args)
    assert settings.option("judge_endpoint") is None and settings.option("judge_served_model") is None
    assert Settings(vrank_model=tmp_path).option("vrank_model") == str(tmp_path)


def test_a_spec_takes_its_groups_only_and_keeps_what_its_options_imply_through_replace() -> None:
    """The narrow core and its typed groups: a group's field given as a keyword of its own, or read
    as an attribute of the spec, is an error, not a silent None; made (and made again by
    ``replace``), the spec holds its option's box and its signed setting once, and an image metric
    its ``score`` over the shared image work."""
    from dataclasses import replace

    from vst_core.contract import Computing, Option, Reading, Signing

    @dataclasses.dataclass(frozen=True)
    class X:
        score: float | None

    def score(stories: Any, run: Any) -> dict[tuple[str, str], X | str]:
        return {}

    core = ("x", "X", "d", X, (MetricField("X", "x", "score", "h"),))
    option = Option("x_file", kind="file", label="X file", signed=False)
    spec = MetricSpec(
        *core,
        computing=Computing(score=score),
        reading=Reading(aliases=("a",)),
        signing=Signing(options=(option, Option("x_n", 3, kind="int"))),
    )
    assert spec.computing.score is score and spec.reading.aliases == ("a",)
    assert [f.setting for f in spec.showing.model_fields] == ["x_file"] and spec.signing.settings == ("x_n",)
    again = replace(spec, reading=Reading(aliases=("b",)), module="m")
    assert again.reading.aliases == ("b",) and again.computing.score is score and again == replace(again)
    assert [f.setting for f in again.showing.model_fields] == ["x_file"] and again.signing.settings == ("x_n",)
    image = MetricSpec(*core, computing=Computing(needs=frozenset({"images", "clip"}), image_record=lambda g, s, e: X(1.0)))
    assert type(image.computing.score).__name__ == "_ImageScore"
    with pytest.raises(TypeError):
        MetricSpec(*core, score=score)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        spec.score  # type: ignore[attr-defined]  # noqa: B018


def test_a_plugins_bench_phase_and_sizes_are_vst_bench_flags_and_phases_and_a_taken_one_is_refused(
    plugins: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric's ``Bench`` adds its phase (after the shared ones, before ``rss``) and its sizes (flags
    of ``vst bench``, read by ``BenchConfig.size``) with no file of the harness's; a phase or flag of
    the command itself or of another metric is refused."""
    from vst_core.bench.run import BenchConfig, all_phases, metric_phases
    from vst_core.cli import main
    from vst_core.contract import BENCH_FLAGS

    bench = (
        "from vst_core.contract import Bench, BenchPhase, BenchSize\n"
        "def _phase(run):\n    return {'toybench_rate': run.config.size('toy_rounds') * 2}\n"
        "BENCH = Bench((BenchPhase('toybench', _phase, targets={'toybench_rate': 1.0}),), (BenchSize('toy_rounds', 3, 'rounds (50%)'),))\n"
    )
    clash = "from vst_core.contract import Bench, BenchPhase, BenchSize\nBENCH = Bench({})\n"
    reg = _install(
        plugins,
        monkeypatch,
        toybench=bench + _good_as("toybench", "b1", "tools=Tools(bench=BENCH)"),
        ownphase=clash.format("(BenchPhase('rss', dict),)") + _good_as("ownphase", "b2", "tools=Tools(bench=BENCH)"),
        otherphase=clash.format("(BenchPhase('judge', dict),)") + _good_as("otherphase", "b3", "tools=Tools(bench=BENCH)"),
        ownsize=clash.format("(), (BenchSize('text_stories', 1, 'x'),)") + _good_as("ownsize", "b4", "tools=Tools(bench=BENCH)"),
        othersize=clash.format("(), (BenchSize('judge_size', 'a', 'x'),)")
        + _good_as("othersize", "b5", "tools=Tools(bench=BENCH)"),
        twophases=clash.format("(BenchPhase('twice', dict), BenchPhase('twice', dict))")
        + _good_as("twophases", "b6", "tools=Tools(bench=BENCH)"),
        twosizes=clash.format("(), (BenchSize('twice_n', 1, 'a'), BenchSize('twice_n', 2, 'b'))")
        + _good_as("twosizes", "b7", "tools=Tools(bench=BENCH)"),
        alien=clash.format("(BenchPhase('alien', dict, targets={'warm_speedup': 0.0}),)")
        + _good_as("alien", "b8", "tools=Tools(bench=BENCH)"),
        onoff=clash.format("(), (BenchSize('onoff', True, 'x'),)") + _good_as("onoff", "b9", "tools=Tools(bench=BENCH)"),
        nolegend=_good_as("nolegend", "b10", "showing=Showing(legend=None)"),
        badlegend=_good_as("badlegend", "b11", "showing=Showing(legend=('a',))"),
        nowords=_good_as("nowords", "b12", "showing=Showing(in_text=None)"),
    )
    reasons = "\n".join(reg.problems)
    assert "bench phase 'rss' is not lower_case_words, or it is the command's own" in reasons
    assert "bench phase 'judge' is not lower_case_words, or it is metric 'judge'" in reasons
    assert "bench size '--text-stories' is not --lower-case-words, or it is the command's own" in reasons
    assert "or it is metric 'judge'" in reasons and "toybench" in reg.specs, reasons
    assert "bench phase 'twice' is not lower_case_words, or it is metric 'twophases'" in reasons  # twice in one metric
    assert "bench size '--twice-n' is not --lower-case-words, or it is metric 'twosizes'" in reasons
    assert "bench phase 'alien' has targets for figures not its own: warm_speedup" in reasons  # no shared target moved
    assert "bench size '--onoff': a size is a count, seconds, a word or several counts" in reasons
    assert (
        reasons.count("legend is a tuple of LegendEntry") == 2 and "in_text is the words" in reasons
    )  # else every page would fail
    assert len(reg.problems) == 11
    assert all_phases()[-2:] == ("toybench", "rss") and "judge_server" in all_phases()
    phase = next(p for p in metric_phases() if p.name == "toybench")
    with pytest.raises(ValueError, match="no metric declares the bench size"):
        BenchConfig(sizes={"toy_roundz": 3})
    config = BenchConfig(sizes={"toy_rounds": 5}, skip=("raw",))
    assert BenchConfig.from_json(json.loads(json.dumps(dataclasses.asdict(config)))) == config  # the memory process's copy
    assert BenchConfig().size("toy_rounds") == 3 and phase.run(
        type("Run", (), {"config": BenchConfig(sizes={"toy_rounds": 4})})()
    ) == {"toybench_rate": 8}
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    shown = capsys.readouterr().out
    assert "--toy-rounds TOY_ROUNDS" in shown and "rounds (50%)" in shown and "toybench" in shown
    metrics = {z.flag for sp in reg.specs.values() if sp.tools.bench for z in sp.tools.bench.sizes}
    assert _long_flags("bench") - metrics == BENCH_FLAGS  # the command's own flags, which no metric may take
    assert main(["bench", "--toy-rounds", "0"]) == 2 and "--toy-rounds must be at least 1" in capsys.readouterr().err


def test_a_plugins_number_option_with_bounds_is_a_sidebar_control_and_a_bad_one_is_refused(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed metric's option with a label and bounds (or choices) is a slider (a select box)
    in its sidebar section with its link rule; ``signed="always"``, bounds that leave out the
    default or are not a number's, and a key taken by a metric or another option are refused."""
    from dashboard.choices import Choices, controls, settings_for, url_notices

    def with_option(name: str, option: str) -> str:
        return "from vst_core.contract import Option\n" + _good_as(name, f"{name} n", f"signing=Signing(options=({option},))")

    reg = _install(
        plugins,
        monkeypatch,
        tuned=with_option("tuned", 'Option("tuned_k", 3, kind="int", label="k", bounds=(1, 5), key="tuned_k_link")'),
        always=with_option("always", 'Option("always_k", 3, kind="int", signed="always")'),
        outside=with_option("outside", 'Option("outside_k", 9, kind="int", label="k", bounds=(1, 5))'),
        texty=with_option("texty", 'Option("texty_k", "a", label="k", bounds=(1, 5))'),
        taken=with_option("taken", 'Option("taken_k", "a", label="k", choices=("a", "b"), key="ngram")'),
        named=with_option("named", 'Option("named_k", "a", label="k", choices=("a", "b"), key="coherence")'),
        shadow=with_option("shadow", 'Option("variant", "a", label="Mode", choices=("a", "b"))'),
        own_key=with_option("own_key", 'Option("own_k", "a", label="k", choices=("a", "b"), key="source")'),
        box=with_option("box", 'Option("extra_clip", kind="file", label="a file")'),
        endless=with_option("endless", 'Option("endless_k", 1.0, kind="float", label="k", bounds=(0.0, float("inf")))'),
        unset=with_option("unset", 'Option("unset_k", None, label="Mode", choices=("fast", "exact"))'),
    )
    joined = "\n".join(reg.problems)
    assert [s.name for s in reg.plugins] == ["tuned"] and len(reg.problems) == 10, joined
    assert "key 'variant' is not lower-case words" in joined and "key 'source' is not" in joined
    assert "key 'extra_clip' is not" in joined and "bounds (low, high) are a number's, finite" in joined
    assert "option 'unset_k': a control's default is one of its choices" in joined
    assert "option 'always_k': signed is True or False" in joined
    assert "its default 9 is outside its bounds (1, 5)" in joined
    assert "option 'texty_k': bounds (low, high) are a number's" in joined
    assert "key 'ngram' is not lower-case words, or a metric's name or key" in joined
    assert "key 'coherence' is not lower-case words, or a metric's name or key" in joined
    assert {"variant", "ngram"} <= set(controls())  # RoViST-NR's controls stay its own
    assert controls()["tuned_k_link"].setting == "tuned_k"
    assert url_notices({"tuned_k_link": "7"}) == [
        "The link value tuned_k_link='7' is not valid (a whole number from 1 to 5); the default is used"
    ]
    assert settings_for(Choices(tuned={"tuned_k": 4})).option("tuned_k") == 4
