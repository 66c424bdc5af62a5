"""The rubric judge by its real model names, from random-weight replicas in the hub cache layout
(``judge_layout.py``): the CLI scores the sample per aspect with distributions, a rerun makes no
model call, the pairwise position bias is printed, the vision-language model sees the images,
missing weights exit 4, and fetch-models reports the judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE, point_at

from vst_core.metrics import judge as judge_metric

pytestmark = [pytest.mark.real_layout, pytest.mark.slow]  # builds and loads transformers models


@pytest.fixture(scope="session")
def judge_hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HF_HOME holding the judge's two default models (about 60 MB, a few seconds)."""
    from judge_layout import build_qwen_judge, build_smolvlm

    root = tmp_path_factory.mktemp("judge-layout")
    hf = root / "hf"
    build_qwen_judge(hf)
    work = root / "work"
    work.mkdir()
    build_smolvlm(hf, work)
    return hf


def env_of(hf: Path) -> dict[str, str]:
    return {"HF_HOME": str(hf), "HF_HUB_CACHE": str(hf / "hub"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture
def judge_env(judge_hub: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    point_at(monkeypatch, env_of(judge_hub))
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "vst-cache"))
    yield judge_hub


def run_vst(hf: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env_of(hf), "VST_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "vst_core", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def test_cli_scores_the_sample_per_aspect_and_a_rerun_makes_no_model_call(judge_hub: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "scores.jsonl", tmp_path / "cache"
    done = run_vst(judge_hub, cache, "score", str(SAMPLE), "--out", str(out), "--metrics", "judge", "--no-progress")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 8
    for record in records:
        assert not record["errors"], record["errors"]
        judge = record["metrics"]["judge"]
        assert {a["aspect"] for a in judge["aspects"]} == {"grounding", "coherence", "non_redundancy", "overall"}
        for aspect in judge["aspects"]:
            assert len(aspect["distribution"]) == 5 and sum(aspect["distribution"]) == pytest.approx(1.0)
            assert aspect["score"] == pytest.approx(sum(k * p for k, p in zip(range(1, 6), aspect["distribution"])))
            assert len(aspect["paraphrases"]) == 3 and 1.0 <= aspect["score"] <= 5.0
        assert judge["score"] == judge["overall"] and judge["model"].startswith("Qwen/Qwen2.5-0.5B-Instruct@")
    settings = records[0]["signature"]["settings"]
    assert (
        settings["judge_weights"].startswith("Qwen/Qwen2.5-0.5B-Instruct@") and "not-downloaded" not in settings["judge_weights"]
    )
    assert settings["judge_template"].startswith("vst-rubric-v1@")
    assert "judge: 0 model calls" not in done.stderr and (cache / "judge.sqlite").is_file()
    # a rerun into a fresh file, its records not stored: every answer from the cache, no model call, the same numbers
    (cache / "records.sqlite").unlink()
    again = tmp_path / "again.jsonl"
    second = run_vst(judge_hub, cache, "score", str(SAMPLE), "--out", str(again), "--metrics", "judge", "--no-progress")
    assert second.returncode == 0, second.stderr
    assert "judge: 0 model calls, 96 answers from the cache and 0 computed" in second.stderr  # 8 stories x 4 aspects x 3
    assert [json.loads(line)["metrics"] for line in again.read_text().splitlines()] == [r["metrics"] for r in records]


def test_in_process_rerun_counts_zero_model_calls_and_batches_calls(judge_env: Path, tmp_path: Path) -> None:
    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    settings = Settings(metrics=("judge",), device="cpu", batch_size=32, judge_rationale=True)
    stories = read_story_set(SAMPLE)
    first = Models(settings, cache_dir=tmp_path / "c")
    score_story_set(stories, settings, tmp_path / "a.jsonl", models=first)
    assert 0 < judge_metric.model(first).calls <= 6 + 1  # 96 prompts in batches of 16, and one rationale batch
    second = Models(settings, cache_dir=tmp_path / "c")
    records = score_story_set(stories, settings, tmp_path / "b.jsonl", models=second)
    assert judge_metric.model(second).calls == 0 and records.scored == 8
    line = json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])
    assert isinstance(line["metrics"]["judge"]["rationale"], str)
    assert any("generated by the judge model" in n for n in line["metrics"]["judge"]["notes"])


