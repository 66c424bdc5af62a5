"""The rubric judge's fast tier: G-Eval's rule against hand-computed values, pairwise position bias,
self-consistency, the rubric template, the answer cache, the record and the settings signature.
The models themselves are tested in ``test_judge_models.py`` (slow: transformers)."""

from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import pytest
import scipy.stats
from conftest import SAMPLE

from vst_core.cli import build_parser
from vst_core.cli.score import settings_from_args
from vst_core.config import Settings
from vst_core.metrics.judge import JUDGE_MODEL, JudgeAspect, JudgeScores, rule
from vst_core.metrics.judge.cache import JudgeCache, JudgeKey
from vst_core.metrics.judge.rule import (
    PairVerdict,
    combine,
    first_probability,
    paraphrase_agreement,
    position_bias,
    rating,
)
from vst_core.metrics.judge.template import REQUIRED_ASPECTS, TemplateError, load_rubric, parse_rubric
from vst_core.records import StoryScores, read_record
from vst_core.signature import signature

RUBRIC = Path(__file__).resolve().parent.parent / "vst_core" / "metrics" / "judge" / "rubric_v1.json"


def test_the_rule_module_examples_hold() -> None:
    assert doctest.testmod(rule).failed == 0


def test_g_eval_rule_on_hand_computed_probabilities() -> None:
    # p(1..5) = 0.05, 0.10, 0.20, 0.40, 0.25: score = 0.05 + 0.20 + 0.60 + 1.60 + 1.25 = 3.70
    r = rating([math.log(p) for p in (0.05, 0.10, 0.20, 0.40, 0.25)])
    assert r.distribution == pytest.approx((0.05, 0.10, 0.20, 0.40, 0.25))
    assert r.score == pytest.approx(3.70) and r.mass == pytest.approx(1.0)


def test_g_eval_rule_renormalises_over_the_five_rating_tokens() -> None:
    # the five tokens hold 0.10 of the next-token mass: p = 0.01, 0.01, 0.02, 0.04, 0.02 -> / 0.10
    r = rating([math.log(p) for p in (0.01, 0.01, 0.02, 0.04, 0.02)])
    assert r.distribution == pytest.approx((0.1, 0.1, 0.2, 0.4, 0.2))
    assert r.score == pytest.approx(1 * 0.1 + 2 * 0.1 + 3 * 0.2 + 4 * 0.4 + 5 * 0.2)  # 3.5
    assert r.mass == pytest.approx(0.10)


def test_g_eval_rule_from_raw_logits() -> None:
    # logits 0, 0, ln 2, ln 4, 0 -> softmax 1/8, 1/8, 2/8, 4/8... over 1 + 1 + 2 + 4 + 1 = 9
    r = rating([0.0, 0.0, math.log(2), math.log(4), 0.0])
    assert r.distribution == pytest.approx((1 / 9, 1 / 9, 2 / 9, 4 / 9, 1 / 9))
    assert r.score == pytest.approx((1 + 2 + 6 + 16 + 5) / 9)
    assert rating([5.0, 5.0, 5.0, 5.0, 5.0]).score == pytest.approx(3.0)  # uniform: the middle of the scale
    assert rating([0.0, -math.inf, -math.inf, -math.inf, -math.inf]).score == 1.0


