"""What ``vst score`` starts with: a rerun whose every vector and noun phrase is cached imports no
model library (CLIP is known by its signature, spaCy and NLTK by their package files), and noun
phrases parsed in worker processes are those of one process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, clip_args

pytestmark = pytest.mark.slow

#: Libraries a model or a parse needs; none is imported by a fully cached rerun.
HEAVY = ("torch", "torchvision", "open_clip", "transformers", "spacy", "nltk")

_CHILD = """
import json, runpy, sys
sys.argv = ["vst", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("vst_core", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code or 0
print(json.dumps({"code": code, "loaded": sorted(m for m in HEAVY if m in sys.modules)}))
""".replace("HEAVY", repr(HEAVY))


def _score(args: list[str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _numbers(path: Path) -> dict[tuple[str, str], dict[str, object]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out[(record["system"], record["story_id"])] = {
            name: metric.get("score") for name, metric in record["metrics"].items() if isinstance(metric, dict)
        }
    return out


def _notes(path: Path) -> dict[tuple[str, str], list[str]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {(r["system"], r["story_id"]): r["metrics"]["clipscore"].get("notes", []) for r in records}


def test_a_rerun_with_everything_cached_imports_no_model_library(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    common = ["--metrics", "grounding,clipscore", *clip_args(tiny_clip), "--clip-activation", "gelu"]
    common += ["--cache-dir", str(cache), "--no-progress"]  # --device auto: no GPU here, told without torch
    cold = _score(["score", str(SAMPLE), "--out", str(tmp_path / "cold.jsonl"), *common])
    assert cold["code"] == 0 and {"torch", "open_clip", "spacy"} <= set(cold["loaded"])  # type: ignore[arg-type]
    warm = _score(["score", str(SAMPLE), "--out", str(tmp_path / "warm.jsonl"), *common])
    assert warm == {"code": 0, "loaded": []}
    assert _numbers(tmp_path / "warm.jsonl") == _numbers(tmp_path / "cold.jsonl")
    # a sentence over CLIP's context (16 tokens for the tiny model) is said on its story, cold and cached alike
    cut = _notes(tmp_path / "cold.jsonl")
    assert any("truncated to CLIP's 16" in n for notes in cut.values() for n in notes)
    assert _notes(tmp_path / "warm.jsonl") == cut
    first = json.loads((tmp_path / "cold.jsonl").read_text().splitlines()[0])["signature"]
    again = json.loads((tmp_path / "warm.jsonl").read_text().splitlines()[0])["signature"]
    assert first == again  # the weights, spaCy and NLTK named alike without loading them


def test_a_changed_checkpoint_is_built_again(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    """The memo names weights by their file's stamp: a file rewritten in place is built (and checked) anew."""
    import shutil

    config, checkpoint = tiny_clip
    copy = tmp_path / "clip.pt"
    shutil.copy(checkpoint, copy)
    common = ["--metrics", "clipscore", "--clip-model", "vst-tiny-clip", "--clip-checkpoint", str(copy)]
    common += ["--clip-config", str(config), "--clip-activation", "gelu", "--cache-dir", str(tmp_path / "cache")]
    common += ["--device", "cpu", "--no-progress"]
    assert _score(["score", str(SAMPLE), "--out", str(tmp_path / "a.jsonl"), *common])["code"] == 0
    assert _score(["score", str(SAMPLE), "--out", str(tmp_path / "a2.jsonl"), *common]) == {"code": 0, "loaded": []}
    changed = tmp_path / "vst-tiny-clip.json"  # the architecture the weights are built into, changed: built (and refused) again
    changed.write_text(config.read_text().replace('"embed_dim": 16', '"embed_dim": 32'))
    other = [changed if part == str(config) else part for part in common]
    done = subprocess.run(
        [sys.executable, "-m", "vst_core", "score", str(SAMPLE), "--out", str(tmp_path / "c.jsonl"), *map(str, other)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 4, done.stderr[-500:]
    copy.write_bytes(b"not a checkpoint at all")
    done = subprocess.run(
        [sys.executable, "-m", "vst_core", "score", str(SAMPLE), "--out", str(tmp_path / "b.jsonl"), *common],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 4 and "checkpoint" in done.stderr


def test_phrases_parsed_in_worker_processes_equal_one_process() -> None:
    from vst_core.bench.inputs import synthetic_sentences
    from vst_core.data import read_story_set
    from vst_core.text.phrases import PhrasesAhead, load_spacy, noun_phrases_many

    stories = [list(s.sentences) for s in read_story_set(SAMPLE)] + synthetic_sentences(1000, seed=3)
    stories.append(["[male] and [female] went to the [location] .", "they met him there with it ."])
    alone = noun_phrases_many(stories, load_spacy())
    ids, parallel = PhrasesAhead(stories, None, whole_pronouns=False, processes=2).result()
    assert parallel == alone and len(ids) == 1
    _, whole = PhrasesAhead(stories[:40], None, whole_pronouns=True, processes=2).result()
    assert whole == noun_phrases_many(stories[:40], load_spacy(), whole_pronouns=True)


def test_a_worker_parses_with_spacys_own_components_without_importing_torch() -> None:
    """thinc imports torch only to offer it: a worker whose pipeline needs none never imports it
    (about 1 s of its start on 2 cores), and parses as a process with torch does (the test above)."""
    from vst_core.text.phrases import needs_torch

    assert not needs_torch(None)  # the installed English pipeline: tok2vec, tagger, parser, ...
    code = (
        "import sys; from vst_core.text.phrases import _parse_part; "
        "_, found = _parse_part((None, [['A small dog ran to the old house.']], False)); "
        "import thinc.compat; print('torch' in sys.modules, thinc.compat.has_torch, len(found[0]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.split() == ["False", "False", "2"], done.stdout + done.stderr


def test_a_large_set_is_parsed_ahead_and_scores_as_one_process_does(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    from vst_core.bench.inputs import synthetic_story_set
    from vst_core.config import Settings
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    config, checkpoint = tiny_clip
    story_set = synthetic_story_set(tmp_path / "set", 320, 1, (48, 40), stories_per_sequence=8)
    settings = Settings(
        metrics=("grounding",),
        clip_model="vst-tiny-clip",
        clip_pretrained=None,
        clip_checkpoint=str(checkpoint),
        clip_config=str(config),
        clip_activation="gelu",
        device="cpu",
    )
    ahead = Models(settings, cache_dir=tmp_path / "ahead")
    assert ahead.parse_ahead(list(story_set)) is not None

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed in this process although the workers had parsed every story")

    from vst_core.images import grounder as grounder_module

    with pytest.MonkeyPatch.context() as patch:  # the workers' phrases are the ones used
        patch.setattr(grounder_module, "noun_phrases_many", not_here)
        score_story_set(story_set, settings, tmp_path / "ahead.jsonl", models=ahead)
    alone = Models(settings, cache_dir=tmp_path / "alone")
    score_story_set(story_set, settings, tmp_path / "alone.jsonl", models=alone)
    assert _numbers(tmp_path / "ahead.jsonl") == _numbers(tmp_path / "alone.jsonl")


def test_workers_nobody_collects_are_stopped() -> None:
    """A run that fails before it needs phrases stops the workers instead of waiting for them."""
    import time

    from vst_core.bench.inputs import synthetic_sentences
    from vst_core.text.phrases import PhrasesAhead

    done = PhrasesAhead(synthetic_sentences(20, seed=1), None, whole_pronouns=False, processes=2)
    assert len(done.result()[1]) == 20
    done.cancel()  # after the result: nothing left to stop, and no error
    ahead = PhrasesAhead(synthetic_sentences(3000, seed=1), None, whole_pronouns=False, processes=2)
    time.sleep(0.5)
    processes = list(ahead._pool._processes.values())  # type: ignore[attr-defined]
    start = time.monotonic()
    ahead.cancel()
    while any(p.is_alive() for p in processes) and time.monotonic() - start < 10:
        time.sleep(0.05)
    alive = [(p.pid, p.exitcode) for p in processes if p.is_alive()]
    assert not alive and time.monotonic() - start < 10, alive


def test_vst_score_on_a_set_parsed_ahead_exits_cleanly(tiny_clip: tuple[Path, Path], tmp_path: Path) -> None:
    """The command line over a set large enough for worker processes: 0, every story written, and a
    rerun into a new file the same numbers."""
    from vst_core.bench.inputs import synthetic_story_set

    story_set = synthetic_story_set(tmp_path / "set", 320, 1, (48, 40), stories_per_sequence=8)
    common = ["--metrics", "grounding", *clip_args(tiny_clip), "--clip-activation", "gelu"]
    common += ["--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    for name in ("a", "b"):
        found = _score(["score", str(story_set.root / "stories.jsonl"), "--out", str(tmp_path / f"{name}.jsonl"), *common])
        assert found["code"] == 0
    assert len(_numbers(tmp_path / "a.jsonl")) == 320 and _numbers(tmp_path / "a.jsonl") == _numbers(tmp_path / "b.jsonl")