def test_judge_bias_prints_the_pairwise_position_bias_of_the_sample(judge_hub: Path, tmp_path: Path) -> None:
    out = tmp_path / "bias.csv"
    done = run_vst(judge_hub, tmp_path / "cache", "judge-bias", str(SAMPLE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "follows position" in done.stdout and "mean P(first) shift" in done.stdout
    import pandas as pd

    table = pd.read_csv(out)
    position = table[(table["bias"] == "position") & (table["scope"] == "all questions")]
    # the sample: two sequences of 4 stories -> 6 + 6 pairs, each asked in both orders, with each of 2 questions
    assert set(position["n"]) == {24}
    assert set(table[(table["bias"] == "position") & (table["scope"] != "all questions")]["n"]) == {12}
    follows = float(position[position["measure"] == "follows position"]["value"].iloc[0])
    assert 0.0 <= follows <= 1.0
    assert set(table["bias"]) == {"position", "paraphrase"}
    again = run_vst(judge_hub, tmp_path / "cache", "judge-bias", str(SAMPLE))
    assert "0 model calls" in again.stderr


def test_the_vision_language_judge_sees_the_images(judge_env: Path, tmp_path: Path) -> None:
    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.metrics.judge.bias import judge_bias_table
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    settings = Settings(metrics=("judge",), device="cpu", judge_images=True)
    stories = read_story_set(SAMPLE)
    models = Models(settings, cache_dir=tmp_path / "c")
    score_story_set(stories, settings, tmp_path / "v.jsonl", models=models)
    judge = judge_metric.model(models)
    assert judge.vision and type(judge.model).__name__ == "Idefics3ForConditionalGeneration"
    from vst_core.data.scores_io import load_records

    records = load_records(tmp_path / "v.jsonl")[0]
    judged = [r.metrics.get("judge") for r in records if r.metrics.get("judge") is not None]
    assert len(judged) == 8 and all(j.without_images and j.aspects[0].images for j in judged)
    assert any(j.aspect("overall").score != j.aspect("overall", images=False).score for j in judged)  # type: ignore[union-attr]
    table = judge_bias_table(records)
    assert set(table["bias"]) == {"paraphrase", "images"}


def test_missing_judge_weights_exit_4_with_the_fix(tmp_path: Path) -> None:
    empty = tmp_path / "hf"
    (empty / "hub").mkdir(parents=True)
    done = run_vst(empty, tmp_path / "cache", "score", str(SAMPLE), "--out", str(tmp_path / "o.jsonl"), "--metrics", "judge")
    assert done.returncode == 4, done.stderr
    assert "Qwen/Qwen2.5-0.5B-Instruct" in done.stderr and "fetch-models --judge" in done.stderr
    assert "Traceback" not in done.stderr


def test_fetch_models_reports_the_judge(judge_hub: Path, tmp_path: Path) -> None:
    done = run_vst(judge_hub, tmp_path / "cache", "fetch-models", "--judge", "--judge-vlm")
    assert "cached  judge model Qwen/Qwen2.5-0.5B-Instruct: Qwen/Qwen2.5-0.5B-Instruct@" in done.stdout, done.stderr
    assert "cached  judge vision-language model HuggingFaceTB/SmolVLM-256M-Instruct" in done.stdout


def test_inspect_and_agreement_pages_show_the_judge(judge_hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    out = tmp_path / "scores.jsonl"
    done = run_vst(
        judge_hub, tmp_path / "cache", "score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy,judge", "--no-progress"
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))

    def make(page: str, **widgets: object) -> AppTest:
        app = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES[page])
        for key, value in {"source": "Scores JSONL (no model needed)", "scores_path": str(out), **widgets}.items():
            app.session_state[key] = value
        app.run()
        assert not app.exception, app.exception
        return app

    app = make("inspect", scores_images=str(SAMPLE.parent))
    html = "".join(m.value for m in app.markdown)
    assert html.count('class="vst-judge"') == 4 and html.count('class="vst-judge-dist"') == 16  # 4 stories x 4 aspects
    assert "Σ k·p(k)" in html and any(e.label.startswith("Rubric judge: overall ") for e in app.expander)
    assert any(">judge<" in m.value for m in app.markdown if 'class="vst-card"' in m.value)
    meta = make("meta", judgements_source="Made-up example ratings (for trying the page)", baselines=False)
    assert any(s.value.startswith("Rubric judge: paraphrase consistency") for s in meta.subheader)
    table = next(d.value for d in meta.dataframe if "bias" in d.value.columns)
    assert set(table["bias"]) == {"paraphrase"} and set(table["scope"]) == {"grounding", "coherence", "non_redundancy", "overall"}
    human = make("human", dhm_judge=True, dhm_resamples=0)
    assert "d_J" in human.dataframe[0].value.columns and any("fourth distance" in w.value for w in human.warning)
    # the position bias asks the judge model in the dashboard's process: point it at the replicas
    point_at(monkeypatch, env_of(judge_hub))
    monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "page-cache"))
    meta.button(key="measure_judge").click().run()
    assert not meta.exception, meta.exception
    assert not any("model is not available" in w.value for w in meta.warning), [w.value for w in meta.warning]
    bias = next(d.value for d in meta.dataframe if "bias" in d.value.columns and "position" in set(d.value["bias"]))
    follows = bias[(bias["measure"] == "follows position") & (bias["scope"] == "all questions")]
    assert (
        len(follows) == 1 and 0.0 <= float(follows["value"].iloc[0]) <= 1.0 and int(follows["n"].iloc[0]) == 24
    )  # 12 pairs, 2 questions


