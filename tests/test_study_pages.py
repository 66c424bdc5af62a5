"""The study pages in streamlit's AppTest: a rater's link opens the rater page alone (any other
link, one line), the answers are stored as the study's story indices with the order shown and the
time taken, and the Human study page makes a study from the loaded data (the sample, the Agreement
page's disagreements, a VWP release's scores) and shows its live view; text from a study file is
escaped on both pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import APP, SAMPLE
from streamlit.testing.v1 import AppTest

from dashboard.choices import Choices, settings_for
from dashboard.keys import JUDGEMENTS
from dashboard.study_show import paragraphs
from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
from vst_core.analysis.meta_eval.disagreements import story_disagreements
from vst_core.data import Story, read_story_set
from vst_core.scoring.story import score_story
from vst_core.signature import inputs_of, signature
from vst_core.study import (
    STUDY_SUFFIX,
    AnswerStore,
    Aspect,
    Sample,
    Study,
    StudyError,
    load_study,
    new_study,
    plan_for,
    read_source,
    save_study,
)
from vst_core.viz import scores_table
from vst_core.viz.safe import md

pytestmark = pytest.mark.slow  # AppTest runs of the pages

STUDY_PAGE = "app_pages/study.py"
NOT_VALID = "This link is not valid."


@pytest.fixture(autouse=True)
def studies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's studies folder: a temporary one (never the user's), and the tests' folders allowed as data."""
    folder = tmp_path / "studies"
    monkeypatch.setenv("VST_STUDIES", str(folder))
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))
    return folder


def sample_study(folder: Path, protocol: str = "likert", **options: Any) -> tuple[Study, Path]:
    """A study of the bundled sample saved in ``folder`` with its photos, as ``vst study new`` makes one."""
    source = read_source(SAMPLE)
    study = new_study(
        source.stories, protocol=protocol, raters=3, seed=1, title=f"Pilot {protocol}", source=source.source,
        study_id=f"pilot-{protocol}", **options,
    )  # fmt: skip
    return study, save_study(study, folder / f"pilot-{protocol}{STUDY_SUFFIX}", photos_from=source.source["folder"])


def rater_page(token: str, page: str | None = None) -> AppTest:
    """The app opened from a rater's link (``?rater=<token>``), on ``page`` when given."""
    at = AppTest.from_file(APP, default_timeout=90)
    if page:
        at.switch_page(page)
    at.query_params["rater"] = token
    at.run()
    assert not at.exception, at.exception
    return at


def study_page(**widgets: Any) -> AppTest:
    """The Human study page with widgets preset by key."""
    at = AppTest.from_file(APP, default_timeout=120).switch_page(STUDY_PAGE)
    for key, value in widgets.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> list[str]:
    """Every text the page shows: titles, markdown, captions, notices, labels and options."""
    found = [
        e.value
        for kind in ("title", "subheader", "markdown", "caption", "success", "info", "warning", "error")
        for e in at.get(kind)
    ]
    for widget in (*at.radio, *at.selectbox):
        found += [widget.label, *map(str, widget.options)]
    found += [b.label for b in at.button] + [p.proto.text for p in at.get("progress")]
    return [str(t) for t in found]


def main_kinds(at: AppTest) -> set[str]:
    kinds: set[str] = set()

    def walk(node: Any) -> None:
        for child in getattr(node, "children", {}).values():
            kinds.add(str(child.type))
            walk(child)

    walk(at.main)
    return kinds


# ---------------------------------------------------------------- the rater's link


def test_a_rater_link_opens_the_rater_page_alone(studies: Path) -> None:
    """No sidebar, no data, no footer, no other page: the link of another page opens the rater page too."""
    study, _ = sample_study(studies, "pairwise")
    for page in (None, "app_pages/dataset.py", STUDY_PAGE, "app_pages/inspect.py"):
        at = rater_page(study.raters[0].token, page)
        assert [t.value for t in at.title] == ["Pilot pairwise"], page
        assert not at.sidebar.children and not at.dataframe and not at.get("plotly_chart"), page
        shown = "\n".join(texts(at))
        assert "Human study" not in shown and "Settings: sig" not in shown and "Story set" not in shown
        assert sum(len(i.proto.imgs) for i in at.get("image")) == 2 * 5  # two stories of five photos


