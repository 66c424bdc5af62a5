"""Nothing from the data is rendered as markup, and no server folder reaches a page: the helpers of
vst_core.viz.safe against a CommonMark parser, then every page (AppTest, through the app's frame)
on files whose systems, story ids, sequence ids and aspects are hostile markdown and HTML, and the
notices, problems and refusals that used to show absolute paths. The helper properties run in the
fast tier; the page tests (AppTest, about 1 s a page) are marked slow. VST_HYPOTHESIS_EXAMPLES
sets the budget."""

from __future__ import annotations

import csv
import html
import io
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import APP, PAGES, ROOT
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from vst_core.viz.report import aspect_label
from vst_core.viz.safe import JOINER, UPLOAD_PREFIX, code, md, one_line, plot_text, redact

EXAMPLES = int(os.environ.get("VST_HYPOTHESIS_EXAMPLES", "150"))
#: Examples of the page test: each runs the six pages (about 2 s).
PAGE_EXAMPLES = max(10, EXAMPLES // 15)

OUTSIDE = "http://x.test/p.png"
HOSTILE_PIECES = [
    f"![t]({OUTSIDE})",
    f"<img src={OUTSIDE}>",
    "`code`",
    "$x$",
    f'<a href="{OUTSIDE}">a</a>',
    f"[l]: {OUTSIDE}",
    ":rocket: :material/home: :red[r]",
    "www.x.test",
    "a@x.test",
    "**b** _i_ ~~s~~ | c |",
    "\\",
    "- li",
    "# h",
    "1. n",
    "> q",
    "&lt;img&gt;",
    "a -> b",
]
PIECE = st.sampled_from(HOSTILE_PIECES)
METACHARACTERS = st.text(alphabet="*_[]()!<>#`$|~&\\:@/.-+={}^ ab1", min_size=1, max_size=10)
HOSTILE = st.lists(st.one_of(PIECE, METACHARACTERS), min_size=1, max_size=3).map(lambda parts: " ".join(parts).strip())


# ------------------------------------------------------------------ the helpers, against a parser


def _commonmark() -> Any:
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py not installed")
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=30) | st.lists(
    st.one_of(PIECE, METACHARACTERS, st.sampled_from([" ", "\n", "\t", "\r\n", "  "])), min_size=1, max_size=5
).map("".join)


#: Where the pages put a text: (markdown around it, the HTML around the text it must render to).
CONTEXTS = [
    ("{}", "<p>{}</p>\n"),
    ("x {} y", "<p>x {} y</p>\n"),
    ("- {}", "<ul>\n<li>{}</li>\n</ul>\n"),
    ("> {}", "<blockquote>\n<p>{}</p>\n</blockquote>\n"),
    ("**{}** · `id`", "<p><strong>{}</strong> · <code>id</code></p>\n"),
]


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(TEXT)
def test_md_shows_the_text_and_nothing_else(text: str) -> None:
    parser = _commonmark()
    for markdown, rendering in CONTEXTS:
        rendered = parser.render(markdown.format(md(text)))
        before, after = rendering.split("{}")
        assert rendered.startswith(before) and rendered.endswith(after), (text, md(text), rendered)
        inner = rendered[len(before) : len(rendered) - len(after)]
        assert "<" not in inner, (text, md(text), rendered)  # no element of any kind inside
        assert html.unescape(inner).replace(JOINER, "") == one_line(text), (text, md(text), rendered)


def displayed(body: str, spans: bool = True) -> str:
    """A markdown body as shown: escapes and character references resolved, code spans as their
    content (``spans=False``: as a NUL, for what Streamlit's steps after parsing see, as they leave
    code alone)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body) and body[i + 1] in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
            out.append(body[i + 1])
            i += 2
        elif c == "`":
            fence = re.match(r"`+", body[i:]).group(0)  # type: ignore[union-attr]
            end = re.compile(rf"(?<!`){fence}(?!`)").search(body, i + len(fence))
            if end is None:
                out.append(fence)
                i += len(fence)
                continue
            content = body[i + len(fence) : end.start()]
            if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
                content = content[1:-1]
            out.append(content if spans else "\x00")
            i = end.end()
        elif reference := re.match(r"&#(\d+);", body[i:]):  # one the helpers wrote (a text's & is escaped)
            out.append(chr(int(reference.group(1))))
            i += len(reference.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def bare(body: str) -> str:
    """A markdown body outside its code spans, each escaped character a NUL: where markup could form."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append("\x00")
            i += 2
        elif body[i] == "`":
            fence = re.match(r"`+", body[i:]).group(0)  # type: ignore[union-attr]
            end = re.compile(rf"(?<!`){fence}(?!`)").search(body, i + len(fence))
            i = end.end() if end is not None else i + len(fence)
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


