"""The rubric judge through an OpenAI-compatible server, over loopback HTTP to a server on 127.0.0.1.

Fast tier: the answer parser against hand-written answers, the request's shape, and hostile
servers (malformed JSON, wrong tokens, no log-probabilities, HTTP errors, 429 then an answer,
timeouts, a redirect to another server): each is one story's error with its reason, the other
story is scored, nothing but answers is cached, and ``vst score`` exits 6 (4 with --strict). The
key is sent and written nowhere. Slow tier (``real_layout``): a server that serves the tiny
Qwen replica's real log-probabilities gives the local backend's numbers to 1e-6, through
``vst score --judge-endpoint`` too, and a rerun sends no request."""

from __future__ import annotations

import base64
import doctest
import json
import math
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLE

from vst_core.cli import main
from vst_core.config import Settings, SettingsError
from vst_core.data import read_story_set
from vst_core.metrics.judge import JudgeScores, chat_server
from vst_core.metrics.judge import served as judge_server
from vst_core.metrics.judge.batch import judge_records
from vst_core.metrics.judge.cache import JudgeCache
from vst_core.metrics.judge.chat_server import ChatServer, Reply, completion, synthetic_logprobs
from vst_core.metrics.judge.served import (
    ABSENT,
    JudgeServer,
    JudgeServerError,
    label_logprobs,
    load_judge_server,
    rating_body,
)
from vst_core.metrics.judge.template import JudgePrompt, load_rubric
from vst_core.models.hub import ModelLoadError
from vst_core.signature import describe, signature

LABELS = ("1", "2", "3", "4", "5")
MARK = "Zebra"  # the hostile story's word: the server misbehaves on its prompts only


def answer_of(top: list[dict[str, Any]], generated: dict[str, Any] | None = None) -> dict[str, Any]:
    first = {**(generated or top[0]), "top_logprobs": top}
    return {"choices": [{"logprobs": {"content": [first]}}]}


def test_module_examples_hold() -> None:
    assert doctest.testmod(judge_server).failed == 0
    assert doctest.testmod(chat_server).failed == 0


def test_labels_are_read_by_exact_token_and_absent_ones_are_probability_zero() -> None:
    top = [
        {"token": "4", "logprob": math.log(0.5)},
        {"token": " 3", "logprob": math.log(0.2)},
        {"token": "2", "logprob": math.log(0.1)},
    ]
    found = label_logprobs(answer_of(top), LABELS)
    # " 3" is another token than "3" (the local path reads exactly the label's token id)
    assert found == [ABSENT, pytest.approx(math.log(0.1)), ABSENT, pytest.approx(math.log(0.5)), ABSENT]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"choices": [{"message": {"content": "4"}}]}, "no log-probabilities"),
        ({"choices": [{"logprobs": None}]}, "vLLM, SGLang"),
        ({"object": "error"}, "no choices"),
        ([1, 2], "no choices"),
        (answer_of([{"token": "four", "logprob": -0.1}, {"token": "A", "logprob": -3.0}]), "none of the answer tokens"),
        (answer_of([{"token": "4", "logprob": 0.5}]), "log-probability 0.5"),
        (answer_of([{"token": "4", "logprob": "high"}]), "log-probability 'high'"),
        (answer_of([{"token": "4", "logprob": math.log(0.8)}, {"token": "5", "logprob": math.log(0.7)}]), "sum above"),
        (answer_of([{"logprob": -0.1}]), "no token string"),
    ],
)
def test_an_answer_that_is_not_one_gives_its_reason(payload: Any, reason: str) -> None:
    with pytest.raises(JudgeServerError, match=reason):
        label_logprobs(payload, LABELS)


