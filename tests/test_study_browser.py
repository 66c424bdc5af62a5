"""Real browser: a study made on the Human study page, answered by three raters from their own
links (number keys, clicks, Tab/arrows/Enter) in headless Debian chromium, and watched live by the
researcher; a wrong link shows one line. Screenshots in the test artifacts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS, SAMPLE
from test_browser import CHROMIUM, CHROMIUM_ARGS, IDLE, _finished, _start, _stop, sync_api

from vst_core.analysis.meta_eval import read_judgements
from vst_core.study import (
    STUDY_SUFFIX,
    VIST_EDIT_ASPECTS,
    AnswerStore,
    Study,
    load_study,
    new_study,
    plan_for,
    read_source,
    save_study,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TITLE = "Which <b>story</b> is better? $x$ **now**"
GOLD = [{"stories": [["reference", "home-ref"], ["model-c", "home-offtopic"]], "expected": {"preferred": "reference"}}]
SAVED = re.compile(r"Saved your answer to item (\d+)\.")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(the app's address, its studies folder): a temporary one."""
    folder = tmp_path_factory.mktemp("studies")
    proc, url = _start({"VST_STUDIES": str(folder)}, tmp_path_factory.mktemp("study-server") / "streamlit.log")
    yield url, folder
    _stop(proc)


def _idle(page: Any) -> None:
    page.wait_for_selector(IDLE, state="attached", timeout=90_000)


def _type(page: Any, key: str, text: str, submit: str = "Enter") -> None:
    """Type ``text`` into the widget keyed ``key`` and commit it (Enter; a text area: Ctrl+Enter)."""
    box = page.locator(f".st-key-{key} input, .st-key-{key} textarea").first
    box.fill(text)
    box.press(submit)
    _finished(page, 0)


def _grid(page: Any, header: str) -> list[list[str]]:
    """The rows (header first) of the data grid with a column ``header``, from its accessible table."""
    heading = page.locator('[role="columnheader"]', has_text=re.compile(f"^{re.escape(header)}$"))
    grid = page.locator('[data-testid="stDataFrame"]').filter(has=heading)
    rows = grid.first.locator('[role="row"]')
    rows.nth(1).wait_for(state="attached", timeout=60_000)
    page.wait_for_timeout(500)
    return [[c.strip() for c in row.locator('[role="columnheader"], [role="gridcell"]').all_inner_texts()] for row in rows.all()]


def _column(rows: list[list[str]], name: str) -> list[str]:
    at = rows[0].index(name)
    return [row[at] for row in rows[1:]]


def _make_study(page: Any, url: str) -> None:
    """The researcher's choices on the page: pairwise, one image sequence, three named raters, a gold item."""
    page.goto(url + "/study")
    page.wait_for_selector("h1:has-text('Human study')", timeout=90_000)
    _idle(page)
    page.get_by_text("New study", exact=True).click()
    _finished(page, 0)
    page.get_by_text("Pairwise: which of two stories is better").click()
    _finished(page, 0)
    _type(page, "study-sequences", "1")
    _type(page, "study-names", "ann\nbo\ncy", "Control+Enter")
    _type(page, "study-title", TITLE)
    _type(page, "study-gold", json.dumps(GOLD), "Control+Enter")
    _type(page, "study-id", "browser-study")
    page.screenshot(path=str(ARTIFACTS / "study_new.png"), full_page=True)
    page.get_by_role("button", name="Create the study").click()
    page.wait_for_selector("text=Rater links", timeout=90_000)
    _idle(page)


def _item(page: Any) -> tuple[int, int]:
    """(the item shown, of how many), read off the progress line."""
    found = re.search(r"Item (\d+) of (\d+)", page.locator('[data-testid="stProgress"]').inner_text())
    assert found, page.locator('[data-testid="stProgress"]').inner_text()
    return int(found.group(1)), int(found.group(2))