#: What Streamlit makes into an element after parsing (escapes no longer count there): bare web and
#: mail addresses, emoji and icon shortcodes, directives, arrows.
STREAMLIT_TEXT_MARKUP = re.compile(
    r"(?i)https?://|www\.|[\w.+-]@[\w-]|:[\w+-]+:|:material/|:[a-z][\w-]*\[|->|<-|--|[<>~]="
    r"|:(?:red|orange|yellow|green|blue|violet|gray|grey|rainbow|primary|small|shimmer|help|color)\b"
)


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(TEXT)
def test_md_leaves_nothing_streamlit_would_make_markup_of(text: str) -> None:
    body = md(text)
    assert not STREAMLIT_TEXT_MARKUP.search(displayed(body)), (text, body)
    assert "$" not in bare(body) and "](" not in bare(body) and "<" not in bare(body)
    assert displayed(body).replace(JOINER, "") == one_line(text)


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(TEXT)
def test_code_spans_hold_any_text(text: str) -> None:
    parser = _commonmark()
    want = one_line(text).replace(":material/", f":{JOINER}material/")
    for doc in (code(text), f"x {code(text)} y"):
        rendered = parser.render(doc)
        if not want:
            continue
        match = re.fullmatch(r"<p>(x )?<code>(.*)</code>( y)?</p>\n", rendered, re.S)
        assert match, (text, doc, rendered)
        assert html.unescape(match.group(2)) == want


def test_plot_text_and_html_text_escape_tags() -> None:
    from vst_core.viz.safe import html_text

    assert plot_text(f'<a href="{OUTSIDE}">x</a>') == f'&lt;a href="{OUTSIDE}"&gt;x&lt;/a&gt;'
    assert html_text('a\n\n<img src="x">') == "a&#10;&#10;&lt;img src=&quot;x&quot;&gt;"


def test_figures_escape_the_data_they_label() -> None:
    import pandas as pd

    from vst_core.viz import comparison_scatter, differences_figure, distributions_figure, metric_scatter

    bad = f'<a href="{OUTSIDE}">x</a><img src={OUTSIDE}>'
    data = pd.DataFrame({"NR": [0.1, 0.5, 0.9], "overall": [1.0, 2.0, 4.0], "system": [bad, bad, "b"]}, index=[bad, "s2", "s3"])
    figures = [
        metric_scatter(data, "NR", "overall", bad),
        distributions_figure({bad: [0.1, 0.2]}, "R", bad),
        comparison_scatter([0.1], [0.2], [bad], "NR", bad),
        differences_figure([0.1, -0.2], "NR", bad, "b", bad, [bad, bad]),
    ]
    for figure in figures:
        assert not _tags(figure.to_plotly_json()), figure.to_plotly_json()


def _tags(value: Any) -> list[str]:
    """Every string of a figure's spec with a link or an image tag."""
    if isinstance(value, str):
        return [value] if re.search(r"(?i)<(a|img)\b", value) else []
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tags(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tags(v)]
    if hasattr(value, "tolist"):
        return _tags(value.tolist())
    return []