def test_g_eval_rule_refuses_what_is_not_five_log_probabilities() -> None:
    with pytest.raises(ValueError, match="expected 5"):
        rating([0.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        rating([math.nan, 0.0, 0.0, 0.0, 0.0])


def test_paraphrases_are_averaged_and_their_spread_kept() -> None:
    a = rating([math.log(p) for p in (0.0 + 1e-300, 0.0 + 1e-300, 0.5, 0.5, 1e-300)])  # score 3.5
    b = rating([math.log(p) for p in (1e-300, 1e-300, 1e-300, 0.5, 0.5)])  # score 4.5
    combined = combine([a, b])
    assert combined.score == pytest.approx(4.0) and combined.spread == pytest.approx(0.5)
    assert combined.paraphrases == pytest.approx((3.5, 4.5))
    assert combined.distribution == pytest.approx((0, 0, 0.25, 0.5, 0.25), abs=1e-12)
    assert sum(k * p for k, p in zip((1, 2, 3, 4, 5), combined.distribution)) == pytest.approx(combined.score)


def test_pairwise_position_bias_by_hand() -> None:
    assert first_probability([math.log(0.6), math.log(0.2)]) == pytest.approx(0.75)
    verdicts = [
        PairVerdict(0.9, 0.1),  # a wins in both orders: follows the story, no shift
        PairVerdict(0.8, 0.7),  # first position wins twice: follows the position, shift +0.25
        PairVerdict(0.3, 0.2),  # second position wins twice: follows the position, shift -0.25
        PairVerdict(0.6, 0.6),  # first twice: shift +0.1
    ]
    bias = position_bias(verdicts)
    assert bias.pairs == 4 and bias.follows_position == 0.75 and bias.first_both == 0.5
    assert bias.mean_shift == pytest.approx((0 + 0.25 - 0.25 + 0.1) / 4)
    assert bias.mean_abs_shift == pytest.approx((0 + 0.25 + 0.25 + 0.1) / 4)
    assert verdicts[0].preference == pytest.approx(0.9) and verdicts[1].preference == pytest.approx(0.55)
    assert math.isnan(position_bias([]).follows_position)


def test_self_consistency_is_the_mean_spearman_of_paraphrase_columns() -> None:
    columns = [[3.1, 2.0, 4.5, 1.2, 3.3], [2.9, 2.5, 4.0, 1.0, 3.9], [1.0, 2.0, 3.0, 4.0, 5.0]]
    want = [scipy.stats.spearmanr(columns[i], columns[j])[0] for i, j in ((0, 1), (0, 2), (1, 2))]
    assert paraphrase_agreement(columns) == pytest.approx(sum(want) / 3)
    assert rule.spearman([1.0, 1.0, 2.0], [3.0, 1.0, 1.0]) == pytest.approx(scipy.stats.spearmanr([1, 1, 2], [3, 1, 1])[0])
    assert math.isnan(paraphrase_agreement([[1.0, 1.0], [2.0, 3.0]]))


# ------------------------------------------------------------------------ rubric


def test_builtin_rubric_asks_every_aspect_in_two_or_more_paraphrases() -> None:
    rubric = load_rubric()
    assert set(REQUIRED_ASPECTS) <= set(rubric.aspects)
    assert all(len(p) >= 2 for p in rubric.aspects.values()) and len(rubric.pair_questions) >= 2
    assert (
        rubric.id.startswith("vst-rubric-v1@") and rubric.digest == __import__("hashlib").sha256(RUBRIC.read_bytes()).hexdigest()
    )
    prompt = rubric.prompt(["We met {question} friends.", "Then we ate."], "coherence", 1, ("a.jpg", "b.jpg"))
    assert "1. We met {question} friends.\n2. Then we ate." in prompt.user  # a story's braces are text
    assert rubric.aspects["coherence"][1] in prompt.user and "shown above" in prompt.user
    assert prompt.prefix == "Rating: " and prompt.images == ("a.jpg", "b.jpg")
    pair = rubric.pair_prompt(["A."], ["B."], 0)
    assert pair.user.index("Story 1:\n1. A.") < pair.user.index("Story 2:\n1. B.") and "shown above" not in pair.user


def test_a_users_template_is_checked_and_named_by_its_digest(tmp_path: Path) -> None:
    data = json.loads(RUBRIC.read_text())
    data["aspects"]["overall"] = data["aspects"]["overall"][:1]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(TemplateError, match="at least 2 paraphrases"):
        load_rubric(bad)
    with pytest.raises(TemplateError, match="not a JSON"):
        parse_rubric(b"aspects: [", "x.yaml")
    del data["aspects"]["grounding"]
    with pytest.raises(TemplateError, match="grounding missing"):
        parse_rubric(json.dumps(data).encode(), "y.json")
    with pytest.raises(TemplateError, match="No such file"):
        load_rubric(tmp_path / "absent.json")


def test_a_deeply_nested_template_is_refused_before_parsing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vst_core.cli import main
    from vst_core.metrics.judge.template import json_depth

    assert json_depth(b'{"a": [1, {"b": "[[[\\"]]"}]}') == 3
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TemplateError, match="nested 100000 levels deep"):
        load_rubric(nested)
    out = tmp_path / "out.jsonl"
    code = main(["score", str(SAMPLE), "--out", str(out), "--metrics", "judge", "--judge-template", str(nested), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "levels deep" in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "out.jsonl.lock").exists()  # nothing written, nothing left behind


@pytest.mark.slow  # the weights id looks in the hub cache through huggingface_hub (about 1 s to import)
def test_the_template_digest_and_judge_settings_are_in_the_signature(tmp_path: Path) -> None:
    own = tmp_path / "mine.json"
    own.write_bytes(RUBRIC.read_bytes().replace(b"strict evaluator", b"lenient evaluator"))
    base = signature(Settings(metrics=("judge",)))
    assert base["settings"]["judge_template"] == load_rubric().id
    assert base["settings"]["judge_weights"].startswith(JUDGE_MODEL + "@")
    other = signature(Settings(metrics=("judge",), judge_template=str(own)))
    assert other["settings"]["judge_template"].startswith("vst-rubric-v1@") and other["id"] != base["id"]
    assert signature(Settings(metrics=("judge",), judge_images=True))["id"] != base["id"]
    assert signature(Settings(metrics=("judge",), judge_rationale=True))["id"] == base["id"]  # shown text, not scores
    assert "judge_weights" not in signature(Settings())["settings"]


def test_cli_judge_flags_become_settings() -> None:
    args = build_parser().parse_args(
        [
            "score",
            "x.jsonl",
            "--out",
            "o.jsonl",
            "--metrics",
            "judge",
            "--judge-template",
            "r.json",
            "--judge-images",
            "--judge-rationale",
        ]
    )
    s = settings_from_args(args)
    assert (
        s.metrics == ("judge",)
        and s.option("judge_template") == "r.json"
        and s.option("judge_images")
        and s.option("judge_rationale")
    )
    assert s.option("judge_model") == JUDGE_MODEL


# ------------------------------------------------------------------------ cache and record


def test_cache_keys_name_everything_an_answer_depends_on(tmp_path: Path) -> None:
    key = JudgeKey("rating", "t", "m@1", "story", "overall", 0, False)
    variants = [
        JudgeKey("pair", "t", "m@1", "story", "overall", 0, False),
        JudgeKey("rating", "t2", "m@1", "story", "overall", 0, False),
        JudgeKey("rating", "t", "m@2", "story", "overall", 0, False),
        JudgeKey("rating", "t", "m@1", "story2", "overall", 0, False),
        JudgeKey("rating", "t", "m@1", "story", "coherence", 0, False),
        JudgeKey("rating", "t", "m@1", "story", "overall", 1, False),
        JudgeKey("rating", "t", "m@1", "story", "overall", 0, True),
    ]
    assert len({key.digest(), *(v.digest() for v in variants)}) == 8
    cache = JudgeCache(tmp_path / "judge.sqlite")
    cache.put_many({key.digest(): [-1.0, -2.0, -3.0, -4.0, -5.0]})
    again = JudgeCache(tmp_path / "judge.sqlite")
    assert again.get_many([key.digest(), variants[0].digest()]) == {key.digest(): [-1.0, -2.0, -3.0, -4.0, -5.0]}
    assert (again.hits, again.misses, again.size()) == (1, 1, 1)


def test_judge_record_round_trips_through_json() -> None:
    aspect = JudgeAspect("overall", 3.7, (0.05, 0.1, 0.2, 0.4, 0.25), (3.6, 3.8), 0.1, 0.42, True)
    judge = JudgeScores(
        3.7,
        (aspect,),
        overall=3.7,
        without_images=(JudgeAspect("overall", 3.1, (0.2, 0.2, 0.2, 0.2, 0.2), (3.0, 3.2)),),
        rationale="It fits the photos.",
        model="Qwen/Qwen2.5-0.5B-Instruct@abc",
        template="vst-rubric-v1@def",
    )
    record = StoryScores("s", "q", "m", ("A.",), metrics={"judge": judge})
    back, problems = read_record(json.loads(json.dumps(record.to_json(), allow_nan=False)))
    assert problems == [] and back == record and back.metrics.get("judge") is not None
    assert (
        back.metrics["judge"].aspect("overall") == aspect and back.metrics["judge"].aspect("overall", images=False).score == 3.1
    )  # type: ignore[attr-defined]
    from vst_core.records import field_by_column

    assert field_by_column()["judge overall"].value(back) == 3.7 and field_by_column()["judge grounding"].value(back) is None
