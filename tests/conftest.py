"""Shared fixtures. Nothing here downloads anything: hubs are forced offline.

Nothing heavy is imported at module level (torch, transformers and open_clip load inside the
fixtures that build tiny models), so that collecting the fast tier stays cheap.

Property-test budgets: ``VST_HYPOTHESIS_EXAMPLES`` is the budget of a test module's main property
tests (150 when unset, what CI runs). A run that leaves slow tests out (``-m "not slow ..."``) and
does not set it gets :data:`FAST_EXAMPLES` instead; every other ``max_examples`` is
``examples(n)``: ``n`` at the full budget, scaled with the one budget otherwise."""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# tests never write into the user's own embedding cache
os.environ["VST_CACHE_DIR"] = tempfile.mkdtemp(prefix="vst-test-cache-")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_records_stored_by_another_test() -> None:
    """Each test starts without the records earlier tests stored in the session's cache folder
    (the vectors stay): a test that counts what a run computes is never served another's records."""
    from vst_core.scoring.record_store import FILE_NAME

    folder = Path(os.environ["VST_CACHE_DIR"])
    for suffix in ("", "-wal", "-shm"):
        (folder / f"{FILE_NAME}{suffix}").unlink(missing_ok=True)


#: The dashboard and its pages as AppTest switches to them (tests/test_app.py, tests/test_markup.py).
APP = str(ROOT / "app.py")
PAGES = {
    "inspect": "app_pages/inspect.py",
    "dataset": "app_pages/dataset.py",
    "meta": "app_pages/agreement.py",
    "human": "app_pages/human_likeness.py",
    "compare": "app_pages/compare.py",
    "systems": "app_pages/systems.py",
    "leaderboard": "app_pages/leaderboard.py",
}
SAMPLE = ROOT / "assets" / "sample" / "stories.jsonl"
ARTIFACTS = ROOT / "tests" / "_artifacts"

#: The property tests' budget when VST_HYPOTHESIS_EXAMPLES is unset (the full run, CI).
FULL_EXAMPLES = 150
#: The budget of a run that leaves slow tests out, unless VST_HYPOTHESIS_EXAMPLES says otherwise.
FAST_EXAMPLES = 10
_BUDGET = "VST_HYPOTHESIS_EXAMPLES"
_FAST_TIER = False


def examples(n: int) -> int:
    """``max_examples`` for a property test that has ``n`` at the full budget: ``n`` when
    VST_HYPOTHESIS_EXAMPLES is unset (or 150), else ``n`` scaled by VST_HYPOTHESIS_EXAMPLES / 150,
    never under 2 (so the fast tier's 10 turns 300 into 20 and 40 into 3, and 10000 raises all)."""
    budget = int(os.environ.get(_BUDGET, FULL_EXAMPLES))
    return n if budget == FULL_EXAMPLES else max(2, math.ceil(n * budget / FULL_EXAMPLES))


def _rules_out(markexpr: str, marks: set[str]) -> bool:
    """Whether ``-m markexpr`` deselects every test that carries ``marks``, whatever its other marks."""
    if not markexpr or not marks & set(re.findall(r"[A-Za-z_][\w.]*", markexpr)):
        return False
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
    except Exception:  # a bad expression pytest reports itself; without pytest's parser, collect all
        return False
    names = sorted(set(re.findall(r"[A-Za-z_][\w.]*", markexpr)) - {"and", "or", "not"} - marks)
    for values in itertools.product((False, True), repeat=len(names)):
        given = {**dict.fromkeys(marks, True), **dict(zip(names, values, strict=True))}
        if expression.evaluate(lambda name, /, given=given, **kwargs: given.get(name, False)):
            return False
    return True


def pytest_configure(config: pytest.Config) -> None:
    """The fast tier (a mark expression that leaves every slow test out) runs the property tests at
    FAST_EXAMPLES unless VST_HYPOTHESIS_EXAMPLES is set (test modules read the variable at import,
    which comes after this hook), and keeps compiled bytecode."""
    global _FAST_TIER
    _FAST_TIER = _rules_out(config.getoption("markexpr", "") or "", {"slow"})
    if _FAST_TIER and _BUDGET not in os.environ:
        os.environ[_BUDGET] = str(FAST_EXAMPLES)
    if _FAST_TIER:
        # Compile the project's modules and the test modules (with pytest's assertion rewriting) once,
        # not at every run, even where PYTHONDONTWRITEBYTECODE is set: about 3 s of the fast tier.
        # The __pycache__ folders are ignored by git.
        sys.dont_write_bytecode = False


def pytest_report_header(config: pytest.Config) -> str:
    budget = os.environ.get(_BUDGET, str(FULL_EXAMPLES))
    tier = " (fast tier)" if _FAST_TIER else ""
    return f"property tests: {_BUDGET}={budget}{tier}"


