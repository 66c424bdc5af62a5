"""COSMic's recipe: the RaCCoon/COIN TSV reader, the image lookup and references, the trainer
through `vst train-cosmic` on a generated TSV with a tiny BERT and CLIP, and scoring the sample."""

from __future__ import annotations

import csv
import json
import random
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SAMPLE, WORDS, clip_args, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from vst_core.cli import EXIT_INPUT, EXIT_WEIGHTS, main
from vst_core.data import Story, read_story_set
from vst_core.hashing import file_digest
from vst_core.metrics.cosmic.examples import (
    LABELS,
    TSV_COLUMNS,
    CosmicDataError,
    cosmic_examples,
    find_images,
    read_cosmic_tsv,
    split_by_image,
    url_file_name,
)
from vst_core.metrics.cosmic.rater import load_cosmic
from vst_core.models.hub import ModelLoadError, WeightsUnavailableError


def tsv_row(row_id: int, url: str, caption: str, *boxes: str, other: str = "") -> dict[str, str]:
    """A row of the RaCCoon layout with the named boxes ticked."""
    row = dict.fromkeys(TSV_COLUMNS, "0")
    row.update(id_annotation=str(row_id), id_annotator="3", caption=caption, url=url, other=other, source=f"True_{row_id}")
    row.update(dict.fromkeys(boxes, "1"))
    return row


def write_tsv(path: Path, rows: list[dict[str, str]]) -> Path:
    lines = ["\t".join(TSV_COLUMNS)] + ["\t".join(r[c] for c in TSV_COLUMNS) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- the reader (fast)


def test_reader_maps_boxes_to_labels_and_ratings(tmp_path: Path) -> None:
    rows = [
        tsv_row(1, "http://h/a.jpg", "a dog on the water", "cb1", "cbVisible4"),
        tsv_row(2, "http://h/a.jpg", "the best day", "cb0", "cb1", "cbMetaGood", "cbVisible3", "cbHow"),
        tsv_row(3, "http://h/b.jpg", "Please write the caption.", "cb6", other="A cat on a red ball"),
        tsv_row(4, "http://h/b.jpg", "a cat", "cb1", "cbVisible1", "cbVisible5", "cb4", "cbStory2"),
        tsv_row(5, "http://h/b.jpg", "a cat", "cb1", "cbBrokenImg"),
    ]
    path = write_tsv(tmp_path / "r.tsv", rows)
    with path.open("a", encoding="utf-8") as fh:
        fh.write("7\t3\ttoo few fields\n")
        fh.write("\t".join(tsv_row(8, "http://h/c.jpg", "x", "cb1")[c] if c != "cb1" else "yes" for c in TSV_COLUMNS) + "\n")
    got, problems = read_cosmic_tsv(path)
    assert [r.row_id for r in got] == ["1", "2", "3", "4", "5"]
    assert got[0].labels == ("Visible",) and got[0].ratings == (("Visible", 0.75),)
    assert got[1].labels == ("Visible", "Meta") and dict(got[1].ratings) == {"Visible": 0.5, "Meta": 1.0}
    assert got[1].best == ("Meta", 1.0)
    assert got[2].written and got[2].caption == "A cat on a red ball" and not got[2].ratings
    assert dict(got[3].ratings) == {"Story": 0.25}  # two Visible ratings: that rating is left out
    assert got[4].broken
    messages = [(p.line, p.message) for p in problems]
    assert (5, "2 ratings for Visible; that rating left out") in messages
    assert any(line == 7 and "fields" in m for line, m in messages)
    assert any(line == 8 and "cb1" in m for line, m in messages)


def test_reader_refuses_other_files(tmp_path: Path) -> None:
    (tmp_path / "other.tsv").write_text("a\tb\n1\t2\n")
    (tmp_path / "binary.tsv").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "empty.tsv").write_text("")
    for name in ("other.tsv", "binary.tsv", "empty.tsv", "absent.tsv", "."):
        with pytest.raises(CosmicDataError):
            read_cosmic_tsv(tmp_path / name)