def test_redact_names_each_server_folder_neutrally(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = Path.home()
    upload = Path(tempfile.gettempdir()) / f"{UPLOAD_PREFIX}123-abc" / "0123456789abcdef" / "images" / "a.png"
    data = tmp_path / "data"
    message = (
        f"weights not in the local cache ({home}/.cache/huggingface/hub); image {upload} not found; "
        f"rovist-c:{data}/runs/c.ckpt refused; '{home}/secret/notes.txt' and ~/private/x.json; "
        f"see http://x.test/a/b, N/A, θ / −P, ViT-B-32/openai"
    )
    with caplog.at_level(logging.INFO, logger="vst_core.viz.safe"):
        shown = redact(message, [data])
        assert redact(message, [data]) == shown
    assert str(home) not in shown and tempfile.gettempdir() not in shown and "~/" not in shown and str(tmp_path) not in shown
    assert "(<model cache>)" in shown and "image <upload>/images/a.png not found" in shown
    assert "rovist-c:<data folder>/runs/c.ckpt refused" in shown and "'…/notes.txt'" in shown and "…/x.json" in shown
    assert "http://x.test/a/b, N/A, θ / −P, ViT-B-32/openai" in shown  # addresses and slashes in prose stay
    logged = [r.getMessage() for r in caplog.records if r.name == "vst_core.viz.safe"]
    assert len(logged) == 1 and message in logged[0]  # the full text, once, for whoever runs the dashboard


def test_upload_prefix_is_the_sessions() -> None:
    from dashboard.session import PREFIX

    assert PREFIX == UPLOAD_PREFIX


# ------------------------------------------------------------------ every page, through the frame

#: Element types whose text is not markdown (st.code, st.html, st.json, tables, st.text), or is ours alone.
NOT_MARKDOWN = {"Code", "Html", "Json", "Dataframe", "Table", "Text", "Exception", "Divider"}


def _nodes(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


def markdown_texts(app: AppTest) -> list[tuple[str, bool]]:
    """Every text the page renders as markdown, with whether HTML is allowed in it: bodies of
    markdown, captions, alerts and headings, labels and help texts, radio options, tab and expander
    labels, image captions, page links (selectbox and multiselect options are plain text)."""
    found: list[tuple[str, bool]] = []
    for node in _nodes(app._tree):
        proto = getattr(node, "proto", None)
        kind = type(node).__name__
        if proto is None or kind in NOT_MARKDOWN or not hasattr(proto, "DESCRIPTOR"):
            continue
        fields = proto.DESCRIPTOR.fields_by_name
        allow = bool(getattr(proto, "allow_html", False))
        for name in ("body", "label", "help", "title"):
            if name in fields and isinstance(getattr(proto, name), str) and getattr(proto, name):
                found.append((getattr(proto, name), allow and name == "body"))
        if kind == "Radio":
            found.extend((str(option), False) for option in proto.options)
        if "imgs" in fields:
            found.extend((img.caption, False) for img in proto.imgs if img.caption)
    return found


def figure_strings(app: AppTest) -> list[str]:
    return [t for chart in app.get("plotly_chart") for t in _tags(json.loads(chart.proto.spec))]


def assert_inert(app: AppTest) -> str:
    """No markup from the data on the page: outside code spans and escapes no link, image, math or
    raw HTML, nothing Streamlit turns into an element after parsing, no ``<img``/``<a`` in HTML
    bodies or figures; no exception. The page's text as shown (for the literal checks)."""
    assert not app.exception, [e.value for e in app.exception]
    shown: list[str] = []
    for body, allow_html in markdown_texts(app):
        if allow_html:  # the story and its cards: escaped HTML in one HTML block
            assert not re.search(r"(?i)<(img|a)\b", body) and "\n\n" not in body, body
            continue
        outside = bare(body)
        for mark in ("](", "![", "<img", "<a ", "$"):
            assert mark not in outside, (mark, body)
        assert not STREAMLIT_TEXT_MARKUP.search(displayed(body, spans=False)), body
        shown.append(displayed(body).replace(JOINER, ""))
    assert not figure_strings(app), figure_strings(app)
    return "\n".join(shown)


def _long_csv(rows: list[dict[str, Any]], fields: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def hostile_data(folder: Path, systems: tuple[str, str], story: str, sequence: str, aspect: str) -> tuple[Path, bytes]:
    """A scores file (imported G, C and R of both systems' stories of three sequences, each id
    shared by the two systems as in released sets) and a long judgements CSV of those stories
    (two raters, the aspect given and 'overall'), all named by the hostile strings."""
    from vst_core.cli import main

    rows, ratings = [], []
    for k in range(3):
        sid, seq = f"{story}{k}", f"{sequence}{k}"
        for j, system in enumerate(systems):
            for metric, value in (("G", 0.2 * k + 0.3 * j), ("C", 0.5 + 0.1 * k - 0.2 * j), ("R", 0.9 - 0.1 * k * j)):
                rows.append({"story_id": sid, "metric": metric, "value": value, "system": system, "sequence_id": seq})
            for rater in ("r1", "r2"):
                for name in (aspect, "overall"):
                    ratings.append({"story_id": sid, "system": system, "rater": rater, "aspect": name, "value": 1 + k + j})
    source = folder / "long.csv"
    source.write_bytes(_long_csv(rows, ["story_id", "metric", "value", "system", "sequence_id"]))
    scores = folder / "scores.jsonl"
    assert main(["import-scores", str(source), "--long", "--out", str(scores)]) == 0
    return scores, _long_csv(ratings, ["story_id", "system", "rater", "aspect", "value"])


@pytest.fixture(autouse=True)
def allow_test_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' temporary folders are data folders the operator allowed."""
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))


def _visit(app: AppTest, page: str) -> AppTest:
    app.switch_page(PAGES[page]).run()
    return app


NAMES = st.lists(HOSTILE.filter(bool), min_size=5, max_size=5, unique_by=lambda s: s.lower()).filter(
    lambda names: not any(a != b and a in b for a in names for b in names)  # none inside another
)


@pytest.mark.slow  # seven pages through AppTest for each example (about 1 s each)
@settings(
    max_examples=PAGE_EXAMPLES,
    deadline=None,
    phases=[
        Phase.explicit,
        Phase.reuse,
        Phase.generate,
    ],  # a failing example is shown as found: shrinking six pages takes minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(NAMES)
@example(["alpha sys", "beta sys", "story x", "seq y", "non_redundancy"])  # an aspect named in words on Inspect
def test_hostile_names_render_as_text_on_every_page(tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> None:
    """Hostile systems, story ids, sequence ids and aspect names, from a scores file on the server
    and a judgements upload: every page shows them as text (where it shows them), with no markup."""
    started = time.perf_counter()
    system_a, system_b, story, sequence, aspect = names
    scores, judgements = hostile_data(tmp_path_factory.mktemp("hostile"), (system_a, system_b), story, sequence, aspect)
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["meta"])
    widgets = {
        "source": "Scores JSONL (no model needed)",
        "scores_path": str(scores),
        "judgements_source": "Upload a judgements CSV",
        "last_judgements": judgements,
        "resamples": 0,
        "baselines": False,
        "dhm_human": [system_a],
        "dhm_resamples": 0,
    }
    for key, value in widgets.items():
        app.session_state[key] = value
    app.run()
    assert_inert(app)
    inspect = assert_inert(_visit(app, "inspect"))
    for name in (system_a, system_b, f"{story}0"):  # the cards: bold system, id in code
        assert name in inspect, (name, inspect)
    # the aspect in words (underscores as spaces), as every export names it
    assert any(aspect_label(aspect) in line and line.startswith("**People**") for line in inspect.splitlines()), inspect
    assert_inert(_visit(app, "dataset"))
    systems = assert_inert(_visit(app, "systems"))
    assert system_a in systems and system_b in systems
    assert_inert(_visit(app, "leaderboard"))  # names only in its tables, the people's aspect a column name
    human = assert_inert(_visit(app, "human"))
    assert system_b in human and f"{story}0" in human  # the links to the stories that differ most
    _visit(app, "compare").file_uploader(key="compare_upload").set_value(
        ("theirs.jsonl", scores.read_bytes(), "application/json")
    ).run()
    compare = assert_inert(app)
    assert f"{story}0" in compare
    print(f"  [markup] seven pages in {time.perf_counter() - started:.1f} s")


@pytest.mark.slow  # AppTest of the inspect page, uploaded and pasted
@pytest.mark.parametrize("name", [f"![t]({OUTSIDE})", f"<img src={OUTSIDE}>", "`x` $y$ :rocket:"])
def test_uploaded_and_pasted_stories_render_as_text(name: str) -> None:
    """A story file uploaded and stories pasted with hostile systems, ids, sequence ids and text:
    Inspect shows them as text."""
    lines = [
        json.dumps(
            {"story_id": f"{name}{k}", "system": f"{name} {k}", "sequence_id": name, "sentences": [name, f"We saw {name}."]}
        )
        for k in range(2)
    ]
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["inspect"])
    for key, value in {"source": "Upload a story file", "coherence": False, "grounding": False}.items():
        app.session_state[key] = value
    app.run()
    app.file_uploader(key="upload").set_value([("s.jsonl", ("\n".join(lines) + "\n").encode(), "application/json")]).run()
    shown = assert_inert(app)
    assert f"{name} 0" in shown and f"{name}1" in shown
    assert_inert(_visit(app, "dataset"))

    from io import BytesIO

    from PIL import Image

    png = BytesIO()
    Image.new("RGB", (16, 12), "red").save(png, format="PNG")
    pasted = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["inspect"])
    for key, value in {"source": "Upload images + stories", "coherence": False, "grounding": False}.items():
        pasted.session_state[key] = value
    pasted.session_state["upload_stories"] = f"{name.replace(':', ';')}: {name} | {name}"
    pasted.run()
    pasted.file_uploader(key="upload_images").set_value([(f"{name[:20]}.png", png.getvalue(), "image/png")]).run()
    assert_inert(pasted)


