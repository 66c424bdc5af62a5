"""The dashboard's structure: no import circle among its modules, one parser of the regions option
for the CLI and the sidebar, the CLIP metrics from the settings' registry, torch only for a CUDA
check, and a view's records digested once, not on every rerun."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from dashboard.choices import Choices, confined, device_notice, in_sidebar_terms, own_controls, plugin_metrics, settings_for
from vst_core.cli import build_parser
from vst_core.cli.score import settings_from_args
from vst_core.config import available_metrics
from vst_core.contract import registry
from vst_core.data.options import Regions, parse_regions
from vst_core.models.hub import ModelLoadError, option

PACKAGES = ("dashboard", "app_pages")


def _module_files() -> dict[str, Path]:
    files = {f"{package}.{path.stem}": path for package in PACKAGES for path in sorted((ROOT / package).glob("*.py"))}
    return {name.removesuffix(".__init__"): path for name, path in files.items()}


def import_graph() -> dict[str, set[str]]:
    """Module -> the dashboard and page modules it imports (anywhere in it, functions included)."""
    modules = _module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.stem == "__init__" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, one level up per extra dot
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_dashboard_modules_import_without_a_circle() -> None:
    graph = import_graph()
    assert {"dashboard.frame", "dashboard.sidebar", "dashboard.keys", "app_pages.agreement"} <= set(graph)
    assert "dashboard.keys" in graph["dashboard.frame"] and "dashboard.frame" not in graph["dashboard.sidebar"]
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph) or [])


def test_the_circle_check_finds_a_circle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, Regions("grid")),
        ("", Regions("grid")),
        ("  ", Regions("grid")),
        ("grid", Regions("grid")),
        (" detector ", Regions("detector")),
        ("regions.csv", Regions("csv", "regions.csv")),
        (" data/my regions.csv ", Regions("csv", "data/my regions.csv")),
        ("Grid", Regions("csv", "Grid")),  # keywords are exact: anything else is a file name
    ],
)
def test_the_regions_option_is_parsed_once(text: str | None, expected: Regions) -> None:
    assert parse_regions(text) == expected
    shown = settings_for(Choices(regions=text or ""))  # the sidebar's field
    assert (shown.option("regions"), shown.option("regions_file")) == (expected.kind, expected.file)
    argv = ["score", "in.jsonl", "--out", "out.jsonl", *(["--regions", text] if text is not None else [])]
    given = settings_from_args(build_parser().parse_args(argv))  # the CLI's option
    assert (given.option("regions"), given.option("regions_file")) == (expected.kind, expected.file)


def test_the_regions_field_is_confined_as_it_is_parsed(tmp_path: Path) -> None:
    kept, notices = confined(Choices(regions=" detector "), [tmp_path])
    assert kept.regions == " detector " and not notices  # a keyword names no path
    back, notices = confined(Choices(regions="/etc/regions.csv"), [tmp_path])
    assert back.regions == "grid" and len(notices) == 1 and "Regions" in notices[0]


def test_clip_metrics_come_from_the_settings_registry() -> None:
    every = Choices(extra_clip=True).clip_metrics
    # COSMic comes with its own model folder; character alignment is offered by name (it needs the characters' crops)
    computed_from_phrases = [
        m for m in available_metrics() if m in registry().with_need("clip") and m not in ("cosmic", "char_alignment")
    ]
    assert list(every) == computed_from_phrases
    assert "char_alignment" in plugin_metrics() and "char_alignment" not in settings_for(Choices(extra_clip=True)).metrics
    assert Choices(extra_clip=True, files={"cosmic_model": "m"}).clip_metrics == (*computed_from_phrases, "cosmic")
    assert Choices(extra_clip=False).clip_metrics == ("grounding",)
    assert settings_for(Choices(coherence=False)).metrics == ("redundancy", "grounding", "clipscore", "rovist_vg_clip")


def test_a_metric_asked_for_by_its_model_files_is_on_when_its_required_fields_are_filled_in() -> None:
    """The model boxes come from each module's ``model_fields``: RoViST-VG needs its checkpoint and a
    GloVe file (the idf table is optional) and comes with grounding, as COSMic does; Vrank does not.
    The metrics keep the order the sidebar always gave them (it is in the signature)."""
    every = Choices(files={"rovist_vg_checkpoint": " c.pth ", "glove_file": "g.txt", "cosmic_model": "m", "vrank_model": "v"})
    settings = settings_for(every)
    assert settings.metrics == (
        *("redundancy", "coherence", "grounding", "clipscore", "rovist_vg_clip"),
        *("rovist_vg", "cosmic", "vrank"),
    )
    assert (settings.option("rovist_vg_checkpoint"), settings.option("glove_file"), settings.option("rovist_vg_idf")) == (
        "c.pth",
        "g.txt",
        None,
    )
    assert "rovist_vg" not in settings_for(Choices(files={"rovist_vg_checkpoint": "c.pth"})).metrics  # no GloVe file
    assert settings_for(replace(every, grounding=False)).metrics == ("redundancy", "coherence", "vrank")
    named = f"pass {option('vrank_model', 'DIR')}, {option('glove_file')} and {option('rovist_vg_idf', 'PATH')}, not --glove-x"
    assert in_sidebar_terms(ModelLoadError(named)) == (
        "pass “Vrank model folder”, “GloVe file” and “RoViST-VG idf table”, not --glove-x"
    )
    assert str(ModelLoadError(named)) == "pass --vrank-model DIR, --glove and --rovist-vg-idf PATH, not --glove-x"
    kept, notices = confined(every.changed(cosmic_model="/etc"), [Path("/nonexistent")])
    assert kept.value("cosmic_model") == "" and notices and "COSMic model folder" in notices[0]
    assert own_controls() >= {"rovist_vg", "vrank", "cosmic", "redundancy", "coherence", "judge"}


def test_cuda_is_asked_only_for_the_choice_cuda() -> None:
    def no_check() -> bool:
        raise AssertionError("the CUDA check ran")

    assert device_notice("auto", no_check) == ("auto", None)
    assert device_notice("cpu", no_check) == ("cpu", None)
    assert device_notice("cuda", lambda: True) == ("cuda", None)
    device, notice = device_notice("cuda", lambda: False)
    assert device == "cpu" and notice is not None and "no CUDA GPU" in notice


@pytest.mark.slow  # a fresh interpreter runs the app
def test_a_dashboard_without_models_never_imports_torch() -> None:
    """The whole app on the sample with the models off, in a fresh interpreter: torch stays unloaded."""
    script = f"""
