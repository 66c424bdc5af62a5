"""Every ``vst`` command line the README and the pages of ``docs/`` print runs as printed, on the
bundled sample, in a folder of its own: its result tables on stdout, its progress and notes on
stderr, its exit code 0.

A command line is a line of a fenced code block that starts with ``vst`` (a ``\\`` at its end
continues it); its ``# comment`` is dropped. The words the pages use for the reader's own files
are the sample's (:data:`PLACEHOLDERS`), and ``scores.jsonl`` read (not written) by a line is the
sample scored with ``redundancy``; a study's files a line reads (:data:`STUDY_FILES`) are a study of
it with its answers and export. A synopsis (``[--json compare.json]``) is run with every
optional part given. The lines that cannot run here are :data:`CANNOT_RUN`, each with its reason,
and the reason is checked: a listed line that could run here, or that no page prints any more,
fails the test."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from vst_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "assets" / "sample"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: The pages' names for the reader's own inputs, and the sample's file that stands in for each.
PLACEHOLDERS = {
    "stories.jsonl": SAMPLE / "stories.jsonl",
    "my_stories.jsonl": SAMPLE / "stories.jsonl",
    "assets/sample/stories.jsonl": SAMPLE / "stories.jsonl",
    "human.csv": SAMPLE / "human_example.csv",
}
#: ``--images DIR``: the folder the stories' image paths are relative to (another DIR is written to).
IMAGES = SAMPLE / "images"

#: The commands whose result is printed: a table (or report) on stdout when they end with 0.
PRINTS_RESULT = {"meta-eval", "compare", "dhm", "metrics", "cache", "fetch-models", "judge-bias", "bench", "study"}
#: What a line about a study reads (not writes), made by :func:`sample_study`: the sample's study
#: with its answers, and its export.
STUDY_FILES = {"pilot.study.json", "export/pilot-judgements.csv"}

#: Lines that may end with 6 here: a metric's weights are not on this machine, the others are scored.
WEIGHTS_ABSENT = {
    "vst score stories.jsonl --out scores.jsonl --metrics redundancy,coherence,grounding,clipscore",
    "vst score stories.jsonl --out scores.jsonl --metrics redundancy,coherence",
}


def _released(*names: str) -> Callable[[], bool]:
    """The released data set files a line reads, which the repository does not ship."""
    return lambda: not any((SAMPLE / n).exists() or (ROOT / n).exists() for n in names)


def _no_metric(name: str) -> Callable[[], bool]:
    def absent() -> bool:
        from vst_core.contract import registry

        return name not in registry().specs

    return absent


def _network(line: str) -> Callable[[], bool]:
    return lambda: "http://" in line


def _always() -> bool:
    return True


def _not_cached(repo: str) -> Callable[[], bool]:
    """A model the Hugging Face hub cache of this machine does not hold."""

    def absent() -> bool:
        import os

        hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache/huggingface")) / "hub")
        return not (hub / f"models--{repo.replace('/', '--')}").is_dir()

    return absent


@dataclass(frozen=True)
class Cannot:
    """Why a printed line is not run here, and a check that the reason still holds."""

    reason: str
    holds: Callable[[], bool]


JUDGE_SERVER = (
    "vst score stories.jsonl --out scores.jsonl --metrics judge --judge-endpoint http://HOST:8000/v1 --judge-served-model NAME"
)
JUDGE_SERVER_BIG = (
    "vst score stories.jsonl --out scores.jsonl --metrics judge --judge-endpoint http://GPU-HOST:8000/v1 "
    "--judge-served-model Qwen/Qwen2.5-VL-72B-Instruct --judge-api-key-env JUDGE_KEY --judge-concurrency 32 "
    "[--judge-images]"
)
JUDGE_BIAS_SERVER = (
    "vst judge-bias stories.jsonl --judge-endpoint http://GPU-HOST:8000/v1 --judge-served-model "
    "Qwen/Qwen2.5-VL-72B-Instruct --judge-api-key-env JUDGE_KEY"
)

#: Every printed line that is not run here, with why.
CANNOT_RUN: dict[str, Cannot] = {
    "vst score stories.jsonl --out scores.jsonl --metrics grounding,clipscore,rovist_vg_clip --theta VIST --regions regions.csv": Cannot(
        "the reader's own regions CSV, and CLIP's weights (grounding alone: nothing else to score)", _released("regions.csv")
    ),
    "vst score stories.jsonl --out scores.jsonl --metrics grounding --clip-checkpoint my-clip.pt": Cannot(
        "the reader's own CLIP weights file", _released("my-clip.pt")
    ),
    "vst score vist_test.json --out part1.jsonl --metrics grounding --shard 1/4": Cannot(
        "VIST's released test split, and CLIP's weights", _released("vist_test.json")
    ),
    "vst bench": Cannot("minutes of timing on this machine, with model weights (tests/test_speed.py runs its phases)", _always),
    "vst train-sop vist/train.story-in-sequence.json --out sop-model/ --epochs 3": Cannot(
        "VIST's released training split and BERT's weights", _released("vist/train.story-in-sequence.json")
    ),
    "vst score stories.jsonl --out scores.jsonl --metrics coherence --coherence-model sop-model/": Cannot(
        "a model trained by vst train-sop", _released("sop-model")
    ),
    "vst meta-eval scores.jsonl VHED.csv --out report.json --judgements-format vhed": Cannot(
        "VHED's released rankings", _released("VHED.csv")
    ),
    "vst score gt_test.json --out nr.jsonl --system reference --sequence-id-from story_id": Cannot(
        "the dHM authors' released stories", _released("gt_test.json")
    ),
    "vst score llava_vc_p3.json --out nr.jsonl --system llava --sequence-id-from story_id": Cannot(
        "the dHM authors' released stories", _released("llava_vc_p3.json")
    ),
    "vst train-vrank VHED.csv --out vrank-model/": Cannot("VHED's released rankings and SimCSE's weights", _released("VHED.csv")),
    "vst score stories.jsonl --out scores.jsonl --metrics vrank,redundancy --vrank-model vrank-model/": Cannot(
        "a model trained by vst train-vrank", _released("vrank-model")
    ),
    "vst train-cosmic RaCCoon.tsv --images cc-images/ --out cosmic-model/": Cannot(
        "RaCCoon's released ratings and their images", _released("RaCCoon.tsv")
    ),
    "vst score stories.jsonl --out scores.jsonl --metrics judge": Cannot(
        "the judge's chat model weights (judge alone: nothing else to score)", _not_cached("Qwen/Qwen2.5-0.5B-Instruct")
    ),
    "vst judge-bias stories.jsonl": Cannot("the judge's chat model weights", _not_cached("Qwen/Qwen2.5-0.5B-Instruct")),
    JUDGE_SERVER: Cannot("a chat model server on the network", _network(JUDGE_SERVER)),
    JUDGE_SERVER_BIG: Cannot("a chat model server on the network", _network(JUDGE_SERVER_BIG)),
    JUDGE_BIAS_SERVER: Cannot("a chat model server on the network", _network(JUDGE_BIAS_SERVER)),
    "vst fetch-models --rovist-c sop_model.pth.tar --detector": Cannot(
        "the network, to fetch weights (tests/test_cli.py runs it offline)", _released("sop_model.pth.tar")
    ),
    "vst import-scores gt_test_G.json gt_test_C.csv gt_test_R.csv --system reference --out scores.jsonl": Cannot(
        "the dHM authors' released scores", _released("gt_test_G.json")
    ),
    "vst import-scores llava_vc_p3_G.json llava_vc_p3_C.csv llava_vc_p3_R.csv --system llava --out scores.jsonl": Cannot(
        "the dHM authors' released scores", _released("llava_vc_p3_G.json")
    ),
    "vst import-scores gt_test_G.json gt_test_C.csv gt_test_R.csv --system reference --sequence-id-from story_id --out imported.jsonl": Cannot(
        "the dHM authors' released scores", _released("gt_test_G.json")
    ),
    "vst import-scores llava_vc_p3_G.json llava_vc_p3_C.csv llava_vc_p3_R.csv --system llava --sequence-id-from story_id --out imported.jsonl": Cannot(
        "the dHM authors' released scores", _released("llava_vc_p3_G.json")
    ),
    "vst score gt_test.json --out nr.jsonl --metrics redundancy --nr-variant reference --system reference --sequence-id-from story_id": Cannot(
        "the dHM authors' released stories", _released("gt_test.json")
    ),
    "vst score llava_vc_p3.json --out nr.jsonl --metrics redundancy --nr-variant reference --system llava --sequence-id-from story_id": Cannot(
        "the dHM authors' released stories", _released("llava_vc_p3.json")
    ),
    "vst dhm nr.jsonl imported.jsonl --out dhm.json": Cannot(
        "the scores made from the dHM authors' release by the lines before it", _released("nr.jsonl", "imported.jsonl")
    ),
    "vst score data/sampled_60/sampled_60_stories.json --out ncs.jsonl --metrics redundancy,characters": Cannot(
        "NCS's released VWP stories", _released("data/sampled_60/sampled_60_stories.json")
    ),
    "vst score assets/sample/stories.jsonl --metrics redundancy,lexical_variety --out scores.jsonl": Cannot(
        "the example metric package, installed with pip install examples/vst-toy-metric", _no_metric("lexical_variety")
    ),
}


def command_lines(page: Path) -> list[str]:
    """The ``vst`` command lines of ``page``'s fenced code blocks, continuations joined, comments
    and repeated spaces dropped.

    >>> import tempfile
    >>> page = Path(tempfile.mkdtemp()) / "p.md"
    >>> _ = page.write_text("`vst x`\\n```bash\\nvst a \\\\\\n  --b c   # d\\nls\\n```\\n")
    >>> command_lines(page)
    ['vst a --b c']
    """
    found = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.S | re.M):
        lines = block.splitlines()
        while lines:
            line = lines.pop(0)
            while line.rstrip().endswith("\\") and lines:
                line = line.rstrip()[:-1] + " " + lines.pop(0)
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line == "vst" or line.startswith("vst "):
                found.append(" ".join(line.split()))
    return found


def printed() -> list[tuple[str, str]]:
    """(page, line) for every command line of the README and the pages of docs/."""
    return [(str(p.relative_to(ROOT)), line) for p in PAGES for line in command_lines(p)]


def arguments(line: str) -> list[str]:
    """The line's arguments after ``vst``, placeholders as the sample's files; a synopsis's optional
    parts given, its repetitions (``[more.jsonl ...]``) left out.

    >>> arguments("vst compare scores.jsonl [more.jsonl ...] [--judgements human.csv]")[-1].endswith("human_example.csv")
    True
    """
    line = re.sub(r"\[[^\]]*\.\.\.\]", "", line)
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)
    words = shlex.split(line)[1:]
    given = [str(PLACEHOLDERS[w]) if w in PLACEHOLDERS else w for w in words]
    return [str(IMAGES) if w == "DIR" and k and given[k - 1] == "--images" else w for k, w in enumerate(given)]


@pytest.fixture(scope="module")
def sample_scores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample scored with ``redundancy``: the ``scores.jsonl`` a line reads."""
    out = tmp_path_factory.mktemp("scored") / "scores.jsonl"
    assert main(["score", str(SAMPLE / "stories.jsonl"), "--out", str(out), "--metrics", "redundancy", "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def sample_study(tmp_path_factory: pytest.TempPathFactory, sample_scores: Path) -> Path:
    """A folder with ``pilot.study.json`` made from the sample's scores, every rater's answers
    beside it, and its export in ``export/``: what a ``vst study`` line reads."""
    from vst_core.study import AnswerStore, load_study, plan_for

    folder = tmp_path_factory.mktemp("study")
    path = folder / "pilot.study.json"
    assert main(["study", "new", str(sample_scores), "--out", str(path), "--seed", "1"]) == 0
    study = load_study(path)
    store = AnswerStore.beside(path)
    for n, rater in enumerate(study.raters):
        for step in plan_for(study, rater):
            store.record(study, rater, step, {a.key: 1 + (n + step.position) % 5 for a in study.aspects}, 4.0)
    assert main(["study", "export", str(path), "--out", str(folder / "export")]) == 0
    return folder


def test_the_pages_print_commands_and_each_is_run_or_listed() -> None:
    lines = {line for _page, line in printed()}
    assert len(lines) > 30
    stale = sorted(set(CANNOT_RUN) - lines)
    assert stale == [], "listed as not run here, but no page prints it any more"
    wrong = sorted(line for line, why in CANNOT_RUN.items() if not why.holds())
    assert wrong == [], "listed as not run here, but its reason no longer holds: run it"
    assert WEIGHTS_ABSENT <= lines and not WEIGHTS_ABSENT & set(CANNOT_RUN)


RUN = sorted({line: page for page, line in printed() if line not in CANNOT_RUN}.items())
#: A line that loads a model library (torch) is in the slow tier, as every such test is.
CASES = [pytest.param(line, page, marks=[pytest.mark.slow] if line in WEIGHTS_ABSENT else []) for line, page in RUN]


@pytest.mark.parametrize(("line", "page"), CASES, ids=[f"{page}: {line[:70]}" for line, page in RUN])
def test_a_printed_command_runs_as_printed(
    line: str,
    page: str,
    sample_scores: Path,
    sample_study: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    words = arguments(line)
    writes_scores = "scores.jsonl" in words and words[words.index("scores.jsonl") - 1] == "--out"
    if "scores.jsonl" in words and not writes_scores:
        shutil.copy(sample_scores, tmp_path / "scores.jsonl")
    if any(w in STUDY_FILES and words[k - 1] != "--out" for k, w in enumerate(words)):
        shutil.copytree(sample_study, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "cache"))
    try:
        code = main(words)
    except SystemExit as exc:  # --help
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    allowed = {0, 6} if line in WEIGHTS_ABSENT else {0}
    assert code in allowed, f"{page}: `{line}` exited {code}:\n{err[-3000:]}"
    if code == 6:
        assert "is not run" in err and (tmp_path / "scores.jsonl").stat().st_size > 0
    assert "\r" not in out and "%|" not in out, "a progress bar on stdout"
    if words[0] in PRINTS_RESULT:
        assert out.strip(), f"`{line}` printed its result on stderr, not stdout"
        assert not any(w.startswith("warning:") for w in out.splitlines())