#: What the fast tier never imports: a test that needs one of them is marked slow.
HEAVY_MODULES = ("torch", "transformers", "open_clip", "spacy")
_HEAVY_WORDS = re.compile(r"\b(torch|transformers|open_clip|spacy|load_spacy|noun_phrases\w*|load_clip)\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A docstring example that uses torch, transformers, open_clip or spaCy is a slow test."""
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.dtest is not None:
            if any(_HEAVY_WORDS.search(example.source) for example in item.dtest.examples):
                item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The fast tier fails when it imported torch, transformers, open_clip or spaCy: a test that
    needs one is marked slow."""
    if _FAST_TIER and session.testscollected:
        heavy = [m for m in HEAVY_MODULES if m in sys.modules]
        if heavy:
            sys.stderr.write(f"\nerror: the fast tier imported {', '.join(heavy)}: mark the test that needs it slow\n")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported and built lives to the end of the run: ``gc.freeze()`` spares the
    collector walking it again at every full collection (pytest runs five at exit, about 2 s)."""
    gc.freeze()


_MODULE_MARKS = re.compile(r"^pytestmark\s*=(.*)$", re.MULTILINE)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A test module whose module-wide marks (``pytestmark = ...``) the ``-m`` expression rules out
    is not even imported: none of its tests could run, and importing it (AppTest, Playwright, the
    real-layout replicas, torch) costs seconds of the fast tier. The helper modules beside the
    tests are never collected (``--doctest-modules`` would import them)."""
    if collection_path.suffix == ".py" and collection_path.parent == Path(__file__).parent:
        if not collection_path.name.startswith("test_"):
            return True  # the tests' helper modules (replica builders, servers): no tests, no examples to run
    markexpr = config.getoption("markexpr", "") or ""
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    try:
        found = _MODULE_MARKS.search(collection_path.read_text(encoding="utf-8"))
    except OSError:
        return None
    marks = set(re.findall(r"pytest\.mark\.(\w+)", found.group(1))) if found else set()
    return True if marks and _rules_out(markexpr, marks) else None


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    """A folder with three small real images a.png, b.png, c.png."""
    for name, colour in (("a", "red"), ("b", "green"), ("c", "blue")):
        Image.new("RGB", (16, 12), colour).save(tmp_path / f"{name}.png")
    return tmp_path


WORDS = (
    "we went to the beach park then first finally later after that a dog cat ran sat saw big small red "
    "water waves sun home ate cake played ball were was it and on in of . , ! ?"
).split()


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import BertTokenizerFast

    folder = tmp_path_factory.mktemp("tok")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForNextSentencePrediction, BertTokenizerFast

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("bert")
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=48,
    )
    BertForNextSentencePrediction(config).save_pretrained(folder)
    BertTokenizerFast.from_pretrained(tokenizer_dir).save_pretrained(folder)
    return folder


TINY_CLIP_CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(model-config JSON, checkpoint) of a tiny random open_clip model named vst-tiny-clip."""
    import open_clip
    import torch

    folder = tmp_path_factory.mktemp("clip")
    config = folder / "vst-tiny-clip.json"
    config.write_text(json.dumps(TINY_CLIP_CONFIG))
    open_clip.add_model_config(str(config))
    torch.manual_seed(0)
    model = open_clip.create_model("vst-tiny-clip")
    checkpoint = folder / "tiny-clip.pt"
    torch.save(model.state_dict(), checkpoint)
    return config, checkpoint


def clip_args(tiny_clip: tuple[Path, Path]) -> list[str]:
    """The ``vst score`` options that select the tiny CLIP of :func:`tiny_clip`."""
    config, checkpoint = tiny_clip
    return ["--clip-model", "vst-tiny-clip", "--clip-checkpoint", str(checkpoint), "--clip-config", str(config)]


@pytest.fixture(scope="session")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Random-weight replicas of every default model in the real cache layouts (built once)."""
    from real_layout import build_real_layout

    return build_real_layout(tmp_path_factory.mktemp("real-layout"))


def point_at(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Make this process look for weights only where ``env`` says (hub constants are read at import)."""
    from huggingface_hub import constants

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(constants, "HF_HOME", env["HF_HOME"])
    monkeypatch.setattr(constants, "HF_HUB_CACHE", env["HF_HUB_CACHE"])


class ParityLog:
    """What a parity test compared and the figure it measured, for the parity table (docs/parity.md)
    (``python benchmarks/parity_table.py`` runs the ``parity`` tests and renders their rows).

    A row is written to ``$VST_PARITY_OUT`` (one JSON file per test) when that is set, else kept
    in memory only, so an ordinary test run writes nothing."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid
        self.rows: list[dict[str, str]] = []

    def record(self, *, metric: str, reference: str, compared: str, figure: str) -> None:
        """One row: ``metric`` (ours), ``reference`` (whose code or numbers), ``compared`` (what,
        on which inputs and weights), ``figure`` (what agreed, to which precision)."""
        self.rows.append({"metric": metric, "reference": reference, "compared": compared, "figure": figure})
        out = os.environ.get("VST_PARITY_OUT")
        if out:
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.nodeid)[-150:]
            rows = [{**row, "test": self.nodeid} for row in self.rows]
            Path(out, f"{name}.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")


@pytest.fixture
def parity(request: pytest.FixtureRequest) -> ParityLog:
    """A :class:`ParityLog` for this test; mark the test ``@pytest.mark.parity`` too."""
    return ParityLog(request.node.nodeid)
