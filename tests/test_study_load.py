"""Load: raters answering one study at the same time, each from their own link in a browser context
of its own (a Streamlit session each) against one served app. Every acknowledged answer is in the
store once; the time from a click to "saved" on the rater's page is printed (p50, p95)."""

from __future__ import annotations

import asyncio
import math
import os
import random
import statistics
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import SAMPLE
from test_browser import CHROMIUM, CHROMIUM_ARGS, IDLE, _start, _stop

from vst_core.study import STUDY_SUFFIX, AnswerStore, Rater, Sample, new_study, plan_for, read_source, save_study

pytestmark = [pytest.mark.browser, pytest.mark.slow]

async_api = pytest.importorskip("playwright.async_api", reason="playwright (python) not installed")

#: Raters answering at once (each a browser context: its own session), and the pairs each answers.
RATERS = 24
TIMEOUT_MS = 240_000
#: What a rater clicks (a click, not a number key: a key pressed before a page under load has bound
#: its shortcuts is lost, and the browser test checks the keys).
LABELS = ("Story A is better", "Story B is better", "About the same")


async def _rater(
    browser: object,
    url: str,
    rater: Rater,
    items: int,
    start: asyncio.Barrier,
    seconds: list[float],
    clicked: dict[tuple[str, int], float],
) -> None:
    """Open the rater's link, wait for every rater to be ready, then answer each item with a click,
    timing each from the click to "saved" on the page."""
    context = await browser.new_context(viewport={"width": 1000, "height": 700})  # type: ignore[attr-defined]
    page = await context.new_page()
    await page.goto(f"{url}/?rater={rater.token}", timeout=TIMEOUT_MS)
    await page.wait_for_selector("text=Which story is better", timeout=TIMEOUT_MS)
    await page.wait_for_selector(IDLE, state="attached", timeout=TIMEOUT_MS)
    await start.wait()
    choices = random.Random(rater.name)
    for n in range(1, items + 1):
        button = page.get_by_role("button", name=choices.choice(LABELS))
        await button.wait_for(state="visible", timeout=TIMEOUT_MS)
        began = time.perf_counter()
        clicked[(rater.name, n)] = time.time()
        await button.click()
        await page.wait_for_selector(f"text=Saved your answer to item {n}.", timeout=TIMEOUT_MS)
        seconds.append(time.perf_counter() - began)
        await page.wait_for_selector(IDLE, state="attached", timeout=TIMEOUT_MS)
    await page.wait_for_selector("text=Every item is answered", timeout=TIMEOUT_MS)
    await context.close()


async def _everyone(
    url: str, raters: list[tuple[Rater, int]], server: int
) -> tuple[list[float], dict[tuple[str, int], float], float, float]:
    """Every rater at once; (each answer's seconds to "saved", when each rater's n-th click was made,
    the seconds from the first click to the last save, the CPU seconds the ``server`` process used
    over them: the pages' first loads left out)."""
    seconds: list[float] = []
    clicked: dict[tuple[str, int], float] = {}
    start = asyncio.Barrier(len(raters) + 1)
    async with async_api.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tasks = [asyncio.create_task(_rater(browser, url, rater, items, start, seconds, clicked)) for rater, items in raters]
        await start.wait()
        began, cpu = time.perf_counter(), _cpu_seconds(server)
        await asyncio.gather(*tasks)
        took, cpu = time.perf_counter() - began, _cpu_seconds(server) - cpu
        await browser.close()
    return seconds, clicked, took, cpu


def test_raters_answering_at_once_lose_no_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "studies"
    source = read_source(SAMPLE)
    study = new_study(
        source.stories, protocol="pairwise", sample=Sample(sequences=1), raters=RATERS, raters_per_item=RATERS,
        seed=5, source=source.source, study_id="load", title="Load",
    )  # fmt: skip
    path = save_study(study, folder / f"load{STUDY_SUFFIX}", photos_from=source.source["folder"])
    plans = {r.name: plan_for(study, r) for r in study.raters}
    proc, url = _start({"VST_STUDIES": str(folder)}, tmp_path / "streamlit.log")
    try:
        raters = [(r, len(plans[r.name])) for r in study.raters]
        seconds, clicked, took, cpu = asyncio.run(_everyone(url, raters, proc.pid))
    finally:
        _stop(proc)
    store = AnswerStore.beside(path)
    expected = {(name, p.item_id) for name, plan in plans.items() for p in plan}
    every = store.answers(study, latest_only=False)
    assert store.count() == len(every) == len(expected) == len(seconds) == RATERS * 6  # one row per answer, none lost or doubled
    assert {(a.rater, a.item_id) for a in every} == expected and {a.revision for a in every} == {1}
    assert all(a.presented == plans[a.rater][[p.item_id for p in plans[a.rater]].index(a.item_id)].order for a in every)
    # the n-th click of a rater answers the n-th item of their plan: from it to the store's commit
    committed = {(a.rater, a.item_id): datetime.fromisoformat(a.answered_at).timestamp() for a in every}
    stored = [committed[(name, plans[name][n - 1].item_id)] - at for (name, n), at in clicked.items()]
    with capsys.disabled():
        print(
            f"\n  [study load] {RATERS} raters at once, {len(every)} answers in {took:.1f} s; click to 'saved' shown: "
            f"{_quantiles(seconds)}; click to committed in the store: {_quantiles(stored)}; the server process's CPU "
            f"{cpu / len(every) * 1000:.0f} ms an answer (the whole process: the page's two runs an answer and Streamlit's own work), "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
            end="",
        )


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used, in seconds (Linux's /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _quantiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered):.2f} s, p95 {p95:.2f} s, max {ordered[-1]:.2f} s"
