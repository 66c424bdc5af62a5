"""The typed scores record: JSON round trip, validation with a path to the bad field, the registry,
re-aggregation, and the sidebar's pure mapping to settings. No model runs here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE, examples
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.choices import SCORES_FILE, Choices, base_of, settings_for, settings_for_file
from vst_core.config import Settings, SettingsError, settings_from_signature
from vst_core.contract import registry
from vst_core.data import load_records, read_story_set
from vst_core.metrics.groovist.record import GroundingScores, PhraseMatch
from vst_core.metrics.groovist.rescore import rescore_grounding
from vst_core.metrics.rovist_c.record import CoherencePair, CoherenceScores
from vst_core.records import RecordError, StoryScores, decode, read_record
from vst_core.scoring.reaggregate import reaggregate
from vst_core.scoring.story import score_story
from vst_core.signature import signature
from vst_core.viz import scores_table
from vst_core.viz.tables import table_columns


def phrase(text: str, cosine: float, weight: float = 1.0) -> PhraseMatch:
    return PhraseMatch(text, text, 0, (0, len(text)), cosine, 0.0, 0, (0.0, 0.0, 4.0, 4.0), None, weight, 0.0, True)


def grounding(*cosines: float) -> GroundingScores:
    return GroundingScores(0.0, 0.0, 0.6, None, (None,), 0.2, tuple(phrase(f"p{k}", c) for k, c in enumerate(cosines)))


def test_every_sample_record_round_trips_through_json() -> None:
    settings = Settings()
    for story in read_story_set(SAMPLE):
        record = score_story(story, settings)
        text = json.dumps(record.to_json(), allow_nan=False)
        back, problems = read_record(json.loads(text))
        assert problems == [] and back == record


def test_a_bad_metric_record_is_an_error_of_that_metric_only() -> None:
    record = StoryScores(
        "a", "s", "m", ("One.", "Two."), metrics={"coherence": CoherenceScores(0.5, (CoherencePair(0, 1, 0.5),), 0, "x")}
    )
    data = record.to_json()
    data["metrics"]["coherence"]["pairs"][0]["probability"] = "high"
    data["metrics"]["mystery"] = {"score": 1}
    back, problems = read_record(data, line=7)
    assert back is not None and back.metrics.get("coherence") is None
    assert (
        back.errors["coherence"]
        == "unreadable record: metrics.coherence.pairs[0].probability: expected a finite number, got 'high'"
    )
    assert sorted(p.severity for p in problems) == ["error", "warning"] and all(p.line == 7 for p in problems)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"sentences": ["x"]}, "without story_id"),
        ({"story_id": "a"}, "without sentences"),
        ({"story_id": "a", "sentences": [1]}, "sentences[0]: expected str"),
        ([1, 2], "without story_id"),
    ],
)
def test_unusable_records_are_reported(data: Any, reason: str) -> None:
    record, problems = read_record(data)
    assert record is None and reason in str(problems[0])


def test_older_records_are_completed_and_flagged() -> None:
    record, problems = read_record({"story_id": "a", "sentences": ["We ate."], "metrics": {}})
    assert record is not None and record.sequence_id == "a" and record.system == "unknown"
    assert "another version" in problems[0].message and problems[0].severity == "warning"


def test_decode_names_the_field_and_rejects_non_finite_numbers() -> None:
    with pytest.raises(RecordError, match=r"^g\.phrases\[0\]\.best_cosine: expected a finite number"):
        decode(GroundingScores, _grounding_json(math.inf), "g")
    with pytest.raises(RecordError, match=r"theta: missing"):
        data = _grounding_json(0.5)
        del data["theta"]
        decode(GroundingScores, data)


def _grounding_json(cosine: float) -> dict[str, Any]:
    from vst_core.records import encode

    data: dict[str, Any] = encode(grounding(0.5))
    data["phrases"][0]["best_cosine"] = cosine
    return data


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(JSON, st.sampled_from(sorted(registry().types)))
def test_any_json_reads_without_raising(value: Any, metric: str) -> None:
    for data in (value, {"story_id": "x", "sentences": ["A."], "metrics": {metric: value}}):
        record, problems = read_record(data)
        assert record is not None or problems


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=6), st.floats(0, 1.5), st.booleans(), st.booleans())
def test_rescoring_a_record_equals_its_formula(cosines: list[float], theta: float, penalize: bool, weight: bool) -> None:
    from vst_core.formulas.grounding import groovist_score

    out = rescore_grounding(grounding(*cosines), theta, penalize=penalize, weight=weight)
    want = groovist_score(cosines, [1.0] * len(cosines), theta, penalize=penalize, weight=weight)
    assert out.score == want.score and out.theta == theta
    assert [p.contribution for p in out.phrases] == list(want.contributions)


@pytest.mark.slow  # the signature of a CLIP setting imports open_clip and torch (about 5 s)
def test_reaggregate_signs_with_the_new_settings_and_refuses_what_needs_a_model() -> None:
    base = Settings(metrics=("redundancy", "grounding"))
    record = StoryScores("a", "s", "m", ("A dog.",), metrics={"grounding": grounding(0.3, 0.9)}, signature={"id": "old"})
    wanted = base.with_(theta="1.0", penalize=False)
    (out,) = reaggregate([record], base, wanted)
    assert (
        out.signature_id == signature(wanted)["id"]
        and out.metrics.get("grounding") is not None
        and out.metrics["grounding"].theta == 1.0
    )
    assert reaggregate([record], base, base) == [record]
    with pytest.raises(ValueError, match="only θ, the penalty and the weighting can be changed without scoring again"):
        reaggregate([record], base, base.with_(nr_ngram=3))
    with pytest.raises(ValueError, match="weights 'idf' are not stored in records scored with 'concreteness'"):
        reaggregate([record], base, base.with_(weighting="idf"))
    (plain,) = reaggregate([record], base, base.with_(weighting="none"))
    assert plain.metrics.get("grounding") is not None and plain.metrics["grounding"].unbounded == pytest.approx(
        2.5 * (0.3 + 0.9) / 2
    )  # both ≥ θ


def test_one_registry_feeds_tables_and_meta_evaluation() -> None:
    from vst_core.analysis.meta_eval.report import covariate_fields, metric_fields

    METRIC_COLUMNS, COVARIATES = tuple(metric_fields()), tuple(covariate_fields())

    assert list(table_columns()) == [f.column for f in registry().fields]
    assert set(METRIC_COLUMNS) == {f.report for f in registry().fields if f.report}  # the registry's, whatever it holds
    assert set(METRIC_COLUMNS) >= {  # the built-ins' (a new metric adds to them, none goes missing)
        "NR",
        "RoViST-C",
        "GROOVIST",
        "CLIPScore",
        "RoViST-VG",
        "RoViST-VG (CLIP)",
        "Vrank",
        "COSMic",
        "judge overall",
        "judge grounding",
        "judge coherence",
        "judge non-redundancy",
        "char coherence",
        "char continuity",
        "char alignment",
    } and COVARIATES == (
        "T",
        "P",
    )
    record = StoryScores("a", "s", "m", ("A dog.",), metrics={"grounding": grounding(0.9)}, errors={"coherence": "boom"})
    table = scores_table([record], ("grounding", "coherence"))
    assert list(table.columns) == [
        "story",
        "sequence",
        "system",
        "coherence",
        "GROOVIST",
        "GROOVIST raw",
        "T",
        "P",
        "sentences",
        "text",
        "error",
    ]
    assert math.isnan(table.loc[0, "coherence"]) and table.loc[0, "P"] == 0.2 and table.loc[0, "error"] == "coherence: boom"


# ------------------------------------------------------------------ the sidebar's settings, without streamlit


def test_sidebar_defaults_are_the_settings_defaults_with_every_metric() -> None:
    settings = settings_for(Choices())
    assert settings.metrics == ("redundancy", "coherence", "grounding", "clipscore", "rovist_vg_clip")
    assert settings.with_(metrics=Settings().metrics) == Settings()


def test_sidebar_choices_map_to_settings() -> None:
    s = settings_for(
        Choices(
            tuned={"nr_variant": "reference", "nr_ngram": 3},
            coherence=False,
            extra_clip=False,
            theta_name="slider",
            theta_value=0.7,
            penalize=False,
            concreteness=False,
            regions="boxes.csv",
            clip_checkpoint=" w.pt ",
        )
    )
    o = s.option
    assert s.metrics == ("redundancy", "grounding") and (o("nr_variant"), o("nr_ngram")) == ("reference", 3)
    assert (float(o("theta")), o("penalize"), o("weighting")) == (0.7, False, "none")
    assert (o("regions"), o("regions_file"), o("clip_checkpoint")) == ("csv", "boxes.csv", "w.pt")
    assert base_of(s) == s.with_(theta="VIST", penalize=True, weighting="concreteness")
    assert Choices().changed(nr_ngram=5, cosmic_model="m").tuned == (("nr_ngram", 5),)
    assert settings_for(Choices(tuned={"nr_ngram": 4})) == settings_for(Choices())  # a default is no change


def test_a_metric_owns_its_sidebar_controls_and_their_links() -> None:
    """RoViST-NR's two settings are its options: the sidebar's controls, their URL rules and the
    command line's flags come from them, and the ids of earlier runs stay (signed in every run)."""
    from dashboard.choices import controls, url_notices

    assert {k: (o.setting, o.cli_flag) for k, o in controls().items() if o.setting.startswith("nr_")} == {
        "variant": ("nr_variant", "--nr-variant"),
        "ngram": ("nr_ngram", "--nr-n"),
    }
    assert url_notices({"ngram": "9", "variant": "reference"}) == [
        "The link value ngram='9' is not valid (a whole number from 2 to 8); the default is used"
    ]
    signed = {"metrics": ["redundancy"], "splitter": "punkt", "spacy_model": None, "nr_variant": "paper", "nr_ngram": 4}
    assert Settings().as_dict() == signed  # what earlier versions signed, so the ids of their runs stay
    assert list(Settings().as_dict()) == ["metrics", "nr_ngram", "nr_variant", "splitter", "spacy_model"]  # and its bytes
    assert {"nr_ngram", "nr_variant"} <= set(Settings(metrics=("grounding",)).as_dict())
    for unset in ({"nr_ngram": None}, {"nr_variant": None}, {"nr_ngram": 0}):  # refused, as the fields were
        with pytest.raises(SettingsError):
            Settings(**unset)
    problems: list[str] = []
    recorded = settings_from_signature({"settings": {"metrics": ["redundancy"], "nr_ngram": None, "nr_variant": "x"}}, problems)
    assert recorded == Settings() and len(problems) == 2
    assert Choices(tuned={"nr_ngram": 4, "nr_variant": "paper"}) == Choices()  # at their defaults
    assert Choices().changed(variant="reference").tuned == (("nr_variant", "reference"),)  # by key too
    assert Choices().changed(tuned={"nr_ngram": 3}, files={"vrank_model": "v"}).value("vrank_model") == "v"
    assert url_notices({"ngram": "²"})  # a digit that is not 0-9 is refused, not a crash