def _answer_all(page: Any, answer: Any, shots: tuple[str, str] | None = None) -> int:
    """Answer every item of the rater's plan with ``answer(page)``; each is said saved before the next."""
    _idle(page)
    first, total = _item(page)
    assert first == 1
    if shots:
        page.screenshot(path=str(ARTIFACTS / shots[0]), full_page=True)
    for n in range(1, total + 1):
        assert _item(page)[0] == n
        answer(page)
        page.wait_for_selector(f"text=Saved your answer to item {n}.", timeout=60_000)
        _idle(page)
    page.wait_for_selector("text=Every item is answered", timeout=30_000)
    if shots:
        page.screenshot(path=str(ARTIFACTS / shots[1]), full_page=True)
    return total


def _press(key: str) -> Any:
    return lambda page: page.keyboard.press(key)


def _click(label: str) -> Any:
    return lambda page: page.get_by_role("button", name=label).click()


def test_three_raters_answer_from_their_own_links_and_the_researcher_watches(served: tuple[str, Path]) -> None:
    url, folder = served
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        researcher = browser.new_context(viewport={"width": 1400, "height": 4200}, accept_downloads=True).new_page()
        _make_study(researcher, url)
        path = folder / f"browser-study{STUDY_SUFFIX}"
        study = load_study(path)
        links = _column(_grid(researcher, "link"), "link")
        assert [link.rsplit("?rater=", 1)[1] for link in links] == [r.token for r in study.raters]
        assert len(study.items) == 7 and study.title == TITLE  # the 6 pairs of one sequence's 4 systems, and the gold item

        pages = {r.name: browser.new_context(viewport={"width": 1400, "height": 1400}).new_page() for r in study.raters}
        for rater, page in zip(study.raters, pages.values(), strict=True):
            page.goto(url + f"/?rater={rater.token}")
        # ann answers with the number keys (the story shown first), bo with clicks on the story ann
        # chose, wherever bo is shown it (so the judgements file has pairs with a winner whatever
        # order the raters' random plans gave), cy says every pair is a tie (key 3)
        chosen = _first_shown(study, "ann")
        bo_plan = plan_for(study, study.rater("bo"))  # type: ignore[arg-type]
        bo_labels = iter("Story A is better" if p.order[0] == chosen[p.item_id] else "Story B is better" for p in bo_plan)
        counts = {
            "ann": _answer_all(pages["ann"], _press("1"), ("study_rater_first.png", "study_rater_done.png")),
            "bo": _answer_all(pages["bo"], lambda page: page.get_by_role("button", name=next(bo_labels)).click()),
            "cy": _answer_all(pages["cy"], _press("3")),
        }
        ann = pages["ann"]
        assert ann.locator("h1").inner_text() == TITLE  # the title as its characters
        assert ann.locator('[data-testid="stSidebar"]').count() == 0 and ann.locator('[data-testid="stSidebarNav"]').count() == 0
        assert ann.get_by_text("You answered this item (revision 1)").count() == 1  # the last item, answered, stays in view
        ann.get_by_role("button", name="← Previous item").click()  # back one item, and its answer changed
        _finished(ann, 0)
        ann.keyboard.press("2")
        ann.wait_for_selector(f"text=Saved your answer to item {counts['ann'] - 1}.", timeout=60_000)

        store = AnswerStore.beside(path)
        latest, every = store.answers(study), store.answers(study, latest_only=False)
        assert {r: sum(a.rater == r for a in latest) for r in counts} == counts == {"ann": 7, "bo": 7, "cy": 7}
        assert len(every) == 22  # ann's changed answer is a second revision
        _check_values(study, latest)

        researcher.reload()
        researcher.wait_for_selector("text=Position bias", timeout=90_000)
        _idle(researcher)
        per_rater = _grid(researcher, "gold_accuracy")
        assert dict(zip(_column(per_rater, "rater"), _column(per_rater, "answered"), strict=True)) == {
            "ann": "7",
            "bo": "7",
            "cy": "7",
        }
        researcher.wait_for_selector("text=Metrics against the answers so far")
        researcher.screenshot(path=str(ARTIFACTS / "study_live.png"), full_page=True)
        with researcher.expect_download() as got:
            researcher.get_by_role("button", name=re.compile("Judgements for vst meta-eval")).click()
        judged = read_judgements(Path(got.value.path()).read_bytes())
        # ann and bo agree on every pair but the one ann changed (then a tie with cy's): 5 have a winner
        assert judged.layout == "pairwise" and 4 <= len(judged.pairs) <= 6, judged.problems
        browser.close()