def test_bench_measures_the_judge_with_the_replica_architecture() -> None:
    from vst_core.bench.inputs import synthetic_sentences
    from vst_core.metrics.judge.throughput import judge_throughput

    figures = judge_throughput(synthetic_sentences(2), "replica", device="cpu", batch_size=8)
    assert figures["judge_prompts_per_story"] == 12 and figures["judge_model_calls"] == 3  # 24 prompts in batches of 8
    assert figures["judge_stories_per_s"] > 0 and figures["judge_cached_stories_per_s"] > figures["judge_stories_per_s"]
    assert 150 < figures["judge_prompt_tokens"] < 400


@pytest.mark.parametrize("damage", ["truncated", "random", "null", "overflow", "short", "zeros", "fifo"])
def test_a_damaged_judge_cache_never_fails_a_run_and_gives_the_same_scores(judge_env: Path, tmp_path: Path, damage: str) -> None:
    import sqlite3

    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.metrics.judge.cache import _checksum
    from vst_core.scoring.registry import Models
    from vst_core.scoring.runs import score_story_set

    settings = Settings(metrics=("judge",), device="cpu", batch_size=32)
    stories = read_story_set(SAMPLE)
    score_story_set(stories, settings, tmp_path / "a.jsonl", models=Models(settings, cache_dir=tmp_path / "c"))
    path = tmp_path / "c" / "judge.sqlite"
    values = {"null": "null", "overflow": "[1e308, 1e308, 1e308, 1e308, 1e308]", "short": "[1, 2]", "zeros": "[0, 0, 0, 0, 0]"}
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:2000])
    elif damage == "random":
        path.write_bytes(os.urandom(20_000))
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        with sqlite3.connect(path) as db:
            keys = [k for (k,) in db.execute("SELECT key FROM answers")]
            db.executemany(
                "UPDATE answers SET value = ?, checksum = ? WHERE key = ?",
                [(values[damage], _checksum(k, values[damage]), k) for k in keys],
            )
    (tmp_path / "c" / "records.sqlite").unlink()  # the rerun asks the damaged answer cache, not stored records
    models = Models(settings, cache_dir=tmp_path / "c")
    summary = score_story_set(stories, settings, tmp_path / "b.jsonl", models=models)
    assert summary.scored == 8 and not summary.failed
    first, second = (
        [json.loads(line)["metrics"]["judge"] for line in (tmp_path / n).read_text().splitlines()] for n in ("a.jsonl", "b.jsonl")
    )
    assert all(a["aspects"] == b["aspects"] for a, b in zip(first, second, strict=True))
    assert judge_metric.model(models).calls > 0 and judge_metric.answers(models).damage_note()