# ------------------------------------------------------------------ no server folder on a page


def _absolute_paths(app: AppTest, roots: list[Path]) -> list[str]:
    texts = [body for body, _ in markdown_texts(app)] + [c.value for c in app.get("code")]
    return [t for t in texts for root in roots if str(root) in t or str(root.resolve()) in t]


@pytest.mark.slow  # AppTest of two pages
def test_notices_problems_and_refusals_show_no_server_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard import loading
    from vst_core.models.hub import ModelLoadError

    home, temp, base = Path.home(), Path(tempfile.gettempdir()), tmp_path_factory.getbasetemp()
    private = [home, temp, base, ROOT]

    real = loading.metric_models

    def missing(name: str, settings: Any, given: Any = None) -> Any:
        if name != "coherence":
            return real(name, settings, given)
        spec = settings.option("coherence_model")
        raise ModelLoadError(f"weights {spec!r} are not in the local cache ({home}/.cache/huggingface/hub/models--x)")

    monkeypatch.setattr(loading, "metric_models", missing)
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["inspect"])
    app.run()
    assert not app.exception
    said = " ".join(displayed(body) for body, _ in markdown_texts(app))
    assert "Coherence is off" in said and "the local cache on the server" in said  # the notice names the cache, not its folder
    assert not _absolute_paths(app, private), _absolute_paths(app, private)

    # a story file uploaded without its images: each image problem names the upload, not its folder
    upload = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["inspect"])
    for key, value in {"source": "Upload a story file", "coherence": False, "grounding": False}.items():
        upload.session_state[key] = value
    upload.run()
    story = {"story_id": "s", "sentences": ["A.", "B."], "images": ["pics/a.png", "pics/b.png"]}
    upload.file_uploader(key="upload").set_value([("s.jsonl", (json.dumps(story) + "\n").encode(), "x")]).run()
    assert not upload.exception
    assert not _absolute_paths(upload, private), _absolute_paths(upload, private)

    # scores whose images are elsewhere, a refused scores path and refused model fields
    out = tmp_path_factory.mktemp("moved") / "scores.jsonl"
    from vst_core.cli import main

    assert main(["score", str(ROOT / "assets/sample/stories.jsonl"), "--out", str(out), "--no-progress"]) == 0
    for widgets in (
        {"source": "Scores JSONL (no model needed)", "scores_path": str(out)},
        {"source": "Scores JSONL (no model needed)", "scores_path": str(home / "elsewhere" / "s.jsonl")},
        {"coherence_model": f"rovist-c:{home}/private/c.ckpt", "regions": f"{home}/r.csv", "clip_config": "/etc/x.json"},
    ):
        page = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["dataset"])
        for key, value in widgets.items():
            page.session_state[key] = value
        page.run()
        assert not page.exception
        assert not _absolute_paths(page, private), (widgets, _absolute_paths(page, private))
        assert "/etc/" not in " ".join(body for body, _ in markdown_texts(page))


def test_a_missing_weights_notice_names_the_cache_and_shows_the_command_as_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard import frame
    from vst_core.models.hub import hf_cache_dir, missing_weights_message

    monkeypatch.setattr(frame.session, "roots", lambda: ())
    text = missing_weights_message("next-sentence model", "bert-base-uncased", " with --coherence-model PATH")
    assert str(hf_cache_dir()) in text and text.count("`vst fetch-models`") == 1 and "python -m" not in text
    page = frame.with_code(text)
    assert "`vst fetch-models`" in page and "Hugging Face hub cache on the server" in page and str(hf_cache_dir()) not in page