@pytest.mark.parametrize(
    "token",
    [
        "",
        "x" * 32,
        "../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "<script>alert(1)</script>",
        "**bold**",
        "a/b/" + "c" * 30,
        "REVOKED",
        "VALID/",
    ],
)
def test_a_wrong_revoked_or_hostile_token_sees_one_plain_line(studies: Path, token: str) -> None:
    study, path = sample_study(studies, "likert")
    if token == "REVOKED":
        from vst_core.study import revoke_rater

        save_study(revoke_rater(study, "r2"), path)
        token = study.raters[1].token
    elif token == "VALID/":
        token = study.raters[0].token + "/"
    at = rater_page(token)
    assert [m.value for m in at.markdown] == [NOT_VALID]
    assert main_kinds(at) == {"markdown"} and not at.sidebar.children and not at.title


def test_a_server_started_for_raters_opens_no_other_page(studies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With VST_RATERS_ONLY=1 a link without a token (a rater who deleted it) finds no researcher's
    page, no rater links and no data: one line; a rater's own link still works."""
    study, _ = sample_study(studies, "pairwise")
    monkeypatch.setenv("VST_RATERS_ONLY", "1")
    for page in (STUDY_PAGE, "app_pages/dataset.py"):
        at = AppTest.from_file(APP, default_timeout=90).switch_page(page)
        at.run()
        assert [m.value for m in at.markdown] == [NOT_VALID] and not at.sidebar.children, page
    assert [t.value for t in rater_page(study.raters[0].token).title] == ["Pilot pairwise"]


def test_a_rater_dealt_no_item_is_told_so(studies: Path) -> None:
    source = read_source(SAMPLE)
    study = new_study(
        source.stories, raters=12, raters_per_item=1, sample=Sample(sequences=1), source=source.source, study_id="many"
    )
    save_study(study, studies / f"many{STUDY_SUFFIX}")
    idle = next(r for r in study.raters if not plan_for(study, r))  # 4 items, 12 raters: 8 have none
    at = rater_page(idle.token)
    assert [i.value for i in at.info] == ["There is nothing for you to rate in this study. Thank you."]
    assert not at.button and not at.get("progress")


def test_the_rater_page_shows_no_score_no_system_and_no_story_id(studies: Path) -> None:
    study, _ = sample_study(studies, "pairwise")
    names = {s.system for i in study.items for s in i.stories} | {s.story_id for i in study.items for s in i.stories}
    for rater in study.raters:
        at = rater_page(rater.token)
        shown = "\n".join(texts(at))
        assert not [n for n in names if n in shown], rater.name
        assert "NR" not in shown and "sig " not in shown and study.signature not in shown


def test_a_likert_answer_is_stored_with_the_order_shown_and_the_time_then_changed(studies: Path) -> None:
    """Saved is said after the store committed; the answer carries the position's order and the
    seconds from the item shown; going back shows the answer given, and a new one is revision 2."""
    study, path = sample_study(studies, "likert")
    rater = study.raters[0]
    plan = plan_for(study, rater)
    at = rater_page(rater.token)
    assert any(t.startswith(f"Item 1 of {len(plan)}") for t in texts(at))
    wanted = {a.key: (n % 5) + 1 for n, a in enumerate(study.aspects)}
    for key, value in wanted.items():
        at.radio(key=f"rate-0-{key}").set_value(value)
    at.button(key="rate-save-0").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Saved your answer to item 1."]
    assert any(t.startswith(f"Item 2 of {len(plan)} · 1 answered") for t in texts(at))
    store = AnswerStore.beside(path)
    (answer,) = store.answers(study)
    assert (answer.rater, answer.item_id, answer.presented, answer.value) == (rater.name, plan[0].item_id, plan[0].order, wanted)
    assert 0 < answer.seconds < 120 and answer.revision == 1
    at.button(key="rate-back").click().run()
    assert at.radio(key=f"rate-0-{study.aspects[0].key}").value == wanted[study.aspects[0].key]  # the answer given
    assert any("You answered this item (revision 1)" in t for t in texts(at))
    at.radio(key=f"rate-0-{study.aspects[0].key}").set_value(5)
    at.button(key="rate-save-0").click().run()
    every = store.answers(study, latest_only=False)
    assert [a.revision for a in every] == [1, 2] and every[-1].value[study.aspects[0].key] == 5
    assert len(store.answers(study)) == 1


def test_an_answer_the_store_refuses_is_not_said_saved(studies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    study, path = sample_study(studies, "pairwise")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise StudyError("the disk is full")

    monkeypatch.setattr(AnswerStore, "record", refuse)
    at = rater_page(study.raters[0].token)
    at.button(key="rate-pick-0-0").click().run()
    assert not at.success and any("Not saved: the disk is full" in e.value for e in at.error)
    assert any(t.startswith("Item 1 of") for t in texts(at))  # still on the same item


def test_a_pairwise_answer_is_the_story_index_not_the_screen_position(studies: Path) -> None:
    """The left story (A) of an item shown swapped is the item's story 1: the answer says 1."""
    study, path = sample_study(studies, "pairwise", ties=False)
    rater = study.raters[0]
    plan = plan_for(study, rater)
    at_position = next(p.position for p in plan if p.order == (1, 0))
    item = study.item(plan[at_position].item_id)
    at = rater_page(rater.token)
    at.selectbox(key="rate-goto-0").set_value(at_position).run()
    assert any(t.startswith(f"Item {at_position + 1} of") for t in texts(at))
    first_story = [m.value for m in at.markdown if m.value in {md(s) for s in item.stories[1].sentences}]
    assert len(first_story) == len(item.stories[1].sentences)  # story A on screen is the item's second story
    assert [b.label for b in at.button if b.key.startswith("rate-pick-")] == ["Story A is better", "Story B is better"]  # no tie
    at.button(key=f"rate-pick-{at_position}-0").click().run()
    (answer,) = AnswerStore.beside(path).answers(study)
    assert answer.value == {"preferred": 1} and answer.presented == (1, 0)


def test_a_best_worst_answer_names_the_stories_by_their_index(studies: Path) -> None:
    study, path = sample_study(studies, "best-worst")
    rater = study.raters[0]
    presented = plan_for(study, rater)[0]
    at = rater_page(rater.token)
    assert [s.value for s in at.subheader] == ["Story A", "Story B", "Story C", "Story D"]
    at.radio(key="rate-0-best").set_value("C")
    at.radio(key="rate-0-worst").set_value("C")
    at.button(key="rate-save-0").click().run()
    assert not at.success and any("Pick one best and one other" in w.value for w in at.warning)
    at.radio(key="rate-0-worst").set_value("A")
    at.button(key="rate-save-0").click().run()
    (answer,) = AnswerStore.beside(path).answers(study)
    assert answer.value == {"best": presented.order[2], "worst": presented.order[0]}


def test_a_rater_sees_and_changes_only_their_own_answers(studies: Path) -> None:
    study, path = sample_study(studies, "likert")
    first, second = study.raters[0], study.raters[1]
    shared = next(p for p in plan_for(study, first) if p.item_id in {q.item_id for q in plan_for(study, second)})
    store = AnswerStore.beside(path)
    store.record(study, first, shared, {a.key: 2 for a in study.aspects}, 3.0)
    at = rater_page(second.token)
    goto = at.selectbox(key="rate-goto-0")
    assert not any("answered" in goto.format_func(k) for k in goto.options if isinstance(k, int))
    assert any(t.endswith("· 0 answered") for t in texts(at))
    mine = rater_page(first.token)
    assert any(t.endswith("· 1 answered") for t in texts(mine))


def _hostile_study(folder: Path) -> tuple[Study, Path]:
    """A study whose every text from a file is markup, and whose photos point outside its folder."""
    photos = ("../../../etc/passwd", "/etc/hostname", "http://example.org/x.jpg")
    stories = [
        Story(
            "h1",
            "seq",
            "sys<b>",
            ("<img src=x onerror=alert(1)>", "[click](javascript:alert(1))", "$\\frac{1}{2}$ **bold**"),
            photos,
        ),
        Story("h2", "seq", "other", ("# Heading", ":red[red] :material/home:", "<script>alert(1)</script>"), photos),
    ]
    aspects = (Aspect("clear", "<b>Clear</b> $x$", "*Is* it [clear](http://evil)?", ("<i>no</i>", "**yes**", "$$y$$")),)
    study = new_study(
        stories, aspects=aspects, raters=1, title="<img src=x> **Study** $\\sum$",
        instructions="# Read\n\n<script>alert(1)</script> [link](http://evil) $x^2$\n\n- a list",
        study_id="hostile", source={"folder": str(folder)},
    )  # fmt: skip
    return study, save_study(study, folder / f"hostile{STUDY_SUFFIX}", photos_from=folder)


def test_study_text_with_html_markdown_and_latex_is_shown_as_its_characters(studies: Path) -> None:
    study, path = _hostile_study(studies)
    aspect = study.aspects[0]
    at = rater_page(study.raters[0].token)
    assert [t.value for t in at.title] == [md(study.title)]
    values = [m.value for m in at.markdown]
    assert paragraphs(study.instructions) in values
    item = study.item(plan_for(study, study.raters[0])[0].item_id)
    assert {md(s) for s in item.stories[0].sentences} <= set(values)
    radio = at.radio(key=f"rate-0-{aspect.key}")
    assert radio.label == f"**{md(aspect.label)}** · {md(aspect.question)}"
    assert list(radio.options) == [f"{n} {md(a)}" for n, a in enumerate(aspect.anchors, 1)]
    joined = "\n".join(texts(at))
    for raw in ("<img", "<script", "](", "<b>", "<i>", ":red["):
        assert raw not in joined.replace("\\<", "").replace("\\]", "").replace(":\u2060red", ""), raw
    boxes = [h.proto.body for h in at.get("html") if "photo not available" in h.proto.body]
    assert len(boxes) == 3  # no photo outside the study's folders is read: three grey boxes
    live = study_page(**{"study-open": path.name})
    assert any(md(study.title) in m.value for m in live.markdown)


def test_a_study_made_without_copies_shows_the_photos_of_the_folder_it_came_from(studies: Path) -> None:
    source = read_source(SAMPLE)
    study = new_study(source.stories, protocol="pairwise", raters=1, source=source.source, study_id="uncopied")
    save_study(study, studies / f"uncopied{STUDY_SUFFIX}")  # no photos_from: vst study new without --copy-photos
    assert not (studies / "uncopied.photos").exists()
    at = rater_page(study.raters[0].token)
    assert sum(len(i.proto.imgs) for i in at.get("image")) == 2 * 5
    assert not [h for h in at.get("html") if "photo not available" in h.proto.body]


# ---------------------------------------------------------------- the researcher's page


def test_a_pairwise_study_is_made_from_the_sample_in_the_studies_folder_and_watched(studies: Path) -> None:
    at = study_page(
        **{
            "study-mode": "New study",
            "study-protocol": "pairwise",
            "study-ties": False,
            "study-names": "ann\nbo\ncy",
            "study-per-item": 2,
            "study-title": "Which <b>story</b>?",
            "study-id": "pairs-1",
        }
    )
    at.button(key="study-create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    path = studies / f"pairs-1{STUDY_SUFFIX}"
    study = load_study(path)
    assert (study.protocol, study.ties, [r.name for r in study.raters], study.raters_per_item) == (
        "pairwise",
        False,
        ["ann", "bo", "cy"],
        2,
    )
    assert len(study.items) == 12 and (studies / "pairs-1.photos" / "images").is_dir()  # 2 sequences x 6 pairs of 4 systems
    assert at.radio(key="study-mode").value == "Live view"
    links = next(d.value for d in at.dataframe if "link" in d.value)
    assert [str(v).rsplit("?rater=", 1)[1] for v in links["link"]] == [r.token for r in study.raters]
    store = AnswerStore.beside(path)
    for rater in study.raters[:2]:
        for presented in plan_for(study, rater):
            store.record(study, rater, presented, {"preferred": presented.order[0]}, 4.0)  # always the left story
    at.run()
    per_rater = next(d.value for d in at.dataframe if "gold_accuracy" in d.value)
    assert dict(zip(per_rater["rater"], per_rater["answered"], strict=True)) == {"ann": 8, "bo": 8, "cy": 0}
    bias = next(d.value for d in at.dataframe if "chance" in d.value)
    assert bias["share"].tolist() == [1.0] and bias["n"].tolist() == [16]
    agreement = next(d.value for d in at.dataframe if "fleiss_kappa" in d.value)
    assert agreement["aspect"].tolist() == ["preferred"]
    correlations = next(d.value for d in at.dataframe if "coefficient" in d.value)
    assert "NR" in set(correlations["metric"]) and (correlations["N"] > 0).all()
    captions = [c.value for c in at.caption]
    assert sum(study.signature in c for c in captions) >= 5  # raters, items, agreement, position bias, correlations
    scores_signature = study.source["signature_ids"]
    assert scores_signature and any(study.signature in c and f"scores {scores_signature}" in c for c in captions)
    assert {"dl-study-judgements", "dl-study-exports", "dl-study-links"} <= {b.key for b in at.get("download_button")}


def test_the_links_start_only_with_an_http_address(studies: Path) -> None:
    study, path = sample_study(studies, "pairwise")
    at = study_page(**{"study-open": path.name, "study-base": "javascript:alert(1)//"})
    assert any("is not an http(s) address" in w.value for w in at.warning)
    links = next(d.value for d in at.dataframe if "link" in d.value)["link"].tolist()
    assert all(
        not link.startswith("javascript") and link.endswith(f"?rater={r.token}")
        for link, r in zip(links, study.raters, strict=True)
    )
    at.text_input(key="study-base").set_value("https://lab.example.org/vst").run()
    assert next(d.value for d in at.dataframe if "link" in d.value)["link"].tolist() == [
        f"https://lab.example.org/vst/?rater={r.token}" for r in study.raters
    ]


def test_a_likert_study_takes_the_edited_aspects_and_a_revoked_link_stops_working(studies: Path) -> None:
    edits = {
        "edited_rows": {0: {"label": "Focus <b>!</b>", "anchors": "not at all | a little | very"}},
        "added_rows": [],
        "deleted_rows": [1, 2, 3, 4, 5],
    }
    gold = json.dumps([{"stories": [["reference", "space-ref"]], "expected": {"focused": 3}}])
    at = study_page(**{"study-mode": "New study", "study-aspects": edits, "study-gold": gold, "study-id": "likert-1"})
    at.button(key="study-create").click().run()
    assert not at.error, [e.value for e in at.error]
    study = load_study(studies / f"likert-1{STUDY_SUFFIX}")
    assert study.aspects == (Aspect("focused", "Focus <b>!</b>", "This story is focused.", ("not at all", "a little", "very")),)
    assert [i.item_id for i in study.gold_items] == ["gold-01"]
    at.selectbox(key="study-revoke-who").set_value("r2")
    at.button(key="study-revoke").click().run()
    assert load_study(studies / f"likert-1{STUDY_SUFFIX}").raters[1].revoked
    assert [m.value for m in rater_page(study.raters[1].token).markdown] == [NOT_VALID]
    assert rater_page(study.raters[0].token).title[0].value == md(study.title)


def test_a_likert_live_view_shows_spearman_per_metric_and_aspect_first(studies: Path) -> None:
    """Every coefficient of every metric and aspect is a long table (72 rows for 3 metrics): the
    live view shows Spearman's rho as a grid of metric by aspect with its N above it."""
    at = study_page(**{"study-mode": "New study", "study-id": "likert-grid", "study-per-item": 2})
    at.button(key="study-create").click().run()
    assert not at.error, [e.value for e in at.error]
    path = studies / f"likert-grid{STUDY_SUFFIX}"
    study = load_study(path)
    store = AnswerStore.beside(path)
    for rater in study.raters:
        for n, presented in enumerate(plan_for(study, rater)):
            store.record(study, rater, presented, {a.key: 1 + (n + k) % 5 for k, a in enumerate(study.aspects)}, 3.0)
    at.run()
    correlations = next(d.value for d in at.dataframe if "coefficient" in d.value)
    grid = next(d.value for d in at.dataframe if "metric" in d.value and "coefficient" not in d.value)
    assert list(grid.columns) == ["metric", *(a.key for a in study.aspects)]
    spearman = correlations[correlations["method"] == "spearman"]
    for row in spearman.itertuples():
        shown = grid.loc[grid["metric"] == row.metric, row.aspect].iloc[0]
        assert shown.endswith(f"(N {int(row.N)})") and (
            shown.startswith("—") or abs(float(shown.split()[0]) - row.coefficient) < 6e-4
        )


def test_a_study_of_the_disagreements_the_agreement_page_found(studies: Path) -> None:
    data = (SAMPLE.parent / "human_example.csv").read_bytes()
    widgets = {"study-mode": "New study", "study-sample": "Disagreements found on the Agreement page", "study-id": "dis-1"}
    at = study_page(**widgets, **{JUDGEMENTS: data})
    metric, aspect = at.selectbox(key="study-dis-metric").value, at.selectbox(key="study-dis-aspect").value
    at.number_input(key="study-dis-n").set_value(3)
    at.button(key="study-create").click().run()
    assert not at.error, [e.value for e in at.error]
    study = load_study(studies / f"dis-1{STUDY_SUFFIX}")
    settings = settings_for(Choices(coherence=False, grounding=False))
    stories = read_story_set(SAMPLE)
    records = [score_story(s, settings, signature(settings, inputs_of(stories))) for s in stories]
    report = run_meta_eval(
        scores_table(records, settings.metrics),
        read_judgements(data),
        MetaSettings(resamples=0, baselines=False),
        signature_ids=(),
    )
    expected = story_disagreements(report.data, str(metric), str(aspect)).head(3)
    assert [(s.system, s.story_id) for i in study.items for s in i.stories] == list(
        zip(expected["system"], expected["story_id"], strict=True)
    )


def test_a_study_of_a_vwp_release_shows_each_shot_with_its_sentences(studies: Path, tmp_path: Path) -> None:
    """A VWP-layout release and a model's stories in its groups, scored and loaded as scores files: a
    pairwise study of them shows every shot of a scene with its group of sentences under it."""
    from vwp_data import write_vwp_set

    from vst_core.cli import main

    data = tmp_path / "vwp"
    people, model = write_vwp_set(data)
    outs = [data / "people_scores.jsonl", data / "model_scores.jsonl"]
    for source, out in zip((people, model), outs, strict=True):
        assert main(["score", str(source), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    loaded = {"source": "Scores JSONL (no model needed)", "scores_path": ";".join(map(str, outs)), "scores_images": str(data)}
    at = study_page(**loaded, **{"study-mode": "New study", "study-protocol": "pairwise", "study-id": "vwp-1"})
    at.button(key="study-create").click().run()
    assert not at.error, [e.value for e in at.error]
    study = load_study(studies / f"vwp-1{STUDY_SUFFIX}")
    assert len(study.items) == 2 and all(len(i.stories[0].photos) in (10, 6) for i in study.items)
    rater = study.raters[0]
    plan = plan_for(study, rater)
    short = next(
        p
        for p in plan
        if any(t == "" for t in study.item(p.item_id).stories[0].photo_texts() + study.item(p.item_id).stories[1].photo_texts())
    )
    page = rater_page(rater.token)
    if short.position:
        page.selectbox(key="rate-goto-0").set_value(short.position).run()
    item = study.item(short.item_id)
    shown = [item.stories[k] for k in short.order]
    rows = photo_columns(page)
    assert [c for row in rows for c in row] == [(True, md(t) if t else None) for s in shown for t in s.photo_texts()]
    assert {len(row) for row in rows} <= {5, 6}  # ten shots in two rows of five, six in one: each large enough to judge
    assert any(t == "" for s in shown for t in s.photo_texts())  # a shot without its group: no text under it, the rest aligned
    assert not [h for h in page.get("html") if "photo not available" in h.proto.body]


def photo_columns(at: AppTest) -> list[list[tuple[bool, str | None]]]:
    """Each row of photos on the page: per column, whether it shows a photo and the text under it."""
    rows: list[list[tuple[bool, str | None]]] = []

    def walk(node: Any) -> None:
        for child in getattr(node, "children", {}).values():
            columns = [c for c in getattr(child, "children", {}).values() if c.type == "column"]
            if columns and all(any(e.type == "image" for e in c.children.values()) for c in columns[:1]):
                row = []
                for column in columns:
                    inside = list(column.children.values())
                    text = next((e.value for e in inside if e.type == "markdown"), None)
                    row.append((any(e.type == "image" for e in inside), text))
                rows.append(row)
            else:
                walk(child)

    walk(at.main)
    return rows
