"""Vrank: pairs from judgement files, the grouped split, training on a VHED-layout file with a tiny
BERT, resuming, the card against its saved predictions, and scoring a story set with the model."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import WORDS
from vst_core.analysis.meta_eval.reader import read_judgements
from vst_core.learned.card import held_out_table, read_card, wilson
from vst_core.learned.pairs import RankedPair, examples, grouped_split, pairs_of, random_split, stories_of, vhed_texts
from vst_core.metrics.vrank.ranking import story_margins

VHED_COLUMNS = [
    "sent1", "sent2", "label", "story_id", "model_base", "model_comp", "agreement",
    "img_seq", "avg_rank_base", "avg_rank_comp", "order", "rank_norm",
]  # fmt: skip
SAMPLE = Path(__file__).resolve().parents[1] / "assets" / "sample" / "stories.jsonl"


def _story(rng: random.Random, marker: str) -> str:
    """Five short sentences of the tiny vocabulary; ``marker`` appears in most of them."""
    filler = [w for w in WORDS if w.isalpha() and w not in ("big", "small")]
    sentences = []
    for _ in range(5):
        words = rng.sample(filler, 4)
        if rng.random() < 0.8:
            words.insert(rng.randrange(5), marker)
        sentences.append(" ".join(words) + " .")
    return " ".join(sentences)


def write_vhed(path: Path, sequences: int = 40, seed: int = 3) -> Path:
    """A VHED-layout CSV whose better story is decidable from the text: three systems per image
    sequence, 'big' stories ranked first, then 'mixed', then 'small' ones; every two of them a row."""
    rng = random.Random(seed)
    rows = []
    for k in range(sequences):
        photos = [str(1000 * k + i) for i in range(5)]
        stories = {
            "m-big": (_story(rng, "big"), 1.4),
            "m-mix": (_story(rng, rng.choice(["big", "small"])), 2.0),
            "m-small": (_story(rng, "small"), 2.6),
        }
        names = list(stories)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                (ta, ra), (tb, rb) = stories[a], stories[b]
                rows.append(
                    {
                        "sent1": ta, "sent2": tb, "label": rb - ra, "story_id": f"s{k}", "model_base": a, "model_comp": b,
                        "agreement": rng.choice([3, 4, 5]), "img_seq": str(photos), "avg_rank_base": ra,
                        "avg_rank_comp": rb, "order": 5, "rank_norm": rb - ra,
                    }
                )  # fmt: skip
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=VHED_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


# --------------------------------------------------------------------------- fast: pairs, split, margins, card


def test_vhed_pairs_carry_their_texts(tmp_path: Path) -> None:
    path = write_vhed(tmp_path / "VHED.csv", sequences=4)
    pairs, problems = pairs_of(read_judgements(path), vhed_texts(path))
    assert len(pairs) == 12 and not problems
    first = pairs[0]
    assert first.better == "s0:m-big" and first.worse == "s0:m-mix" and "big" in first.better_text
    assert first.gap == pytest.approx(0.6)


def test_grouped_split_keeps_every_sequence_on_one_side() -> None:
    rng = random.Random(0)
    pairs = [RankedPair(f"q{rng.randrange(30)}", f"a{i}", f"b{i}", "x", "y", 1.0) for i in range(200)]
    for seed in range(5):
        train, held = grouped_split(pairs, 0.2, seed)
        assert len(train) + len(held) == len(pairs) and held
        assert not {p.sequence_id for p in train} & {p.sequence_id for p in held}
    # a pair split can put the same sequence on both sides, which is what the grouped split prevents
    train, held = random_split(pairs, 0.2, 1)
    assert {p.sequence_id for p in train} & {p.sequence_id for p in held}


def test_swapped_examples_balance_the_signs() -> None:
    pair = RankedPair("q", "a", "b", "A text", "B text", 0.5)
    assert examples([pair]) == [("A text", "B text", 0.5), ("B text", "A text", -0.5)]
    assert examples([pair], swap=False) == [("A text", "B text", 0.5)]


def test_story_margins_are_antisymmetric_means() -> None:
    f = {("a", "b"): 1.0, ("b", "a"): -1.0, ("a", "c"): 0.2, ("c", "a"): 0.4, ("b", "c"): 0.0, ("c", "b"): 0.0}
    scores, margins = story_margins(["a", "b", "c"], f)
    assert margins["a"]["c"] == pytest.approx(-0.1) and margins["c"]["a"] == pytest.approx(0.1)
    assert scores["a"] == pytest.approx((1.0 - 0.1) / 2)
    assert scores["b"] == pytest.approx((-1.0 + 0.0) / 2)
    alone, _ = story_margins(["z"], {})
    assert alone == {"z": None}


def test_held_out_table_counts_and_intervals() -> None:
    frame = pd.DataFrame(
        {
            "sequence_id": list("aabbcc"),
            "better": list("123456"),
            "worse": list("abcdef"),
            "gap": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "agreement": [3, 3, 4, 4, 5, 5],
            "forward": [1, -1, 1, 1, 0, 1],
            "backward": [0, 0, 0, 0, 0, 0],
            "margin": [0.5, -0.5, 0.5, 0.5, 0.0, 0.5],
        }
    )
    table = held_out_table(frame)
    overall = table[table["group"] == "all"].iloc[0]
    assert (overall["n"], overall["correct"], overall["ties"]) == (6, 4, 1)
    assert (overall["low"], overall["high"]) == pytest.approx(wilson(4, 6))
    assert table[table["group"] == "agreement"]["n"].tolist() == [2, 2, 2]
    assert table[table["group"] == "gap"]["n"].sum() == 6


# --------------------------------------------------------------------------- slow: training with a tiny BERT


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT encoder folder with a WordPiece tokenizer over the test vocabulary (built
    with the ``tokenizers`` library: transformers 5 ignores a vocab file given to BertTokenizer)."""
    import torch
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS)]
    tok = Tokenizer(WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    folder = tmp_path_factory.mktemp("encoder")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"
    )
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=96,
    )  # fmt: skip
    BertModel(config).save_pretrained(folder)
    return folder


