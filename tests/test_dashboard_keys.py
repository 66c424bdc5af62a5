"""The dashboard's own keys are collected from its code (``dashboard/own_keys.py``) into the list
registration checks (``vst_core/contract/dashboard_keys.py``): an installed metric can take none
of them for a box or a control, so none can break a page."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_metric_plugins import _good_as, _install, plugins  # noqa: F401 (the fixture)

from dashboard.own_keys import TARGET, WORDS, collect, dashboard_keys, module_text
from vst_core import contract

#: The keys the dashboard's code computes, each on purpose: (file, function, expression) -> why it
#: is no key of the dashboard's own.
COMPUTED = {
    ("app_pages/agreement.py", "<module>", "spec.tools.trained_folder"): "a metric's own option",
    ("app_pages/inspect.py", "regions", "story_widget_key(f'region-{name}', *story.key)"): "region-<digest>, never words",
    ("dashboard/sidebar.py", "_controls", "key"): "a metric's control (controls())",
    ("dashboard/sidebar.py", "_grounding", "IMAGE[name].control_key"): "an image pipeline's box: its option's key",
    ("dashboard/sidebar.py", "_grounding", "IMAGE['regions'].control_key"): "the regions box: its option's key",
    ("dashboard/sidebar.py", "_model_fields", "f.setting"): "a metric's model file box",
    ("dashboard/sidebar.py", "_plugins", "f.setting"): "a metric's model file box",
    ("dashboard/sidebar.py", "_switches", "name"): "a switched metric's toggle: its name",
    ("dashboard/sidebar.py", "_switches", "sw.setting"): "a switched metric's box: its option",
    ("dashboard/sidebar.py", "render", "[f.setting for spec in boxed_metrics().values() for f in spec.showing.model_fields]"): (
        "the metrics' model file boxes, kept over a page switch"
    ),
    ("dashboard/sidebar.py", "render", "[sw.setting for sw in registry().switched.values()]"): "the switched metrics' boxes",
    ("dashboard/sidebar.py", "render", "key"): "every parameter of the link, checked by url_notices",
}


def test_the_keys_registration_checks_are_the_ones_the_dashboards_code_names() -> None:
    """The generated list is the code's, written as ``python -m dashboard.own_keys`` writes it, and
    every key the code computes is one of :data:`COMPUTED` (a new one is named there, or given as a
    constant so the list holds it)."""
    found = collect()
    keys, prefixes = dashboard_keys(found)
    rerun = "the dashboard's keys changed: run python -m dashboard.own_keys"
    assert (keys, prefixes) == (contract.DASHBOARD_KEYS, contract.DASHBOARD_KEY_PREFIXES), rerun
    assert TARGET.read_text(encoding="utf-8") == module_text(keys, prefixes), rerun
    assert found.unresolved == set(COMPUTED), sorted(found.unresolved ^ set(COMPUTED))
    # the keys pages give to a table of stories by position, and the sidebar's values' names
    assert {"table", "dis_stories", "dis_pairs", "system_pairs", "files", "tuned"} <= contract.DASHBOARD_KEYS


def test_a_key_given_any_way_the_dashboard_gives_one_is_collected(tmp_path: Path) -> None:
    """Keys by keyword, by position to a Streamlit element or to a function that passes one on,
    as f-strings, constants (imported too) and tuples looped over; session-state and link names
    read, written, tested and popped; Choices' fields. What the code computes is named."""
    (tmp_path / "dashboard").mkdir()
    (tmp_path / "app_pages").mkdir()
    (tmp_path / "app.py").write_text('import streamlit as st\nst.button("Go", "positional_button")\n')
    (tmp_path / "dashboard" / "names.py").write_text('SHARED = "shared_name"\nKEPT = ("kept_a", "kept_b")\n')
    (tmp_path / "dashboard" / "parts.py").write_text(
        textwrap.dedent(
            """
            import streamlit as st
            from dashboard.names import KEPT, SHARED

            def table(frame, key, story="story"):
                st.dataframe(frame, key=key)

            def outer(frame, name):
                table(frame, name)

            def state(o):
                for k in KEPT:
                    st.session_state[k] = st.session_state.get(SHARED)
                if "tested" in st.session_state:
                    st.session_state.pop("popped", None)
                st.session_state.attribute = 1
                st.query_params.get("linked")
                st.text_input("x", key=o.control_key)

            class Choices:
                own_field: str = ""
            """
        )
    )
    (tmp_path / "app_pages" / "page.py").write_text(
        textwrap.dedent(
            """
            import streamlit as st
            from dashboard.parts import outer, table

            table(None, "by_position")
            outer(None, "passed_on")
            table(None, key="by_keyword")
            st.slider("s", key=f"per_metric_{1}")
            st.selectbox("t", [], key=f"with-dash-{2}")
            """
        )
    )
    found = collect(tmp_path)
    assert found.keys == {
        *("positional_button", "shared_name", "kept_a", "kept_b", "tested", "popped", "attribute", "linked"),
        *("own_field", "by_position", "passed_on", "by_keyword"),
    }
    assert found.prefixes == {"per_metric_", "with-dash-"}
    assert found.unresolved == {("dashboard/parts.py", "state", "o.control_key")}
    assert WORDS.fullmatch("per_metric_") and not WORDS.fullmatch("with-dash-")


