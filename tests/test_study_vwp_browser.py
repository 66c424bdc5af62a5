"""Real browser, VWP: a Likert study made on the Human study page from the scores of a VWP-layout
release (people's stories of 10 and 6 film shots) and of a model's stories in the same sentence
groups, answered by three raters from their own links in headless Debian chromium (every shot with
its group of sentences under it), watched live by the researcher (Krippendorff's α with its
bootstrap interval, each metric's correlation with the ratings and its N) and exported: ``vst
meta-eval`` reads the judgements file downloaded from the page as it is and finds the coefficients
the live view showed. Screenshots in the test artifacts."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from conftest import ARTIFACTS
from test_browser import CHROMIUM, CHROMIUM_ARGS, FOOTER, SCORES_SOURCE, _finished, _start, _stop, sync_api
from test_study_browser import _column, _grid, _idle, _item, _type
from vwp_data import write_vwp_set

from vst_core.cli import main
from vst_core.data import load_records
from vst_core.study import STUDY_SUFFIX, AnswerStore, Presented, Study, live_view, load_study, plan_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

METRICS = "redundancy,characters"  # no model needed: NR, and the characters VWP names
RATERS = ("ann", "bo", "cy")
#: What people think of each story (system, story_id): people's stories above the model's.
BASE = {("human", "A1"): 5, ("human", "A2"): 4, ("llava", "A1"): 2, ("llava", "A2"): 3}


def rating(rater: str, story: tuple[str, str], aspect: int) -> int:
    """The point ``rater`` gives ``story`` on the ``aspect``-th aspect: the story's worth, bo one
    point kinder on every other aspect, cy one point harsher on the third (raters agree, not fully)."""
    value = BASE[story] + (rater == "bo" and aspect % 2 == 1) - (rater == "cy" and aspect == 2)
    return min(max(value, 1), 5)


@pytest.fixture(scope="module")
def vwp_scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """(the data folder, people's and the model's scores files), scored as a user scores them."""
    folder = tmp_path_factory.mktemp("vwp-study-data")
    people, model = write_vwp_set(folder)
    outs = [folder / "human_scores.jsonl", folder / "llava_scores.jsonl"]
    for source, out in zip((people, model), outs, strict=True):
        assert main(["score", str(source), "--out", str(out), "--metrics", METRICS, "--no-progress"]) == 0
    return folder, outs


@pytest.fixture(scope="module")
def served(vwp_scored: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(the app's address, its studies folder), the VWP data's folder allowed."""
    folder, _ = vwp_scored
    studies = tmp_path_factory.mktemp("vwp-studies")
    log = tmp_path_factory.mktemp("vwp-study-server") / "streamlit.log"
    proc, url = _start({"VST_STUDIES": str(studies), "VST_DATA_DIRS": str(folder)}, log)
    yield url, studies
    _stop(proc)


def _make_study(page: Any, url: str, scores: list[Path]) -> None:
    """The researcher loads both scores files in the sidebar and makes a Likert study of them on the
    Human study page: VIST-Edit's six aspects, three named raters, two raters an item."""
    page.goto(url + SCORES_SOURCE)
    _idle(page)
    box = page.get_by_role("textbox", name="…or scores files on this server")
    box.fill(";".join(map(str, scores)))
    box.press("Enter")
    _finished(page, time.perf_counter())
    sync_api.expect(page.locator(FOOTER).first).to_be_visible(timeout=90_000)
    page.get_by_role("link", name="Human study").click()
    page.wait_for_selector("h1:has-text('Human study')", timeout=90_000)
    _idle(page)
    page.get_by_text("New study", exact=True).click()
    _finished(page, 0)
    page.wait_for_selector("text=Likert: each story rated on each aspect", timeout=60_000)
    assert page.get_by_role("radio", name="Likert: each story rated on each aspect").is_checked()
    _type(page, "study-names", "\n".join(RATERS), "Control+Enter")
    _type(page, "study-per-item", "2")
    _type(page, "study-title", "Stories of film scenes")
    _type(page, "study-id", "vwp-likert")
    page.screenshot(path=str(ARTIFACTS / "study_vwp_new.png"), full_page=True)
    page.get_by_role("button", name="Create the study").click()
    page.wait_for_selector("text=Rater links", timeout=90_000)
    _idle(page)


def _shots(page: Any) -> list[tuple[bool, str]]:
    """The item's film shots as the rater page shows them, left to right: (a photo drawn, the text under it)."""
    columns = page.locator('.st-key-story-photos-rate-0 [data-testid="stColumn"]')
    columns.first.locator('[data-testid="stImage"] img, div:has-text("photo not available")').first.wait_for(timeout=30_000)
    return [
        (
            column.locator('[data-testid="stImage"] img').count() == 1,
            " ".join(column.locator('[data-testid="stMarkdownContainer"]').all_inner_texts()).strip(),
        )
        for column in columns.all()
    ]