def _train(tmp_path: Path, tiny_encoder: Path, out: Path, *extra: str) -> int:
    from vst_core.cli import main

    data = write_vhed(tmp_path / "VHED.csv")
    return main(
        ["train-vrank", str(data), "--out", str(out), "--base", str(tiny_encoder), "--lr", "3e-3", "--batch-size", "16",
         "--max-length", "96", "--held-out", "0.25", "--no-progress", *extra]
    )  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny_encoder: Path) -> Path:
    work = tmp_path_factory.mktemp("vrank")
    out = work / "model"
    assert _train(work, tiny_encoder, out, "--epochs", "10") == 0
    return out


@pytest.mark.slow  # trains a tiny BERT for 10 epochs (about 10 s)
def test_vrank_learns_decidable_pairs_on_held_out_sequences(trained: Path) -> None:
    card = read_card(trained)
    overall = next(r for r in card["held_out"] if r["group"] == "all")
    assert overall["n"] >= 20 and overall["accuracy"] >= 0.75, overall  # chance is 0.5
    # no held-out story was trained on: the split is by image sequence
    predictions = pd.read_csv(trained / "predictions.csv", dtype={"sequence_id": str})
    assert set(card["split"]["held_out_sequences"]) == set(predictions["sequence_id"])
    assert not set(predictions["better"]) & set(card["train_stories"])
    assert not set(predictions["worse"]) & set(card["train_stories"])
    # the card's figures are recomputed from the saved predictions
    recomputed = json.loads(held_out_table(predictions).to_json(orient="records"))
    assert recomputed == card["held_out"]
    assert card["data_digest"] and card["recipe"]["seed"] == 7777 and len(card["epochs_run"]) == 10
    assert not (trained / "checkpoint").exists()


@pytest.mark.slow  # trains a tiny BERT twice
def test_vrank_training_resumes_from_its_checkpoint(tmp_path: Path, tiny_encoder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vst_core.metrics.vrank import command

    out = tmp_path / "model"
    seen: list[str] = []

    def stop_after_first_epoch(message: str) -> None:
        seen.append(message)
        if message.startswith("epoch 2:"):
            raise KeyboardInterrupt

    monkeypatch.setattr(command, "note", stop_after_first_epoch)
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path, tiny_encoder, out, "--epochs", "3")
    assert (out / "checkpoint" / "state.pt").is_file()
    seen.clear()
    monkeypatch.setattr(command, "note", seen.append)
    assert _train(tmp_path, tiny_encoder, out, "--epochs", "3") == 0
    assert any(m.startswith("resuming after epoch 1") for m in seen), seen
    assert [e["epoch"] for e in read_card(out)["epochs_run"]] == [1, 2, 3]


