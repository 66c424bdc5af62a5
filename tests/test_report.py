"""Reports that travel: the HTML report holds everything it shows (checked in headless Chromium:
no request leaves the file, the story cards and figures render), text from files is escaped, the
LaTeX and Markdown tables, the per-system intervals against a bootstrap loop, figure files."""

from __future__ import annotations

import re
import shutil
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.cli import main
from vst_core.metrics.rovist_nr.record import RedundancyScores
from vst_core.records import StoryScores
from vst_core.viz.report import (
    CSP,
    Section,
    latex_escape,
    latex_table,
    markdown_table,
    markdown_text,
    report_html,
    story_card_html,
    system_summary,
    table_html,
)

SAMPLE = ROOT / "assets" / "sample"


def test_text_from_files_is_escaped_everywhere() -> None:
    hostile = "<script>alert(1)</script>"
    frame = pd.DataFrame({hostile: [hostile]}, index=pd.Index([hostile], name="metric"))
    html = report_html(hostile, [Section(hostile, table_html(frame))], {"id": hostile})
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    record = StoryScores(
        story_id=hostile,
        sequence_id="q",
        system="<b>x</b>",
        sentences=(hostile, "Two."),
        images=("../../etc/passwd", "http://example.invalid/a.jpg"),
        metrics={"redundancy": RedundancyScores(score=0.5, inter=0.5, intra=0.5, variant="paper", n=4)},
    )
    card = story_card_html(record, ["redundancy"], SAMPLE)
    assert "<script>" not in card and "<b>x</b>" not in card and card.count("not readable") == 2


def test_the_report_forbids_every_outside_load() -> None:
    html = report_html("t", [], {})
    nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", html)
    assert nonce and f'content="{CSP.format(nonce=nonce.group(1))}"' in html
    assert "default-src 'none'" in CSP and "connect-src 'none'" in CSP and "script-src 'unsafe-inline'" not in CSP


def test_only_the_reports_own_scripts_carry_its_nonce() -> None:
    """plotly's scripts run (they carry the report's nonce); a script tag that reached a section
    unescaped (a plugin forgetting to escape its evidence) does not, and neither do two reports share a nonce."""
    from vst_core.viz.figures import correlation_bars
    from vst_core.viz.report import figures_html

    frame = pd.DataFrame({"metric": ["NR"], "aspect": ["overall"], "value": [0.4], "low": [0.3], "high": [0.5]})
    try:
        figure = correlation_bars(frame)
    except Exception:  # the helper's columns differ: any plotly figure will do
        import plotly.graph_objects as go

        figure = go.Figure(go.Bar(x=["a"], y=[1]))
    plots = "".join(figures_html([figure]))
    leaked = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    html = report_html("t", [Section("figures", plots), Section("plugin evidence", leaked)], {})
    nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", html).group(1)  # type: ignore[union-attr]
    assert html.count(f'<script nonce="{nonce}"') == plots.count("<script") >= 1
    assert "<script>alert(1)</script>" in html  # present, without the nonce: the browser does not run it
    assert nonce not in report_html("t", [Section("figures", plots)], {})


def test_latex_is_booktabs_and_escaped_and_markdown_is_a_pipe_table() -> None:
    cells = pd.DataFrame(
        {"non_redundancy": ["+0.41 [+0.30, +0.52] * (N 120)"], "a|b": ["x"]}, index=pd.Index(["BLEU_4 & co"], name="metric")
    )
    tex = latex_table(cells, "50% of it", "tab:x")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "BLEU\\_4 \\& co & +0.41 [+0.30, +0.52] * (N 120) & a|b" not in tex  # the header is its own row
    assert "non\\_redundancy" in tex and "BLEU\\_4 \\& co" in tex and "50\\% of it" in tex
    assert latex_escape("†·×") == "$^\\dagger$$\\cdot$$\\times$"
    md = markdown_table(cells, "caption")
    assert md.splitlines()[0] == "| metric | non\\_redundancy | a\\|b |" and md.splitlines()[1] == "|---|---|---|"