def test_the_request_continues_the_answer_prefix_and_sends_images_as_data_urls(tmp_path: Path) -> None:
    prompt = JudgePrompt("be strict", "How coherent is it?", "Rating: ", ("a.png",))
    body = rating_body("judge", prompt, top_logprobs=7)
    assert body["messages"] == [
        {"role": "system", "content": "be strict"},
        {"role": "user", "content": "How coherent is it?"},
        {"role": "assistant", "content": "Rating: "},
    ]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 7
    assert "continue_final_message" not in rating_body("judge", JudgePrompt("", "Explain.", ""))
    # a vision judge gets the image bytes before the text
    from PIL import Image

    Image.new("RGB", (4, 3), (200, 10, 10)).save(tmp_path / "a.png")
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as server:
        judge = JudgeServer(server.url, "judge", vision=True).connect()
        judge.answers([prompt], LABELS, root=tmp_path, images=True)
        content = server.requests[0]["messages"][1]["content"]
    assert [c["type"] for c in content] == ["image_url", "text"]
    url = content[0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == (tmp_path / "a.png").read_bytes()


# --------------------------------------------------------------------------- hostile servers


def two_stories(tmp_path: Path) -> Path:
    path = tmp_path / "stories.jsonl"
    rows = [
        {"story_id": "calm", "sentences": ["We went to the beach.", "The sea was cold.", "We ate ice cream."]},
        {"story_id": "hostile", "sentences": [f"A {MARK} walked in.", "It sat down.", "Everyone left."]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def hostile(bad: Callable[[dict[str, Any]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """The synthetic answer, except ``bad``'s on the hostile story's prompts."""

    def answer(body: dict[str, Any]) -> Reply:
        if MARK in json.dumps(body["messages"]):
            return bad(body)
        return completion(synthetic_logprobs(body))

    return answer


def no_logprobs(body: dict[str, Any]) -> Reply:
    raw = json.loads(completion(synthetic_logprobs(body)).body)
    del raw["choices"][0]["logprobs"]
    return Reply(200, json.dumps(raw).encode())


HOSTILE: dict[str, tuple[Callable[[dict[str, Any]], Reply], str]] = {
    "malformed JSON": (lambda body: Reply(200, b'{"choices": [{"logprobs": '), "not JSON"),
    "wrong token strings": (lambda body: completion([("four", -0.2), ("A", -1.5), (" 4", -2.0)]), "none of the answer tokens"),
    "missing log-probabilities": (no_logprobs, "no log-probabilities"),
    "HTTP 400": (lambda body: Reply(400, b'{"error": "top_logprobs must be <= 5"}'), "HTTP 400: .*top_logprobs"),
    "HTTP 503": (lambda body: Reply(503, b"overloaded"), "HTTP 503: overloaded after 2 tries"),
    "slow": (lambda body: Reply(200, completion(synthetic_logprobs(body)).body, delay=1.0), "timeout"),
    "positive log-probability": (lambda body: completion([("4", 2.0)]), "log-probability 2.0"),
    "a token listed twice": (lambda body: completion([("4", -0.2), ("3", -2.0), ("4", -0.9)]), "token '4' twice"),
    "another model's answer": (
        lambda body: completion(synthetic_logprobs(body), model="cheap-model"),
        "from model 'cheap-model', not the 'judge'",
    ),
}


@pytest.mark.parametrize("mode", [pytest.param(m, marks=pytest.mark.slow) if m == "slow" else m for m in sorted(HOSTILE)])
def test_a_hostile_answer_is_its_storys_error_and_nothing_wrong_is_cached(mode: str, tmp_path: Path) -> None:
    bad, reason = HOSTILE[mode]
    story_set = read_story_set(two_stories(tmp_path))
    rubric, cache = load_rubric(), JudgeCache(tmp_path / "judge.sqlite")
    settings = Settings(metrics=("judge",))
    with ChatServer(hostile(bad)) as server:
        judge = JudgeServer(server.url, "judge", timeout=0.3, retries=1, backoff=0.01).connect()
        found = judge_records(list(story_set), settings, judge, rubric, cache, story_set.root)
        assert isinstance(found[("unknown", "calm")], JudgeScores)
        why = found[("unknown", "hostile")]
        assert isinstance(why, str) and "judge server 127.0.0.1:" in why
        assert __import__("re").search(reason, why), why
        assert judge.failures == 12  # every prompt of the hostile story, none of the other's
        assert cache.size() == 12  # the calm story's twelve answers only
        # a rerun asks only what failed: the calm story comes from the cache
        asked = len(server.requests)
        again = judge_records(list(story_set), settings, judge, rubric, cache, story_set.root)
        new = server.requests[asked:]
        assert new and all(MARK in json.dumps(b["messages"]) for b in new)
        assert again[("unknown", "calm")] == found[("unknown", "calm")] and isinstance(again[("unknown", "hostile")], str)


def test_a_redirect_to_another_server_is_not_followed(tmp_path: Path) -> None:
    story_set = read_story_set(two_stories(tmp_path))
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as other:
        target = other.url.replace("127.0.0.1", "localhost") + "/chat/completions"
        redirect = hostile(lambda body: Reply(307, b"", (("location", target),)))
        with ChatServer(redirect) as server:
            judge = JudgeServer(server.url, "judge", retries=0).connect()
            found = judge_records(
                list(story_set), Settings(metrics=("judge",)), judge, load_rubric(), JudgeCache(), story_set.root
            )
        assert other.requests == [] and other.authorizations == []
    assert isinstance(found[("unknown", "calm")], JudgeScores)
    assert "redirected (HTTP 307) to localhost:" in str(found[("unknown", "hostile")])


def test_429_is_retried_after_the_servers_wait_and_then_answered(tmp_path: Path) -> None:
    seen: set[str] = set()

    def busy_once(body: dict[str, Any]) -> Reply:
        key = json.dumps(body["messages"])
        if key not in seen:
            seen.add(key)
            return Reply(429, b"slow down", (("retry-after", "0"),))
        return completion(synthetic_logprobs(body))

    story_set = read_story_set(two_stories(tmp_path))
    with ChatServer(busy_once) as server:
        judge = JudgeServer(server.url, "judge", retries=2, backoff=5.0).connect()  # Retry-After 0, not 5 s
        found = judge_records(list(story_set), Settings(metrics=("judge",)), judge, load_rubric(), JudgeCache(), story_set.root)
    assert all(isinstance(v, JudgeScores) for v in found.values())
    assert len(server.requests) == 48 and judge.failures == 0  # 24 prompts, each asked twice


def test_the_cli_scores_what_it_can_and_exits_partial_and_4_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stories = two_stories(tmp_path)
    bad = HOSTILE["wrong token strings"][0]
    with ChatServer(hostile(bad)) as server:
        args = ["score", str(stories), "--metrics", "judge", "--judge-endpoint", server.url, "--judge-served-model", "judge"]
        args += ["--cache-dir", str(tmp_path / "cache"), "--no-progress"]
        assert main([*args, "--out", str(tmp_path / "a.jsonl")]) == 6
        assert main([*args, "--out", str(tmp_path / "b.jsonl"), "--strict"]) == 4
    records = {r["story_id"]: r for r in map(json.loads, (tmp_path / "a.jsonl").read_text().splitlines())}
    assert set(records["calm"]["metrics"]) == {"judge"} and not records["calm"]["errors"]
    assert "none of the answer tokens" in records["hostile"]["errors"]["judge"]
    assert "the server gave no usable answer to 12 prompt(s)" in capsys.readouterr().err


def test_the_key_is_sent_and_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-local-test-0123456789"
    monkeypatch.setenv("VST_TEST_JUDGE_KEY", key)
    stories, out = two_stories(tmp_path), tmp_path / "scores.jsonl"
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as server:
        args = ["score", str(stories), "--out", str(out), "--metrics", "judge", "--judge-endpoint", server.url]
        args += ["--judge-served-model", "judge", "--judge-api-key-env", "VST_TEST_JUDGE_KEY", "--cache-dir", str(tmp_path / "c")]
        assert main([*args, "--no-progress"]) == 0
        assert set(server.authorizations) == {f"Bearer {key}"}
        sent = len(server.requests)
        # a rerun into a new file, its records not stored: every answer from the cache, no request
        (tmp_path / "c" / "records.sqlite").unlink()
        assert main([*args[:3], str(tmp_path / "again.jsonl"), *args[4:], "--no-progress"]) == 0
        assert len(server.requests) == sent == 24
    err = capsys.readouterr().err
    assert "judge: 0 chat requests to the server (after one /models look-up), 24 answers from the cache" in err
    written = out.read_text() + (tmp_path / "again.jsonl").read_text() + err
    settings = Settings(
        metrics=("judge",), judge_endpoint=server.url, judge_served_model="judge", judge_api_key_env="VST_TEST_JUDGE_KEY"
    )
    written += json.dumps(signature(settings)) + describe(settings)
    for cache_file in (tmp_path / "c").iterdir():
        written += cache_file.read_bytes().decode("latin-1")
    assert key not in written and "VST_TEST_JUDGE_KEY" not in json.dumps(signature(settings))
    record = json.loads(out.read_text().splitlines()[0])
    assert record["metrics"]["judge"]["model"] == "served:judge@unreported"
    weights = record["signature"]["settings"]["judge_weights"]
    assert weights.startswith("served:judge at 127.0.0.1:") and "not digestible" in weights


def test_an_unset_key_variable_an_unreachable_server_and_an_unserved_model_fail_before_any_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("VST_TEST_NO_SUCH_KEY", raising=False)
    with ChatServer(lambda body: completion(synthetic_logprobs(body)), models=("qwen-72b",), revision="abc123") as server:
        with pytest.raises(ModelLoadError, match="VST_TEST_NO_SUCH_KEY"):
            load_judge_server(server.url, "qwen-72b", api_key_env="VST_TEST_NO_SUCH_KEY")
        with pytest.raises(ModelLoadError, match="does not serve 'judge' \\(it serves 'qwen-72b'\\)"):
            load_judge_server(server.url, "judge")
        assert load_judge_server(server.url, "qwen-72b").signature == "served:qwen-72b@abc123"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelLoadError, match="cannot reach the server"):
        load_judge_server(f"http://127.0.0.1:{port}/v1", "judge")


def test_settings_refuse_an_endpoint_they_cannot_use_and_local_signatures_are_unchanged() -> None:
    with pytest.raises(SettingsError, match="judge_served_model"):
        Settings(metrics=("judge",), judge_endpoint="http://127.0.0.1:8000/v1")
    with pytest.raises(SettingsError, match="without credentials"):
        Settings(metrics=("judge",), judge_endpoint="http://user:pw@127.0.0.1:8000/v1", judge_served_model="m")
    with pytest.raises(SettingsError, match="http"):
        Settings(metrics=("judge",), judge_endpoint="file:///etc/passwd", judge_served_model="m")
    for malformed in ("http://[", "http://127.0.0.1:port/v1"):  # urllib raised its own ValueError on these
        with pytest.raises(SettingsError, match="http"):
            Settings(metrics=("judge",), judge_endpoint=malformed, judge_served_model="m")
    # the server's options change no local number: the local settings' signature keys are as before
    local = Settings(metrics=("judge",)).as_dict()
    assert not {k for k in local if k.startswith("judge_")} - {"judge_images"}
    served = Settings(metrics=("judge",), judge_endpoint="http://h:1/v1", judge_served_model="m", judge_concurrency=32)
    assert served.as_dict()["judge_top_logprobs"] == 20 and "judge_concurrency" not in served.as_dict()
    assert signature(served)["id"] == signature(served.with_(judge_concurrency=1, judge_timeout=5.0))["id"]
    assert signature(served)["id"] != signature(served.with_(judge_served_model="other"))["id"]


# --------------------------------------------------------------------------- the same numbers as the local model


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The tests' Qwen2.5-0.5B-Instruct replica, loaded by the local path, with +8 added to the
    rating tokens' logits (an lm_head bias) so that they are among a server's top 20 answers, as
    they are for an instruction-tuned judge; the local and the served path read this same model."""
    import torch
    from conftest import point_at
    from judge_layout import QWEN_REPO, build_qwen_judge

    from vst_core.metrics.judge.local import load_judge

    hf = tmp_path_factory.mktemp("judge-server-hub")
    build_qwen_judge(hf)
    env = {"HF_HOME": str(hf), "HF_HUB_CACHE": str(hf / "hub"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with pytest.MonkeyPatch.context() as monkeypatch:
        point_at(monkeypatch, env)
        judge = load_judge(QWEN_REPO, device="cpu")
    head = judge.model.lm_head
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    biased.weight = head.weight
    with torch.no_grad():
        biased.bias.zero_()
        biased.bias[judge.token_ids(LABELS)] = 8.0
    judge.model.lm_head = biased
    yield judge


def model_answer(judge: Any) -> Callable[[dict[str, Any]], Reply]:
    """What vLLM does with a chat request: the model's chat template over the messages (with the
    request's add_generation_prompt / continue_final_message), one forward pass, the top K
    full-vocabulary log-probabilities of the next token with their decoded strings."""
    import torch

    tokenizer = judge.tokenizer

    def answer(body: dict[str, Any]) -> Reply:
        text = tokenizer.apply_chat_template(
            body["messages"],
            add_generation_prompt=body.get("add_generation_prompt", True),
            continue_final_message=body.get("continue_final_message", False),
            tokenize=False,
        )
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            logits = judge.model(input_ids=ids, use_cache=False).logits[0, -1].float()
        values, top = torch.log_softmax(logits, dim=-1).topk(int(body["top_logprobs"]))
        return completion([(tokenizer.decode([int(i)]), float(v)) for v, i in zip(values, top, strict=True)], body["model"])

    return answer


def aspects_of(judged: JudgeScores) -> dict[str, tuple[float, ...]]:
    return {a.aspect: (a.score, *a.distribution, *a.paraphrases, a.mass) for a in judged.aspects}


@pytest.mark.real_layout
@pytest.mark.slow
def test_the_served_model_gives_the_local_numbers(qwen: Any, tmp_path: Path) -> None:
    from judge_layout import QWEN_REPO

    story_set = read_story_set(SAMPLE)
    settings, rubric = Settings(metrics=("judge",)), load_rubric()
    local = judge_records(list(story_set), settings, qwen, rubric, JudgeCache(), story_set.root)
    with ChatServer(model_answer(qwen), models=(QWEN_REPO,)) as server:
        served = JudgeServer(server.url, QWEN_REPO, concurrency=4).connect()
        remote = judge_records(list(story_set), settings, served, rubric, JudgeCache(), story_set.root)
    assert len(remote) == len(local) == 8
    for key, mine in local.items():
        theirs = remote[key]
        assert isinstance(mine, JudgeScores) and isinstance(theirs, JudgeScores), theirs
        ours, got = aspects_of(mine), aspects_of(theirs)
        assert ours.keys() == got.keys()
        for aspect in ours:
            assert got[aspect] == pytest.approx(ours[aspect], abs=1e-6), aspect
    assert len({round(m.score or 0, 6) for m in local.values() if isinstance(m, JudgeScores)}) > 1  # not one constant


@pytest.mark.real_layout
@pytest.mark.slow
def test_vst_score_against_the_served_model_matches_the_local_backend_and_a_rerun_sends_nothing(
    qwen: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from judge_layout import QWEN_REPO

    story_set = read_story_set(SAMPLE)
    local = judge_records(list(story_set), Settings(metrics=("judge",)), qwen, load_rubric(), JudgeCache(), story_set.root)
    with ChatServer(model_answer(qwen), models=(QWEN_REPO,)) as server:
        args = ["score", str(SAMPLE), "--metrics", "judge", "--judge-endpoint", server.url, "--judge-served-model", QWEN_REPO]
        args += ["--cache-dir", str(tmp_path / "cache"), "--judge-concurrency", "8", "--no-progress"]
        assert main([*args, "--out", str(tmp_path / "first.jsonl")]) == 0
        asked = len(server.requests)
        (tmp_path / "cache" / "records.sqlite").unlink()  # the rerun asks the answer cache, not stored records
        assert main([*args, "--out", str(tmp_path / "second.jsonl")]) == 0
        assert asked == 96 and len(server.requests) == asked  # 8 stories x 4 aspects x 3 paraphrases, then none
    assert "judge: 0 chat requests to the server (after one /models look-up), 96 answers from the cache and 0 computed" in (
        capsys.readouterr().err
    )
    from vst_core.records import read_record

    for name in ("first.jsonl", "second.jsonl"):
        for line in (tmp_path / name).read_text().splitlines():
            record, problems = read_record(json.loads(line))
            assert record is not None and not problems and not record.errors
            judged = record.metrics["judge"]
            mine = local[(record.system, record.story_id)]
            assert isinstance(judged, JudgeScores) and isinstance(mine, JudgeScores)
            for aspect, values in aspects_of(mine).items():
                assert aspects_of(judged)[aspect] == pytest.approx(values, abs=1e-6)


def test_the_judge_server_boxes_become_settings_or_a_notice() -> None:
    from dashboard.choices import with_options

    base = Settings(metrics=("judge",))

    def boxes(endpoint: str, served: str, key_env: str) -> dict[str, str]:
        return {"judge_endpoint": endpoint, "judge_served_model": served, "judge_api_key_env": key_env}

    asked, notice = with_options(base, boxes(" http://127.0.0.1:8000/v1 ", "qwen-72b", "JUDGE_KEY"), "judge")
    assert notice is None and asked.option("judge_endpoint") == "http://127.0.0.1:8000/v1"
    assert (asked.option("judge_served_model"), asked.option("judge_api_key_env")) == ("qwen-72b", "JUDGE_KEY")
    assert with_options(base, boxes("", "", ""), "judge") == (base, None)
    kept, why = with_options(base, boxes("ftp://127.0.0.1/v1", "qwen-72b", ""), "judge")
    assert kept == base and why is not None and "http(s)" in why
    kept, why = with_options(base, boxes("http://127.0.0.1:8000/v1", "", ""), "judge")
    assert kept == base and why is not None and "judge_served_model" in why
    counted, why = with_options(base, {"judge_concurrency": " 16 ", "judge_images": "true"}, "judge")
    assert why is None and counted.option("judge_concurrency") == 16 and counted.option("judge_images") is True
    kept, why = with_options(base, {"judge_concurrency": "many"}, "judge")
    assert kept == base and why is not None and why.startswith("judge: ")


@pytest.mark.slow
def test_the_dashboard_shows_a_served_judge_and_asks_the_sidebars_server_for_its_position_bias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    out = tmp_path / "scores.jsonl"
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as server:
        args = ["score", str(SAMPLE), "--out", str(out), "--metrics", "redundancy,judge", "--judge-endpoint", server.url]
        assert main([*args, "--judge-served-model", "judge", "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 0
        monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path))
        monkeypatch.setenv("VST_CACHE_DIR", str(tmp_path / "page-cache"))

        def make(page: str, **widgets: object) -> AppTest:
            app = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES[page])
            for key, value in {"source": "Scores JSONL (no model needed)", "scores_path": str(out), **widgets}.items():
                app.session_state[key] = value
            app.run()
            assert not app.exception, app.exception
            return app

        inspect = make("inspect", scores_images=str(SAMPLE.parent))
        assert "".join(m.value for m in inspect.markdown).count('class="vst-judge"') == 4  # 4 stories of the first sequence
        meta = make(
            "meta",
            judgements_source="Made-up example ratings (for trying the page)",
            baselines=False,
            measure_judge_judge_endpoint=server.url,
            measure_judge_judge_served_model="judge",
        )
        assert any(s.value.startswith("Rubric judge: paraphrase consistency") for s in meta.subheader)
        assert any(t.label == "Endpoint URL" for t in meta.text_input)
        rated = len(server.requests)
        meta.button(key="measure_judge").click().run()
        assert not meta.exception, meta.exception
        assert not any("not available" in w.value for w in meta.warning), [w.value for w in meta.warning]
        pairwise = [b for b in server.requests[rated:] if "Story 1:" in json.dumps(b["messages"])]
        assert len(pairwise) == 48  # 12 pairs of the sample's two sequences, 2 questions, both orders
    bias = next(d.value for d in meta.dataframe if "bias" in d.value.columns and "position" in set(d.value["bias"]))
    assert int(bias[(bias["measure"] == "follows position") & (bias["scope"] == "all questions")]["n"].iloc[0]) == 24


@pytest.mark.slow
def test_judge_bias_asks_the_served_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(lambda body: completion(synthetic_logprobs(body))) as server:
        args = ["judge-bias", str(SAMPLE), "--judge-endpoint", server.url, "--judge-served-model", "judge", "--no-ratings"]
        assert main([*args, "--cache-dir", str(tmp_path)]) == 0
        assert len(server.requests) == 48  # 12 pairs, 2 questions, both orders
    captured = capsys.readouterr()
    assert "follows position" in captured.out and "served:judge@unreported" in captured.err


def dripped_request(head: bytes, slow: bytes, pause: float) -> float:
    """Seconds a 1 s-timeout request took from a server on 127.0.0.1 that sends ``head`` at once,
    then ``slow`` one byte every ``pause`` seconds (never a read timeout); it must have failed on
    the timeout."""
    import threading
    import time

    from vst_core.metrics.judge.served import JudgeServerError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(head)
            for byte in slow:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(pause)

    worker = threading.Thread(target=drip, daemon=True)
    worker.start()
    judge = JudgeServer(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "judge", timeout=1.0, retries=0)
    start = time.monotonic()
    with pytest.raises(JudgeServerError, match="within 1s"):
        judge._request("POST", "/chat/completions", {"model": "judge"})
    took = time.monotonic() - start
    stop.set()
    judge.close()
    listener.close()
    return took


@pytest.mark.slow  # waits out a timeout: kept out of the fast tier
def test_a_server_that_drips_its_answer_is_cut_off_at_the_timeout() -> None:
    """``--judge-timeout`` bounds the whole request: a server sending one byte every 0.2 s (never a
    read timeout) is cut off once the request has taken its seconds, not when it stops dripping."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    took = dripped_request(head, b" " * 100, 0.2)  # 20 s of one byte at a time
    assert took < 6, took  # the old code waited as long as the server dripped (20 s here)


@pytest.mark.slow  # waits out a timeout: kept out of the fast tier
@pytest.mark.parametrize("part", ["status line", "headers"])
def test_a_server_that_drips_its_status_line_or_headers_is_cut_off_at_the_timeout(part: str) -> None:
    """The deadline holds before the answer's headers have ended too: every socket read of the
    request is cut to what is left of its seconds."""
    head = b"HTTP/1.1 200 OK\r\n" if part == "headers" else b""
    slow = b"HTTP/1.1 200 OK\r\n" if part == "status line" else b"X-Padding: " + b"a" * 200
    took = dripped_request(head, slow, 0.1)
    assert took < 3, took  # a read timeout alone waits as long as the server drips (2-20 s here)


@pytest.mark.parametrize("status", [400, 500, 401])
def test_a_server_that_echoes_the_key_leaves_it_in_no_error_or_record(status: int, tmp_path: Path) -> None:
    from vst_core.metrics.judge.served import JudgeServerError

    key = "sk-echoed-0123456789abcdef"
    echo = json.dumps({"error": {"message": f"invalid request from Bearer {key} (key {key[:-3]}…)" + " " * 300 + key}})
    story_set = read_story_set(two_stories(tmp_path))
    with ChatServer(lambda body: Reply(status, echo.encode())) as server:
        judge = JudgeServer(server.url, "judge", key=key, retries=0, backoff=0.0)
        with pytest.raises(JudgeServerError) as raised:
            judge._request("POST", "/chat/completions", {"model": "judge"})
        found = judge_records(list(story_set), Settings(metrics=("judge",)), judge, load_rubric(), JudgeCache(), story_set.root)
    assert key not in str(raised.value) and "[key]" in str(raised.value)
    assert all(key not in str(v) and key[:12] not in str(v) for v in found.values())


def test_a_key_with_a_line_break_is_refused_without_printing_it() -> None:
    from vst_core.models.hub import ModelLoadError

    with pytest.raises(ModelLoadError) as raised:
        JudgeServer("http://127.0.0.1:9/v1", "judge", key="sk-abc\ndef")
    assert "sk-abc" not in str(raised.value)


def test_a_compressed_or_overflowing_answer_is_its_storys_reason(tmp_path: Path) -> None:
    """A gzip answer (it could inflate far past the size cap) and a 401-digit log-probability are
    each one story's error with its reason, never a traceback or a run that stops."""
    import gzip

    from vst_core.metrics.judge.served import JudgeServerError

    answer = completion(synthetic_logprobs({"messages": []})).body
    squeezed = Reply(200, gzip.compress(answer), (("content-encoding", "gzip"), ("content-type", "application/json")))
    with ChatServer(lambda body: squeezed) as server:
        judge = JudgeServer(server.url, "judge", retries=0)
        with pytest.raises(JudgeServerError, match="compressed its answer"):
            judge._request("POST", "/chat/completions", {"model": "judge"})
    huge = {"choices": [{"logprobs": {"content": [{"token": "4", "logprob": -(10**400), "top_logprobs": []}]}}]}
    with pytest.raises(JudgeServerError, match="log-probability"):
        label_logprobs(huge, ["1", "2", "3", "4", "5"])


def test_a_sent_rating_token_below_the_absent_value_still_outweighs_the_labels_never_sent() -> None:
    """A label the server sent with a log-probability below -1e30 (the absent labels' value) keeps
    a floor above it: the labels it never sent get none of the mass."""
    from vst_core.metrics.judge.served import ABSENT, PRESENT_FLOOR, label_logprobs

    answer = json.loads(completion([("4", -1e300), ("3", -1e35)]).body)
    values = label_logprobs(answer, ["1", "2", "3", "4", "5"])
    assert values == [ABSENT, ABSENT, PRESENT_FLOOR, PRESENT_FLOOR, ABSENT]
    weights = np.exp(np.array(values) - max(values))
    assert weights[[0, 1, 4]].sum() == 0 and weights[[2, 3]].sum() == 2


def test_the_same_token_listed_twice_with_one_value_and_a_dated_snapshot_are_accepted() -> None:
    from vst_core.metrics.judge.served import answering_model, label_logprobs

    answer = json.loads(completion([("4", -0.2), ("3", -2.0), ("4", -0.2)], model="gpt-4o-2024-08-06").body)
    assert label_logprobs(answer, ["3", "4"]) == [-2.0, -0.2]
    assert answering_model(answer, "gpt-4o") is None
    assert answering_model(answer, "gpt-4") is not None  # gpt-4o is another model than gpt-4