@pytest.mark.slow  # loads the trained tiny ranker and scores the sample
def test_vrank_scores_a_story_set_pair_by_pair(trained: Path, tmp_path: Path) -> None:
    from vst_core.cli import main
    from vst_core.data.scores_io import load_records

    out = tmp_path / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "vrank,redundancy", "--vrank-model", str(trained), "--out", str(out)]) == 0
    records, _ = load_records(out)
    assert records and all("vrank" in r.metrics for r in records)
    by_key = {(r.system, r.story_id): r.metrics["vrank"] for r in records}
    for (system, story), scores in by_key.items():
        assert scores.model.startswith("vrank:model@")
        for pref in scores.preferences:
            other = by_key[(pref.system, pref.story_id)]
            back = next(p for p in other.preferences if (p.system, p.story_id) == (system, story))
            assert back.margin == pytest.approx(-pref.margin)
        assert scores.score == pytest.approx(sum(p.margin for p in scores.preferences) / len(scores.preferences))
    assert records[0].signature["settings"]["vrank_weights"].startswith("vrank:model@")


@pytest.mark.slow  # the CLI's refusal without a model folder loads nothing
def test_vrank_without_a_model_folder_exits_4(tmp_path: Path) -> None:
    from vst_core.cli import main

    out = tmp_path / "s.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "vrank", "--out", str(out)]) == 4
    assert stories_of([]) == set()


# --------------------------------------------------------------------------- meta-evaluation: margins and held-out pairs


def test_pair_margins_judge_a_pairwise_metric_instead_of_its_scores() -> None:
    from vst_core.analysis.meta_eval.stats import pairwise_accuracy, pairwise_table

    pairs = pd.DataFrame(
        {
            "sequence_id": ["q", "q", "q"],
            "better": ["a", "a", "b"],
            "worse": ["b", "c", "c"],
            "gap": [1.0, 2.0, 1.0],
            "agreement": [5, 4, 4],
        }
    )
    scores = pd.Series({"a": 0.0, "b": 1.0, "c": 2.0})  # by the scores every pair is wrong
    margins = {("a", "b"): 0.3, ("c", "a"): -0.2, ("b", "c"): 0.0}  # a > b, a > c (given reversed), a tie
    assert pairwise_accuracy(pairs, scores)["correct"] == 0
    found = pairwise_accuracy(pairs, scores, margins)
    assert (found["n"], found["correct"], found["ties"]) == (3, 2, 1)
    table = pairwise_table(pairs, pd.DataFrame({"Vrank": scores}), ["Vrank"], margins={"Vrank": margins})
    assert table.set_index("subset").loc["all pairs", "correct"] == 2


def test_meta_eval_reads_vrank_margins_and_holds_out_its_training_stories() -> None:
    from vst_core.analysis.meta_eval import read_judgements, run_meta_eval
    from vst_core.analysis.meta_eval.settings import MetaSettings
    from vst_core.metrics.rovist_nr.record import RedundancyScores
    from vst_core.metrics.vrank import Preference, VrankScores
    from vst_core.records import StoryScores

    def record(story: str, score: float, prefs: tuple[Preference, ...]) -> StoryScores:
        nr = RedundancyScores(score=score, inter=0.0, intra=0.0, variant="paper", n=4)
        return StoryScores(story, "q", "sys-" + story, ("A.",), metrics={"redundancy": nr, "vrank": VrankScores(score, prefs)})

    records = [
        record("a", 0.1, (Preference("sys-b", "b", 0.4), Preference("sys-c", "c", -0.1))),
        record("b", 0.9, (Preference("sys-a", "a", -0.4), Preference("sys-c", "c", 0.2))),
        record("c", 0.5, (Preference("sys-a", "a", 0.1), Preference("sys-b", "b", -0.2))),
    ]
    csv_text = "sequence_id,story_a,story_b,rank_a,rank_b\nq,a,b,1,2\nq,a,c,1,3\nq,b,c,2,3\n"
    judgements = read_judgements(csv_text.encode())
    report = run_meta_eval(records, judgements, MetaSettings(resamples=0, baselines=False), trained_on={"Vrank": ["a"]})
    overall = report.pairwise[(report.pairwise["subset"] == "all pairs")].set_index("metric")
    # by its margins Vrank gets a>b and b>c right and a>c wrong; by its scores it would get only b>c
    assert overall.loc["Vrank", "correct"] == 2 and overall.loc["NR", "correct"] == 1
    held = report.held_out[report.held_out["subset"] == "all pairs"].set_index("metric")
    assert held.loc["Vrank", "n"] == 1 and held.loc["NR", "n"] == 1  # only b>c has no training story
    assert any("Vrank was trained on stories of 2 of the 3 judged pairs" in p for p in report.problems)