def _boxes(page: Any) -> list[dict[str, float]]:
    """Where the item's photos are drawn (x, y, width, height in px)."""
    return [img.bounding_box() for img in page.locator('.st-key-story-photos-rate-0 [data-testid="stImage"] img').all()]


def _every_row(page: Any, header: str, count: int) -> list[list[str]]:
    """Every row of the grid with a column ``header`` (header first), scrolled through: the grid
    keeps only the rows in view in its accessible table."""
    heading = page.locator('[role="columnheader"]', has_text=re.compile(f"^{re.escape(header)}$"))
    grid = page.locator('[data-testid="stDataFrame"]').filter(has=heading).first
    grid.locator('[role="row"]').nth(1).wait_for(state="attached", timeout=60_000)
    box = grid.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    seen: dict[int, list[str]] = {}
    for _ in range(80):
        for row in grid.locator('[role="row"]').all():
            cells = [c.strip() for c in row.locator('[role="columnheader"], [role="gridcell"]').all_inner_texts()]
            seen[int(row.get_attribute("aria-rowindex") or 0)] = cells
        if len(seen) > count:
            break
        page.mouse.wheel(0, 200)
        page.wait_for_timeout(300)
    return [seen[k] for k in sorted(seen)]


def _rate(page: Any, study: Study, rater: str, presented: Presented, at: int) -> None:
    """Click each aspect's point of :func:`rating` for the story shown, then *Save answer*."""
    (shown,) = study.item(presented.item_id).stories
    for k, aspect in enumerate(study.aspects):
        point = rating(rater, shown.key, k)
        scale = page.locator(f".st-key-rate-{at}-{aspect.key} [role='radiogroup'] label")
        scale.nth(point - 1).click()
    page.get_by_role("button", name="Save answer").click()


def _answer(page: Any, study: Study, rater: str, shots: set[str]) -> int:
    """Answer the rater's plan in its order from their link; the people's story of ten shots in a
    screenshot, once (its name in ``shots``)."""
    plan = plan_for(study, study.rater(rater))  # type: ignore[arg-type]
    _idle(page)
    assert _item(page) == (1, len(plan))
    for n, presented in enumerate(plan):
        assert _item(page)[0] == n + 1
        item = study.item(presented.item_id)
        (story,) = item.stories
        shown = _shots(page)
        assert shown == [(True, text) for text in story.photo_texts()], (rater, n)  # each shot with its own group
        widths = [b["width"] for b in _boxes(page)]
        assert len(widths) == len(story.photos) and min(widths) >= 180, widths  # ten shots in two rows, not 110 px each
        if n == 0:  # a shot's group is several sentences: the instructions do not promise one
            told = page.locator('[data-testid="stExpander"]').filter(has_text="Instructions").inner_text()
            assert "under each photo, the part of the story written for it" in told and "one sentence" not in told
        if story.key == ("human", "A1") and not shots:  # ten shots, groups of one and two sentences
            page.screenshot(path=str(ARTIFACTS / "study_vwp_rater.png"), full_page=True)
            shots.add("study_vwp_rater.png")
        text = page.locator('[data-testid="stMain"]').inner_text()
        assert "llava" not in text.lower() and story.story_id not in text.split() and item.sequence_id not in text
        _rate(page, study, rater, presented, n)
        page.wait_for_selector(f"text=Saved your answer to item {n + 1}.", timeout=60_000)
        _idle(page)
    page.wait_for_selector("text=Every item is answered", timeout=30_000)
    return len(plan)


def _number(cell: str) -> float:
    return float(cell) if cell.strip() not in ("", "None", "NaN", "nan") else float("nan")


