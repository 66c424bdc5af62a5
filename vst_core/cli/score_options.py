"""``vst score``'s options, grouped by what they set (the story's identity, text, CLIP and regions,
each metric's own options, the judge, the run), and the :class:`~vst_core.config.Settings`
they describe. Every default comes from ``Settings``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from vst_core.cli.common import EXIT_PARTIAL
from vst_core.config import Settings, parse_metrics
from vst_core.data import StorySet
from vst_core.data.options import parse_regions
from vst_core.terminal import metric_arguments, metric_options_from_args

DEFAULTS = Settings()


def add_options(p: argparse.ArgumentParser) -> None:
    """Every option of ``vst score`` after INPUT, --out and --metrics."""
    _text_arguments(p)
    _clip_arguments(p)
    metric_arguments(p)
    _run_arguments(p)


def identity_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--system",
        default=None,
        help="system of the stories whose record names none (a {story_id: text} file names none: without this "
        "option they are all system 'unknown'); a story is (system, story_id)",
    )
    p.add_argument(
        "--sequence-id-from",
        choices=("file", "story_id"),
        default="file",
        help="file: the sequence_id a story names, else a digest of its image paths, else its story_id; "
        "story_id: every story's sequence_id is its story_id, for files whose ids are image-sequence ids "
        "(the dHM release: the human and the model story of one sequence share the id), so that "
        "`vst dhm --pairing sequence` pairs them",
    )


def with_identity(story_set: StorySet, system: str | None, sequence_from: str) -> StorySet:
    """``story_set`` with ``system`` given to the stories whose record names none (read as
    ``"unknown"``) and, with ``sequence_from == "story_id"``, every sequence id set to the story id."""
    if system is None and sequence_from == "file":
        return story_set
    stories = tuple(
        replace(
            story,
            system=system if system is not None and story.system == "unknown" else story.system,
            sequence_id=story.story_id if sequence_from == "story_id" else story.sequence_id,
        )
        for story in story_set.stories
    )
    return StorySet(stories, story_set.root, story_set.source, story_set.problems)


def _text_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--split",
        choices=("punkt", "spacy"),
        default=DEFAULTS.splitter,
        help="how a story given as one text is split into sentences: NLTK Punkt, as the public RoViST and dHM code "
        "(fast), or the spaCy pipeline's parser",
    )
    p.add_argument(
        "--spacy-model",
        default=DEFAULTS.spacy_model,
        help="spaCy pipeline for noun phrases (and for --split spacy); default: first installed English one",
    )


def _clip_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clip-model", default=DEFAULTS.clip_arch, help="open_clip architecture")
    p.add_argument("--clip-pretrained", default=DEFAULTS.clip_pretrained, help="open_clip pretrained tag")
    p.add_argument("--clip-checkpoint", default=None, help="local CLIP checkpoint file instead of the pretrained tag")
    p.add_argument("--clip-config", default=None, help="open_clip model-config JSON that defines --clip-model")
    p.add_argument(
        "--clip-activation",
        choices=("auto", "gelu", "quickgelu"),
        default=DEFAULTS.clip_activation,
        help="auto (default): as the weights say (OpenAI's files and the openai tags: QuickGELU); a --clip-checkpoint "
        "that does not say must name it: quickgelu for OpenAI's weights and fine-tunes of them, gelu for open_clip's",
    )
    p.add_argument(
        "--theta",
        default=DEFAULTS.theta,
        help="GROOVIST threshold: VIST (0.6159), AESOP (0.5950), VWP (0.6194), custom (0.5), a number, or "
        "'dataset' (the mean NP score over INPUT, computed first and recorded in the signature)",
    )
    p.add_argument(
        "--regions",
        default=None,
        metavar="FILE|detector|grid",
        help="image regions: a regions CSV (image_name,image_id,bbox,object,score), 'detector' (torchvision "
        f"Faster R-CNN, needs its weights) or 'grid' (ten weight-free proposals). Default: {DEFAULTS.regions}",
    )
    p.add_argument("--top-b", type=int, default=DEFAULTS.top_b, help="regions kept per image")
    p.add_argument("--whole-image", action="store_true", help="add the whole image to each image's regions")
    p.add_argument("--no-penalty", action="store_true", help="GROOVIST ablation -P: no θ penalty")
    p.add_argument(
        "--weighting",
        choices=("concreteness", "idf", "none"),
        default=DEFAULTS.weighting,
        help="NP weights: Brysbaert concreteness (GROOVIST), idf (ablation -C +idf) or none (-C)",
    )
    p.add_argument("--nouns", action="store_true", help="ablation: head nouns instead of noun phrases")
    p.add_argument(
        "--grounding-profile",
        choices=("paper", "reference"),
        default=DEFAULTS.grounding_profile,
        help="reference: the GROOVIST code's text side and crops (a phrase dropped only when it is a pronoun as a "
        "whole, concreteness of whitespace words with WordNet noun lemmas, Pillow's rounding of boxes, en_core_web_trf "
        "when installed)",
    )
    p.add_argument(
        "--expressions",
        action="store_true",
        help="concreteness: try the whole phrase and multi-word expressions ('parking lot') first",
    )


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir", type=Path, default=None, help="embedding cache folder (default $VST_CACHE_DIR, else ~/.cache/vst-eval)"
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=DEFAULTS.device, help="where models run")
    p.add_argument(
        "--batch-size",
        type=int,
        default=DEFAULTS.batch_size,
        help="model batch size (texts, region crops, sentence pairs); default: by the device, 256 on CUDA, 32 on a CPU",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=DEFAULTS.workers,
        help="threads decoding and cropping images beside the model (0: one per core, at most 8)",
    )
    p.add_argument(
        "--preprocess",
        choices=("auto", "pil", "device"),
        default=DEFAULTS.preprocess,
        help="how region crops are resized for CLIP: pil (Pillow in the worker threads, the GROOVIST code's pixels), "
        "device (each image decoded once, crops cut, resized and normalised on the model's device: the fast path on "
        "a GPU; max |Δ cosine| 2.4e-7 against pil, see docs/performance.md), auto (device on CUDA, pil on a CPU); recorded in "
        "the signature",
    )
    p.add_argument(
        "--no-spans",
        action="store_true",
        help="RoViST-NR numbers only, from one vectorised pass per chunk (several times faster); the records "
        "hold no repeated spans, which the dashboard recomputes for the stories it shows",
    )
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="score only shard I of N (1 <= I <= N): stories split by a stable hash of sequence_id, so N jobs with "
        "--shard 1/N ... N/N cover every story exactly once; θ 'dataset' and idf still use the whole INPUT",
    )
    p.add_argument(
        "--vist-images",
        type=Path,
        default=None,
        help="images folder of a VIST annotation file or a VWP table (default: INPUT's folder/images)",
    )
    p.add_argument(
        "--vist-text-field", choices=("text", "original_text"), default="text", help="which VIST field gives the sentences"
    )
    p.add_argument("--no-check-images", action="store_true", help="do not open every image when reading (faster on huge sets)")
    p.add_argument("--overwrite", action="store_true", help="start --out afresh instead of resuming")
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop (exit 4) when any metric's model cannot load; by default the others are scored, each record names "
        f"the metrics not run, and the exit code is {EXIT_PARTIAL}. Stories a judge server could not answer are "
        f"errors in their records either way; the exit code is then {EXIT_PARTIAL}, or 4 with --strict",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The :class:`Settings` the options describe (SettingsError when they cannot be used)."""
    regions = parse_regions(args.regions, DEFAULTS.regions)
    return Settings(
        metrics=parse_metrics(args.metrics),
        spacy_model=args.spacy_model,
        splitter=args.split,
        device=args.device,
        batch_size=args.batch_size,
        workers=args.workers,
        preprocess=args.preprocess,
        clip_arch=args.clip_model,
        clip_pretrained=args.clip_pretrained,
        clip_checkpoint=args.clip_checkpoint,
        clip_config=args.clip_config,
        clip_activation=args.clip_activation,
        theta=DEFAULTS.theta if args.theta == "dataset" else args.theta,
        regions=regions.kind,
        regions_file=regions.file,
        top_b=args.top_b,
        whole_image=args.whole_image,
        penalize=not args.no_penalty,
        weighting=args.weighting,
        units="nouns" if args.nouns else "phrases",
        expressions=args.expressions,
        grounding_profile=args.grounding_profile,
        options=tuple(metric_options_from_args(args).items()),
    )
