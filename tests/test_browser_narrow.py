"""At 900 px (a laptop with the sidebar open) no label of the sidebar or the Dataset page is cut
short: each wraps where its box is too narrow for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, _settled, _start, _stop, sync_api

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: The texts drawn wider than the nearest box that clips them (cut off, with or without "…").
CUT = """() => {
  const cut = [];
  const texts = document.querySelectorAll('[data-testid="stSidebarNav"] p, [data-testid="stMain"] button p, '
    + '[data-testid="stMain"] label p, [data-testid="stMain"] [data-baseweb="tag"] span');
  for (const e of texts) {
    if (!e.textContent.trim() || e.getClientRects().length === 0) continue;
    const range = document.createRange();
    range.selectNodeContents(e);
    const right = range.getBoundingClientRect().right;
    let box = e.parentElement;
    while (box && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
    if (box && right > box.getBoundingClientRect().right + 1) cut.push(e.textContent);
  }
  return cut;
}"""

#: A sidebar a scrollbar's width narrower than Streamlit's at this width (a long sidebar, or
#: another font, leaves its page names about this much room).
NARROWER = '[data-testid="stSidebar"] { width: 234px !important; min-width: 234px !important; }'


def test_no_label_is_cut_at_900_px(tmp_path: Path) -> None:
    proc, url = _start({"VST_CACHE_DIR": str(tmp_path / "cache")}, tmp_path / "streamlit.log")
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 900, "height": 3000})
            page.goto(url + "/dataset")
            _settled(page)
            cut = page.evaluate(CUT)
            page.add_style_tag(content=NARROWER)
            page.wait_for_timeout(500)
            cut_narrower = page.evaluate(CUT)
            names = page.locator('[data-testid="stSidebarNavLink"] p').all_text_contents()
            browser.close()
    finally:
        _stop(proc)
    assert "Compare with other scores" in names
    assert cut == [] and cut_narrower == [], (cut, cut_narrower)
