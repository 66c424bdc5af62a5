"""Small things every page shows: a notice's words about the server's model cache, the
Agreement page's matrix of differences, the axis of Compare two systems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import APP, PAGES
from streamlit.testing.v1 import AppTest

from dashboard.frame import with_code
from vst_core.models.clip_weights import clip_cache_hint


@pytest.mark.parametrize("home", [None, "hf-home"])
def test_the_grounding_notice_names_the_cache_once_with_no_garbled_parenthesis(
    home: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if home is not None:
        monkeypatch.setenv("HF_HOME", str(tmp_path / home))
    message = (
        f"CLIP weights ViT-B-32/openai are not in the local cache ({clip_cache_hint()}) and cannot be downloaded from "
        "here. Either run `vst fetch-models` on a connected machine"
    )
    shown = with_code(message)
    assert shown.startswith(
        "CLIP weights ViT-B-32/openai are not in the local cache on the server and cannot be downloaded from here."
    )
    assert "(" not in shown and "model cache" not in shown


def test_a_parenthesis_that_says_more_than_the_cache_is_kept() -> None:
    shown = with_code("A model (the pair model, read from /nonexistent/x) is off")
    assert "(the pair model" in shown


def test_the_legend_lists_only_the_marks_of_the_metrics_that_ran() -> None:
    from vst_core.viz.story import drawn_in_text, legend_html

    everything, nr_only = legend_html(), legend_html(metrics=("redundancy",))
    assert "grounded phrase" in everything and "phrase below θ" in everything  # GROOVIST's marks
    assert "repeats an earlier sentence" in nr_only
    assert "grounded phrase" not in nr_only and "phrase below θ" not in nr_only
    assert "GROOVIST" in drawn_in_text() and "GROOVIST" not in drawn_in_text(("redundancy",))
    assert legend_html(metrics=()) == "" and drawn_in_text(()) == ""


def _chart_layout(app: AppTest) -> dict[str, Any]:
    (chart,) = app.get("plotly_chart")
    layout: dict[str, Any] = json.loads(chart.proto.spec)["layout"]
    return layout


@pytest.fixture
def app_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's caches in a temporary folder, and nothing cached from another test."""
    import streamlit as st

    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.mark.slow
def test_compare_two_systems_draws_zero_inside_its_axis_with_a_margin(app_cache: None) -> None:
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["systems"])
    app.run()
    assert not app.exception, app.exception
    low, high = _chart_layout(app)["xaxis"]["range"]  # the sample's two NR differences are both above 0
    assert low < 0 < high and -low > 0.05 * (high - low) * 0.5


def test_a_zero_difference_between_two_metrics_has_no_sign() -> None:
    import pandas as pd

    from vst_core.analysis.meta_eval.versus import versus_matrix

    table = pd.DataFrame(
        [
            {"metric_a": "A", "metric_b": "B", "difference": 0.0, "p_permutation": 1.0},
            {"metric_a": "A", "metric_b": "C", "difference": -0.0002, "p_permutation": 0.9},
            {"metric_a": "B", "metric_b": "C", "difference": 0.25, "p_permutation": 0.01},
        ]
    )
    m = versus_matrix(table, ["A", "B", "C"])
    assert (m.at["A", "B"], m.at["B", "A"], m.at["A", "C"], m.at["C", "A"]) == ("0.000",) * 4
    assert (m.at["B", "C"], m.at["C", "B"]) == ("+0.250*", "-0.250*")
    assert m.at["A", "A"] == m.at["B", "B"] == ""  # the diagonal stays blank


@pytest.mark.slow
def test_the_agreement_matrix_on_the_sample_shows_no_signed_zero(app_cache: None) -> None:
    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES["meta"])
    app.run()
    assert not app.exception, app.exception
    cells = [str(v) for frame in app.dataframe for v in frame.value.to_numpy().ravel()]
    assert any(c.startswith("0.000") for c in cells)  # the sample's equal agreements
    assert not [c for c in cells if c.startswith(("+0.000", "-0.000"))]


def _download_rows(app: AppTest) -> tuple[list[str], list[tuple[str, str]]]:
    """The main area's blocks in order (the row of downloads by its key) and each download button
    with the key of the block holding it."""
    order: list[str] = []
    found: list[tuple[str, str]] = []

    def walk(node: Any, holder: str) -> None:
        for child in getattr(node, "children", {}).values():
            block_id = str(getattr(child.proto, "id", "")) if child.type == "flex_container" else ""
            key = block_id.split("-vst-", 1)[1] if "-vst-" in block_id else holder
            if node is app.main:
                order.append(key if "-vst-" in block_id else child.type)
            if child.type == "download_button":
                found.append((child.label, holder))
            walk(child, key)

    walk(app.main, "")
    return order, found


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dataset", "systems", "leaderboard", "human"])
def test_a_page_puts_its_downloads_in_one_row_at_its_end(name: str, app_cache: None) -> None:
    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES[name])
    app.run()
    assert not app.exception, app.exception
    order, found = _download_rows(app)
    assert found and {holder for _, holder in found} == {"downloads"}, found
    assert order[-3:] == ["downloads", "divider", "caption"]  # then the frame's footer


@pytest.mark.slow
def test_the_agreement_page_puts_each_tab_s_downloads_in_one_row(app_cache: None) -> None:
    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES["meta"])
    app.run()
    assert not app.exception, app.exception
    _, found = _download_rows(app)
    holders: dict[str, list[str]] = {}
    for label, holder in found:
        holders.setdefault(holder, []).append(label)
    assert all(holder.startswith("downloads") for holder in holders), holders
    assert len(holders["downloads-correlations"]) == 4 and len(holders["downloads-pairwise"]) >= 2
    assert holders["downloads"] == ["Report (HTML, opens offline)"]


@pytest.mark.slow
def test_the_dataset_page_lets_its_labels_wrap_rather_than_cut_them(app_cache: None) -> None:
    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES["dataset"])
    app.run()
    assert not app.exception, app.exception
    widgets = [
        *app.main.get("download_button"),
        *app.main.get("multiselect"),
        app.toggle(key="find_pairs"),
        app.toggle(key="descending"),
    ]
    assert widgets and all(w.proto.wrap for w in widgets), [w.proto.id for w in widgets if not w.proto.wrap]


@pytest.mark.slow
def test_inspect_lists_the_marks_of_the_metrics_that_ran_only(app_cache: None) -> None:
    """The Inspect page's key under its title follows the run: grounding's marks only where
    grounding ran (on a machine without CLIP's weights the sample runs without it)."""
    from dashboard.keys import FRAME

    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES["inspect"])
    app.run()
    assert not app.exception, app.exception
    ran = app.session_state[FRAME].view.settings.metrics
    key = " ".join(str(c.value) for c in app.caption)
    assert "repeats an earlier sentence" in key
    assert ("grounded phrase" in key) == ("grounding" in ran), (ran, key)