def test_a_scores_file_keeps_its_settings_but_theta_and_ablations() -> None:
    recorded = Settings(metrics=("grounding",), theta="AESOP", weighting="idf")
    same = settings_for_file(Choices(source=SCORES_FILE), recorded)
    assert same == recorded
    changed = settings_for_file(Choices(source=SCORES_FILE, theta_name="VWP", penalize=False, concreteness=False), recorded)
    assert (changed.option("theta"), changed.option("penalize"), changed.option("weighting")) == ("VWP", False, "none")


def test_load_records_reports_lines(tmp_path: Path) -> None:
    good = score_story(read_story_set(SAMPLE).stories[0], Settings()).to_json()
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(good) + "\n{broken\n" + json.dumps({"story_id": "b"}) + "\n")
    records, problems = load_records(path)
    assert [r.story_id for r in records] == [good["story_id"]]
    assert [p.line for p in problems] == [2, 3]


def test_a_variant_outside_its_type_is_a_reported_error_of_that_metric() -> None:
    """The decoder checks Literal fields: an NR variant the code does not know is refused, not kept."""
    from vst_core.metrics.rovist_nr.record import RedundancyScores
    from vst_core.records import RecordError, decode

    good = {"score": 0.9, "inter": 0.1, "intra": 0.1, "variant": "reference", "n": 4}
    assert decode(RedundancyScores, good).variant == "reference"
    with pytest.raises(RecordError, match="variant: expected one of 'paper', 'reference', 'imported'"):
        decode(RedundancyScores, {**good, "variant": "bogus"})


def test_every_metric_has_the_value_merging_compares() -> None:
    """A story written twice is merged by its main value: every metric type needs one."""
    from vst_core.data.merge import main_attr

    for name, kind in registry().types.items():
        assert main_attr(name) in kind.__dataclass_fields__, name
    assert main_attr("grounding") == "unbounded"