def test_system_means_and_intervals_against_a_bootstrap_loop() -> None:
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"system": ["a"] * 40 + ["b"] * 5, "NR": np.r_[rng.random(40), rng.random(5)]})
    cells = system_summary(table, ["NR"], resamples=500, seed=3)
    v = table.loc[table["system"] == "a", "NR"].to_numpy()
    loop = np.random.default_rng(3)
    means = [v[loop.integers(0, 40, 40)].mean() for _ in range(500)]
    low, high = np.percentile(means, [2.5, 97.5])
    assert cells.at["a", "NR"] == f"{v.mean():.3f} [{low:.3f}, {high:.3f}] (N 40)"
    assert cells.at["b", "NR"].endswith("(N 5)†")  # too few for an interval


def _report(tmp_path: Path, *extra: str, judgements: Path = SAMPLE / "human_example.csv") -> Path:
    scores = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE / "stories.jsonl"), "--out", str(scores), "--no-progress"]) == 0
    out = tmp_path / "report.html"
    args = ["report", str(scores), "--out", str(out), "--images", str(SAMPLE), "--resamples", "200"]
    assert main([*args, "--judgements", str(judgements), "--permutations", "200", *extra]) == 0
    return out


def test_a_label_is_a_key_and_a_caption_is_text_whatever_the_names() -> None:
    """An aspect name is read raw inside ``\\label{}``: the label keeps only key characters."""
    import re

    hostile = "x}\\immediate\\write18{touch w}\\input{/etc/hostname}\\label{y"
    tex = latex_table(pd.DataFrame({"a": ["1"]}, index=pd.Index([hostile])), hostile + "\u2028\x1b[31m", f"tab:{hostile}")
    label = [line for line in tex.splitlines() if line.startswith("\\label")]
    assert len(label) == 1 and re.fullmatch(r"\\label\{[A-Za-z0-9:._-]+\}", label[0])
    assert latex_table(pd.DataFrame({"a": ["1"]}), "c", f"tab:{hostile}") != latex_table(
        pd.DataFrame({"a": ["1"]}), "c", "tab:x-y"
    )
    for command in ("\\immediate", "\\write18", "\\input{", "\x1b", "\u2028"):
        assert command not in tex


@pytest.mark.slow  # scores the sample
def test_a_judgements_file_cannot_put_commands_into_the_latex_tables(tmp_path: Path) -> None:
    hostile = "x}\\immediate\\write18{touch w}\\input{/etc/hostname}\\label{y"
    text = (SAMPLE / "human_example.csv").read_text(encoding="utf-8")
    aspect = next(line.split(",")[2] for line in text.splitlines() if line and not line.startswith(("#", "story_id")))
    judgements = tmp_path / "hostile.csv"
    judgements.write_text(text.replace(f",{aspect},", f',"{hostile}",'), encoding="utf-8")
    _report(tmp_path, "--latex", str(tmp_path / "t.tex"), judgements=judgements)
    tex = (tmp_path / "t.tex").read_text(encoding="utf-8")
    assert "write18" in tex  # the aspect is in the tables, as text
    for command in ("\\immediate", "\\write18", "\\input{"):
        assert command not in tex
    assert all(re.fullmatch(r"\\label\{[A-Za-z0-9:._-]+\}", line) for line in tex.splitlines() if line.startswith("\\label"))


@pytest.mark.slow  # scores the sample
def test_the_report_command_writes_tables_cards_and_paper_tables(tmp_path: Path) -> None:
    out = _report(tmp_path, "--latex", str(tmp_path / "t.tex"), "--markdown", str(tmp_path / "t.md"))
    html = out.read_text(encoding="utf-8")
    assert html.count('class="vst-story-card"') == 8 and html.count("data:image/jpeg;base64,") == 8 * 5
    assert len(html.encode()) < 1_000_000 and html.count('<figure class="vst-static"><svg') == 4  # was 5.2 MB with plotly.js
    assert "Metric vs metric" in html and "Signature" in html and "meta-eval sig" in html
    head = html.lower().split("</head>")[0]
    assert "cdn" not in head and "http:" not in head and "https:" not in head  # nothing in the head points outside
    tex = (tmp_path / "t.tex").read_text()
    assert tex.count("\\begin{tabular}") >= 2 and "\\toprule" in tex
    assert "| metric |" in (tmp_path / "t.md").read_text()