import sys
from streamlit.testing.v1 import AppTest
app = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=90).switch_page("app_pages/dataset.py")
app.session_state["coherence"] = False
app.session_state["grounding"] = False
app.run()
assert not app.exception, app.exception
assert app.title[0].value == "Dataset", [t.value for t in app.title]
print("torch" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.slow  # AppTest runs of two pages
@pytest.mark.parametrize("page", ["app_pages/agreement.py", "app_pages/human_likeness.py"])
def test_a_rerun_does_not_digest_the_records_again(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import vst_core.viz.tables as tables

    calls = {"digest": 0, "signatures": 0}
    digest, signature_ids = tables.json_digest, tables.RunView.signature_ids

    def counted_digest(*args: object, **kwargs: object) -> str:
        calls["digest"] += 1
        return digest(*args, **kwargs)  # type: ignore[arg-type]

    def counted_signatures(self: tables.RunView) -> tuple[str, ...]:
        calls["signatures"] += 1
        return signature_ids(self)

    monkeypatch.setattr(tables, "json_digest", counted_digest)
    monkeypatch.setattr(tables.RunView, "signature_ids", counted_signatures)
    st.cache_resource.clear()
    st.cache_data.clear()
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).switch_page(page)
    app.session_state["coherence"] = False
    app.session_state["grounding"] = False
    app.session_state["resamples"] = 0  # Agreement's statistics settings: the report itself is not under test
    app.session_state["baselines"] = False
    app.run()
    assert not app.exception, app.exception
    assert calls["digest"] >= 1 and calls["signatures"] == 1  # the first run: the view is made and digested
    first = dict(calls)
    app.run()
    app.run()
    assert not app.exception, app.exception
    assert calls == first  # later reruns reuse the view, its key and its signature ids


def test_every_model_field_is_a_setting_and_a_sidebar_choice_and_keys_only_its_model() -> None:
    """Each metric's ``model_fields`` name one of its own options (the sidebar keeps its value in
    ``Choices.files``), and the dashboard's model cache key of a built-in metric moves with its model files
    and the device, not with settings its loader never reads (regions, CLIP, the reference system)."""

    from dashboard.choices import model_metrics
    from dashboard.loading import model_key
    from vst_core.config import Settings
    from vst_core.contract import registry

    found = [(spec.name, f.setting) for spec in model_metrics().values() for f in spec.showing.model_fields]
    assert found and all(registry().options[setting][0].name == name for name, setting in found)
    assert all(Choices(files={s: "x"}).value(s) == "x" for _, s in found)
    base = Settings(metrics=("redundancy", "grounding", "rovist_vg", "cosmic", "vrank"))
    for name in ("rovist_vg", "cosmic", "vrank"):
        key = model_key(name, base)
        for other in (
            base.with_(regions="detector"),
            base.with_(top_b=5),
            base.with_(clip_model="ViT-B-16"),
            base.with_(reference_system="human"),
            base.with_(theta="0.3"),
        ):
            assert model_key(name, other) == key, (name, other)
        assert model_key(name, base.with_(device="cpu")) != key
    assert model_key("rovist_vg", base.with_(rovist_vg_vit="other-vit")) != model_key("rovist_vg", base)
    assert model_key("vrank", base.with_(vrank_model="elsewhere")) != model_key("vrank", base)


def test_a_metrics_own_section_is_a_sidebar_choice_on_the_link_and_keys_its_model_by_what_it_loads_with() -> None:
    """Each metric's :class:`Switch` (RoViST-C's "Pair model" and toggle) names a Choices field for its
    toggle and its box and one of the metric's own options for its box; the toggle turns the metric on in the
    settings, its value is checked on a link, its flags are said as the box, the box's path part is
    confined like a typed path, and the model cache key moves with the settings the model loads with."""
    import dataclasses

    from dashboard.choices import path_fields, url_notices
    from dashboard.loading import model_key
    from vst_core.config import Settings
    from vst_core.contract import registry

    switched = registry().switched
    assert list(switched) == ["coherence"]
    choice_fields = {f.name for f in dataclasses.fields(Choices)}
    own = {o.setting for o in registry().spec("coherence").signing.options}  # the switch's settings are the metric's own options
    for name, sw in switched.items():
        assert {name, sw.setting} <= choice_fields and {sw.setting, *sw.loads} <= own
        assert name in settings_for(Choices(grounding=False)).metrics
        assert name not in settings_for(replace(Choices(grounding=False), **{name: False})).metrics
        assert url_notices({name: "maybe"}) and not url_notices({name: "false"})
        assert path_fields()[sw.setting][0] == sw.box
        for setting in sw.loads:
            assert in_sidebar_terms(ModelLoadError(f"pass {option(setting)}")) == f"pass “{sw.box}”"
        base = Settings(metrics=("redundancy", name))
        for setting in sw.loads:
            moved = base.with_(**{setting: "reference" if setting.endswith("profile") else "elsewhere"})
            assert model_key(name, moved) != model_key(name, base), setting
        assert model_key(name, base.with_(theta="0.3", regions="detector")) == model_key(name, base)


@pytest.mark.slow  # AppTest
def test_a_box_set_in_the_session_draws_no_streamlit_warning(capfd: pytest.CaptureFixture[str]) -> None:
    """The sidebar's text boxes take their defaults from the session state, so a value set there (a
    shared link, a page switch keeping a typed path) draws no "default value ... Session State"
    warning stack in the server's log."""
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    app.run()
    app.session_state["coherence_model"] = "bert-nsp"
    app.session_state["clip_arch"] = "ViT-B-32"
    app.run()
    assert not app.exception
    captured = capfd.readouterr()
    assert "default value but also had its value set" not in captured.out + captured.err
