"""Screenshots of every dashboard page from the running app, for the README.

Builds random-weight replicas of the default models in their real cache layouts (as the
real-layout tests do; the numbers they give mean nothing), serves the app on the bundled sample
with those caches, and saves each page at 1600 and 900 px wide in headless Chromium, waiting until
the page has finished running; then the Dataset and Inspect pages on a generated 10,000-story scores
file (two systems under the same ids, ``vst_core.scoring.synthetic``) typed into the sidebar. Run from a
checkout:

    python benchmarks/screenshots.py assets/screenshots

``--narrow-all`` saves every page at 900 px too (for looking at, not for the README).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = {
    "inspect": "/?sequence=home-day",
    "dataset": "/dataset",
    "agreement": "/agreement",
    "disagreements": "/agreement#disagreements",
    "systems": "/systems",
    "human_likeness": "/human_likeness",
    "leaderboard": "/leaderboard",
}


FOOTER = '[data-testid="stCaptionContainer"] >> text=/^(Settings|Scores): sig/'  # the footer: the run's last line (a caption; figures repeat it in hidden tabs too)
SCORES_SOURCE = "/dataset?source=Scores+JSONL+%28no+model+needed%29"  # a link selects the source, never a path
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
NARROW_ALL = "--narrow-all" in sys.argv
RUNNING = "[data-testid='stApp']:not([data-test-script-state='notRunning'])"


def _serve(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://localhost:{port}"
    for _ in range(180):
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("streamlit did not start")


def _finished(page: Any) -> None:
    """Wait until the run a widget change started has finished (the app's script state)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_selector(RUNNING, state="attached", timeout=3_000)
    except Timeout:
        pass  # over before it could be seen
    page.wait_for_selector(IDLE, state="attached", timeout=300_000)


def _shoot_10k(browser: Any, url: str, scores: Path, out: Path) -> None:
    """Dataset and Inspect on the generated scores file, loaded as a user would: the source by link,
    the path typed into the sidebar, Inspect by the navigation (which keeps the sidebar's values)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1600, "height": 1500})
    page.goto(url + SCORES_SOURCE)
    page.wait_for_selector(IDLE, state="attached", timeout=300_000)
    box = page.get_by_role("textbox", name="…or scores files on this server")
    box.fill(str(scores))
    box.press("Enter")
    _finished(page)
    expect(page.locator(FOOTER).first).to_be_visible(timeout=300_000)
    page.wait_for_timeout(2500)  # plotly and the grid draw after the run
    page.screenshot(path=str(out / "dataset_10k.png"))
    print("dataset_10k.png", flush=True)
    page.get_by_role("link", name="Inspect a story").click()
    page.wait_for_selector("h1:has-text('Inspect a story')", timeout=60_000)
    _finished(page)
    expect(page.locator(".vst-card").first).to_be_visible(timeout=300_000)
    page.wait_for_timeout(2500)
    page.screenshot(path=str(out / "inspect_10k.png"))
    print("inspect_10k.png", flush=True)
    page.close()


def _shoot(url: str, out: Path, scores: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
        _shoot_10k(browser, url, scores, out)
        for width in (1600, 900):
            page = browser.new_page(viewport={"width": width, "height": 1500})
            for name, path in PAGES.items():
                if width != 1600 and name != "inspect" and not NARROW_ALL:  # narrow: the page whose layout changes
                    continue
                page.goto(url + path.split("#")[0])
                expect(page.locator(FOOTER).first).to_be_visible(timeout=300_000)
                if path.endswith("#disagreements"):
                    page.get_by_role("tab", name="Disagreements").click()
                    expect(page.locator("text=Stories ranked furthest from people").first).to_be_visible(timeout=60_000)
                page.wait_for_timeout(2500)  # plotly and the grid draw after the run
                suffix = "" if width == 1600 else f"_{width}"
                page.screenshot(path=str(out / f"{name}{suffix}.png"))
                print(f"{name}{suffix}.png", flush=True)
            page.close()
        browser.close()


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--narrow-all"]
    out = Path(args[0] if args else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "tests"))
    from real_layout import build_real_layout

    from vst_core.scoring.synthetic import write_scores_file

    with tempfile.TemporaryDirectory(prefix="vst-shots-") as tmp:
        layout = build_real_layout(Path(tmp))
        data = Path(tmp) / "data"
        scores = data / "scores_10k.jsonl"
        images = ROOT / "assets" / "sample" / "images"  # the sample's photos, so Inspect shows real images
        shutil.copytree(images, data / "images")
        sequences = [[f"images/{p.name}" for p in sorted(images.glob(f"{name}_*"))] for name in ("space", "home")]
        write_scores_file(scores, 10_000, systems=("reference", "llava"), images=sequences)
        proc, url = _serve({**os.environ, **layout.env(), "VST_DATA_DIRS": str(data)})
        try:
            _shoot(url, out, scores)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
