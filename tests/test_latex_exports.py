"""The LaTeX tables for a paper compile as a paper's template has them: the real exports of the
bundled sample (``vst report --latex``, the Agreement page's two tables for every coefficient, the
Leaderboard's), with pdflatex, in a plain ``article`` with booktabs, with and without
``inputenc``/``fontenc``; every table is ASCII, its symbols LaTeX's own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.viz.report import latex_escape, latex_table

SAMPLE = ROOT / "assets" / "sample"
JUDGEMENTS = SAMPLE / "human_example.csv"

#: The preambles a table must compile under: LaTeX's defaults, and an ACL-style template's.
PREAMBLES = {
    "plain": "\\documentclass{article}\n\\usepackage{booktabs}\n",
    "utf8-T1": "\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n",
}


def compile_tables(tables: str, folder: Path) -> None:
    """``tables`` in each of :data:`PREAMBLES` through pdflatex: each compiles, with no character
    LaTeX could not set (a missing glyph is only a warning in the log)."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
    env = {**os.environ, "TEXMFVAR": str(folder / "texmf-var")}  # fonts made on the way stay in the test's folder
    for name, preamble in PREAMBLES.items():
        (folder / f"{name}.tex").write_text(f"{preamble}\\begin{{document}}\n{tables}\n\\end{{document}}\n", encoding="utf-8")
        done = subprocess.run(
            ["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env=env,
        )
        log = (folder / f"{name}.log").read_text(encoding="latin-1")
        assert done.returncode == 0, (name, log[-3000:])
        assert "Missing character" not in log and "Unicode character" not in log, (name, log[-3000:])
        assert (folder / f"{name}.pdf").is_file()


def scored_sample(folder: Path) -> Path:
    from vst_core.cli import main

    scores = folder / "scores.jsonl"
    assert main(["score", str(SAMPLE / "stories.jsonl"), "--out", str(scores), "--no-progress"]) == 0
    return scores


def page_tables(scores: Path) -> str:
    """The LaTeX the Agreement page offers (the story-level table for every coefficient, the
    metric-vs-metric matrix of every aspect) and the Leaderboard's, from the functions the pages
    call, on the sample with its bundled judgements."""
    import vst_core as vst
    from vst_core.analysis.meta_eval import MetaSettings, read_judgements, run_meta_eval
    from vst_core.analysis.meta_eval.stats import resampled_unit
    from vst_core.analysis.meta_eval.versus import VersusSettings, versus_correlations, versus_matrix
    from vst_core.viz.report import agreement_exports, leaderboard_exports, versus_exports
    from vst_core.viz.tables import correlation_cells

    records, problems = vst.read_scores(scores)
    assert records and not problems
    settings = MetaSettings(resamples=50, baselines=False)
    report = run_meta_eval(records, read_judgements(JUDGEMENTS), settings)
    tex = []
    for method in settings.methods:
        cells = correlation_cells(report.correlations, method)
        unit = resampled_unit(report.correlations)
        tex.append(agreement_exports(cells, method, settings.confidence, unit, report.description)["tex"])
    versus = VersusSettings("spearman", permutations=50)
    table = versus_correlations(report.data, report.metrics, report.aspects, versus)
    for aspect in report.aspects:
        matrix = versus_matrix(table[table["aspect"] == aspect], report.metrics)
        tex.append(versus_exports(matrix, "spearman", aspect, versus.describe(), report.description)["tex"])
    board = vst.compare(records, judgements=JUDGEMENTS, resamples=50, permutations=50)
    tex.append(leaderboard_exports(board)["leaderboard.tex"])
    return "\n".join(tex)


@pytest.mark.slow  # scores the sample, meta-evaluates it and runs pdflatex twice
def test_the_report_commands_latex_of_the_sample_compiles(tmp_path: Path) -> None:
    from vst_core.cli import main

    scores, tex = scored_sample(tmp_path), tmp_path / "tables.tex"
    for method in ("spearman", "kendall_b"):
        args = ["report", str(scores), "--out", str(tmp_path / "r.html"), "--judgements", str(JUDGEMENTS)]
        assert main([*args, "--resamples", "50", "--permutations", "50", "--method", method, "--latex", str(tex)]) == 0
        text = tex.read_text(encoding="utf-8")
        assert text.isascii() and ("$\\rho$" in text if method == "spearman" else "$\\tau_b$" in text)
        captions = [line for line in text.splitlines() if line.startswith("\\caption{")]
        assert len(captions) == 6  # the systems, the agreement, a metric-vs-metric matrix per aspect
        for caption in captions:  # each names the scores' and the meta-evaluation's signatures once
            assert len(re.findall(r"scores sig [0-9a-f]+", caption)) == 1, caption
            assert len(re.findall(r"meta-eval sig [0-9a-f]+", caption)) == 1, caption
        assert "non\\_redundancy" not in text and "Metric vs metric, non-redundancy" in text
        for caption in captions:  # the aspect said once; a caption over cells marked small-N says what it means
            assert not re.search(r"Metric vs metric, ([a-z-]+): \1:", caption), caption
        marked = [c for c in captions if "N \\textless{} 10: no interval" in c]
        assert "dagger" in text and marked, "the sample's small-N mark is explained"
        assert ".. " not in text
        compile_tables(text, tmp_path)


@pytest.mark.slow  # scores the sample, meta-evaluates it and runs pdflatex twice
def test_the_pages_latex_of_the_sample_compiles(tmp_path: Path) -> None:
    tex = page_tables(scored_sample(tmp_path))
    assert tex.isascii()
    for symbol in ("$\\rho$", "$\\tau_b$", "$\\tau_c$", "Pearson r"):
        assert symbol in tex
    assert "non\\_redundancy" not in tex and "non-redundancy" in tex  # the aspect by its words
    compile_tables(tex, tmp_path)


#: Names a file may hold: TeX's specials, commands, Greek, accents, CJK, Cyrillic, emoji, symbols.
NAMES = [
    "a_b & 50% $x$ #1 {y} ~ ^ \\ |",
    "x}\\immediate\\write18{touch pwned}\\input{/etc/hostname}\\label{y",
    "Ωμέγα ρ τ-b ς ϑ",
    "café naïve Ångström Øre łódź Dvořák ţ ą ő ß œ",
    "😀 🇬🇧 中文 Привет",
    "± ≥ ≤ — – … « » “q” § ¶ © £ € ½ ² µ °",
    "ﬁ Ａ ⅓ ℃ ﹛ \u00a0nbsp\u2009thin",
]


@pytest.mark.slow  # runs pdflatex twice
def test_names_with_specials_greek_and_emoji_compile(tmp_path: Path) -> None:
    cells = pd.DataFrame({name: [name, "0.1 ± 0.2"] for name in NAMES}, index=pd.Index(NAMES[:2], name=NAMES[2]))
    tex = latex_table(cells, " ".join(NAMES), "tab:names") + latex_table(cells.T, NAMES[4], f"tab:{NAMES[2]}")
    assert tex.isascii() and "[U+1F600]" in tex  # what has no LaTeX is named by its code point, not dropped
    compile_tables(tex, tmp_path)
    assert not list(tmp_path.glob("pwned*"))


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=40))
def test_every_text_is_escaped_to_ascii(text: str) -> None:
    """Whatever a file holds, its cell is ASCII (so no encoding package decides whether it compiles)
    and what is left once the escapes are out holds no TeX markup."""
    out = latex_escape(text)
    assert out.isascii()
    left = re.sub(r"\\(?:[a-zA-Z]+\{\}|[&%$#_{}])", "", out)  # escaped specials, letters by name
    left = re.sub(r"\$[^$]*\$", "", left)  # the escapes' own math: a symbol or a Greek letter
    left = re.sub(r"\\[`'^~\"=.uvHcdbr]\{", "{", left)  # accents on a letter
    left = re.sub(r"\{[A-Za-z]?\}", "", re.sub(r"\{[A-Za-z]?\}", "", left))
    assert not set(left) & set("\\{}$%#^_~&"), (text, out)


def test_the_symbols_of_the_products_captions_are_latex() -> None:
    assert latex_escape("Spearman ρ") == "Spearman $\\rho$"
    assert latex_escape("Kendall τ-b, Kendall τ-c") == "Kendall $\\tau_b$, Kendall $\\tau_c$"
    assert latex_escape("Δ ± ≥ — †") == "$\\Delta$ $\\pm$ $\\geq$ --- $^\\dagger$"
    assert latex_escape("naïve") == 'na\\"{\\i{}}ve'
