"""RoViST-VG (Wang et al., 2022) with the authors' Region2Phrase model: each noun's best region
(ViT regions, GloVe nouns), an idf-weighted log-sum-exp S, Eq. 3 in (−1, 1).

Formula: :func:`vst_core.formulas.grounding.rovist_vg`; the model: :mod:`.region2phrase` (its idf table: :mod:`.idf_table`);
nouns: :mod:`vst_core.text.nouns`; wired here (:func:`image_record`; its record: :mod:`.record`) over the regions the image metrics' shared
work chose and the model encoded (:class:`vst_core.images.grounder.Grounder`). Card: ``docs/metrics/rovist_vg.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from vst_core.contract import (
    Card,
    Computing,
    Fetch,
    FetchArgument,
    FetchCheck,
    FetchPlan,
    GrounderLike,
    ImageEntryLike,
    MetricField,
    MetricSpec,
    ModelsLike,
    Option,
    OptionValue,
    Region,
    SettingsLike,
    Showing,
    Signing,
    Tools,
)
from vst_core.metrics.rovist_vg.defaults import VIT
from vst_core.metrics.rovist_vg.record import NounRegion, RovistVGScores

if TYPE_CHECKING:
    from vst_core.data import Story
    from vst_core.metrics.rovist_vg.region2phrase import IdfTable, RovistVGModel

NAME = "rovist_vg"


def image_record(grounder: GrounderLike, story: Story, entries: Sequence[ImageEntryLike]) -> RovistVGScores:
    """RoViST-VG with the authors' model, as their ``compute_sim`` and ``vg_score``: each noun's best
    cosine over the regions of each image, the best over the images, idf-weighted log-sum-exp (the
    authors' idf table, else ``vg:`` idf fitted over the set, else 1)."""
    import numpy as np

    from vst_core.formulas.grounding import rovist_vg
    from vst_core.metrics.rovist_vg.builders import rovist_vg_scores

    vg = grounder.vg
    if vg is None:
        raise ValueError("the RoViST-VG model is not loaded")
    grounder.story_nouns([story])
    nouns = grounder.nouns[story.key]
    notes = [e.note for e in entries if e.note]
    table = cast("IdfTable | None", vg.idf)  # this metric's own model, with its own table
    fitted = any(k.startswith("vg:") for k in grounder.idf)
    if table is None and not fitted:
        notes.append("no idf fitted over a story set: every noun weighs 1 (the authors' --use_idf 0)")
    if not nouns:
        empty = rovist_vg([], [])
        return rovist_vg_scores(
            empty, [], best=[], idf=[], images=[], boxes=[], model=vg.signature, tagger=grounder.tagger, notes=notes
        )
    texts = [n.text for n in nouns]
    vectors, known = grounder.vg_vectors(texts)
    regions = [e.vg_emb for e in entries]
    if any(r is None for r in regions):
        raise ValueError("the regions of an image were not encoded by the RoViST-VG model")
    per_image = [vectors @ r.T for r in regions if r is not None]  # (nouns, regions of image i)
    best_per_image = np.stack([m.max(axis=1) for m in per_image])  # (images, nouns)
    image = best_per_image.argmax(axis=0)
    best = best_per_image[image, np.arange(len(texts))]
    boxes = [entries[int(i)].boxes[int(per_image[int(i)][k].argmax())] for k, i in enumerate(image)]
    if table is not None:
        looked = [table.weight(t) for t in texts]
        idf = [w for w, _ in looked]
        absent = list(dict.fromkeys(t for t, (_, found) in zip(texts, looked, strict=True) if not found))
        if absent:
            notes.append(
                f"{len(absent)} noun(s) not in {table.path.name} ({', '.join(absent[:5])}): weighed by its largest "
                f"idf {table.fallback:.3f} (the authors' scorer stops on a noun its table lacks)"
            )
    else:
        idf = [grounder.idf.get(f"vg:{t}", 0.0) if fitted else 1.0 for t in texts]
    return rovist_vg_scores(
        rovist_vg(best, idf),
        [(n.text, n.sentence, k) for n, k in zip(nouns, known, strict=True)],
        best=[float(c) for c in best],
        idf=idf,
        images=[int(i) for i in image],
        boxes=boxes,
        model=vg.signature,
        tagger=grounder.tagger,
        notes=notes,
    )


def identity(settings: SettingsLike) -> dict[str, str]:
    """The checkpoint, ViT, GloVe and idf table by digest, and the tagger that finds the nouns."""
    from vst_core.metrics.rovist_vg.region2phrase import vg_signature
    from vst_core.text.public import splitter_name

    weights = vg_signature(
        settings.option("rovist_vg_checkpoint") or "",
        settings.option("rovist_vg_vit"),
        settings.option("glove_file") or "",
        settings.option("rovist_vg_idf"),
    )
    return {"rovist_vg_weights": weights, "rovist_vg_tagger": tagger_id(settings.option("spacy_model")), "punkt": splitter_name()}


def tagger_id(spacy_model: str | None) -> str:
    """The POS tagger that finds RoViST-VG's nouns (NLTK's model, else the spaCy pipeline's tagger)."""
    from vst_core.text.nouns import tagger_name
    from vst_core.text.phrases import SpacyUnavailableError

    try:
        return tagger_name(spacy_model)
    except SpacyUnavailableError:
        return f"spacy/{spacy_model or 'default'}:not-installed"


def caption(recorded: Mapping[str, object]) -> str:
    return f"RoViST-VG {recorded.get('rovist_vg_weights')} regions {recorded.get('regions')} top{recorded.get('top_b')}"


def model(models: ModelsLike) -> RovistVGModel:
    """The authors' RoViST-VG model of the settings (checkpoint, ViT, GloVe, idf table), loaded once
    per :class:`~vst_core.scoring.registry.Models` (or injected as ``Models(..., rovist_vg=...)``)."""

    def build(m: ModelsLike) -> RovistVGModel:
        from vst_core.metrics.rovist_vg.region2phrase import load_rovist_vg

        s = m.settings
        return load_rovist_vg(
            s.option("rovist_vg_checkpoint"),
            vit=s.option("rovist_vg_vit"),
            glove=s.option("glove_file"),
            idf=s.option("rovist_vg_idf"),
            device=s.device,
            batch_size=s.batch_for(None),
        )

    return models.own(NAME, build)


def cards(vg: RovistVGScores | None) -> list[Card]:
    """One card: Eq. 3, with S and each noun's best region on hover (:func:`.html.rovist_vg_detail`)."""
    from vst_core.metrics.rovist_vg.html import rovist_vg_detail

    return [("RoViST-VG", vg.score if vg else None, rovist_vg_detail(vg) if vg else "")]


def evidence(vg: RovistVGScores) -> tuple[str, str] | None:
    """Each noun, its best region, cosine and idf (:func:`.html.rovist_vg_html`)."""
    from vst_core.metrics.rovist_vg.html import rovist_vg_html

    if not vg.nouns:
        return None
    return f"RoViST-VG: {len(vg.nouns)} nouns and their best regions", rovist_vg_html(vg)


def regions(record: RovistVGScores) -> tuple[str, list[Region]]:
    """Each noun's best region (the authors' model), with its cosine in the picker's line."""
    return "noun", [
        Region(n.noun, n.image, n.box, n.best_cosine, f"{n.noun} → image {n.image + 1} (cos {n.best_cosine:.3f})")
        for n in record.nouns
    ]


def fetch_plan(values: Mapping[str, OptionValue]) -> FetchPlan:
    """``vst fetch-models --rovist-vg [--rovist-vg-vit NAME] [--rovist-vg-model FILE --glove FILE]``:
    the ViT from the hub (config, image processor, weights), NLTK's tagger data (the authors' noun
    tagger; a note naming the command when it is missing: spaCy's tagger then stands in, and a noun's
    tag can differ), and the user's checkpoint and GloVe files, checked by scoring one word against one
    crop when both are given. Nothing without one of the flags."""
    from vst_core.models.hub import HF_WEIGHT_FILES, hub_file
    from vst_core.text.nouns import NLTK_TAGGER_DATA, nltk_tagger_path

    vit = str(values.get("rovist_vg_vit") or VIT)
    checkpoint, glove = values.get("rovist_vg_model"), values.get("glove")
    if not (values.get("rovist_vg") or checkpoint or glove):
        return FetchPlan()

    def vit_loads() -> str:
        from transformers import ViTConfig, ViTImageProcessor, ViTModel

        from vst_core.models.folders import load_hf

        config = load_hf(vit, ViTConfig.from_pretrained, "ViT")
        load_hf(vit, ViTImageProcessor.from_pretrained, "ViT image processor")
        load_hf(vit, ViTModel.from_pretrained, "ViT")
        return f"loads (hidden size {config.hidden_size}, {config.image_size}px); RoViST-VG's image encoder"

    checks: list[FetchCheck] = [(f"ViT {vit}", hub_file(vit, HF_WEIGHT_FILES) is not None, vit_loads)]
    notes: list[str] = []
    folders: dict[str, Path] = {}
    tagger = nltk_tagger_path()
    if tagger is not None:
        found = f"{tagger}: RoViST-VG's nouns as the authors tag them"
        checks.append((f"NLTK tagger {NLTK_TAGGER_DATA}", True, lambda: found))
        folders["NLTK_DATA"] = tagger.parents[1]
    else:
        notes.append(
            f"NLTK's tagger data ({NLTK_TAGGER_DATA}) is not installed: RoViST-VG's nouns are tagged by spaCy instead, "
            f"and a noun's tag can differ from the authors'; install it with `python -m nltk.downloader {NLTK_TAGGER_DATA}`"
        )
    if not (checkpoint and glove):
        from vst_core.metrics.rovist_vg.region2phrase import WHERE

        notes.append(f"RoViST-VG's checkpoint and GloVe vectors are files you download yourself: {WHERE}")
        return FetchPlan(tuple(checks), tuple(notes), folders)
    files = str(checkpoint), str(glove)

    def scores() -> str:
        from PIL import Image

        from vst_core.metrics.rovist_vg.region2phrase import load_rovist_vg

        loaded = load_rovist_vg(files[0], vit=vit, glove=files[1], device="cpu", batch_size=1)
        words, _ = loaded.encode_words(["dog"])
        crop = loaded.encode_crops([Image.new("RGB", (64, 48), "gray")])
        return f"{loaded.signature} loads and scores (cos(dog, a gray crop) {float(words[0] @ crop[0]):+.3f})"

    checks.append((f"RoViST-VG {Path(files[0]).name} + {Path(files[1]).name}", True, scores))
    return FetchPlan(tuple(checks), tuple(notes), folders)


FETCH = Fetch(
    arguments=(
        FetchArgument("--rovist-vg", "also fetch the ViT of RoViST-VG's image encoder (--rovist-vg-vit)", switch=True),
        FetchArgument("--rovist-vg-vit", "the ViT of RoViST-VG (hub name or folder)", default=VIT),
        FetchArgument("--rovist-vg-model", "also check the authors' RoViST-VG checkpoint (with --glove)", metavar="FILE"),
        FetchArgument("--glove", "GloVe vectors for --rovist-vg-model (glove.6B.300d.txt)", metavar="FILE"),
    ),
    plan=fetch_plan,
)


METRIC = MetricSpec(
    name=NAME,
    title="RoViST-VG",
    description="RoViST-VG: the authors' Region2Phrase model (ViT regions, GloVe nouns); idf-weighted LogSumExp of each "
    "noun's best cosine, Eq. 3 in (-1, 1); needs --rovist-vg-model and --glove",
    record=RovistVGScores,
    fields=(
        MetricField(
            "RoViST-VG",
            NAME,
            "score",
            "RoViST-VG (authors' model): Eq. 3 of the log-sum-exp S",
            report="RoViST-VG",
            bounds=(-1.0, 1.0),
        ),
        MetricField("RoViST-VG S", NAME, "lse", "RoViST-VG's idf-weighted log-sum-exp S, as the authors' vg_score returns"),
    ),
    card="docs/metrics/rovist_vg.md",
    computing=Computing(
        needs=frozenset({"images", "model", "idf"}),
        image_record=image_record,
        load=model,
        region_model=model,  # the grounder runs it over the regions CLIP sees
    ),
    signing=Signing(
        settings=("regions", "top_b", "spacy_model"),
        identity=identity,
        caption=caption,
        # the files are signed by their digests (identity), not by their paths
        options=(
            Option(
                "rovist_vg_checkpoint",
                help="the authors' RoViST-VG file (r2p_model_epoch2.pth.tar, linked from their RoViST_VG_Demo notebook), "
                "read as their training script saved it; with a GloVe file it adds RoViST-VG with their model (a regions "
                "CSV gives the paper's regions; the ViT it needs is fetched by `vst fetch-models`)",
                kind="file",
                flag="--rovist-vg-model",
                label="RoViST-VG checkpoint",
                required=True,
                signed=False,
                metavar="FILE",
            ),
            Option(
                "glove_file",
                help="GloVe vectors glove.6B.300d.txt (or the .word2vec copy the authors' script writes)",
                kind="file",
                flag="--glove",
                label="GloVe file",
                required=True,
                signed=False,
                metavar="FILE",
            ),
            Option(
                "rovist_vg_idf",
                help="the authors' idf_dict.pkl (read without running pickle code), or a JSON object or CSV of noun,idf; "
                "without it idf is fitted over the stories (log(N / (1 + df)))",
                kind="file",
                label="RoViST-VG idf table",
                signed=False,
                metavar="FILE",
            ),
            Option(
                "rovist_vg_vit",
                VIT,
                help="the ViT whose configuration and image processor the checkpoint's image encoder uses "
                "(hub name in the cache, or a local folder)",
                signed=False,
            ),
        ),
    ),
    showing=Showing(
        cards=cards,
        evidence=evidence,
        regions=regions,
    ),
    tools=Tools(fetch=FETCH),
)

__all__ = ["METRIC", "NAME", "NounRegion", "RovistVGScores"]
