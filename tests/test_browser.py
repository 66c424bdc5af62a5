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

import pytest

from conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) not installed")
if CHROMIUM is None:
    pytest.skip("Debian chromium not installed (apt-get install chromium)", allow_module_level=True)

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
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
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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


def test_main_page_in_chromium(server: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        page.goto(server)
        page.wait_for_selector("text=Visual story evaluation", timeout=90_000)
        page.wait_for_selector("mark.vst-repeat", timeout=90_000)
        page.wait_for_selector('[data-testid="stImage"] img', timeout=90_000)
        expect = sync_api.expect
        expect(page.locator('[data-testid="stMetric"]')).to_have_count(8, timeout=60_000)
        expect(page.locator("text=Sequence space-trip")).to_have_count(1)
        expect(page.locator("text=Settings: sig")).to_have_count(1, timeout=30_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(ARTIFACTS / "app_main.png"))
        browser.close()
    assert (ARTIFACTS / "app_main.png").stat().st_size > 10_000