FIELD = st.text(st.characters(codec="utf-8"), max_size=12)
HOSTILE_ROW = st.lists(st.one_of(st.sampled_from(["0", "1", "", "2", "-1", " 1 "]), FIELD), min_size=0, max_size=40).map(
    "\t".join
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.one_of(st.just("\t".join(TSV_COLUMNS)), FIELD, st.lists(st.sampled_from(TSV_COLUMNS), max_size=40).map("\t".join)),
    body=st.lists(HOSTILE_ROW, max_size=8),
    raw=st.one_of(st.none(), st.binary(max_size=200)),
    ending=st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\u2028"]),
)
def test_reader_on_hostile_input_raises_only_its_own_error(
    tmp_path: Path, header: str, body: list[str], raw: bytes | None, ending: str
) -> None:
    path = tmp_path / "hostile.tsv"
    path.write_bytes(raw if raw is not None else ending.join([header, *body]).encode("utf-8", "surrogatepass"))
    try:
        rows, problems = read_cosmic_tsv(path)
    except CosmicDataError:
        return
    for row in rows:
        assert row.url and row.caption
        assert set(row.labels) <= set(LABELS)
        assert all(0.0 <= r <= 1.0 for _, r in row.ratings)
    assert all(p.line is not None for p in problems)


def test_images_by_row_id_or_url_name_and_references(tmp_path: Path) -> None:
    rows = [
        tsv_row(10, "http://h/x/pic%201.jpg?itok=1", "a dog", "cb1", "cbVisible5"),
        tsv_row(11, "http://h/x/pic%201.jpg?itok=1", "a cat", "cb1", "cbVisible1"),
        tsv_row(12, "http://h/y/1.jpg", "a dog", "cb1", "cbVisible5"),  # 1.jpg is ambiguous: by row id only
        tsv_row(13, "http://h/z/1.jpg", "a cat", "cb1", "cbVisible5"),
        tsv_row(14, "http://h/z/1.jpg", "Please write the caption.", "cb6", other="two cats"),
        tsv_row(15, "http://h/w/alone.jpg", "a sun", "cb4", "cbStory3"),
    ]
    got, _ = read_cosmic_tsv(write_tsv(tmp_path / "r.tsv", rows))
    images = tmp_path / "images"
    images.mkdir()
    for name in ("pic 1.jpg", "1.jpg", "13.png", "alone.jpg"):
        Image.new("RGB", (8, 8), "red").save(images / name)
    (images / "broken.jpg").write_bytes(b"not an image")
    assert url_file_name("http://h/x/pic%201.jpg?itok=1") == "pic 1.jpg"
    lookup = find_images(got, images)
    assert {got[i].row_id: p.name for i, p in lookup.paths.items()} == {
        "10": "pic 1.jpg",
        "11": "pic 1.jpg",
        "13": "13.png",
        "15": "alone.jpg",
    }
    assert (lookup.found, lookup.missing, lookup.ambiguous) == (3, 1, 2)
    examples_, counts = cosmic_examples(got, lookup.paths)
    by_candidate = {(e.url, e.candidate): e for e in examples_}
    assert by_candidate[("http://h/x/pic%201.jpg?itok=1", "a dog")].reference == "a cat"
    written = by_candidate[("http://h/z/1.jpg", "a cat")]
    assert (written.reference, written.reference_label, written.rating) == ("two cats", "Visible", 1.0)
    assert (counts.no_image, counts.no_reference, counts.examples) == (1, 1, 3)
    train, held = split_by_image(examples_ * 3, 0.5, seed=1)
    assert held and train and not {e.url for e in train} & {e.url for e in held}
    with pytest.raises(CosmicDataError):
        find_images(got, tmp_path / "absent")