# --------------------------------------------------------------------------- the dashboard


@pytest.mark.slow  # AppTest of the Inspect and Agreement pages on a Vrank-scored file
def test_dashboard_shows_vrank_evidence_and_its_held_out_workbench(
    trained: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    from vst_core.cli import main

    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))
    out = tmp_path_factory.mktemp("vrank-scores") / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "vrank,redundancy", "--vrank-model", str(trained), "--out", str(out)]) == 0
    widgets = {"source": "Scores JSONL (no model needed)", "scores_path": str(out), "scores_images": str(SAMPLE.parent)}
    app = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES["inspect"])
    for key, value in widgets.items():
        app.session_state[key] = value
    app.run()
    assert not app.exception, app.exception
    assert any(e.label.startswith("Vrank: preferred to") for e in app.expander)
    html = "".join(m.value for m in app.markdown)
    assert 'class="vst-vrank"' in html and "mean margin" in html
    pairs = (
        b"sequence_id,story_a,story_b,rank_a,rank_b\n"
        b"space-trip,space-grounded,space-generic,1,2\nhome-day,home-ref,home-generic,1,2\n"
    )
    meta = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES["meta"])
    for key, value in {
        **widgets,
        "judgements_source": "Upload a judgements CSV",
        "baselines": False,
        "last_judgements": pairs,
    }.items():
        meta.session_state[key] = value
    meta.session_state["meta_vrank_model"] = str(trained)
    meta.run()
    assert not meta.exception, meta.exception
    assert any(s.value.startswith("Learned metrics") for s in meta.subheader)
    assert any("Vrank" in m.value and "trained on" in m.value for m in meta.markdown)


def test_ratings_become_pairs_within_each_sequence_with_the_story_texts(tmp_path: Path) -> None:
    """A long ratings file plus a story set (the VIST-Edit route): every two stories of a sequence
    rated differently make a pair, the better one rated higher; ids several systems share are keyed
    ``id (system)``; a story without text is left out and said."""
    from vst_core.data import read_story_set
    from vst_core.learned.pairs import story_texts

    stories = tmp_path / "stories.jsonl"
    rows = [
        ("1", "q1", "human", "We went to the park. The dog ran."),
        ("2", "q1", "model", "The the the. The the the."),
        ("3", "q1", "other", "A day out. We came home."),
        ("4", "q2", "human", "The beach was warm. We swam."),
        ("5", "q2", "model", "Beach beach beach."),
    ]
    stories.write_text(
        "".join(json.dumps({"story_id": i, "sequence_id": q, "system": s, "text": t}) + "\n" for i, q, s, t in rows)
    )
    ratings = "story_id,rater,aspect,value,sequence_id\n" + "".join(
        f"{i},r{k},overall,{v},{q}\n"
        for i, q, v in (("1", "q1", 5), ("2", "q1", 1), ("3", "q1", 3), ("4", "q2", 4), ("5", "q2", 2), ("6", "q2", 1))
        for k in (1, 2)
    )
    judgements = read_judgements(ratings.encode())
    story_set = read_story_set(stories, check_images=False)
    sequences = {s.story_id: s.sequence_id for s in story_set}
    pairs, problems = pairs_of(judgements, story_texts(story_set), sequences)
    assert {(p.better, p.worse) for p in pairs} == {("1", "2"), ("1", "3"), ("3", "2"), ("4", "5")}
    assert all(p.gap > 0 and p.better_text and p.worse_text for p in pairs)
    assert any("1 rated stor(ies) with no image sequence" in p for p in problems)  # story 6 is rated, not in the set