def _keyed(name: str, option: str, model_field: str = "") -> str:
    """A plugin metric ``name`` with one option (and a model file box of its own when given)."""
    head = "from vst_core.contract import ModelField, Option\n"
    fields = f", showing=Showing(model_fields=({model_field},))" if model_field else ""
    return head + _good_as(name, f"{name} n", f"signing=Signing(options=({option},)){fields}")


@pytest.mark.slow  # about 450 plugin modules imported and checked
def test_every_key_the_dashboard_names_is_refused_as_an_installed_metrics_box_or_control(
    plugins: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each key the code names (and each prefix's key), as a control's key, as a file box's
    setting and as a model file's setting without a label, is refused with its reason; before,
    ``table``, ``dis_stories``, ``dis_pairs`` and ``system_pairs`` were taken and broke the Dataset,
    Agreement and Systems pages."""
    found = collect()
    keys = sorted(k for k in found.keys if WORDS.fullmatch(k)) + [p + "x" for p in sorted(found.prefixes) if WORDS.fullmatch(p)]
    ways = {
        "control": lambda i, key: _keyed(
            f"control_{i}", f'Option("control_{i}_k", "a", label="k", choices=("a", "b"), key="{key}")'
        ),
        "box": lambda i, key: _keyed(f"box_{i}", f'Option("{key}", kind="file", label="a file")'),
        "model": lambda i, key: _keyed(f"model_{i}", f'Option("{key}", kind="file")', f'ModelField("{key}", "F", "file", "--f")'),
    }
    for way, body in ways.items():  # each way in a registry of its own: a setting taken by another way is no refusal
        reg = _install(plugins, monkeypatch, **{f"{way}_{i}": body(i, key) for i, key in enumerate(keys)})
        assert not reg.plugins and len(reg.problems) == len(keys), (way, [s.name for s in reg.plugins])
        for i, key in enumerate(keys):
            problem = next(p for p in reg.problems if f"'{way}_{i}'" in p)
            reasons = (f"key {key!r} is not lower-case words", "a setting of every run", f"option {key!r} is metric")
            assert any(r in problem for r in reasons[: 1 if way == "control" else 3]), problem


def test_an_option_named_as_the_sidebars_own_values_is_refused(plugins: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """``files`` and ``tuned`` hold the sidebar's own values (every model file's text, every control's
    value): an option so named would have read that tuple as its file, so registration refuses it,
    as a box, a model file without a label or a control's setting under another key."""
    reg = _install(
        plugins,
        monkeypatch,
        files_box=_keyed("files_box", 'Option("files", kind="file", label="a file")'),
        files_model=_keyed("files_model", 'Option("files", kind="folder")', 'ModelField("files", "F", "folder", "--f")'),
        tuned_control=_keyed("tuned_control", 'Option("tuned", 2, kind="int", label="n", bounds=(1, 3), key="own_tuned")'),
        fine=_keyed("fine", 'Option("fine_file", kind="file", label="a file")'),
    )
    joined = "\n".join(reg.problems)
    assert [s.name for s in reg.plugins] == ["fine"] and len(reg.problems) == 3, joined
    assert joined.count("key 'files' is not lower-case words") == 2 and "key 'tuned' is not" in joined
