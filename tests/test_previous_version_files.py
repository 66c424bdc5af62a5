"""A scores file written by the previous version (0.1.0, before the image pipeline and GROOVIST owned
their settings as options) reads the same: every record, and settings whose signature is the one
recorded, under the names it recorded (``clip_arch``, GROOVIST's θ as a number)."""

from __future__ import annotations

from pathlib import Path

from vst_core.config import settings_from_signature
from vst_core.data import load_records
from vst_core.data.scores_io import settings_id

#: ``vst score assets/sample/stories.jsonl --metrics redundancy,grounding,clipscore --theta AESOP
#: --no-penalty --weighting none --top-b 5`` with the tiny random CLIP of the tests, by version 0.1.0.
PREVIOUS = Path(__file__).parent / "data" / "previous_version" / "scores_0.1.0.jsonl"
#: The weights and tools a signature adds to the settings (not settings themselves).
IDS = {"clip_weights", "punkt", "spacy_pipeline"}


def test_every_record_of_the_previous_version_reads_with_its_numbers() -> None:
    records, problems = load_records(PREVIOUS)
    assert problems == [] and len(records) == 8
    for record in records:
        assert set(record.metrics) == {"redundancy", "grounding", "clipscore"} and not record.errors
        assert record.metrics["grounding"].theta is not None and record.signature_id == "fbfef33aaf7a"
    assert {settings_id(r.signature) for r in records} == {"26e88b16a474"}


def test_the_previous_versions_settings_are_read_back_under_their_new_names_and_sign_the_same() -> None:
    (record, *_), _ = load_records(PREVIOUS)
    recorded = record.signature["settings"]
    found: list[str] = []
    settings = settings_from_signature(record.signature, found)
    assert found == []
    option = settings.option
    assert (option("clip_model"), option("top_b"), option("penalize"), option("weighting")) == ("vst-tiny-clip", 5, False, "none")
    assert abs(float(option("theta")) - 0.5949957337433985) < 1e-12
    again = settings.as_dict()
    # the checkpoint is recorded by its digest, which is read back as the pretrained name it shows
    differ = {k for k in recorded.keys() - IDS if again.get(k) != recorded[k]}
    assert differ == {"clip_checkpoint", "clip_pretrained"}, differ
    assert set(again) == recorded.keys() - IDS  # the same names (ids hash them sorted: the order is free)


def test_the_earlier_keyword_of_the_clip_model_is_refused_with_its_new_name() -> None:
    import pytest

    from vst_core.config import Settings, SettingsError

    with pytest.raises(SettingsError, match="clip_arch is now clip_model"):
        Settings(clip_arch="ViT-L-14")
