"""Progress of long work in the dashboard: vst_core's readers and engine report counts through a
callback, and the dashboard draws them as a progress bar that is gone once the work is done."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import APP, PAGES, SAMPLE
from PIL import Image
from streamlit.testing.v1 import AppTest

from vst_core.config import Settings
from vst_core.data import read_story_set
from vst_core.data.uploads import story_set_from_files
from vst_core.scoring.runs import score_records


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, "PNG")
    return out.getvalue()


def test_reading_an_upload_counts_the_images_it_unpacks(tmp_path: Path) -> None:
    names = [f"img{k}.png" for k in range(3)]
    story = {"story_id": "s", "images": names, "sentences": ["A cat.", "A dog.", "A bird."]}
    files = [("stories.jsonl", json.dumps(story).encode()), *((name, _png()) for name in names)]
    seen: list[tuple[str, int, int]] = []
    found, error, _ = story_set_from_files(files, tmp_path / "up", progress=lambda *step: seen.append(step))
    assert error is None and found is not None and len(found) == 1
    assert seen == [("images", k, 3) for k in range(4)] + [("stories", 0, 1), ("stories", 1, 1)]


def test_scoring_counts_the_stories_as_the_cli_bar_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path))  # a cold run: no record stored by another test
    stories = read_story_set(SAMPLE)
    totals: list[int] = []
    done: list[int] = []

    class Bar:
        def update(self, n: int = 1) -> None:
            done.append(n)

        def close(self) -> None:
            done.append(-1)

    def bar(total: int) -> Bar:
        totals.append(total)
        return Bar()

    records = list(score_records(stories, Settings(metrics=("redundancy",)), progress=bar, chunk_size=3))
    assert totals == [len(stories)] and sum(n for n in done if n > 0) == len(records) == len(stories)
    assert done[-1] == -1 and len(done) > 2  # advanced chunk by chunk, then closed


def _page_progress_script() -> None:
    import streamlit as st

    from dashboard.loading import PageProgress

    kept = PageProgress("Scoring 12 stories")
    bar = kept.bar(12)
    for _ in range(12):
        bar.update(1)
    with PageProgress("Indexing the scores") as gone:
        gone(5, 10)
    st.write("done")


def test_the_page_shows_the_counts_and_removes_a_finished_bar() -> None:
    app = AppTest.from_function(_page_progress_script, default_timeout=30)
    app.run()
    assert not app.exception, app.exception
    bars = [e for e in app.main if e.type == "progress"]
    assert len(bars) == 1  # the closed one is gone
    assert bars[0].proto.value == 100 and bars[0].proto.text == "Scoring 12 stories: 12 of 12"


def _reading_script() -> None:
    import io
    import json
    import tempfile
    from pathlib import Path

    import streamlit as st
    from PIL import Image

    from dashboard.loading import read_upload

    def png() -> bytes:
        out = io.BytesIO()
        Image.new("RGB", (8, 8), "red").save(out, "PNG")
        return out.getvalue()

    names = [f"img{k}.png" for k in range(4)]
    story = {"story_id": "s", "images": names, "sentences": ["A cat.", "A dog.", "A bird.", "A fish."]}
    files = [("stories.jsonl", json.dumps(story).encode()), *((name, png()) for name in names)]
    found, error, _ = read_upload(files, Path(tempfile.mkdtemp()))
    st.write(f"{len(found or ())} stories, {error}")


def test_reading_an_upload_on_the_page_runs_and_leaves_no_bar() -> None:
    app = AppTest.from_function(_reading_script, default_timeout=30)
    app.run()
    assert not app.exception, app.exception
    assert [m.value for m in app.markdown] == ["1 stories, None"]
    assert not [e for e in app.main if e.type == "progress"]


@pytest.mark.slow
def test_the_app_scores_the_sample_and_a_rerun_replays_no_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlit as st

    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))
    st.cache_data.clear()
    st.cache_resource.clear()
    app = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES["dataset"])
    app.run()  # scored here, with the bar drawn inside the cached scoring
    assert not app.exception, app.exception
    app.run()  # read from the cache: the bar's drawing is replayed, and gone again
    assert not app.exception, app.exception
    assert app.title[0].value == "Dataset" and len(app.dataframe[0].value) > 0
    assert not [e for e in app.main if e.type == "progress"]
