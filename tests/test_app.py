"""The dashboard in streamlit's AppTest: every page through the app's frame, sample, uploads,
scores files, models present and absent, state in the URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import APP, PAGES, ROOT, SAMPLE, clip_args
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.slow  # AppTest runs of every page


def open_page(page: str = "inspect") -> AppTest:
    """The app (its frame and sidebar) showing one page, not run yet."""
    return AppTest.from_file(APP, default_timeout=90).switch_page(PAGES[page])


def make(page: str = "inspect", **widgets: Any) -> AppTest:
    """A fresh run of a page with sidebar widgets preset by key."""
    app = open_page(page)
    for key, value in widgets.items():
        app.session_state[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def tiny_clip_widgets(tiny_clip: tuple[Path, Path]) -> dict[str, str]:
    config, checkpoint = tiny_clip
    return {"clip_arch": "vst-tiny-clip", "clip_config": str(config), "clip_checkpoint": str(checkpoint)}


def table(app: AppTest) -> pd.DataFrame:
    assert app.title[0].value == "Dataset"
    return app.dataframe[0].value


@pytest.fixture(autouse=True)
def allow_test_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' temporary folders are data folders the operator allowed."""
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))


@pytest.fixture(autouse=True, scope="module")
def no_models_from_earlier_tests(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """These pages run where no weights are: a model an earlier test of this process loaded (the
    real-layout replicas, kept by the dashboard's resource cache) or recorded in its cache folder's
    memo is not seen here."""
    import os

    import streamlit as st

    st.cache_resource.clear()
    st.cache_data.clear()
    before = os.environ.get("VST_CACHE_DIR")
    os.environ["VST_CACHE_DIR"] = str(tmp_path_factory.mktemp("app-cache"))
    yield
    if before is not None:
        os.environ["VST_CACHE_DIR"] = before


@pytest.fixture
def at() -> AppTest:
    return make()


def test_inspect_page_renders_the_sample(at: AppTest) -> None:
    assert at.title[0].value == "Inspect a story"
    assert at.selectbox(key="sequence").value == "space-trip"
    html = "".join(m.value for m in at.markdown)
    assert html.count('class="vst-card"') == 4  # four candidates, NR only (no weights here)
    assert any("vst-repeat" in m.value for m in at.markdown)
    footer = at.main.caption[-1].value
    assert footer.startswith("Settings: sig ") and "NR paper n=4" in footer and "device: none" in footer
    at.selectbox(key="sequence").set_value("home-day").run()
    assert not at.exception and "`home-generic`" in "".join(m.value for m in at.markdown)


def test_inspect_downloads_carry_the_signature(at: AppTest) -> None:
    from vst_core.data import read_story_set
    from vst_core.viz import export_csv, export_json

    buttons = {b.key for b in at.get("download_button")}
    assert {"dl-json", "dl-csv"} <= buttons
    signature_id = at.main.caption[-1].value.split("sig ")[1].split(" ")[0]
    # the page's exports are built by these two functions from the view it shows: check what they carry
    from dashboard.choices import Choices, settings_for
    from vst_core.scoring.story import score_story
    from vst_core.signature import inputs_of, signature

    settings = settings_for(Choices(coherence=False, grounding=False))
    stories = read_story_set(ROOT / "assets/sample/stories.jsonl")
    inputs = inputs_of(stories)
    records = [score_story(s, settings, signature(settings, inputs)) for s in stories]
    document = json.loads(export_json(records, settings, inputs))
    assert document["signature"]["id"] == signature_id
    assert all(r["signature"]["id"] == signature_id for r in document["stories"])
    assert document["signature"]["inputs"] == {"stories": stories.content_digest()}
    import io

    exported = pd.read_csv(io.StringIO(export_csv(pd.DataFrame({"x": [1]}), settings, inputs)))  # a plain read_csv
    about = str(exported["provenance"].iat[0])
    assert list(exported.columns) == ["x", "signature_id", "provenance"] and about.startswith(f"sig {signature_id}")
    assert str(exported["signature_id"].iat[0]) == signature_id
    assert json.loads(about.split(" | signature ", 1)[1])["id"] == signature_id


def test_dataset_page_table_and_plot() -> None:
    app = make("dataset")
    df = table(app)
    nr = dict(zip(df["story"], df["NR"]))
    assert len(nr) == 8 and nr["space-generic"] < nr["space-grounded"] - 0.15
    assert len(app.get("plotly_chart")) == 1
    headers = json.loads(app.dataframe[0].proto.columns)  # each metric column says what it is and which way is better
    assert "repetition across sentences" in headers["inter"]["help"] and "lower is better" in headers["inter"]["help"]
    assert "higher is better" in headers["NR"]["help"]
    next(m for m in app.multiselect if m.label == "Systems").set_value(["model-b"]).run()
    assert list(table(app)["system"].unique()) == ["model-b"]
    app.text_input(key="search").set_value("nice day").run()
    assert list(table(app)["story"]) == ["home-generic"]
    assert app.main.caption[-1].value.startswith("Settings: sig ")


def test_reference_variant_changes_scores() -> None:
    paper = table(make("dataset"))
    reference = table(make("dataset", variant="reference"))
    assert list(paper["NR"]) != list(reference["NR"])


def test_upload_story_file(at: AppTest) -> None:
    at.radio(key="source").set_value("Upload a story file").run()
    assert any("Upload a story set" in i.value for i in at.info)
    lines = [
        json.dumps({"story_id": "u1", "system": "mine", "sentences": ["We sang.", "We sang and sang."]}),
        "{not json",
    ]
    at.file_uploader(key="upload").set_value([("mine.jsonl", ("\n".join(lines) + "\n").encode(), "application/json")]).run()
    assert not at.exception
    assert "`u1`" in "".join(m.value for m in at.markdown)
    assert any("line 2" in e.value and "malformed JSON" in e.value for e in at.error)


def test_upload_unreadable_file_shows_message(at: AppTest) -> None:
    at.radio(key="source").set_value("Upload a story file").run()
    at.file_uploader(key="upload").set_value([("bad.json", b"\xff\xfe garbage", "application/json")]).run()
    assert not at.exception
    assert any("not UTF-8" in e.value for e in at.error)


def notices(app: AppTest) -> str:
    """The page's notices: their first sentences (warnings) and the full texts (the details)."""
    return " ".join(w.value for w in app.main.warning) + " " + " ".join(m.value for m in app.main.markdown)


def test_missing_weights_show_one_notice_each_and_the_rest_works(at: AppTest) -> None:
    shown = " ".join(w.value for w in at.main.warning)
    assert shown.count("Coherence is off") == 1 and shown.count("Grounding is off") == 1
    assert shown.index("Coherence is off") < shown.index("Grounding is off")  # in the sidebar's order
    assert "fetch-models" in notices(at) and "the sidebar's “…or local checkpoint file”" in notices(at)
    assert "--clip-checkpoint" not in notices(at)  # the sidebar's controls are named, not the CLI's flags
    toggles = {t.key: (t.value, t.disabled) for t in at.sidebar.toggle}
    assert toggles == {"coherence": (False, True), "grounding": (False, True)}  # off, as they are, and why is said
    assert at.sidebar.selectbox(key="theta_name").disabled and at.sidebar.checkbox(key="penalize").disabled
    assert len(table(make("dataset"))) == 8  # non-redundancy still shown


def test_cuda_without_a_gpu_is_one_message() -> None:
    app = make("dataset", device="cuda")
    shown = " ".join(w.value for w in app.main.warning)
    assert shown.count("no CUDA GPU") == 1 and "requested but no CUDA" not in notices(app)


def test_coherence_chips_with_a_local_model(tiny_bert: Path) -> None:
    app = make(coherence_model=f"bert-nsp:{tiny_bert}")
    html = "".join(m.value for m in app.markdown)
    assert html.count("vst-weakest") == 4 and html.count('class="vst-coh') == 4 * 4
    assert "coherence bert-nsp:" in app.main.caption[-1].value
    assert table(make("dataset", coherence_model=f"bert-nsp:{tiny_bert}"))["coherence"].between(0, 1).all()


def test_grounded_phrases_and_matched_region(tiny_clip: tuple[Path, Path]) -> None:
    app = make(**tiny_clip_widgets(tiny_clip))
    assert not [w for w in app.warning if "Grounding is off" in w.value]
    html = "".join(m.value for m in app.markdown)
    assert 'class="vst-np"' in html and "matched image" in html
    assert html.count('class="vst-card"') == 4 * 5  # NR, GROOVIST, T, CLIPScore, RoViST-VG (coherence off)
    images_before = len(app.get("image"))
    from dashboard.choices import story_widget_key

    box = app.selectbox(key=story_widget_key("region-grounding", "model-a", "space-grounded"))
    box.set_value(box.options[0]).run()
    assert not app.exception
    assert len(app.get("image")) == images_before + 1
    assert "θ=0.6159" in app.main.caption[-1].value
    df = table(make("dataset", **tiny_clip_widgets(tiny_clip)))
    assert df["GROOVIST"].between(-1, 1).all() and df["T"].between(0, 1).all()


def test_theta_and_ablations_rerender_without_models(tiny_clip: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    app = make("dataset", **tiny_clip_widgets(tiny_clip))
    before = dict(zip(table(app)["story"], table(app)["GROOVIST"]))
    import vst_core.images.grounder as grounder

    def no_encoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model ran")

    monkeypatch.setattr(grounder.Grounder, "prepare", no_encoding)
    app.selectbox(key="theta_name").set_value("slider").run()
    app.slider(key="theta_value").set_value(1.2).run()
    assert not app.exception
    after = dict(zip(table(app)["story"], table(app)["GROOVIST"]))
    assert all(after[k] < before[k] for k in before)  # a higher θ pushes phrases below it
    assert "θ=1.2000" in app.main.caption[-1].value
    app.checkbox(key="penalize").uncheck().run()
    app.checkbox(key="concreteness").uncheck().run()
    assert not app.exception and "-P -C" in app.main.caption[-1].value


def test_story_in_the_url_opens_its_sequence() -> None:
    app = open_page("inspect")
    app.query_params["story"] = "home-generic"
    app.run()
    assert not app.exception
    assert app.selectbox(key="sequence").value == "home-day"
    assert any("home-generic` ← selected" in m.value for m in app.markdown)


@pytest.fixture(scope="module")
def scores_file(tiny_clip: tuple[Path, Path], tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vst_core.cli import main

    out = tmp_path_factory.mktemp("scores") / "scores.jsonl"
    code = main(
        [
            "score",
            str(ROOT / "assets/sample/stories.jsonl"),
            "--out",
            str(out),
            "--metrics",
            "redundancy,coherence,grounding",
            "--coherence-model",
            f"bert-nsp:{tiny_bert}",
            *clip_args(tiny_clip),
            "--cache-dir",
            str(out.parent / "cache"),
            "--no-progress",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    return out


def test_scores_jsonl_shows_everything_without_models(scores_file: Path) -> None:
    widgets = {
        "source": "Scores JSONL (no model needed)",
        "scores_path": str(scores_file),
        "scores_images": str(ROOT / "assets/sample"),
    }
    app = make(**widgets)
    assert not [w for w in app.warning if "is off" in w.value]  # no model is asked for
    html = "".join(m.value for m in app.markdown)
    assert (
        'class="vst-np"' in html and "vst-weakest" in html and html.count('class="vst-card"') == 4 * 4
    )  # no extra CLIP metrics in the file
    recorded = json.loads(scores_file.read_text().splitlines()[0])["signature"]["id"]
    footer = app.main.caption[-1].value
    assert "device: none" in footer and "CLIP vst-tiny-clip/file/gelu/sha:" in footer  # the weights by digest
    assert footer.startswith("Scores: sig ") and f"from {scores_file.name} sha256 " in footer  # the file, by its content
    assert f"[sig {recorded} · metrics redundancy+coherence+grounding" in footer  # and how it was made
    df = table(make("dataset", **widgets))
    assert len(df) == 8 and df["GROOVIST"].notna().all() and df["coherence"].notna().all()


def test_theta_and_ablations_apply_again_to_a_scores_files_similarities(scores_file: Path) -> None:
    """θ, −P and −C on a scores file re-apply GROOVIST to every story's stored similarities: the
    table equals the re-aggregated records, Inspect's cards follow, the footer says so."""
    from vst_core.config import settings_from_signature
    from vst_core.data import load_records
    from vst_core.scoring.reaggregate import reaggregate

    widgets = {
        "source": "Scores JSONL (no model needed)",
        "scores_path": str(scores_file),
        "scores_images": str(ROOT / "assets/sample"),
        "theta_name": "slider",
        "theta_value": 0.3,
        "penalize": False,
    }
    app = make("dataset", **widgets)
    df = table(app).set_index("story")
    records, _ = load_records(scores_file)
    base = settings_from_signature(dict(records[0].signature))
    want = {
        r.story_id: r.metrics["grounding"].unbounded for r in reaggregate(records, base, base.with_(theta="0.3", penalize=False))
    }
    assert want and all(abs(df.loc[k, "GROOVIST raw"] - v) < 1e-9 for k, v in want.items() if v is not None)
    assert any(
        abs(df.loc[r.story_id, "GROOVIST raw"] - r.metrics["grounding"].unbounded) > 1e-6
        for r in records
        if r.metrics.get("grounding")
    )
    footer = app.main.caption[-1].value
    assert "GROOVIST re-applied to the stored similarities with θ 0.3 -P" in footer
    inspect = make(**widgets)
    html = "".join(m.value for m in inspect.markdown)
    assert "θ 0.3000" in html  # the cards' hover text carries the θ in use


def test_scores_jsonl_from_another_version(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(
        json.dumps({"story_id": "a", "sentences": ["We ate.", "We ate again."], "scores": {"nr": 0.5}})
        + "\n"
        + json.dumps({"story_id": "b"})
        + "\n"
        + "{broken\n"
    )
    app = make(source="Scores JSONL (no model needed)", scores_path=str(old))
    assert not app.exception
    messages = [w.value for w in app.warning] + [e.value for e in app.error]
    assert any("another version" in m for m in messages)
    assert any("without sentences" in m for m in messages) and any("line 3" in m for m in messages)
    assert "`a`" in "".join(m.value for m in app.markdown)
    missing = make(source="Scores JSONL (no model needed)", scores_path=str(tmp_path / "nope.jsonl"))
    assert any("scores file not found" in e.value for e in missing.error)


def test_settings_live_in_the_url() -> None:
    shared = open_page("dataset")
    for key, value in {"variant": "reference", "ngram": "3", "theta_name": "AESOP", "penalize": "false"}.items():
        shared.query_params[key] = value
    shared.run()
    assert not shared.exception
    assert shared.selectbox(key="variant").value == "reference" and shared.slider(key="ngram").value == 3
    assert shared.checkbox(key="penalize").value is False
    assert "NR reference n=3" in shared.main.caption[-1].value


def test_sequence_in_the_url_is_restored() -> None:
    app = open_page("inspect")
    app.query_params["sequence"] = "home-day"
    app.run()
    assert not app.exception and app.selectbox(key="sequence").value == "home-day"


def test_a_link_reopens_the_scores_files_inside_the_allowed_folders_and_no_model_path(tmp_path: Path) -> None:
    """The scores path is part of a shared view (read only inside the allowed folders, as if typed);
    a model or regions path in a link is never read."""
    from vst_core.cli import main

    scores = tmp_path / "shared.jsonl"
    assert (
        main(
            ["score", str(ROOT / "assets/sample/stories.jsonl"), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]
        )
        == 0
    )
    app = open_page("dataset")
    for key, value in {"source": "Scores JSONL (no model needed)", "scores_path": str(scores), "regions": str(scores)}.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception and app.radio(key="source").value == "Scores JSONL (no model needed)"
    assert app.text_input(key="scores_path").value == str(scores)
    assert len(app.dataframe[0].value) == 8  # the linked file's stories
    models = open_page("dataset")
    models.query_params["regions"] = str(scores)
    models.query_params["rovist_vg_checkpoint"] = str(scores)
    models.run()
    assert models.text_input(key="regions").value == "grid" and models.text_input(key="rovist_vg_checkpoint").value == ""
    outside = open_page("dataset")
    outside.query_params["source"] = "Scores JSONL (no model needed)"
    outside.query_params["scores_path"] = "/etc/passwd"
    outside.run()
    assert not outside.exception and not outside.dataframe
    errors = " ".join(e.value for e in outside.error)
    assert "outside the folders this dashboard may read" in errors and "root:" not in errors


def test_typed_server_paths_stay_inside_the_allowed_folders(tmp_path_factory: pytest.TempPathFactory) -> None:
    app = make("dataset", source="Scores JSONL (no model needed)", scores_path="/etc/passwd")
    errors = " ".join(e.value for e in app.error)
    assert "outside the folders this dashboard may read" in errors and "root:" not in errors and not app.dataframe
    inside = make("dataset", source="Scores JSONL (no model needed)", scores_path=str(tmp_path_factory.getbasetemp() / "none"))
    assert any("scores file not found" in e.value for e in inside.error)  # allowed: only then does existence show
    models = make("dataset", coherence_model="rovist-c:/etc/shadow", regions="/etc/hosts", clip_config="../../x.json")
    shown = " ".join(w.value for w in models.main.warning)
    assert shown.count("outside the folders this dashboard may read") == 3
    assert "“Regions” is back to grid" in notices(models) and "Regions file not found" not in notices(models)


def test_invalid_link_values_fall_back_to_defaults_with_a_notice() -> None:
    app = open_page("dataset")
    for key, value in {"ngram": "999", "theta_name": "slider", "theta_value": "nan", "coherence": "maybe"}.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception and app.slider(key="ngram").value == 4
    shown = notices(app)
    assert "ngram='999' is not valid" in shown and "theta_value='nan'" in shown and "coherence='maybe'" in shown
    assert "nan" not in app.main.caption[-1].value


def _sample_upload() -> list[tuple[str, bytes, str]]:
    import io
    import zipfile

    sample = ROOT / "assets/sample"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(sample / "stories.jsonl", "my-set/stories.jsonl")
        for image in sorted((sample / "images").iterdir()):
            archive.write(image, f"my-set/images/{image.name}")
    return [("my-set.zip", buffer.getvalue(), "application/zip")]


def test_a_story_file_arrives_with_its_images() -> None:
    app = make(source="Upload a story file", coherence=False, grounding=False)
    app.file_uploader(key="upload").set_value(_sample_upload()).run()
    assert not app.exception
    assert len(app.get("image")) == 5 and not [w for w in app.warning if "problems" in w.value]
    alone = make(source="Upload a story file", coherence=False, grounding=False)
    alone.file_uploader(key="upload").set_value(
        [("stories.jsonl", (ROOT / "assets/sample/stories.jsonl").read_bytes(), "x")]
    ).run()
    assert not alone.exception and not alone.get("image")  # no crash: missing images are said once
    assert any("upload them with it" in w.value for w in alone.warning)
    alone.file_uploader(key="upload").set_value([]).run()  # removing the file removes its stories
    assert not alone.exception and "`space-ref`" not in "".join(m.value for m in alone.markdown)


def _png(colour: str, size: tuple[int, int] = (32, 24)) -> bytes:
    from io import BytesIO

    from PIL import Image

    buffer = BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_upload_images_and_stories(tiny_clip: tuple[Path, Path]) -> None:
    app = make(
        source="Upload images + stories",
        upload_stories="mine: A red square. | A green square.\nA blue dog ran.",
        **tiny_clip_widgets(tiny_clip),
    )
    assert any("Upload a story set" in i.value for i in app.info)  # no images yet
    files = [
        ("red.png", _png("red"), "image/png"),
        ("notes.png", b"plain text, not an image", "image/png"),
        ("green.png", _png("green"), "image/png"),
    ]
    app.file_uploader(key="upload_images").set_value(files).run()
    assert not app.exception
    assert any("notes.png is not an image" in w.value for w in app.warning)
    html = "".join(m.value for m in app.markdown)
    assert "`upload-1`" in html and "`upload-2`" in html and 'class="vst-np"' in html
    assert len(app.get("image")) == 2


def test_upload_limits_are_explained(tmp_path: Path) -> None:
    from vst_core.data import story_set_from_upload

    none, messages = story_set_from_upload([], "a story.", tmp_path / "a")
    assert none is None and "at least one image" in messages[0]
    many = [(f"{k}.png", _png("white", (8, 8))) for k in range(50)]
    ss, messages = story_set_from_upload(many, "We went out. It rained.", tmp_path / "b")
    assert ss is not None and len(ss.stories[0].images) == 20 and "at most 20 images" in messages[0]
    assert ss.stories[0].sentences == ("We went out.", "It rained.")
    empty, messages = story_set_from_upload(many[:2], "   ", tmp_path / "c")
    assert empty is None and "paste at least one story" in messages[0]


# ------------------------------------------------------------------ agreement with humans


def test_meta_page_on_the_sample_with_the_made_up_example(tmp_path: Path) -> None:
    from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
    from vst_core.cli import main
    from vst_core.data import load_records
    from vst_core.viz import correlation_cells

    app = make("meta", resamples=200)
    assert app.title[0].value == "Agreement with humans"
    assert any("made up" in w.value for w in app.warning)
    assert "8** of 8 judged stories matched" in "".join(m.value for m in app.markdown)
    shown = app.dataframe[0].value
    assert "NR" in shown.index and "BLEU-4" in shown.index and list(shown.columns)[:2] == ["grounding", "coherence"]
    assert "METEOR" not in shown.index  # asked for with its toggle only (its Java scorer loads for about 13 s)
    assert len(app.get("plotly_chart")) >= 4  # bars, scatter, gap curve, error heatmap
    keys = {b.key for b in app.get("download_button")}
    assert {"dl-agreement_with_humans", "dl-system_level", "dl-pairwise_accuracy", "dl-error_correlations"} <= keys
    assert "dl-bins" not in keys  # no grounding, no bins: nothing empty is offered
    assert any(c.value.startswith("meta-eval sig ") for c in app.caption)
    # the page shows the numbers the CLI writes for the same scores and judgements
    out = tmp_path / "scores.jsonl"
    assert main(["score", str(ROOT / "assets/sample/stories.jsonl"), "--out", str(out), "--no-progress"]) == 0
    records, _ = load_records(out)
    report = run_meta_eval(records, read_judgements(ROOT / "assets/sample/human_example.csv"), MetaSettings(resamples=200))
    expected = correlation_cells(report.correlations, "kendall_c")
    assert shown.loc["NR"].tolist() == expected.loc["NR"].tolist()


def test_meta_page_settings_and_selection() -> None:
    app = make("meta", resamples=0, baselines=False)
    assert list(app.dataframe[0].value.index) == ["NR"]
    app.multiselect(key="meta_aspects").set_value(["overall"]).run()
    assert not app.exception and list(app.dataframe[0].value.columns) == ["overall"]
    app.selectbox(key="method").set_value("pearson").run()
    assert not app.exception and "[" not in app.dataframe[0].value.iloc[0, 0]  # 0 resamples: no interval


def test_meta_page_reports_unmatched_and_unreadable_judgements() -> None:
    app = make(
        "meta",
        judgements_source="Upload a judgements CSV",
        baselines=False,
        resamples=0,
        last_judgements=b"story_id,overall\nghost-1,3\nghost-2,4\n",
    )
    assert "0** of 2 judged stories matched" in "".join(m.value for m in app.markdown)
    assert any("none of the 2 judged story ids" in w.value for w in app.warning)
    bad = make("meta", judgements_source="Upload a judgements CSV", last_judgements=b"id,score\na,1\n")
    assert bad.error and "no story_id column" in bad.error[0].value


def test_meta_page_upload_without_a_file_asks_for_one() -> None:
    app = make("meta", source="Upload a story file")
    assert app.title[0].value == "Agreement with humans" and not app.dataframe


def test_meta_page_bins_from_a_grounded_scores_file(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    assert (
        main(
            [
                "score",
                str(ROOT / "assets/sample/stories.jsonl"),
                "--out",
                str(out),
                "--no-progress",
                "--metrics",
                "redundancy,grounding,clipscore",
                *clip_args(tiny_clip),
                "--cache-dir",
                str(tmp_path / "cache"),
            ]
        )
        == 0
    )
    app = make(
        "meta",
        source="Scores JSONL (no model needed)",
        scores_path=str(out),
        scores_images=str(ROOT / "assets/sample"),
        resamples=0,
        baselines=False,
    )
    assert any("made up" in w.value for w in app.warning)  # the sample's ids: the example is offered
    assert {"GROOVIST", "CLIPScore", "NR"} <= set(app.dataframe[0].value.index)
    bins = next(d.value for d in app.dataframe if "covariate" in d.value.columns)
    assert set(bins["covariate"]) == {"T", "P"} and set(bins["aspect"]) == {"grounding"}
    assert bins.groupby("covariate")["n"].sum().to_dict() == {"P": 8 * 3, "T": 8 * 3}  # 3 metrics, every story in one bin


def test_meta_page_with_a_pairwise_file() -> None:
    pairs = (
        b"sequence_id,story_a,story_b,rank_a,rank_b,agreement\n"
        b"space-trip,space-ref,space-generic,1.2,3.0,5\nspace-trip,space-offtopic,space-grounded,3.5,1.5,4\n"
        b"home-day,home-ref,home-generic,1.0,2.6,4\nhome-day,home-ref,home-x,1.0,2.6,4\n"
    )
    app = make("meta", judgements_source="Upload a judgements CSV", baselines=False, last_judgements=pairs)
    assert any("1 judged pair(s) name a story without scores" in w.value for w in app.warning)
    assert any("pairwise accuracy only" in i.value for i in app.info)
    grid = next(d.value for d in app.dataframe if "all pairs" in d.value.columns)
    assert grid.loc["NR", "all pairs"] == "1.000 (3)"  # the repetitive stories lose every pair


def test_inspect_shows_repeated_spans_of_a_no_spans_run(tmp_path: Path) -> None:
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    assert main(["score", str(ROOT / "assets/sample/stories.jsonl"), "--out", str(out), "--no-progress", "--no-spans"]) == 0
    app = make(source="Scores JSONL (no model needed)", scores_path=str(out), scores_images=str(ROOT / "assets/sample"))
    assert any("vst-repeat" in m.value for m in app.markdown)  # recomputed for the shown stories


# ------------------------------------------------------------------ human-likeness (dHM)


def test_human_likeness_on_the_sample_says_which_metrics_it_uses() -> None:
    app = make("human")
    assert app.title[0].value == "Human-likeness"
    assert any("dHM over non-redundancy (RoViST-NR) only" in w.value for w in app.warning)
    table = app.dataframe[0].value
    assert list(table["system"]) == ["model-a", "model-b", "model-c"] and list(table["N"]) == [2, 2, 2]
    assert table.set_index("system").loc["model-b", "signed R"].startswith("-")  # the repetitive stories
    assert len(app.get("plotly_chart")) == 1 and app.main.caption[-1].value.startswith("Settings: sig ")
    traces = json.loads(app.get("plotly_chart")[0].proto.spec)["data"]
    legend = [t["name"].split(" (N=")[0] for t in traces]
    assert legend == ["reference", *table["system"]]  # the plot orders systems as the table, the human ones first


def test_human_likeness_from_imported_scores_alone(tmp_path: Path) -> None:
    from vst_core.analysis.dhm import dhm_report
    from vst_core.cli import main
    from vst_core.data import load_records

    src = tmp_path / "long.csv"
    rows = ["story_id,metric,value,system"]
    for k in range(6):
        rows += [f"s{k},G,{0.1 * k},reference", f"s{k},C,0.8,reference", f"s{k},R,0.9,reference"]
        rows += [f"s{k},G,{0.05 * k},model", f"s{k},C,{0.5 + 0.05 * k},model", f"s{k},R,0.7,model"]
    src.write_text("\n".join(rows) + "\n")
    scores = tmp_path / "imported.jsonl"
    assert main(["import-scores", str(src), "--long", "--out", str(scores)]) == 0
    app = make("human", source="Scores JSONL (no model needed)", scores_path=str(scores), dhm_pairing="story", dhm_resamples=0)
    assert not [w for w in app.warning if "dHM over" in w.value]  # all three metrics are there
    assert not [e for e in app.error if "empty story" in e.value]  # imported scores carry no text, and need none
    (row,) = app.dataframe[0].value.to_dict(orient="records")
    records, _ = load_records(scores)
    want = dhm_report(records, pairing="story", resamples=0).systems[0]
    assert (
        row["system"] == "model" and row["N"] == 6 and row["dHM"] == f"{want.mean['dHM']:.4f} †"
    )  # N 6 < 10: marked, no interval
    assert len(app.get("plotly_chart")) == 3 and len(app.get("page_link")) >= 3 * 5  # five stories per metric
    out = tmp_path / "dhm.json"  # the command line signs the same files' dHM as the page does
    assert main(["dhm", str(scores), "--out", str(out), "--pairing", "story", "--resamples", "0"]) == 0
    signed = json.loads(out.read_text())["signature"]["id"]
    assert any(f"dHM sig {signed} " in c.value for c in app.caption) or any(
        f"dHM sig {signed}" in str(p.proto) for p in app.get("plotly_chart")
    )


def test_compare_page_against_imported_released_scores(tmp_path: Path) -> None:
    from vst_core.cli import main
    from vst_core.data import read_story_set
    from vst_core.metrics.rovist_nr.batch import redundancy_of

    stories = read_story_set(ROOT / "assets/sample/stories.jsonl")
    theirs = tmp_path / "released_R.csv"  # "released" reference-profile NR of the sample, one of them off by 0.1
    values = {s.story_id: redundancy_of(s, 4, "paper").score for s in stories}
    values["home-generic"] = (values["home-generic"] or 0) + 0.1
    theirs.write_text("story_id,R_score\n" + "".join(f"{k},{v!r}\n" for k, v in values.items()))
    out = tmp_path / "theirs.jsonl"
    assert main(["import-scores", str(theirs), "--system", "released", "--out", str(out)]) == 0
    app = make("compare")
    assert any("Upload a scores JSONL" in i.value for i in app.info)
    app.file_uploader(key="compare_upload").set_value(("theirs.jsonl", out.read_bytes(), "application/json")).run()
    assert not app.exception
    text = "".join(m.value for m in app.markdown)
    assert "**8** stories in both" in text and "equal to 1e-9: **87.50%**" in text
    assert app.get("page_link")[0].proto.label.startswith("home-generic")  # the largest difference first


def test_the_bundled_second_scores_file_is_current_and_opens_on_compare() -> None:
    """The bundled reference-profile NR equals what ``vst score --nr-variant reference`` gives now,
    and the Compare page opens it with one toggle: every story matched, none equal to the paper's NR."""
    from vst_core.data import load_records, read_story_set
    from vst_core.metrics.rovist_nr.batch import redundancy_of

    bundled, problems = load_records(ROOT / "assets/sample/scores_nr_reference.jsonl")
    assert not problems and len(bundled) == 8
    stories = {s.story_id: s for s in read_story_set(ROOT / "assets/sample/stories.jsonl")}
    for record in bundled:
        assert record.metrics["redundancy"].score == redundancy_of(stories[record.story_id], 4, "reference").score
    app = make("compare")
    app.toggle(key="compare_example").set_value(True).run()
    assert not app.exception
    text = "".join(m.value for m in app.markdown)
    # the example opens on its own profile: the two agree on every story
    assert "**8** stories in both" in text and "equal to 1e-9: **100.00%**" in text
    assert len(app.get("plotly_chart")) == 1
    app.radio(key="compare_ours").set_value(app.radio(key="compare_ours").options[1]).run()  # the sidebar's (paper)
    text = "".join(m.value for m in app.markdown)
    assert "equal to 1e-9: **0.00%**" in text and any("differ on every story by design" in i.value for i in app.info)


def _space_ref_nr(app: AppTest) -> str:
    """The NR card of space-ref on Inspect, as drawn (the first card of the first sequence)."""
    html = next(m.value for m in app.markdown if 'class="vst-card"' in m.value)
    return html.split('font-weight:600">', 1)[1].split("<", 1)[0]


def test_the_bundled_example_leaves_the_sessions_settings_as_they_were() -> None:
    """Turning the example on and off changes nothing outside the Compare page: the sidebar's NR
    definition, the footer, and Inspect's NR of space-ref (0.948 paper, 0.941 reference)."""
    app = make("inspect")
    footer = app.main.caption[-1].value
    assert "NR paper n=4" in footer and _space_ref_nr(app) == "0.948"
    app.switch_page(PAGES["compare"]).run()
    app.toggle(key="compare_example").set_value(True).run()
    assert not app.exception
    assert app.session_state["variant"] == "paper" and app.main.caption[-1].value == footer  # the sidebar's, as it was
    assert "equal to 1e-9: **100.00%**" in "".join(m.value for m in app.markdown)  # our side as the example computed it
    said = " ".join(c.value for c in app.main.caption)
    assert "computed again with the example's Definition reference, for this comparison only" in said
    assert "Definition reference" in str(app.radio(key="compare_ours").value)
    assert "ours: sig " in str(app.get("plotly_chart")[0].proto) and "NR reference n=4" in str(app.get("plotly_chart")[0].proto)
    app.toggle(key="compare_example").set_value(False).run()
    assert app.session_state["variant"] == "paper"
    app.switch_page(PAGES["inspect"]).run()
    assert not app.exception
    assert app.session_state["variant"] == "paper" and app.main.caption[-1].value == footer
    assert _space_ref_nr(app) == "0.948"


def test_many_problems_are_summarised_not_one_box_each(tmp_path: Path) -> None:
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    assert main(["score", str(ROOT / "assets/sample/stories.jsonl"), "--out", str(out), "--no-progress"]) == 0
    moved = tmp_path / "elsewhere" / "scores.jsonl"  # the scores without the images next to them
    moved.parent.mkdir()
    moved.write_bytes(out.read_bytes())
    app = make(source="Scores JSONL (no model needed)", scores_path=str(moved))
    assert not app.error  # no red box per missing image
    assert any(w.value.startswith("40 problems in the input (40 × error: image)") for w in app.warning)
    assert app.get("expander")


# ------------------------------------------------------------------ error analysis


def test_disagreements_list_the_hand_computed_order() -> None:
    app = make("meta", resamples=0, baselines=False)
    stories = next(d.value for d in app.dataframe if "rank_diff" in d.value.columns)
    # NR against the made-up 'overall' ratings, worked out by hand in tests/test_disagreements.py
    assert list(stories["story_id"])[:3] == ["space-offtopic", "space-ref", "home-generic"]
    pairs = next(d.value for d in app.dataframe if "order" in d.value.columns)
    assert (pairs.iloc[0]["better"], pairs.iloc[0]["worse"]) == ("space-ref", "space-offtopic")


def test_a_pair_opens_side_by_side_with_the_peoples_ratings() -> None:
    app = open_page("inspect")
    app.query_params["story"] = "space-ref"
    app.query_params["with"] = "space-offtopic"
    app.run()
    assert not app.exception
    html = "".join(m.value for m in app.markdown)
    assert html.count('class="vst-card"') == 2 and "`space-ref`" in html and "`space-offtopic`" in html
    people = [c.value for c in app.main.caption if c.value.startswith("**People**")]
    assert len(people) == 2 and "overall 4.33 ± 0.47 (3)" in people[0]  # space-ref's made-up ratings
    app.toggle(key="whole_sequence").set_value(True).run()
    assert "".join(m.value for m in app.markdown).count('class="vst-card"') == 4


def test_content_word_repeats_only_is_the_default_and_changes_the_display_not_the_score() -> None:
    app = make(sequence="home-day")
    assert app.toggle(key="content_only").value  # the demo view by default
    content = "".join(m.value for m in app.markdown)
    app.toggle(key="content_only").set_value(False).run()
    every = "".join(m.value for m in app.markdown)
    assert content.count("vst-repeat") < every.count("vst-repeat") and ">0.678<" in content and ">0.678<" in every


def test_compare_two_systems() -> None:
    app = make("systems")
    summary = app.dataframe[0].value.set_index("metric")
    assert summary.loc["NR", "N"] == 2 and summary.loc["NR", "wins"] == 2  # model-a beats model-b's repetitive stories
    # inter is a repetition (lower is better): model-a, which repeats less, wins it too
    assert summary.loc["inter", "better"] == "lower" and summary.loc["inter", "wins"] == 2 and summary.loc["inter", "losses"] == 0
    assert summary.loc["inter", "mean difference"] < 0
    ranked = app.dataframe[1].value
    assert set(ranked["story_b"]) == {"space-generic", "home-generic"}
    assert len(app.get("plotly_chart")) == 1 and app.main.caption[-1].value.startswith("Settings: sig ")


def test_dataset_slices() -> None:
    app = make("dataset", slice_metric="NR")
    bar = app.slider(key="slice_range_NR")
    bar.set_value((0.9, bar.max)).run()
    assert set(table(app)["story"]) == {s for s in table(make("dataset"))["story"] if not s.endswith("generic")}
    assert make("dataset", slice_problem="none").dataframe[0].value.shape[0] == 8
    short = make("dataset", slice_sentences=(0, 4))
    assert len(table(short)) == 0 or table(short)["sentences"].max() <= 4
    assert make("dataset").radio(key="slice_t").disabled  # no grounding here: T and P cannot slice


def test_human_likeness_page_command_and_python_api_give_one_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On NR-only scores of the sample the page, ``vst dhm`` and ``vst.human_likeness`` compute the
    same partial dHM, each says so, and none gives an interval for N = 2 (the one interval rule)."""
    import vst_core as vst
    from vst_core.analysis.intervals import SMALL_N_MARK
    from vst_core.cli import main

    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    out = tmp_path / "dhm.json"
    assert main(["dhm", str(scores), "--out", str(out), "--resamples", "200"]) == 0
    err = capsys.readouterr().err
    document = json.loads(out.read_text())
    assert "dHM over non-redundancy (RoViST-NR) only" in document["note"] and "only" in err
    cli = {s["system"]: (s["N"], s["dHM"], s["dHM interval"]) for s in document["systems"]}
    assert all(v[2] is None for v in cli.values())
    records, _problems = vst.read_scores(scores)
    api = vst.human_likeness(records, resamples=200)
    assert api.note == document["note"] and {s.system: s.n for s in api.systems} == {k: v[0] for k, v in cli.items()}
    assert all(s.n == 2 and s.mean["dHM"] is not None and s.interval["dHM"] is None for s in api.systems)
    for s in api.systems:
        assert cli[s.system][1] == pytest.approx(s.mean["dHM"])
    app = make("human", dhm_resamples=200)
    page = app.dataframe[0].value.set_index("system")
    for s in api.systems:
        shown = page.loc[s.system, "dHM"]
        assert shown == f"{s.mean['dHM']:.4f} {SMALL_N_MARK}"  # the same number, marked small, no interval


@pytest.mark.parametrize("source", ["Upload a story file", "Upload images + stories", "Scores JSONL (no model needed)"])
def test_a_source_with_nothing_loaded_yet_says_no_model_is_off(source: str) -> None:
    """Before any data is loaded no model is loaded, so no page says a model is off (the sample, which
    is scored at once, still does when weights are missing)."""
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    app.session_state["source"] = source
    app.run()
    assert not app.exception
    assert not [w.value for w in app.warning if "is off" in w.value]
    assert any("to begin" in i.value or "Upload" in i.value for i in app.info)


# ------------------------------------------------------------------ a typed story beside a sequence

TYPED = (
    "We flew to the moon in a rocket. | The stars were bright. | We walked on the moon. | The earth looked small. | We came home."
)


def _cards_of(app: AppTest) -> dict[str, str]:
    """Each drawn story's heading (system · id) -> its score cards' HTML, in drawing order."""
    found: dict[str, str] = {}
    values = [m.value for m in app.markdown]
    for heading, body in zip(values, values[1:], strict=False):
        if heading.startswith("**") and 'class="vst-card"' in body:
            found[heading] = body
    return found


def test_a_typed_story_joins_the_sample_sequence_beside_its_four_stories() -> None:
    """A story typed on Inspect is drawn and scored beside the picked sequence's four stories, with
    its images, as the story (typed, typed-space-trip); its NR is the reader's and the metric's own,
    its download carries the signature of its own run (the sample plus this story), and nothing
    else moves: the four stories' numbers, the footer, the Dataset table."""
    from vst_core.data import StorySet, read_story_set
    from vst_core.data.readers import story_from_record
    from vst_core.metrics.rovist_nr.batch import redundancy_of
    from vst_core.signature import signature

    app = make("inspect")
    footer, before = app.main.caption[-1].value, _cards_of(app)
    assert len(before) == 4 and len(app.get("image")) == 5
    app.text_area(key="typed_story").set_value(TYPED).run()
    assert not app.exception
    after = _cards_of(app)
    assert list(after)[:4] == list(before) and all(after[k] == before[k] for k in before)  # the four as they were
    assert list(after)[4] == "**typed** · `typed-space-trip`"
    sample = read_story_set(SAMPLE)
    images = sample.get("space-ref", "reference").images
    mine = story_from_record(
        {"story_id": "typed-space-trip", "system": "typed", "sequence_id": "space-trip", "images": list(images),
         "sentences": [s.strip() for s in TYPED.split("|")]},
        root=sample.root,
    )  # fmt: skip
    expected = redundancy_of(mine, 4, "paper").score
    assert expected is not None and f">{expected:.3f}<" in after["**typed** · `typed-space-trip`"]
    assert len(app.get("image")) == 5 and app.main.caption[-1].value == footer  # the sequence's five photos, one footer
    assert "dl-typed" in {b.key for b in app.get("download_button")}
    from dashboard import typed
    from dashboard.keys import FRAME
    from vst_core.signature import recorded_inputs
    from vst_core.viz import export_json

    view = app.session_state[FRAME].view
    found = typed.scored(view, "space-trip", TYPED)
    assert found is not None and found.story.key == ("typed", "typed-space-trip") and found.story.images_ok
    run = StorySet.of([*sample, found.story], sample.root)
    assert found.record.signature["inputs"] == {"stories": run.content_digest()}  # the sample plus this story
    assert found.record.signature_id == signature(view.settings, {"stories": run.content_digest()})["id"]
    document = json.loads(export_json([found.record], found.settings, recorded_inputs([found.record])))  # its download
    assert document["signature"]["id"] == found.record.signature_id and len(document["stories"]) == 1
    assert any(f"sig `{found.record.signature_id}`" in c.value for c in app.main.caption)
    app.switch_page(PAGES["dataset"]).run()  # the other pages hold the loaded stories only
    assert len(table(app)) == 8 and "typed" not in set(table(app)["system"])
    app.switch_page(PAGES["inspect"]).run()  # and the typed story is still there on the way back
    assert app.text_area(key="typed_story").value == TYPED and "**typed** · `typed-space-trip`" in _cards_of(app)
    app.selectbox(key="sequence").set_value("home-day").run()  # it joins the sequence picked
    assert "**typed** · `typed-home-day`" in _cards_of(app) and len(_cards_of(app)) == 5
    app.text_area(key="typed_story").set_value("").run()  # an empty box removes it
    assert len(_cards_of(app)) == 4


def test_a_typed_story_is_grounded_in_the_sequences_photos(tiny_clip: tuple[Path, Path]) -> None:
    """With CLIP on, the typed story gets every image metric the four stories get, computed on the
    sequence's photos with the models the frame loaded (none loaded again)."""
    app = make(**tiny_clip_widgets(tiny_clip))
    app.text_area(key="typed_story").set_value(TYPED).run()
    assert not app.exception and not [w for w in app.warning if "could not be scored" in w.value]
    cards = _cards_of(app)
    mine = cards.pop("**typed** · `typed-space-trip`")
    assert len(cards) == 4 and all(mine.count('class="vst-card"') == c.count('class="vst-card"') == 5 for c in cards.values())
    assert "GROOVIST" in mine and "undefined" not in mine
    assert "matched image" in "".join(m.value for m in app.markdown).split("`typed-space-trip`", 1)[1]  # its evidence


def test_a_typed_story_joins_a_sequence_of_scores_files_with_the_metrics_that_need_no_model(tmp_path: Path) -> None:
    """Beside scores files (no model runs), the typed story is scored with the files' metrics that
    need none, over the sequence's stories, and shown with the sequence's images."""
    from vst_core.cli import main

    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "redundancy", "--out", str(out), "--no-progress"]) == 0
    app = make(source="Scores JSONL (no model needed)", scores_path=str(out), scores_images=str(SAMPLE.parent))
    app.text_area(key="typed_story").set_value(TYPED).run()
    assert not app.exception
    cards = _cards_of(app)
    assert len(cards) == 5 and "NR" in cards["**typed** · `typed-space-trip`"] and len(app.get("image")) == 5
    assert any("Typed here, scored over this sequence's stories and this one" in c.value for c in app.main.caption)


def test_a_typed_story_beside_scores_that_all_need_a_model_says_why_it_is_not_scored(tmp_path: Path) -> None:
    from vst_core.cli import main

    released = tmp_path / "released_C.csv"
    released.write_text("story_id,C_score\nspace-ref,0.5\nspace-generic,0.25\n")
    out = tmp_path / "coherence.jsonl"
    assert main(["import-scores", str(released), "--system", "released", "--out", str(out)]) == 0
    app = make(source="Scores JSONL (no model needed)", scores_path=str(out))
    app.text_area(key="typed_story").set_value(TYPED).run()
    assert not app.exception
    said = [w.value for w in app.warning if w.value.startswith("Your story could not be scored")]
    assert said and "each metric of the scores files needs a model" in said[0] and "RoViST-C" in said[0]
    assert len(_cards_of(app)) == 1  # the released story of the sequence, alone