def test_load_refuses_missing_and_foreign_folders(tmp_path: Path) -> None:
    with pytest.raises(WeightsUnavailableError, match="train-cosmic"):
        load_cosmic(None)
    with pytest.raises(WeightsUnavailableError, match="train-cosmic"):
        load_cosmic(str(tmp_path / "absent"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "cosmic.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="not written by vst train-cosmic"):
        load_cosmic(str(tmp_path))


def test_cli_bad_input_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\n")
    assert main(["train-cosmic", str(bad), "--images", str(tmp_path), "--out", str(tmp_path / "m")]) == EXIT_INPUT
    assert "missing columns" in capsys.readouterr().err
    good = write_tsv(tmp_path / "r.tsv", [tsv_row(1, "http://h/a.jpg", "a dog", "cb1", "cbVisible4")])
    assert main(["train-cosmic", str(good), "--images", str(tmp_path / "none"), "--out", str(tmp_path / "m")]) == EXIT_INPUT
    assert main(["train-cosmic", str(good), "--images", str(tmp_path), "--out", str(tmp_path / "m")]) == EXIT_INPUT
    assert "no training example" in capsys.readouterr().err


# ---------------------------------------------------------------- training and scoring (slow: torch, transformers, open_clip)

ANIMALS = {"dog": ("cbVisible5", "cbStory5"), "cat": ("cbVisible1", "cbStory1")}


def generated_rows(prefix: str, n_images: int, start_id: int, seed: int) -> list[dict[str, str]]:
    """Four captions per image; the rating follows the animal (dog high, cat low), the label the
    first word ("then": Story, else Visible)."""
    rng = random.Random(seed)
    rows = []
    for k in range(n_images):
        url = f"http://example.org/{prefix}/pic{k}.jpg"
        if prefix == "train" and k >= n_images - 2:
            url = f"http://example.org/train/{k}/1.jpg"  # two URLs ending in 1.jpg: ambiguous, and no row-id files
        for j in range(4):
            animal = rng.choice(sorted(ANIMALS))
            story = j % 2 == 1
            words = ["then" if story else "a", rng.choice(["big", "small", "red"]), animal, rng.choice(["sat", "ran", "ate"])]
            words += ["in the park" if rng.random() < 0.5 else "on the water"]
            box = ANIMALS[animal][1 if story else 0]
            rows.append(tsv_row(start_id + 4 * k + j, url, " ".join(words), "cb4" if story else "cb1", box))
    return rows


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> Path:
    """The tiny BERT with a tokenizer that knows its words (built from the vocabulary as a dict:
    transformers 5 ignores ``vocab_file=`` and would leave every word [UNK])."""
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    folder = tmp_path_factory.mktemp("cosmic-bert")
    for file in tiny_bert.iterdir():
        if not file.name.startswith(("tokenizer", "vocab", "special_tokens")):
            shutil.copy(file, folder / file.name)
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tokenizer = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    assert "[UNK]" not in tokenizer.tokenize("a red cat sat in the park")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory, bert_folder: Path, tiny_clip: tuple[Path, Path]
) -> Iterator[dict[str, Path]]:
    folder = tmp_path_factory.mktemp("cosmic")
    images = folder / "images"
    images.mkdir()
    colours = random.Random(3)
    train_rows = generated_rows("train", 12, 100, seed=1)
    test_rows = generated_rows("test", 4, 500, seed=2)
    for row in train_rows + test_rows:
        colour = tuple(colours.randrange(256) for _ in range(3))
        name = url_file_name(row["url"])
        if name == "1.jpg":
            continue  # the two images left out on purpose
        if int(row["id_annotation"]) % 8 < 4:
            Image.new("RGB", (40, 30), colour).save(images / name)
        else:
            Image.new("RGB", (40, 30), colour).save(images / f"{row['id_annotation']}.png")
    train = write_tsv(folder / "RaCCoon.tsv", train_rows)
    test = write_tsv(folder / "test.tsv", test_rows)
    out = folder / "model"
    args = ["train-cosmic", str(train), "--images", str(images), "--out", str(out), "--test", str(test)]
    args += ["--base", str(bert_folder), *clip_args(tiny_clip), "--clip-activation", "gelu"]
    args += [
        "--epochs",
        "60",
        "--batch-size",
        "8",
        "--hidden-size",
        "32",
        "--max-length",
        "32",
        "--device",
        "cpu",
        "--no-progress",
    ]
    assert main(args) == 0
    yield {"out": out, "train": train, "test": test, "images": images}


@pytest.fixture(scope="module")
def clip(tiny_clip: tuple[Path, Path]) -> object:
    from vst_core.models.clip import load_clip

    config, checkpoint = tiny_clip
    return load_clip("vst-tiny-clip", None, checkpoint=checkpoint, model_config=config, device="cpu", activation="gelu")


def sample_jobs() -> tuple[list[tuple[Story, Story]], Path]:
    story_set = read_story_set(SAMPLE, check_images=False)
    references = {s.sequence_id: s for s in story_set if s.system == "reference"}
    jobs = [(s, references[s.sequence_id]) for s in story_set if s.system != "reference"]
    return jobs, story_set.root


# slow: trains through the CLI with a tiny BERT and CLIP (torch, transformers, open_clip)
@pytest.mark.slow
def test_training_writes_the_folder_and_its_card(trained: dict[str, Path]) -> None:
    out = trained["out"]
    for name in ("cosmic.safetensors", "config.json", "model.safetensors", "tokenizer_config.json", "card.json"):
        assert (out / name).is_file(), name
    card = json.loads((out / "card.json").read_text())
    assert card["data"]["train"]["sha256"] == file_digest(trained["train"])
    assert card["data"]["test"]["sha256"] == file_digest(trained["test"])
    assert card["images"]["found"] == 10 and card["images"]["missing"] == 2 and card["images"]["ambiguous_names"] == 2
    assert card["data"]["train"]["no_image"] == 8  # the rows of the two missing images, skipped
    figures = card["held_out"]
    assert card["split"]["held_out_from"] == "test TSV" and figures["n"] == 16
    for key in ("pearson", "kendall", "pearson_predicted_labels", "mse", "label_accuracy"):
        assert isinstance(figures[key], float), key
    assert figures["pearson"] > 0.5  # the rating follows the animal, which BERT's [CLS] tells apart
    assert card["clip"].startswith("vst-tiny-clip/") and card["base"]["frozen"] is True
    assert any("CLIP" in d for d in card["deviations"])
    assert card["model"] == load_cosmic(str(out), device="cpu").name


# slow: loads the trained folder and the tiny CLIP
@pytest.mark.slow
def test_scores_every_sentence_of_the_sample(trained: dict[str, Path], clip: object) -> None:
    from vst_core.metrics.cosmic import CosmicScores
    from vst_core.metrics.cosmic.rater import cosmic_records

    model = load_cosmic(str(trained["out"]), device="cpu")
    jobs, root = sample_jobs()
    records = cosmic_records(jobs, model, clip, root)  # type: ignore[arg-type]
    assert set(records) == {s.key for s, _ in jobs}
    for story, reference in jobs:
        record = records[story.key]
        assert isinstance(record, CosmicScores), record
        assert record.reference == f"reference:{reference.story_id}" and record.model == model.name
        assert len(record.sentences) == len(story.sentences) and not record.notes
        for sentence in record.sentences:
            assert sentence.rating is not None and 0.0 <= sentence.rating <= 1.0
            assert sentence.label in LABELS and sentence.reference_label in LABELS
            assert sentence.labels_from == "predicted"
            assert sentence.reference == reference.sentences[sentence.index].strip()
        assert record.score == pytest.approx(sum(s.rating or 0.0 for s in record.sentences) / len(record.sentences))


# slow: loads the trained folder and the tiny CLIP
@pytest.mark.slow
def test_missing_image_or_reference_gives_notes_not_exceptions(trained: dict[str, Path], clip: object) -> None:
    from vst_core.metrics.cosmic import CosmicScores
    from vst_core.metrics.cosmic.rater import cosmic_records

    model = load_cosmic(str(trained["out"]), device="cpu")
    jobs, root = sample_jobs()
    story, reference = jobs[0]
    one_missing = replace(story, story_id="one-missing", images=(story.images[0], "images/absent.jpg", *story.images[2:]))
    short_reference = replace(reference, sentences=reference.sentences[:3])
    all_missing = replace(story, story_id="all-missing", images=("../outside.jpg",))
    records = cosmic_records([(one_missing, short_reference), (all_missing, reference)], model, clip, root)  # type: ignore[arg-type]
    partial = records[one_missing.key]
    assert isinstance(partial, CosmicScores)
    assert [s.rating is None for s in partial.sentences] == [False, True, False, True, True]
    assert any("sentence 2: image not found" in n for n in partial.notes)
    assert any("has no sentence 4" in n for n in partial.notes)
    reason = records[all_missing.key]
    assert isinstance(reason, str) and "leaves the dataset folder" in reason
    other_clip = type("OtherClip", (), {"signature": "another-clip"})()
    mismatch = cosmic_records(jobs[:1], model, other_clip, root)
    assert "trained on image vectors of CLIP" in str(mismatch[story.key])


# slow: loads the tiny CLIP before the base BERT is looked for
@pytest.mark.slow
def test_missing_base_weights_exit_code(trained: dict[str, Path], tiny_clip: tuple[Path, Path]) -> None:
    args = ["train-cosmic", str(trained["train"]), "--images", str(trained["images"]), "--out", str(trained["out"].parent / "x")]
    args += ["--base", "no-such-org/no-such-bert", *clip_args(tiny_clip), "--clip-activation", "gelu", "--device", "cpu"]
    assert main([*args, "--no-progress"]) == EXIT_WEIGHTS


# slow: a second tiny training, without --test
@pytest.mark.slow
def test_without_test_tsv_images_are_held_out(trained: dict[str, Path], bert_folder: Path, tiny_clip: tuple[Path, Path]) -> None:
    out = trained["out"].parent / "split"
    args = ["train-cosmic", str(trained["train"]), "--images", str(trained["images"]), "--out", str(out), "--held-out", "0.3"]
    args += ["--base", str(bert_folder), *clip_args(tiny_clip), "--clip-activation", "gelu", "--epochs", "5", "--device", "cpu"]
    assert main([*args, "--hidden-size", "16", "--max-length", "32", "--no-progress"]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["split"]["held_out_from"] == "split by image" and card["data"]["test"] is None
    assert card["held_out"]["images"] == 3 and card["held_out"]["n"] == 12
    held = {row["url"] for row in csv.DictReader((out / "predictions.csv").open())}
    assert len(held) == 3


@pytest.mark.slow  # scores the sample from the CLI and opens Inspect in AppTest
def test_score_the_sample_from_the_cli_and_see_it_in_inspect(
    trained: dict[str, Path],
    tiny_clip: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    from vst_core.data import load_records

    out = tmp_path_factory.mktemp("cosmic-scores") / "scores.jsonl"
    args = ["score", str(SAMPLE), "--metrics", "redundancy,cosmic", "--cosmic-model", str(trained["out"]), "--out", str(out)]
    assert main([*args, *clip_args(tiny_clip), "--clip-activation", "gelu", "--no-progress"]) == 0
    records, problems = load_records(out)
    assert len(records) == 8 and not problems
    for record in records:
        if record.system == "reference":  # the reference is not rated against itself
            assert (
                record.metrics.get("cosmic") is not None
                and record.metrics["cosmic"].score is None
                and "reference story" in record.metrics["cosmic"].notes[0]
            )
            continue
        cosmic = record.metrics.get("cosmic")
        assert cosmic is not None and cosmic.reference.startswith("reference:")
        assert len(cosmic.sentences) == len(record.sentences) and all(s.rating is not None for s in cosmic.sentences)
        assert cosmic.score == pytest.approx(
            sum(s.rating for s in cosmic.sentences if s.rating is not None) / len(cosmic.sentences)
        )
    assert records[0].signature["settings"]["cosmic_weights"].startswith("cosmic:model@")
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))
    app = AppTest.from_file(APP, default_timeout=90).switch_page(PAGES["inspect"])
    for key, value in {
        "source": "Scores JSONL (no model needed)",
        "scores_path": str(out),
        "scores_images": str(SAMPLE.parent),
    }.items():
        app.session_state[key] = value
    app.run()
    assert not app.exception, app.exception
    assert any(e.label.startswith("COSMic: ") for e in app.expander)
    assert 'class="vst-cosmic"' in "".join(m.value for m in app.markdown)


@pytest.mark.slow
def test_the_dashboard_scores_the_sample_with_a_cosmic_folder(
    trained: dict[str, Path],
    tiny_clip: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sidebar's “COSMic model folder” box (from the module's ``model_fields``) turns COSMic on
    beside grounding, and its numbers on Dataset equal the command line's."""
    from conftest import APP, PAGES
    from streamlit.testing.v1 import AppTest

    from vst_core.data import load_records

    config, checkpoint = tiny_clip
    monkeypatch.setenv("VST_DATA_DIRS", str(tmp_path_factory.getbasetemp()))
    app = AppTest.from_file(APP, default_timeout=180).switch_page(PAGES["dataset"])
    fields = {"clip_arch": "vst-tiny-clip", "clip_pretrained": "", "clip_checkpoint": str(checkpoint)}
    fields |= {"clip_config": str(config), "cosmic_model": str(trained["out"]), "coherence": False, "extra_clip": False}
    for key, value in fields.items():
        app.session_state[key] = value
    app.run()
    assert not app.exception, app.exception
    assert not [w.value for w in app.warning if "is off" in w.value]
    table = app.dataframe[0].value
    out = tmp_path_factory.mktemp("cosmic-dashboard") / "scores.jsonl"
    args = ["score", str(SAMPLE), "--metrics", "redundancy,grounding,cosmic", "--cosmic-model", str(trained["out"])]
    assert main([*args, *clip_args(tiny_clip), "--out", str(out), "--no-progress"]) == 0
    cli = {
        r.story_id: r.metrics["cosmic"].score
        for r in load_records(out)[0]
        if r.metrics.get("cosmic") is not None and r.metrics["cosmic"].score is not None
    }
    shown = {k: v for k, v in zip(table["story"], table["COSMic"], strict=True) if v == v}
    assert len(cli) == 6 and shown.keys() == cli.keys()
    assert all(shown[k] == pytest.approx(cli[k], abs=1e-6) for k in cli)
