"""The dashboard in streamlit's AppTest: sample, variants, uploads good and bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT

APP = str(ROOT / "app.py")


@pytest.fixture
def at() -> AppTest:
    app = AppTest.from_file(APP, default_timeout=60)
    app.run()
    return app


def nr_column(app: AppTest) -> dict[str, float]:
    df = app.dataframe[0].value
    return dict(zip(df["story"], df["NR"]))


def test_sample_renders_with_scores_and_signature(at: AppTest) -> None:
    assert not at.exception
    assert at.title[0].value == "Visual story evaluation"
    nr = nr_column(at)
    assert len(nr) == 8 and nr["space-generic"] < nr["space-grounded"] - 0.15
    assert len(at.metric) == 8
    footer = at.caption[-1].value
    assert footer.startswith("Settings: sig ") and "NR paper n=4" in footer
    assert any("vst-repeat" in m.value for m in at.markdown)


def test_reference_variant_rerenders(at: AppTest) -> None:
    before = nr_column(at)
    at.selectbox(key="variant").set_value("reference").run()
    assert not at.exception
    after = nr_column(at)
    assert after != before and "NR reference n=4" in at.caption[-1].value


def test_upload_story_file(at: AppTest) -> None:
    at.radio(key="source").set_value("Upload a story file").run()
    assert any("Upload a story set" in i.value for i in at.info)
    lines = [
        json.dumps({"story_id": "u1", "system": "mine", "sentences": ["We sang.", "We sang and sang."]}),
        "{not json",
    ]
    at.file_uploader(key="upload").set_value(("mine.jsonl", ("\n".join(lines) + "\n").encode(), "application/json")).run()
    assert not at.exception
    assert list(nr_column(at)) == ["u1"]
    assert any("line 2" in e.value and "malformed JSON" in e.value for e in at.error)


def test_upload_unreadable_file_shows_message(at: AppTest) -> None:
    at.radio(key="source").set_value("Upload a story file").run()
    at.file_uploader(key="upload").set_value(("bad.json", b"\xff\xfe garbage", "application/json")).run()
    assert not at.exception
    assert any("not UTF-8" in e.value for e in at.error)


def test_missing_weights_show_one_notice_and_the_rest_works(at: AppTest) -> None:
    at.text_input(key="coherence_model").set_value("bert-nsp:no-such-org/no-such-bert").run()
    assert not at.exception
    notices = [w.value for w in at.warning if "Coherence is off" in w.value]
    assert len(notices) == 1 and "fetch-models" in notices[0]
    assert len(nr_column(at)) == 8  # non-redundancy still shown


def test_coherence_chips_with_a_local_model(at: AppTest, tiny_bert: Path) -> None:
    at.text_input(key="coherence_model").set_value(f"bert-nsp:{tiny_bert}").run()
    assert not at.exception
    df = at.dataframe[0].value
    assert df["coherence"].between(0, 1).all()
    html = "".join(m.value for m in at.markdown)
    assert html.count("vst-weakest") == 8 and html.count('class="vst-coh') == 8 * 4
    assert "coherence bert-nsp:" in at.caption[-1].value


def test_grounding_notice_without_clip_weights(at: AppTest) -> None:
    notices = [w.value for w in at.warning if "Grounding is off" in w.value]
    assert len(notices) == 1 and "--clip-checkpoint" in notices[0]


def test_grounded_phrases_and_matched_region(at: AppTest, tiny_clip: tuple[Path, Path]) -> None:
    config, checkpoint = tiny_clip
    at.text_input(key="clip_arch").set_value("vst-tiny-clip")
    at.text_input(key="clip_config").set_value(str(config))
    at.text_input(key="clip_checkpoint").set_value(str(checkpoint)).run()
    assert not at.exception
    assert not [w for w in at.warning if "Grounding is off" in w.value]
    df = at.dataframe[0].value
    assert df["GROOVIST"].between(-1, 1).all() and df["T"].between(0, 1).all()
    html = "".join(m.value for m in at.markdown)
    assert 'class="vst-np"' in html and "matched image" in html
    images_before = len(at.get("image"))
    box = at.selectbox(key="np-space-grounded")
    box.set_value(box.options[0]).run()
    assert not at.exception
    assert len(at.get("image")) == images_before + 1
    assert "θ=0.6159" in at.caption[-1].value


def test_theta_and_ablations_rerender_without_models(at: AppTest, tiny_clip: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    config, checkpoint = tiny_clip
    at.text_input(key="clip_arch").set_value("vst-tiny-clip")
    at.text_input(key="clip_config").set_value(str(config))
    at.text_input(key="clip_checkpoint").set_value(str(checkpoint)).run()
    before = dict(zip(at.dataframe[0].value["story"], at.dataframe[0].value["GROOVIST"]))
    import vst_core.grounder as grounder

    def no_encoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model ran")

    monkeypatch.setattr(grounder.Grounder, "prepare", no_encoding)
    at.selectbox(key="theta_name").set_value("slider").run()
    at.slider(key="theta_value").set_value(1.2).run()
    assert not at.exception
    after = dict(zip(at.dataframe[0].value["story"], at.dataframe[0].value["GROOVIST"]))
    assert all(after[k] < before[k] for k in before)  # a higher θ pushes phrases below it
    assert "θ=1.2000" in at.caption[-1].value
    at.checkbox(key="penalize").uncheck().run()
    at.checkbox(key="concreteness").uncheck().run()
    assert not at.exception
    assert "-P -C" in at.caption[-1].value