def test_a_likert_study_of_a_vwp_release_answered_watched_and_read_by_meta_eval(
    served: tuple[str, Path], vwp_scored: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    url, studies = served
    folder, scores = vwp_scored
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        researcher = browser.new_context(viewport={"width": 1400, "height": 3000}, accept_downloads=True).new_page()
        _make_study(researcher, url, scores)
        path = studies / f"vwp-likert{STUDY_SUFFIX}"
        study = load_study(path)
        assert (study.protocol, [r.name for r in study.raters], study.raters_per_item) == ("likert", list(RATERS), 2)
        assert sorted(i.stories[0].key for i in study.items) == sorted(BASE)  # each story of the two scenes, one an item
        assert sorted(len(i.stories[0].photos) for i in study.items) == [6, 6, 10, 10]
        links = _column(_grid(researcher, "link"), "link")
        assert [link.rsplit("?rater=", 1)[1] for link in links] == [r.token for r in study.raters]

        counts, shots = {}, set[str]()
        for rater in study.raters:
            page = browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
            page.goto(url + f"/?rater={rater.token}")
            counts[rater.name] = _answer(page, study, rater.name, shots)
            page.context.close()
        assert sum(counts.values()) == 2 * len(study.items) and min(counts.values()) >= 2 and shots

        store = AnswerStore.beside(path)
        answers = store.answers(study)
        assert len(answers) == 8 and all(
            a.value == {x.key: rating(a.rater, study.item(a.item_id).stories[0].key, k) for k, x in enumerate(study.aspects)}
            for a in answers
        )
        records = [r for f in scores for r in load_records(f)[0]]
        expected = live_view(study, answers, records, n_boot=200)  # what the page should show, computed here

        researcher.reload()
        researcher.wait_for_selector("text=Agreement between raters", timeout=90_000)
        researcher.wait_for_selector("text=Metrics against the answers so far", timeout=90_000)
        _idle(researcher)
        per_rater = _grid(researcher, "gold_accuracy")
        assert dict(zip(_column(per_rater, "rater"), map(int, _column(per_rater, "answered")), strict=True)) == counts
        agreement = _grid(researcher, "fleiss_kappa")
        captions = researcher.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
        researcher.wait_for_timeout(1000)
        researcher.screenshot(path=str(ARTIFACTS / "study_vwp_live.png"), full_page=True)
        correlations = _every_row(researcher, "coefficient", len(expected.correlations))
        with researcher.expect_download() as got:
            researcher.get_by_role("button", name=re.compile("Judgements for vst meta-eval")).click()
        judgements = tmp_path / got.value.suggested_filename
        got.value.save_as(judgements)
        browser.close()

    # α as the page shows it: the krippendorff package's on the ratings; its interval the study's bootstrap
    assert _column(agreement, "aspect") == [a.key for a in study.aspects]
    items = [i.item_id for i in study.items]
    for k, aspect in enumerate(study.aspects):
        table = np.full((len(RATERS), len(items)), np.nan)
        for a in answers:
            table[RATERS.index(a.rater), items.index(a.item_id)] = a.value[aspect.key]
        want = krippendorff.alpha(reliability_data=table, level_of_measurement="ordinal")
        shown = dict(zip(agreement[0], agreement[1 + k], strict=True))
        assert _number(shown["alpha"]) == pytest.approx(want, abs=1e-3), aspect.key
        assert int(shown["n_items"]) == 4
        low, high = _number(shown["low"]), _number(shown["high"])
        assert (low, high) == pytest.approx(tuple(expected.agreement.loc[k, ["low", "high"]]), abs=1e-3), aspect.key
        assert low <= high
    interval = (
        "Krippendorff's α (ordinal) per aspect with its 95% bootstrap interval over items "
        f"(low, high; 200 resamples, seed {study.seed})"
    )
    assert any(interval in c and study.signature in c for c in captions), captions
    assert any("N: stories (or pairs) with both" in c and study.signature in c for c in captions)

    # the correlations the page shows, with their N: those vst meta-eval finds in the exported file
    head = judgements.read_text(encoding="utf-8").splitlines()
    assert judgements.name == "vwp-likert-judgements.csv" and head[0].startswith("# vst study vwp-likert " + study.signature)
    joined = tmp_path / "scores.jsonl"  # people's and the model's scores in one file, as vst meta-eval takes them
    joined.write_text("".join(s.read_text(encoding="utf-8") for s in scores), encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["meta-eval", str(joined), str(judgements), "--out", str(out), "--no-progress", "--no-baselines"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    cli = {(c["metric"], c["aspect"], c["method"]): (c["value"], c["n"]) for c in report["correlations"]}
    shown_rows = [dict(zip(correlations[0], row, strict=True)) for row in correlations[1:]]
    assert len(shown_rows) == len(cli) == 3 * 6 * 4  # 3 metrics x 6 aspects x 4 coefficients, every one scrolled to
    for row in shown_rows:
        value, n = cli.pop((row["metric"], row["aspect"], row["method"]))
        assert int(row["N"]) == n == (4 if row["metric"] == "NR" else 3), row  # llava's A1 names nobody: no character score
        assert _number(row["coefficient"]) == pytest.approx(value, abs=1e-3, nan_ok=True), row
    assert not cli and report["match"]["matched"] == report["match"]["judged"] == 4
