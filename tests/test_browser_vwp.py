"""Real browser, VWP: a VWP-layout release file (10 and 6 shots, named characters with crops) and a
model's stories in the same sentence-group alignment, scored by ``vst score`` with the tiny CLIP
and opened as scores files on every page at 1600 px in headless Debian chromium (screenshots in
the test artifacts)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ARTIFACTS, clip_args
from test_browser import CHROMIUM, CHROMIUM_ARGS, FOOTER, IDLE, SCORES_SOURCE, _finished, _start, _stop, sync_api
from vwp_data import write_vwp_set

from vst_core.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]

METRICS = "redundancy,grounding,clipscore,characters,char_alignment"


@pytest.fixture(scope="module")
def vwp_scores(tiny_clip: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """(the data folder, people's and the model's scores files), scored as a user scores them."""
    folder = tmp_path_factory.mktemp("vwp-data")
    people, model = write_vwp_set(folder)
    common = ["--metrics", METRICS, *clip_args(tiny_clip), "--clip-activation", "gelu", "--device", "cpu"]
    common += ["--cache-dir", str(folder / "cache"), "--no-progress"]
    outs = []
    for source, name in ((people, "human_scores.jsonl"), (model, "llava_scores.jsonl")):
        assert main(["score", str(source), "--out", str(folder / name), *common]) == 0
        outs.append(folder / name)
    return folder, outs


@pytest.fixture(scope="module")
def vwp_server(vwp_scores: tuple[Path, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder, _ = vwp_scores
    proc, url = _start({"VST_DATA_DIRS": str(folder)}, tmp_path_factory.mktemp("vwp-server") / "streamlit.log")
    yield url
    _stop(proc)


def _text(page: object) -> str:
    main_ = '[data-testid="stMain"]'
    return "\n".join(
        page.locator(f'{main_} [data-testid="stMarkdownContainer"], {main_} [data-testid="stCaptionContainer"]').all_inner_texts()  # type: ignore[attr-defined]
    )


def test_a_vwp_release_and_a_models_stories_on_every_page(vwp_server: str, vwp_scores: tuple[Path, list[Path]]) -> None:
    folder, scores = vwp_scores
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1500})
        page.goto(vwp_server + SCORES_SOURCE)
        page.wait_for_selector(IDLE, state="attached", timeout=90_000)
        box = page.get_by_role("textbox", name="…or scores files on this server")
        box.fill(";".join(map(str, scores)))
        box.press("Enter")
        _finished(page, time.perf_counter())
        sync_api.expect(page.locator(FOOTER).first).to_be_visible(timeout=90_000)

        def visit(name: str, shot: str) -> str:
            since = time.perf_counter()
            page.get_by_role("link", name=name).click()
            sync_api.expect(page.locator(f"h1:has-text('{name}')")).to_be_visible(timeout=60_000)
            _finished(page, since)
            sync_api.expect(page.locator(FOOTER).first).to_be_visible(timeout=90_000)
            page.wait_for_timeout(1500)  # plotly and the grid draw after the run
            assert page.locator('[data-testid="stException"]').count() == 0, name
            page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
            return _text(page)

        page.wait_for_timeout(1500)
        page.screenshot(path=str(ARTIFACTS / "vwp_dataset.png"), full_page=True)
        shown = visit("Inspect a story", "vwp_inspect.png")
        assert "[image 10]" in shown  # a story of ten shots, its groups marked
        assert "Named characters" in shown and page.locator("text=Ann").first.is_visible()
        crops = page.locator('[data-testid="stImage"]')
        assert crops.count() >= 12  # ten shots and the two characters' crops
        assert "9 sentence groups for 10 images" in shown  # the model's missing group, said on its card
        assert "truncated to CLIP's 16" in shown  # a group over the tiny CLIP's context
        cards = page.locator(".vst-card").all_inner_texts()
        assert any(c.startswith("Char alignment") for c in cards) and any(c.startswith("Characters") for c in cards)
        judgements = folder / "judgements.csv"  # people's ratings of the four stories (long layout)
        judgements.write_text(
            "story_id,system,rater,aspect,value\n"
            + "".join(
                f"A{k},{system},r{r},overall,{1 + (k + r + len(system)) % 5}\n"
                for k in (1, 2)
                for system in ("human", "llava")
                for r in (1, 2, 3)
            ),
            encoding="utf-8",
        )
        for name, upload in (("Agreement with humans", judgements), ("Compare with other scores", scores[0])):
            since = time.perf_counter()
            page.get_by_role("link", name=name).click()
            sync_api.expect(page.locator(f"h1:has-text('{name}')")).to_be_visible(timeout=60_000)
            _finished(page, since)
            page.locator('[data-testid="stMain"] [data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(upload))
            sync_api.expect(page.locator(FOOTER).first).to_be_visible(timeout=90_000)
            page.wait_for_timeout(2500)
            assert page.locator('[data-testid="stException"]').count() == 0, name
            page.screenshot(path=str(ARTIFACTS / f"vwp_{name.split()[0].lower()}.png"), full_page=True)
        for name, shot in (
            ("Dataset", "vwp_dataset_back.png"),
            ("Compare two systems", "vwp_systems.png"),
            ("Leaderboard", "vwp_leaderboard.png"),
            ("Human-likeness", "vwp_human_likeness.png"),
        ):
            found = visit(name, shot)
            assert "llava" in found, name
        assert "Profile: every measure against the human stories" in found
        narrow = browser.new_page(viewport={"width": 900, "height": 1500})  # a laptop split screen
        narrow.goto(page.url)
        narrow.wait_for_selector(IDLE, state="attached", timeout=90_000)
        sync_api.expect(narrow.locator(FOOTER).first).to_be_visible(timeout=90_000)
        narrow.get_by_role("link", name="Inspect a story").click()
        sync_api.expect(narrow.locator(".vst-card").first).to_be_visible(timeout=90_000)
        _finished(narrow, time.perf_counter())
        narrow.wait_for_timeout(1500)
        assert narrow.locator('[data-testid="stException"]').count() == 0
        narrow.screenshot(path=str(ARTIFACTS / "vwp_inspect_900.png"), full_page=True)
        browser.close()
    for shot in ("vwp_dataset.png", "vwp_inspect.png", "vwp_systems.png", "vwp_leaderboard.png", "vwp_human_likeness.png"):
        assert (ARTIFACTS / shot).stat().st_size > 10_000
