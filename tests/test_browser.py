"""Real browser: serve the app on localhost, load it in headless Debian chromium, screenshot."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ARTIFACTS, ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) not installed")
if CHROMIUM is None:
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + (proc.stdout.read().decode() if proc.stdout else ""))
    yield url
    proc.terminate()
    proc.wait(timeout=20)


def _page(server: str, path: str, shot: str, ready: list[str]) -> object:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        page.goto(server + path)
        for selector in ready:
            page.wait_for_selector(selector, timeout=90_000)
        expect = sync_api.expect
        expect(page.locator("text=Settings: sig").first).to_be_visible(timeout=60_000)  # the footer (figures repeat it)
        page.wait_for_timeout(1000)
        assert page.locator('[data-testid="stException"]').count() == 0
        result = {
            "metrics": page.locator(".vst-card").count(),
            # notices by their first sentence (the full texts wait in the collapsed "Details" expander)
            "notices": page.locator("text=is off").count()
            - page.locator('[data-testid="stExpander"]').locator("text=is off").count(),
        }
        page.screenshot(path=str(ARTIFACTS / shot))
        browser.close()
    assert (ARTIFACTS / shot).stat().st_size > 10_000
    return result


def test_inspect_page_in_chromium(server: str) -> None:
    result = _page(server, "/", "inspect.png", ["text=Inspect a story", "mark.vst-repeat", '[data-testid="stImage"] img'])
    assert result == {"metrics": 4, "notices": 2}  # four candidates; coherence and grounding notices (no weights)


def test_dataset_page_in_chromium(server: str) -> None:
    _page(server, "/dataset", "dataset.png", ["h1:has-text('Dataset')", '[data-testid="stDataFrame"]', ".js-plotly-plot"])


def test_dataset_row_click_opens_the_story(server: str) -> None:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.goto(server + "/dataset")
        grid = page.locator('[data-testid="stDataFrame"]').first
        grid.wait_for(timeout=90_000)
        page.wait_for_timeout(1500)
        box = grid.bounding_box()
        assert box is not None
        # the grid draws a header and one row per story, all of one height, on a canvas: find the row of
        # home-generic in the grid's accessible table and click the selection cell of that row
        rows = grid.locator('[role="row"]')
        rows.filter(has_text="home-generic").first.wait_for(state="attached", timeout=60_000)  # filled after drawing
        names = [rows.nth(k).inner_text() for k in range(rows.count())]
        index = next(k for k, text in enumerate(names) if "home-generic" in text)  # 0 is the header row
        height = box["height"] / len(names)
        page.mouse.click(box["x"] + 15, box["y"] + index * height + height / 2)
        page.wait_for_selector("text=Inspect a story", timeout=60_000)
        sync_api.expect(page.locator("text=← selected")).to_have_count(1, timeout=30_000)
        assert "story=home-generic" in page.url
        assert page.locator('[data-testid="stException"]').count() == 0
        browser.close()


def test_agreement_page_in_chromium(server: str) -> None:
    _page(
        server,
        "/agreement",
        "agreement.png",
        ["h1:has-text('Agreement with humans')", '[data-testid="stDataFrame"]', ".js-plotly-plot"],
    )


def test_human_likeness_page_in_chromium(server: str) -> None:
    _page(
        server,
        "/human_likeness",
        "human_likeness.png",
        ["h1:has-text('Human-likeness')", '[data-testid="stDataFrame"]', ".js-plotly-plot"],
    )


def test_shared_link_restores_the_view_and_survives_a_page_change(server: str) -> None:
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1600})
        page.goto(server + "/?sequence=home-day&variant=reference&ngram=3")
        expect = sync_api.expect
        expect(page.locator("text=home-generic").first).to_be_visible(timeout=90_000)
        expect(page.locator("text=NR reference n=3").first).to_be_visible(timeout=30_000)
        page.get_by_role("link", name="Dataset").click()  # the navigation the frame draws in the sidebar
        page.wait_for_selector("h1:has-text('Dataset')", timeout=60_000)
        expect(page.locator("text=NR reference n=3").first).to_be_visible(timeout=30_000)  # the sidebar kept its values
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "dataset_after_link.png"))
        browser.close()


def _browser(p: object, width: int = 1400, height: int = 1600) -> tuple[object, object]:
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)  # type: ignore[attr-defined]
    return browser, browser.new_page(viewport={"width": width, "height": height})


def _settled(page: object) -> None:
    """Wait for the footer (the run finished) and check no exception is on the page."""
    sync_api.expect(page.locator("text=Settings: sig").first).to_be_visible(timeout=90_000)  # type: ignore[attr-defined]
    page.wait_for_timeout(800)  # type: ignore[attr-defined]
    assert page.locator('[data-testid="stException"]').count() == 0  # type: ignore[attr-defined]


def test_a_story_file_uploaded_with_its_images_opens_in_inspect(server: str) -> None:
    sample = ROOT / "assets" / "sample"
    files = [str(sample / "stories.jsonl"), *sorted(str(f) for f in (sample / "images").iterdir())]
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p)
        page.goto(server + "/?source=Upload+a+story+file&coherence=false&grounding=false")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(files)
        sync_api.expect(page.locator("text=space-grounded").first).to_be_visible(timeout=90_000)
        _settled(page)
        images = page.locator('[data-testid="stImage"] img')
        sync_api.expect(images).to_have_count(5, timeout=30_000)  # the images came with the file
        assert page.locator("text=problems in the input").count() == 0
        page.screenshot(path=str(ARTIFACTS / "upload_with_images.png"))
        browser.close()


def test_a_link_to_a_story_opens_it_at_900_px(server: str) -> None:
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p, 900, 1400)
        page.goto(server + "/?story=home-generic&variant=reference")
        sync_api.expect(page.locator("text=← selected")).to_have_count(1, timeout=90_000)
        _settled(page)
        assert page.locator("text=NR reference n=4").count() >= 1
        widths = page.locator('.st-key-vst-cards [data-testid="stColumn"]').evaluate_all(
            "cols => cols.map(c => c.getBoundingClientRect().width)"
        )
        cards = [w for w in widths if w > 0]
        assert cards and min(cards) >= 150  # columns wrap instead of squeezing words apart
        page.screenshot(path=str(ARTIFACTS / "inspect_900.png"))
        page.locator(".st-key-vst-cards").screenshot(path=str(ARTIFACTS / "inspect_900_cards.png"))
        browser.close()


def test_a_click_anywhere_in_a_row_opens_the_story(server: str) -> None:
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p)
        page.goto(server + "/dataset")
        grid = page.locator('[data-testid="stDataFrame"]').first
        grid.wait_for(timeout=90_000)
        rows = grid.locator('[role="row"]')
        rows.filter(has_text="home-generic").first.wait_for(state="attached", timeout=60_000)
        page.wait_for_timeout(1000)
        names = [rows.nth(k).inner_text() for k in range(rows.count())]
        index = next(k for k, text in enumerate(names) if "home-generic" in text)
        box = grid.bounding_box()
        height = box["height"] / len(names)
        page.mouse.click(box["x"] + box["width"] * 0.4, box["y"] + index * height + height / 2)  # a text cell, not the box
        page.wait_for_selector("text=Inspect a story", timeout=60_000)
        sync_api.expect(page.locator("text=← selected")).to_have_count(1, timeout=30_000)
        assert "story=home-generic" in page.url
        browser.close()


def test_disagreements_and_compare_two_systems_in_chromium(server: str) -> None:
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p)
        page.goto(server + "/agreement")
        page.get_by_role("tab", name="Disagreements").click()
        sync_api.expect(page.locator("text=Stories ranked furthest from people").first).to_be_visible(timeout=90_000)
        _settled(page)
        page.screenshot(path=str(ARTIFACTS / "disagreements.png"), full_page=True)
        page.goto(server + "/systems")
        sync_api.expect(page.locator("text=Sequences where they differ most").first).to_be_visible(timeout=90_000)
        _settled(page)
        page.screenshot(path=str(ARTIFACTS / "systems.png"), full_page=True)
        browser.close()


def test_images_and_pasted_stories_in_chromium(server: str) -> None:
    images = sorted(str(f) for f in (ROOT / "assets" / "sample" / "images").iterdir() if f.name.startswith("home"))
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p)
        page.goto(server + "/?source=Upload+images+%2B+stories&coherence=false&grounding=false")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(images)
        box = page.locator("textarea").first
        box.fill("mine: We had coffee. | The cat watched. | A paper horse. | Old coins. | We lay in the grass.")
        box.press("Control+Enter")
        sync_api.expect(page.locator("text=upload-1").first).to_be_visible(timeout=90_000)
        _settled(page)
        sync_api.expect(page.locator('[data-testid="stImage"] img')).to_have_count(5, timeout=30_000)
        assert page.locator(".vst-card").count() == 1  # NR of the one candidate
        browser.close()


def _sample_scores(tmp_path: Path) -> Path:
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    assert (
        main(["score", str(ROOT / "assets/sample/stories.jsonl"), "--metrics", "redundancy", "--out", str(out), "--no-progress"])
        == 0
    )
    return out


def test_a_scores_file_uploaded_with_its_images_and_compared(server: str, tmp_path: Path) -> None:
    scores = _sample_scores(tmp_path)
    images = sorted(str(f) for f in (ROOT / "assets" / "sample" / "images").iterdir())
    with sync_api.sync_playwright() as p:
        browser, page = _browser(p)
        page.goto(server + "/?source=Scores+JSONL+%28no+model+needed%29")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files([str(scores), *images])
        sync_api.expect(page.locator("text=(from the scores file)").first).to_be_visible(timeout=90_000)
        _settled(page)
        sync_api.expect(page.locator('[data-testid="stImage"] img')).to_have_count(5, timeout=30_000)
        assert page.locator("text=problems in the input").count() == 0
        page.get_by_role("link", name="Compare with other scores").click()
        page.wait_for_selector("h1:has-text('Compare with other scores')", timeout=60_000)
        sync_api.expect(page.locator("text=Upload a scores JSONL to compare with").first).to_be_visible(timeout=60_000)
        page.locator('[data-testid="stMain"] [data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(scores))
        sync_api.expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=90_000)
        _settled(page)
        assert page.locator("text=100.00%").count() >= 1  # the same scores: every story equal
        page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
        browser.close()
