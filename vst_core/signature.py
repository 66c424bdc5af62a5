"""The reproducibility signature of a run: its settings, the weights they resolve to (a digest of
each file), library versions, and a short id hashing them all. It is written into every record,
export and figure caption; two numbers with one signature id were made the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vst_core.config import Settings, library_versions
from vst_core.contract import registry
from vst_core.data import StorySet
from vst_core.formulas.grounding import resolve_theta
from vst_core.hashing import json_digest, weights_digest
from vst_core.images.options import image_settings
from vst_core.models.clip_weights import checkpoint_signature, clip_signature
from vst_core.models.detector import detector_weights_path
from vst_core.records import StoryScores
from vst_core.text.phrases import SpacyUnavailableError, load_spacy, pipeline_meta, reference_spacy_model, spacy_model_name
from vst_core.text.public import splitter_name
from vst_core.text.wordnet import wordnet_id

_MISSING_MARK = "not-downloaded"


def weights_ids(settings: Settings) -> dict[str, str]:
    """Identity of every weights file the settings use: name plus a content digest (or
    ``not-downloaded``), so different weights never share a signature: each metric's own
    (its module's ``identity``), then CLIP's and the detector's, which several metrics share."""
    ids: dict[str, str] = {}
    reg = registry()
    for name, spec in reg.specs.items():
        if name in settings.metrics and spec.signing.identity is not None:
            try:
                ids.update(spec.signing.identity(settings))
            except Exception as exc:
                if spec not in reg.plugins:
                    raise
                ids[f"{name}_identity"] = f"unavailable ({type(exc).__name__}: {exc})"  # Models finds it before a run
    image = image_settings(settings)
    if registry().with_need("clip") & set(settings.metrics):
        ids["clip_weights"] = clip_signature(
            image.clip_model, image.clip_pretrained, image.clip_checkpoint, image.clip_activation
        )
        if image.clip_checkpoint:
            ids["clip_checkpoint"] = checkpoint_signature(image.clip_model, image.clip_checkpoint)
    if registry().with_need("images") & set(settings.metrics) and image.regions == "detector":
        found = detector_weights_path()
        ids["detector_weights"] = f"fasterrcnn_resnet50_fpn_v2@{weights_digest(found) if found else _MISSING_MARK}"
    return ids


def text_ids(settings: Settings) -> dict[str, str]:
    """The text processing behind the numbers: which Punkt model split stories given as text and
    NR's reference profile (NLTK's version), and the spaCy pipeline (name and version) that finds
    noun phrases or splits sentences."""
    ids: dict[str, str] = {}
    splitter, spacy_model = settings.option("splitter"), settings.option("spacy_model")
    if splitter == "punkt":
        ids["punkt"] = splitter_name()
    clip = bool(registry().with_need("images") & set(settings.metrics))
    reference = clip and settings.option("grounding_profile") == "reference"
    if splitter == "spacy" or clip:
        name = spacy_model or (reference_spacy_model() if reference else None)
        ids["spacy_pipeline"] = spacy_pipeline_id(name)
    if reference:
        ids["wordnet"] = wordnet_id()
    return ids


def spacy_pipeline_id(name: str | None) -> str:
    """``lang_name-version`` of the spaCy pipeline the settings use, or why there is none: from the
    pipeline's ``meta.json`` (spaCy is not loaded), else by loading it."""
    meta = pipeline_meta(name)
    if meta is not None:
        return f"{meta['lang']}_{meta['name']}-{meta['version']}"
    try:
        return spacy_model_name(load_spacy(name))
    except SpacyUnavailableError:
        return f"{name or 'default'}:not-installed"


Inputs = Mapping[str, str]


def inputs_of(story_set: StorySet) -> dict[str, str]:
    """What a signature names as a run's input: the stories' content digest."""
    return {"stories": story_set.content_digest()}


def recorded_inputs(records: Sequence[StoryScores]) -> dict[str, str] | None:
    """The inputs the first record's signature names, or None when it names none."""
    found = records[0].signature.get("inputs") if records else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else None


def signature(settings: Settings, inputs: Inputs | None = None) -> dict[str, Any]:
    """``{"id", "settings", "versions"[, "inputs"]}``: printed with every result. ``inputs`` (see
    :func:`inputs_of`) ties the numbers to the stories they were computed on."""
    data = settings.as_dict()
    ids = weights_ids(settings)
    data.update(ids)
    data.update(text_ids(settings))
    if "clip_checkpoint" in ids:
        data["clip_pretrained"] = None  # the file, not the tag, names the weights
    payload: dict[str, Any] = {"settings": data, "versions": library_versions()}
    plugins = metric_plugins(settings)
    if plugins:
        payload["metric_plugins"] = plugins
    if inputs:
        payload["inputs"] = dict(inputs)
    return {"id": json_digest(payload, 12), **payload}


def metric_plugins(settings: Settings) -> dict[str, str]:
    """``{metric: "module@version"}`` of the installed (not built-in) metrics the settings run:
    their code is part of what made the numbers.

    >>> metric_plugins(Settings(metrics=("redundancy",)))
    {}
    """
    specs = registry().specs
    return {
        name: f"{specs[name].module}@{specs[name].signing.version or 'unversioned'}"
        for name in settings.metrics
        if name in specs and specs[name] in registry().plugins
    }


def signature_id(settings: Settings, inputs: Inputs | None = None) -> str:
    return str(signature(settings, inputs)["id"])


def weights_missing(settings: Settings) -> bool:
    """Whether a model the settings need is not downloaded yet (its digest is unknown, so the
    signature changes once it is: load the models first, then take the signature)."""
    return any(_MISSING_MARK in value for value in weights_ids(settings).values())


def describe(settings: Settings, inputs: Inputs | None = None) -> str:
    """One line for footers and figure captions."""
    sig = signature(settings, inputs)
    parts = [f"sig {sig['id']}"]
    if inputs:
        parts.append("input " + " ".join(f"{k}:{v}" for k, v in inputs.items()))
    parts.append("metrics " + "+".join(settings.metrics))
    recorded = sig["settings"]
    for name, spec in registry().specs.items():
        if name in settings.metrics and spec.signing.caption is not None:
            parts.append(spec.signing.caption(recorded))
    if registry().with_need("clip") & set(settings.metrics):
        image, option = image_settings(settings), settings.option
        source = "file" if image.clip_checkpoint else image.clip_pretrained
        clip = str(recorded.get("clip_weights") or f"{image.clip_model}/{source}")
        ablation = "".join(
            [
                " -P" if not option("penalize") else "",
                {"concreteness": "", "idf": " -C+idf", "none": " -C"}[option("weighting")],
                " nouns" if option("units") == "nouns" else "",
            ]
        )
        theta = resolve_theta(str(option("theta")))
        parts.append(f"CLIP {clip} θ={theta:.4f} regions {image.regions} top{image.top_b}{ablation}")
    parts.append(f"vst-eval {sig['versions'].get('vst-eval', '?')}")
    return " · ".join(parts)


def describe_signature(sig: Mapping[str, Any]) -> str:
    """One line on how a record's numbers were made, from its signature alone (no model, no file
    on this machine is consulted): imported (the file, its sha256 and the declared variants) or
    computed (metrics, NR definition, the weights' digests, θ, ablations).

    >>> describe_signature({"id": "abc", "imported": {"file": "gt_test_R.csv", "sha256": "0123456789abcdef", "variants": {"redundancy": "as released"}}})
    'sig abc · imported from gt_test_R.csv (sha256 0123456789ab): redundancy (as released)'
    """
    imported = sig.get("imported")
    if isinstance(imported, Mapping):
        variants = imported.get("variants")
        what = ", ".join(f"{m} ({v})" for m, v in variants.items()) if isinstance(variants, Mapping) else "scores"
        return f"sig {sig.get('id')} · imported from {imported.get('file')} (sha256 {str(imported.get('sha256'))[:12]}): {what}"
    recorded = sig.get("settings")
    settings = recorded if isinstance(recorded, Mapping) else {}
    metrics = [str(m) for m in settings.get("metrics") or []]
    parts = [f"sig {sig.get('id')}", "metrics " + ("+".join(metrics) or "none")]
    for name, spec in registry().specs.items():
        if name in metrics and spec.signing.caption is not None:
            parts.append(spec.signing.caption(settings))
    if registry().with_need("clip") & set(metrics):
        clip = settings.get("clip_weights") or f"{settings.get('clip_arch')}/{settings.get('clip_pretrained')}"
        ablation = ("" if settings.get("penalize", True) else " -P") + (" -C" if settings.get("weighting") == "none" else "")
        theta = settings.get("theta")
        shown = f"{theta:.4g}" if isinstance(theta, (int, float)) else str(theta)
        parts.append(f"CLIP {clip} θ {shown}{ablation}")
    return " · ".join(parts)