@pytest.mark.slow  # AppTest: the bundled sample scored with Vrank inside the dashboard
def test_the_dashboard_scores_the_sample_with_a_vrank_folder(
    trained: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    from vst_core.cli import main
    from vst_core.data import load_records

    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))
    app = AppTest.from_file(APP, default_timeout=120).switch_page(PAGES["dataset"])
    app.session_state["vrank_model"] = str(trained)
    app.run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value
    assert "Vrank" in table.columns and table["Vrank"].notna().all()
    # the same numbers as the command line
    out = tmp_path_factory.mktemp("vrank-cli") / "scores.jsonl"
    assert main(["score", str(SAMPLE), "--metrics", "redundancy,vrank", "--vrank-model", str(trained), "--out", str(out)]) == 0
    cli = {r.story_id: r.metrics["vrank"].score for r in load_records(out)[0] if r.metrics.get("vrank") is not None}
    shown = dict(zip(table["story"], table["Vrank"], strict=True))
    assert shown.keys() == cli.keys() and all(shown[k] == pytest.approx(cli[k], abs=1e-6) for k in cli)


def test_the_index_reads_one_metric_of_many_rows_as_its_records_do(tmp_path: Path) -> None:
    """Vrank's preferences of every row in one pass over the file equal what reading each record
    gives; a story written twice keeps its first line, as merging does; an edited file gives nothing, never wrong data."""
    from vst_core.data.index_build import build_index
    from vst_core.metrics.rovist_nr.record import RedundancyScores
    from vst_core.metrics.vrank import Preference, VrankScores
    from vst_core.records import StoryScores

    def line(story: str, system: str, margin: float) -> str:
        nr = RedundancyScores(score=0.9, inter=0.1, intra=0.1, variant="paper", n=4)
        vr = VrankScores(margin, (Preference("other", story, margin),))
        record = StoryScores(story, story, system, ("A.",), metrics={"redundancy": nr, "vrank": vr})
        return json.dumps(record.to_json()) + "\n"

    path = tmp_path / "scores.jsonl"
    path.write_text(line("1", "a", 0.1) + line("1", "b", -0.1) + line("2", "a", 0.5) + line("2", "a", 0.7))
    index = build_index([path])
    rows = list(range(len(index.table)))
    bulk = index.metric_records(rows, "vrank")
    assert bulk == {row: index.record(row)[0].metrics.get("vrank") for row in rows}
    assert bulk[index.row_of("a", "2")].score == 0.5
    assert index.metric_records(rows, "no-such-metric") == {}
    path.write_text(path.read_text().replace("0.5", "0.6"))
    assert index.metric_records(rows, "vrank") == {}


def test_a_ranker_injected_by_the_metrics_name_is_the_one_vrank_scores_with() -> None:
    """``Models(settings, vrank=ranker)``: the Vrank module takes its model from ``Models.own`` by its
    name, so a small ranker stands in for a trained folder; each story's score is its mean margin
    over the other stories of its sequence, from the ranker's verdict on every ordered pair."""
    import numpy as np

    from vst_core.api import score_stories
    from vst_core.config import Settings
    from vst_core.data import read_story_set
    from vst_core.scoring.registry import Models

    class Longer:  # prefers the longer story, by the difference in characters
        name = "longer@test"
        calls = 0

        def predict(self, pairs: list[tuple[str, str]], progress: object = None) -> np.ndarray:
            Longer.calls += 1
            return np.array([float(len(a) - len(b)) for a, b in pairs])

    stories = read_story_set(SAMPLE)
    settings = Settings(metrics=("redundancy", "vrank"), vrank_model=None)
    records = score_stories(stories, settings=settings, models=Models(settings, vrank=Longer()))
    assert Longer.calls == 1  # every pair of the set in one call
    by_sequence: dict[str, list] = {}
    for r in records:
        by_sequence.setdefault(r.sequence_id, []).append(r)
    checked = 0
    for group in by_sequence.values():
        for r in group:
            others = [o for o in group if o is not r]
            if not others:
                continue
            text = " ".join(r.sentences)
            want = np.mean([len(text) - len(" ".join(o.sentences)) for o in others])
            assert r.metrics["vrank"].score == pytest.approx(want) and r.metrics["vrank"].model == "longer@test"
            checked += 1
    assert checked >= 4