def _first_shown(study: Study, name: str) -> dict[str, int]:
    """The index of the story shown first to rater ``name``, by item."""
    return {p.item_id: p.order[0] for p in plan_for(study, study.rater(name))}  # type: ignore[arg-type]


def _check_values(study: Study, latest: list[Any]) -> None:
    """The number keys and clicks stored the story each meant: 1 the left story's index, bo's
    click the story ann saw first."""
    for answer in latest:
        presented = next(p for p in plan_for(study, study.rater(answer.rater)) if p.item_id == answer.item_id)  # type: ignore[arg-type]
        assert answer.presented == presented.order
        if answer.rater == "ann":
            assert answer.value == {"preferred": presented.order[answer.revision - 1]}  # 1, then changed to 2
        elif answer.rater == "bo":
            assert answer.value == {"preferred": _first_shown(study, "ann")[answer.item_id]}
        elif answer.rater == "cy":
            assert answer.value == {"preferred": "tie"}


def _sample_study(folder: Path, study_id: str, **options: Any) -> tuple[Study, Path]:
    """A study of the bundled sample saved with its photos in the served studies folder."""
    source = read_source(SAMPLE)
    study = new_study(source.stories, source=source.source, study_id=study_id, **options)
    return study, save_study(study, folder / f"{study_id}{STUDY_SUFFIX}", photos_from=source.source["folder"])


def test_a_likert_item_is_answered_with_the_keyboard_only(served: tuple[str, Path]) -> None:
    """Tab into a scale, arrow keys to a point, Tab to the next scale and to Save answer, Enter."""
    url, folder = served
    study, path = _sample_study(folder, "keys", aspects=VIST_EDIT_ASPECTS[:2], raters=1, seed=3)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url + f"/?rater={study.raters[0].token}")
        page.wait_for_selector("text=Save answer", timeout=90_000)
        _idle(page)
        for _ in range(60):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement && document.activeElement.type") == "radio":
                break
        page.keyboard.press("ArrowRight")  # the first scale: a point
        page.keyboard.press("Tab")
        page.keyboard.press("ArrowRight")  # the second scale
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.innerText").startswith("Save answer")
        page.keyboard.press("Enter")
        page.wait_for_selector("text=Saved your answer to item 1.", timeout=60_000)
        browser.close()
    (answer,) = AnswerStore.beside(path).answers(study)
    assert set(answer.value) == {"focused", "coherent"} and all(1 <= v <= 5 for v in answer.value.values())  # type: ignore[operator]


def test_a_wrong_link_shows_one_line_and_another_pages_link_opens_the_rater_page(served: tuple[str, Path]) -> None:
    url, folder = served
    study, _ = _sample_study(folder, "links", protocol="pairwise")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        for bad in ("..%2F..%2Fetc%2Fpasswd", "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "x" * 32, ""):
            page.goto(url + f"/?rater={bad}")
            page.wait_for_selector("text=This link is not valid.", timeout=90_000)
            _idle(page)
            main = page.locator('[data-testid="stMain"]').inner_text().strip()
            assert main == "This link is not valid.", main
            assert page.locator('[data-testid="stSidebar"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "study_link_not_valid.png"))
        page.goto(url + f"/dataset?rater={study.raters[0].token}")
        page.wait_for_selector("h1", timeout=90_000)
        _idle(page)
        assert page.locator("h1").first.inner_text() == study.title
        assert page.locator('[data-testid="stSidebarNav"]').count() == 0 and page.locator("text=Story set").count() == 0
        browser.close()