@pytest.mark.slow
def test_figure_files_as_svg_and_png(tmp_path: Path) -> None:
    pytest.importorskip("kaleido", reason="figure files need kaleido")
    if not (shutil.which("chromium") or shutil.which("google-chrome")):
        pytest.skip("figure files need Chrome or Chromium (Debian: apt-get install chromium)")
    out = _report(tmp_path, "--figures", str(tmp_path / "fig"))
    assert out.is_file()
    svg = tmp_path / "fig" / "per_system_NR.svg"
    png = tmp_path / "fig" / "per_system_NR.png"
    assert svg.read_text().startswith("<svg") and "NR per system" in svg.read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.browser
def test_the_report_opens_offline_in_chromium_with_no_outside_request(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) not installed")
    if CHROMIUM is None:
        pytest.skip("chromium not installed")
    out = _report(tmp_path, "--interactive")
    requests: list[str] = []
    console: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: console.append(m.text))
        page.goto(out.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
        cards = page.locator(".vst-story-card").count()
        plots = page.locator(".js-plotly-plot").count()
        loaded = page.evaluate("Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length")
        has_plotly = page.evaluate("typeof window.Plotly === 'object'")
        browser.close()
    outside = [u for u in requests if not u.startswith(("file://", "data:", "blob:"))]
    assert outside == [] and requests[0] == out.as_uri()
    assert not [m for m in console if "Content Security Policy" in m or "Refused" in m]
    assert cards == 8 and plots >= 4 and loaded == 40 and has_plotly


@pytest.mark.slow  # AppTest runs of two pages
def test_pages_offer_the_report_and_it_is_the_views(tmp_path: Path) -> None:
    from test_app import make

    from dashboard.choices import Choices, settings_for
    from vst_core.data import read_story_set
    from vst_core.scoring.story import score_story
    from vst_core.viz import RunView
    from vst_core.viz.report import view_report

    for page, key in (("dataset", "dl-report"), ("meta", "dl-agreement-report"), ("inspect", "dl-report")):
        app = make(page, resamples=0)
        assert any(b.key == key for b in app.get("download_button")), page
    stories = read_story_set(SAMPLE / "stories.jsonl")
    settings = settings_for(Choices(coherence=False, grounding=False))
    view = RunView.of_records(stories, [score_story(s, settings) for s in stories], settings, "cpu")
    html = view_report(view, "Dataset", view.table, [0, 1, 2], resamples=100)
    assert html.count('class="vst-story-card"') == 3 and html.count("data:image/jpeg;base64,") == 15
    from vst_core.signature import signature

    assert f"&quot;id&quot;: &quot;{signature(view.settings, view.inputs)['id']}&quot;" in html  # the view's signature


@pytest.mark.slow  # scores the sample
def test_a_report_without_images_says_its_cards_have_no_thumbnails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores, out = tmp_path / "scores.jsonl", tmp_path / "report.html"
    assert main(["score", str(SAMPLE / "stories.jsonl"), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    assert main(["report", str(scores), "--out", str(out), "--resamples", "0"]) == 0
    assert "data:image/jpeg;base64," not in out.read_text(encoding="utf-8")
    assert "no --images: the story cards have no thumbnails" in capsys.readouterr().err


_HOSTILE_MD = [
    "<script>alert(1)</script>",
    "![x](http://example.invalid/a.png)",
    "[link](http://example.invalid)",
    "<iframe src=x>",
    "a\rb\nc\u2028d",
    "| x | y |",
    "# heading",
    "1. item",
    "- item",
    "`code` *em* _em_ ~~s~~",
    "&lt;b&gt;",
    "\\",
    "NR #",
    "a\u202eevil",
]


_HOSTILE_TEX = [
    "x}\\immediate\\write18{touch w}\\input{/etc/hostname}\\label{y",
    "^^5cinput{/etc/passwd}",
    "\\catcode`\\@=0 @input x",
    "50% $x$ & #1 _a_ ~ ^",
    "\\\\ \\hline",
    "}{",
    "\u2028\x00\x1b[31m\u202e",
    "\\verb|x|",
]
_NAMES = st.lists(st.one_of(st.sampled_from(_HOSTILE_MD + _HOSTILE_TEX), st.text(max_size=30)), min_size=3, max_size=3)
#: What the table template itself writes: every other control sequence came from the data.
_TEMPLATE_COMMANDS = {"begin", "end", "centering", "small", "toprule", "midrule", "bottomrule", "caption", "label"}
#: What :func:`latex_escape` writes for a character it escapes.
_ESCAPES = re.compile(
    r"\\text(?:backslash|asciitilde|asciicircum|less|greater|bar|exclamdown|questiondown)\{\}|\\[&%$#_{}]"
    r"|\$(?:\^?\\[A-Za-z]+(?:_[bc])?|\^[123]|-|\\frac\{[13]\}\{[24]\})\$"  # a symbol or a Greek letter in math
    r"|\\(?:ss|ae|AE|oe|OE|o|O|l|L|i|j|ldots)\{\}"  # letters by name
    r"|\\[`'^~\"=.uvHcdbr]\{(?:[A-Za-z]|\\[ij]\{\})?\}"  # a letter with its accent (its inner accents out)
    r"|^\{\}(?=\[)"  # a row that starts with a bracket
)


def _unescaped(text: str) -> str:
    """``text`` with every escape taken out (an accent on an accented letter: from the inside out)."""
    while (left := _ESCAPES.sub("", text)) != text:
        text = left
    return text


def check_latex_table(names: list[str], rows: int) -> None:
    """A LaTeX table of hostile names keeps its rows and columns, and every cell, the caption and
    the label are text: once the escapes are taken out, no character TeX reads as markup is left
    (no command, group, math, comment, parameter, alignment or ``^^`` notation), nor a control or
    direction character; the label is a key."""
    # two columns whatever the names (a name may equal the other column's)
    cells = pd.DataFrame([[names[1], names[2]]] * rows, columns=[names[0] or "c", "b"], index=pd.Index([names[2]] * rows))
    tex = latex_table(cells, names[1], f"tab:{names[0]}")
    lines = tex.splitlines()
    assert lines[:5] == ["\\begin{table}[t]", "\\centering", "\\small", "\\begin{tabular}{lll}", "\\toprule"]
    assert (
        lines[6] == "\\midrule" and lines[-5:-2] == ["\\bottomrule", "\\end{tabular}", lines[-3]] and lines[-1] == "\\end{table}"
    )
    body = [lines[5], *lines[7:-5]]
    assert len(body) == rows + 1  # the header and one line a row: nothing added, nothing lost
    texts = []
    for line in body:
        assert line.endswith(" \\\\")
        texts.extend(re.split(r"(?<!\\)&", line[: -len(" \\\\")]))
        assert len(re.findall(r"(?<!\\)&", line)) == 2  # three columns in every row
    caption, label = lines[-3], lines[-2]
    assert caption.startswith("\\caption{") and caption.endswith("}")
    texts.append(caption[len("\\caption{") : -1])
    assert re.fullmatch(r"\\label\{[A-Za-z0-9:._-]+\}", label)
    for text in texts:
        left = _unescaped(text)
        assert not set(left) & set("\\{}$%#^_~&"), (text, names)
        assert not {unicodedata.category(ch) for ch in left} & {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}, (text, names)
    commands = set(re.findall(r"\\([A-Za-z]+)", _unescaped(tex)))
    assert commands <= _TEMPLATE_COMMANDS, commands


@settings(max_examples=examples(300), deadline=None)
@given(names=_NAMES, rows=st.integers(1, 6))
def test_latex_tables_keep_their_rows_and_hold_text_only(names: list[str], rows: int) -> None:
    check_latex_table(names, rows)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(names=_NAMES, rows=st.integers(1, 6))
def test_latex_tables_keep_their_rows_and_hold_text_only_10000_examples(names: list[str], rows: int) -> None:
    check_latex_table(names, rows)


@settings(max_examples=examples(500), deadline=None)
@given(names=_NAMES, rows=st.integers(1, 6))
def test_markdown_tables_render_to_their_rows_and_text_only(names: list[str], rows: int) -> None:
    check_markdown_table(names, rows)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(names=_NAMES, rows=st.integers(1, 6))
def test_markdown_tables_render_to_their_rows_and_text_only_10000_examples(names: list[str], rows: int) -> None:
    check_markdown_table(names, rows)


def check_markdown_table(names: list[str], rows: int) -> None:
    """Whatever the names and cells: as many table rows as the data has, and no element, image or
    link that the data did not ask to be text (CommonMark with tables, as GitHub renders)."""
    from markdown_it import MarkdownIt

    cells = pd.DataFrame({names[0] or "c": [names[1]] * rows}, index=pd.Index([names[2]] * rows, name="metric"))
    md = markdown_table(cells, names[1])
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert html.count("<tr>") == rows + 1
    for tag in ("<script", "<img", "<a ", "<iframe", "<h1", "<ol", "<ul", "<code", "<em", "<s>", "<br"):
        assert tag not in html, (tag, md)
    assert html.count("<p>") <= 1  # the caption: one paragraph at most (none when it is blank)
    assert "\u202e" not in html  # no text turned around
    heading = MarkdownIt("commonmark").render("### " + markdown_text(names[0]))
    assert heading.count("<h3>") == 1 and "<a " not in heading and "<img" not in heading


def test_an_unknown_correlation_method_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", "scores.jsonl", "--out", "r.html", "--method", "foo"])
    assert exc.value.code == 2 and "invalid choice: 'foo'" in capsys.readouterr().err


_TEX_PAYLOADS = [
    "x}\\immediate\\write18{touch pwned-a}\\input{/etc/hostname}\\label{y",
    "\\immediate\\write18{touch pwned-b}",
    "^^5cimmediate^^5cwrite18{touch pwned-c}",
    "\\input{/etc/hostname}",
    "\\catcode`\\@=0 @immediate@write18{touch pwned-d}",
    "50% $x$ & #1 _a_ ~ ^ {",
    "}\\end{tabular}\\end{table}\\immediate\\write18{touch pwned-e}\\begin{table}\\begin{tabular}{l",
    "<b>a</b> \\\\ \\hline",
    "tab\tand\nnew line\x1b[31m\u202eevil\u2028end",
]


@pytest.mark.slow  # runs pdflatex
def test_hostile_names_compile_with_pdflatex_and_run_or_read_nothing(tmp_path: Path) -> None:
    """The tables of hostile names, captions and labels compile with pdflatex, even with
    ``-shell-escape`` (as minted or svg users compile): exit 0, no command ran, no file was read."""
    import subprocess

    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
    tables = [
        latex_table(pd.DataFrame({name or "c": [name, "0.12"]}, index=pd.Index([name, "b"], name="metric")), name, f"tab:{name}")
        for name in _TEX_PAYLOADS
    ]
    document = (
        "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n\\begin{document}\n"
        + "\n".join(tables)
        + "\n\\end{document}\n"
    )
    (tmp_path / "t.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(
        ["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = (tmp_path / "t.log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    assert (tmp_path / "t.pdf").is_file()
    assert not list(tmp_path.glob("pwned*"))  # no \write18 ran
    assert "/etc/hostname" not in log  # no \input read a file


@pytest.mark.slow  # scores the sample
def test_each_paper_table_names_its_coefficient_interval_and_n(tmp_path: Path) -> None:
    """The LaTeX and Markdown tables say what their numbers are: the agreement table its
    coefficient (Spearman ρ, or --method's), its interval and N; the systems table its interval."""
    tex, md = tmp_path / "t.tex", tmp_path / "t.md"
    _report(tmp_path, "--latex", str(tex), "--markdown", str(md), "--method", "kendall_c")
    captions = [line for line in tex.read_text(encoding="utf-8").splitlines() if line.startswith("\\caption")]
    agreement = next(c for c in captions if c.startswith("\\caption{Agreement with people:"))
    assert (
        "Kendall" in agreement
        and "bootstrap 95\\% interval, image sequences resampled" in agreement
        and "(N stories)" in agreement
    )
    systems = next(c for c in captions if c.startswith("\\caption{Systems:"))
    assert "mean [95\\% bootstrap interval, 200 resamples of image sequences] (N stories)" in systems
    assert "Kendall" in md.read_text(encoding="utf-8")


def test_a_report_card_marks_content_word_repeats_as_the_inspect_page_does() -> None:
    """The report's story cards mark the repeats the Inspect page marks by default: content words,
    not every repeated "the"."""
    import vst_core as vst
    from vst_core.viz.story import story_html

    story = vst.Story.from_sentences(["We went to the park.", "Then the dog saw the park."], story_id="s")
    record = vst.score_stories([story], "redundancy")[0]
    card = story_card_html(record, ["redundancy"])
    content = story_html(record.sentences, record.metrics.get("redundancy"), None, None, content_only=True).count("vst-repeat")
    every = story_html(record.sentences, record.metrics.get("redundancy"), None, None, content_only=False).count("vst-repeat")
    assert 0 < content < every and card.count("vst-repeat") == content


def test_a_one_sequence_report_draws_no_box_of_one_story_and_carries_no_plotly() -> None:
    """A report of one story per system (Inspect's report of a sequence) has no per-system box plots
    (one point is no distribution), so it carries no plotly.js; its table says no interval was asked."""
    import vst_core as vst
    from vst_core.viz.report import build_report

    records = vst.score_stories(vst.read_story_set(SAMPLE / "stories.jsonl"), "redundancy")
    one = [r for r in records if r.sequence_id == records[0].sequence_id]
    table = vst.scores_frame(one)
    html, figures, tables = build_report("Sequence", table, one, one[0].signature, "sig x", resamples=0)
    assert figures == {} and "Plotly" not in html and len(html) < 500_000
    assert tables["systems"].attrs["caption"] == "mean (N stories); no intervals were asked for"
    assert "<h2>Figures</h2>" not in html and "<svg" not in html  # no heading with nothing under it
    headings = re.findall(r"<section><h2>([^<]*)</h2>(.{0,7})", html)
    assert [h for h, after in headings if after.startswith("</sect")] == [] and len(headings) == 3, headings


def test_a_report_draws_its_figures_as_svg_and_embeds_plotly_only_when_asked() -> None:
    """The report's figures are static SVG drawn in the file (kilobytes, no script); plotly's
    interactive figures, with its 4.8 MB of JavaScript, only with ``interactive``."""
    import vst_core as vst
    from vst_core.viz.report import build_report

    records = vst.score_stories(vst.read_story_set(SAMPLE / "stories.jsonl"), "redundancy")
    table = vst.scores_frame(records)
    html, figures, _ = build_report("Sample", table, [], records[0].signature, "sig x", resamples=0)
    assert len(figures) == 3 and html.count('<figure class="vst-static"><svg') == 3 and html.count('class="vst-box"') == 3 * 4
    assert "Plotly" not in html and "<script" not in html and len(html.encode()) < 40_000
    assert "<h2>Figures</h2>" in html and html.count("sig x") >= 4  # every figure carries the settings line
    interactive, _, _ = build_report("Sample", table, [], records[0].signature, "sig x", resamples=0, interactive=True)
    static, plotly, size = (
        interactive.count('<figure class="vst-static">'),
        interactive.count("Plotly"),
        len(interactive.encode()),
    )
    assert static == 0 and plotly > 0 and size > 3_000_000  # counted first: a failing `in` would print 4.8 MB


def test_what_a_metric_draws_between_sentences_comes_from_its_spec_and_a_record_given_the_old_way_still_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RoViST-C's chips come from its spec's ``transitions`` (the story drawing names no metric): the
    weakest pair marked; the record given as ``coherence`` draws the same;
    a metric whose hook fails leaves the story drawn."""
    from dataclasses import replace

    from vst_core.contract import registry
    from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores
    from vst_core.viz.story import annotated_story, between_sentences, story_html

    coherence = CoherenceScores(0.5, (CoherencePair(0, 1, 0.9), CoherencePair(1, 2, 0.1)), 1, "<b>m</b>")
    record = StoryScores("s", "q", "sys", ("One.", "Two.", "Three."), (), {"coherence": coherence})
    chips = between_sentences(record)
    assert sorted(chips) == [0, 1] and "▼ weakest" in chips[1] and "▼ weakest" not in chips[0]
    drawn = annotated_story(record)
    assert drawn == story_html(record.sentences, None, coherence) and drawn.count('class="vst-coh') == 2
    assert drawn.index("Two.") < drawn.index("0.10") < drawn.index("Three.")
    spec = registry().spec("coherence")

    def broken(found: object) -> dict[int, str]:
        raise KeyError("no chips")

    monkeypatch.setitem(registry().specs, "coherence", replace(spec, showing=replace(spec.showing, transitions=broken)))
    assert between_sentences(record) == {} and "Three." in annotated_story(record)


def test_what_a_metric_marks_in_the_text_comes_from_its_spec_escaped_and_a_failing_hook_leaves_the_story_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RoViST-NR's spans and GROOVIST's phrases come from their specs' ``marks`` (the story drawing
    names no metric), a record given the old way draws the same; a metric's marks, legend and
    ``in_text`` are escaped wherever they are drawn; a hook that fails or returns garbage marks nothing."""
    from dataclasses import replace

    from vst_core.contract import LegendEntry, Mark, registry
    from vst_core.metrics.rovist_nr.record import InterRepeat, RedundancyScores
    from vst_core.viz.story import annotated_story, drawn_in_text, legend_html, marks_of, story_html

    nr = RedundancyScores(0.8, 0.2, 0.0, "paper", 4, (), (InterRepeat(1, 0, 0.5, ("dog",), ((4, 7),), ((4, 7),)),), ())
    record = StoryScores("s", "q", "sys", ("The dog ran.", "The dog sat."), (), {"redundancy": nr})
    drawn = annotated_story(record)
    assert drawn == story_html(record.sentences, nr) and drawn.count('class="vst-repeat"') == 1
    assert 'title="repeats sentence 1 (Jaccard 0.50)">dog</mark>' in drawn
    hostile = Mark(
        0, 0, 3, "underline", 'red" onmouseover="x', "<script>alert(1)</script>", 'np" onclick="y', (('p" x="', '1"><b>'),)
    )
    spec = registry().spec("redundancy")
    monkeypatch.setitem(
        registry().specs,
        "redundancy",
        replace(
            spec,
            showing=replace(
                spec.showing,
                marks=lambda r: [hostile, "not a mark"],
                legend=(LegendEntry("<img src=x>", "highlight", 'x;"><script>'),),
                in_text="*bold* <b>",
            ),
        ),
    )
    html = annotated_story(record)
    assert "<script>" not in html and 'onmouseover="' not in html and 'onclick="' not in html and "<b>" not in html
    assert 'data-px="1&quot;&gt;&lt;b&gt;"' in html and marks_of(record) == [hostile]
    assert "<img" not in legend_html() and "<script>" not in legend_html()
    assert "<b>" not in drawn_in_text() and "\\*bold\\*" in drawn_in_text()

    def broken(found: object) -> list[Mark]:
        raise KeyError("no marks")

    monkeypatch.setitem(registry().specs, "redundancy", replace(spec, showing=replace(spec.showing, marks=broken)))
    assert marks_of(record) == [] and "vst-repeat" not in annotated_story(record) and "The dog sat." in annotated_story(record)
    assert "vst-repeat" not in story_html(record.sentences, nr)
    # a colour is a colour or nothing; a mark of the wrong types, a legend that is not one, an endless hook: left out
    overlay = Mark(1, 0, 50, "highlight", "red;position:fixed;top:0;width:100vw;background:url(https://x.example/a.png)", "x")
    wrong = [
        replace(hostile, start="1"),  # type: ignore[arg-type]
        replace(hostile, start=1.5),  # type: ignore[arg-type]
        replace(hostile, end=None),  # type: ignore[arg-type]
        replace(hostile, sentence=0.0),  # type: ignore[arg-type]
        replace(hostile, title=5),  # type: ignore[arg-type]
        replace(hostile, data=(1,)),  # type: ignore[arg-type]
        replace(hostile, data={"phrase": "0"}),  # type: ignore[arg-type]
        replace(hostile, rank="a"),  # type: ignore[arg-type]
        replace(hostile, style="blink"),  # type: ignore[arg-type]
    ]

    def endless(found: object) -> Iterator[Mark]:
        while True:
            yield overlay

    for hook, legend in ((lambda r: [overlay, *wrong], None), (endless, (LegendEntry("a", "highlight", "red"), "b"))):
        monkeypatch.setitem(
            registry().specs, "redundancy", replace(spec, showing=replace(spec.showing, marks=hook, legend=legend))
        )
        html = annotated_story(record)
        assert "position:fixed" not in html and "background:transparent" in html and "The dog sat." in html
        assert "repeats an earlier" not in legend_html() and ">b<" not in legend_html()
    assert len(marks_of(record)) == 100_000  # the endless hook, cut
    # in a page's markdown a label's markdown stays text
    from markdown_it import MarkdownIt

    label = "![i](https://x.example/a.png) [l](https://x.example) **b** <img src=x>"
    monkeypatch.setitem(
        registry().specs,
        "redundancy",
        replace(spec, showing=replace(spec.showing, legend=(LegendEntry(label, "highlight", "red"),))),
    )
    shown = MarkdownIt("commonmark", {"html": True}).render(f"{drawn_in_text()}: hover for details. {legend_html(markdown=True)}")
    assert "<img" not in shown and "<a " not in shown and "<strong>" not in shown and "**b**" in shown
    assert "&lt;img src=x&gt;" in legend_html() and "\\<img" not in legend_html()  # the report's HTML: escaped for HTML


def test_a_story_drawn_the_old_ways_still_draws_its_marks() -> None:
    """story_html's earlier keywords (record=, coherence=, grounding=) and a hand-built record under
    another name still draw."""
    from vst_core.metrics.rovist_nr.record import InterRepeat, RedundancyScores
    from vst_core.viz.story import annotated_story, story_html

    nr = RedundancyScores(0.8, 0.2, 0.0, "paper", 4, (), (InterRepeat(1, 0, 0.5, ("dog",), ((4, 7),), ((4, 7),)),), ())
    sentences = ("The dog ran.", "The dog sat.")
    drawn = story_html(sentences, nr)
    assert drawn.count('class="vst-repeat"') == 1 and story_html(sentences, record=nr) == drawn
    assert story_html(sentences, None, grounding=None, coherence=None, record=nr) == drawn
    assert annotated_story(StoryScores("s", "q", "sys", sentences, (), {"nr": nr})) == drawn
