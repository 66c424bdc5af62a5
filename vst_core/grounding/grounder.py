"""Grounding a batch of stories: decode images once, pick regions, encode what the cache lacks
(with CLIP, and with the RoViST-VG model when it is asked for), then apply the pure formulas of
:mod:`vst_core.metrics.grounding` story by story."""

from __future__ import annotations

import itertools
import logging
import os
import stat
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from PIL import Image

from vst_core.config import Settings
from vst_core.data import Story, resolve_image
from vst_core.data.images import check_bytes, image_header, open_image, reduction, scale_of
from vst_core.data.regions import Box, RegionsTable, grid_proposals, select_regions, whole_image
from vst_core.grounding.builders import clipscore_scores, grounding_scores, rovist_vg_clip_scores, rovist_vg_scores
from vst_core.grounding.embeddings import EmbeddingCache, region_key, text_key
from vst_core.grounding.memo import InputMemo, file_stamp
from vst_core.hashing import file_digest
from vst_core.metric_spec import registry
from vst_core.metrics.grounding import (
    Misalignment,
    clipscore,
    groovist_score,
    idf_table,
    np_proportion,
    rovist_vg,
    temporal_misalignment,
)
from vst_core.metrics.tokens import is_punctuation
from vst_core.models.clip import PixelBox
from vst_core.models.detector import Detector
from vst_core.models.protocols import CropEncoder, EmbeddingStore, ImageTextEncoder
from vst_core.models.rovist_vg import RovistVGModel
from vst_core.records import (
    ClipScoreScores,
    GroundingScores,
    MetricScores,
    RovistVGClipScores,
    RovistVGScores,
)
from vst_core.text.concreteness import phrase_concreteness
from vst_core.text.nouns import Noun, nouns_many, tagger_name
from vst_core.text.phrases import NounPhrase, load_spacy, noun_phrases_many, pipeline_id, reference_spacy_model, token_texts
from vst_core.text.wordnet import noun_lemma

if TYPE_CHECKING:
    from spacy.language import Language

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")
#: Entries a grounder keeps from one chunk to the next in each of its look-ups by content (text
#: vectors, region vectors by cache key, phrase weights, the proposals of an image size, box keys):
#: 8,192 vectors are 16 MiB at ViT-B-32's width (512 float32 values).
KEEP_BETWEEN_CHUNKS = 8192


@dataclass
class ImageEntry:
    """One decoded image: its regions and their embeddings, or why it failed."""

    path: Path
    ref: str = ""  # the path as the story names it, relative to the dataset folder
    error: str | None = None
    size: tuple[int, int] = (0, 0)
    boxes: list[Box] = field(default_factory=list)
    region_emb: np.ndarray | None = None  # (R, D)
    whole_emb: np.ndarray | None = None  # (D,)
    vg_emb: np.ndarray | None = None  # (R, 1024): the RoViST-VG model's unit vectors of the same regions
    note: str | None = None


def _probe(entry: ImageEntry) -> tuple[str, str | None]:
    """Content hash and format of an image file; sets its size from the header (no decode) or its error."""
    try:
        entry.size, fmt = image_header(entry.path)  # regular file, format and pixel budget, from the header
        return file_digest(entry.path), fmt
    except Exception as exc:  # missing, not an image, over the budget
        entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
        return "", None


def _done(value: Image.Image) -> Future[Image.Image]:
    future: Future[Image.Image] = Future()
    future.set_result(value)
    return future


class Grounder:
    """Scores the image metrics of stories; models and region tables are injected: ``encoder`` (CLIP)
    when a CLIP metric is asked for, ``vg`` (the RoViST-VG model) for ``rovist_vg``."""

    def __init__(
        self,
        settings: Settings,
        encoder: ImageTextEncoder | None,
        *,
        root: Path,
        cache: EmbeddingStore | None = None,
        regions_table: RegionsTable | None = None,
        detector: Detector | None = None,
        vg: RovistVGModel | None = None,
        memo: InputMemo | None = None,
    ) -> None:
        self.settings = settings
        self.memo = memo  # image digests and noun phrases of earlier runs
        self.encoder = encoder
        self.vg = vg
        self.nouns: dict[tuple[str, str], list[Noun]] = {}  # RoViST-VG's nouns, by (system, story_id)
        self._vg_words: dict[str, tuple[np.ndarray, bool]] = {}
        self.root = root
        self.cache: EmbeddingStore = cache or EmbeddingCache(None)
        self.regions_table = regions_table
        self.detector = detector
        self.images: dict[str, ImageEntry] = {}
        self._base: Path | None = None  # the set's folder resolved, once
        self.phrases: dict[tuple[str, str], list[NounPhrase]] = {}  # by (system, story_id)
        self.idf: dict[str, float] = {}
        # text vectors and phrase weights by their text (words), kept from chunk to chunk (the newest
        # KEEP_BETWEEN_CHUNKS): a phrase met again is not read from the cache again
        self._text: dict[str, np.ndarray] = {}
        self._region_vectors: dict[str, np.ndarray] = {}  # by cache key (model, image content, box), the same way
        self._weight_of: dict[tuple[tuple[str, ...], tuple[str, ...] | None], float] = {}
        self._pipeline: tuple[object, str] | None = None  # (spaCy pipeline, its pipeline_id)
        self._grid: dict[tuple[int, int], list[Box]] = {}  # the proposals chosen for an image size
        self._box_key: dict[Box, str] = {}

    # ------------------------------------------------------------------ preparation

    def _units(self, phrases: list[NounPhrase]) -> list[tuple[str, NounPhrase]]:
        """(text to embed, phrase) per unit; with units='nouns' the head lemma, de-duplicated."""
        if self.settings.units == "phrases":
            return [(p.text, p) for p in phrases]
        seen: dict[str, NounPhrase] = {}
        for p in phrases:
            seen.setdefault(p.root, p)
        return list(seen.items())

    @property
    def needs_idf(self) -> bool:
        """Whether the settings use idf weights (-C +idf, or either RoViST-VG)."""
        m = self.settings.metrics
        return self.settings.weighting == "idf" or "rovist_vg_clip" in m or "rovist_vg" in m

    @property
    def _clip_phrases(self) -> bool:
        return self.encoder is not None and bool(registry().with_need("clip") & set(self.settings.metrics))

    def fit_idf(self, stories: Sequence[Story]) -> None:
        """idf over the loaded stories: of phrase units (for -C +idf), of head nouns (RoViST-VG on
        CLIP) and of the nouns the RoViST-VG code extracts (its model; their GloVe vectors are read
        in the same pass)."""
        self.idf = {}
        if self._clip_phrases:
            docs_units, docs_nouns = [], []
            self.parse(stories)
            for story in stories:
                phrases = self._phrases(story)
                docs_units.append([u for u, _ in self._units(phrases)])
                docs_nouns.append([p.root for p in phrases])
            self.idf = {**idf_table(docs_units), **{f"noun:{k}": v for k, v in idf_table(docs_nouns).items()}}
        if self.vg is not None and "rovist_vg" in self.settings.metrics:
            found = nouns_many([s.sentences for s in stories], self.settings.spacy_model)
            if self.vg.idf is None:  # no table of the authors': fitted over the set
                self.idf.update({f"vg:{k}": v for k, v in idf_table([[n.text for n in f] for f in found]).items()})
            self.vg.glove.load({n.text for f in found for n in f})

    def story_nouns(self, stories: Sequence[Story]) -> None:
        """RoViST-VG's nouns of every story not done yet, tagged in one pass."""
        todo = list({s.key: s for s in stories if s.key not in self.nouns}.values())
        if todo:
            found = nouns_many([s.sentences for s in todo], self.settings.spacy_model)
            self.nouns.update((s.key, n) for s, n in zip(todo, found, strict=True))

    def parse(self, stories: Sequence[Story]) -> None:
        """Noun phrases of every story not parsed yet, in one spaCy pass over all their sentences."""
        todo = list({s.key: s for s in stories if s.key not in self.phrases}.values())
        if not todo:
            return
        reference = self.settings.grounding_profile == "reference"
        name = reference_spacy_model() if reference and not self.settings.spacy_model else self.settings.spacy_model
        nlp = load_spacy(name)
        keys: dict[tuple[str, str], str] = {}
        if self.memo is not None:
            pipeline = self._pipeline_id(nlp)
            keys = {s.key: self.memo.phrase_key(s.sentences, pipeline, reference) for s in todo}
            known = self.memo.phrases(keys.values())
            self.phrases.update((s.key, known[keys[s.key]]) for s in todo if keys[s.key] in known)
            todo = [s for s in todo if keys[s.key] not in known]
        if not todo:
            return
        found = noun_phrases_many([s.sentences for s in todo], nlp, whole_pronouns=reference)
        self.phrases.update((s.key, p) for s, p in zip(todo, found, strict=True))
        if self.memo is not None:
            self.memo.put_phrases({keys[s.key]: p for s, p in zip(todo, found, strict=True)})

    def _pipeline_id(self, nlp: Language) -> str:
        """:func:`pipeline_id` of ``nlp``, read once per pipeline (its ``meta`` is rebuilt on every read)."""
        if self._pipeline is None or self._pipeline[0] is not nlp:
            self._pipeline = (nlp, pipeline_id(nlp))
        return self._pipeline[1]

    def _phrases(self, story: Story) -> list[NounPhrase]:
        if story.key not in self.phrases:
            self.parse([story])
        return self.phrases[story.key]

    def _image(self, ref: str) -> ImageEntry:
        if ref not in self.images:
            try:
                if self._base is None:
                    self._base = self.root.resolve()
                self.images[ref] = ImageEntry(resolve_image(self.root, ref, base=self._base), ref)
            except ValueError as exc:
                self.images[ref] = ImageEntry(Path(ref), ref, error=str(exc))
        return self.images[ref]

    def prepare(self, stories: Sequence[Story]) -> None:
        """Choose the regions of new images, encode every region and phrase the cache lacks.

        Each distinct image of the batch is hashed and measured (header only) in worker threads;
        only images with a region missing from the cache are decoded, in the background, while
        the encoder crops and preprocesses them a model batch ahead of the forward pass.
        """
        s = self.settings
        model = self.encoder.signature if self.encoder is not None else ""
        pending: dict[int, ImageEntry] = {}
        for story in stories:
            for ref in story.images:
                entry = self._image(ref)
                if entry.error is None and entry.region_emb is None:
                    pending.setdefault(id(entry), entry)
        if pending:
            self._encode_regions(list(pending.values()), model)
        if self.vg is not None and "rovist_vg" in s.metrics:
            self.story_nouns(stories)
        if self.encoder is None:
            return
        texts = [t for t in self.texts_of(stories) if t not in self._text]
        if texts:
            encoder = self.encoder
            vectors = self.cache.fetch(
                [text_key(model, t) for t in texts], lambda idx: encoder.encode_text([texts[i] for i in idx])
            )
            self._text.update(zip(texts, vectors))

    def texts_of(self, stories: Sequence[Story]) -> list[str]:
        """Every distinct text the CLIP metrics of the settings encode for ``stories`` (phrase units,
        head nouns for RoViST-VG on CLIP, CLIPScore's prompted sentences), in order; parses them."""
        s = self.settings
        self.parse(stories)
        texts: list[str] = []
        for story in stories:
            phrases = self._phrases(story)
            texts.extend(u for u, _ in self._units(phrases))
            if "rovist_vg_clip" in s.metrics:
                texts.extend(p.root for p in phrases)
            if "clipscore" in s.metrics:
                texts.extend(s.clipscore_prompt + t for t in story.sentences if t)
        return list(dict.fromkeys(t for t in texts if t))

    def ready(self, story: Story) -> bool:
        """Whether :meth:`prepare` has covered this story."""
        if self.encoder is not None and story.key not in self.phrases:
            return False
        if self.vg is not None and "rovist_vg" in self.settings.metrics and story.key not in self.nouns:
            return False
        entries = [self.images.get(ref) for ref in story.images]
        return all(e is not None and (e.error is not None or e.region_emb is not None) for e in entries)

    def _encode_regions(self, pending: list[ImageEntry], model: str) -> None:
        s = self.settings
        workers = (self.encoder.workers if self.encoder is not None else 0) or 1
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vst-images") as pool:
            digests = self._digests(pending, pool)
            pending = [e for e in pending if e.error is None]
            decoded: dict[int, Future[Image.Image]] = {}
            if s.regions == "detector" and self.detector is not None:
                pending = self._detect(pending, decoded)
            else:
                self._regions(pending, {})
            if self.vg is not None and "rovist_vg" in s.metrics:
                self._encode_vg(pending, digests, decoded)
            if self.encoder is None:  # no CLIP metric: the regions are chosen, nothing else to encode
                for entry in pending:
                    entry.region_emb = np.zeros((len(entry.boxes), 0), np.float32)
                return
            whole = "clipscore" in s.metrics  # the whole image is encoded only for CLIPScore
            keys, found, unique = self._lookup(pending, digests, model, whole)
            if not unique:
                vectors = np.zeros((0, 0), np.float32)
            elif s.image_preprocess == "device":
                vectors = self._encode_on_device(unique, decoded)
            else:
                vectors = self._encode_with_pillow(unique, decoded, pool)
            decoded.clear()
        fresh = {k: vectors[n] for n, (e, _, k) in enumerate(unique) if e.error is None}
        if fresh:
            self.cache.put_many(fresh)
        found.update(fresh)
        self._attach(pending, keys, found, whole)
        self._region_vectors.update(found)

    def _digests(self, pending: list[ImageEntry], pool: ThreadPoolExecutor) -> dict[int, str]:
        """Content digest of each image (sizes set, failures recorded as the entry's error): from the
        memo where the file is the one it saw (same size, mtime, ctime and inode), else read and
        hashed in ``pool``."""
        digests: dict[int, str] = {}
        infos: dict[int, os.stat_result] = {}
        if self.memo is not None:
            for entry in pending:
                try:
                    info = entry.path.stat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    infos[id(entry)] = info
            known = self.memo.images({str(e.path): file_stamp(infos[id(e)]) for e in pending if id(e) in infos})
            for entry in pending:
                facts = known.get(str(entry.path))
                if facts is None:
                    continue
                digest, size, fmt = facts
                try:  # the budget may have changed since: checked again on the stored header
                    check_bytes(infos[id(entry)].st_size, entry.path.name)
                    reduction(size, fmt)
                except Exception as exc:
                    entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
                    digests[id(entry)] = ""
                    continue
                entry.size = size
                digests[id(entry)] = digest
        todo = [e for e in pending if id(e) not in digests]
        probed = dict(zip(map(id, todo), pool.map(_probe, todo)))
        digests.update((k, digest) for k, (digest, _) in probed.items())
        if self.memo is not None:
            self.memo.put_images(
                {
                    str(e.path): (file_stamp(infos[id(e)]), (probed[id(e)][0], e.size, probed[id(e)][1]))
                    for e in todo
                    if e.error is None and id(e) in infos
                }
            )
        return digests

    def _encode_with_pillow(
        self, unique: list[tuple[ImageEntry, Box, str]], decoded: dict[int, Future[Image.Image]], pool: ThreadPoolExecutor
    ) -> np.ndarray:
        """The ``pil`` preprocessing: each crop cut and resized by Pillow in the encoder's worker threads."""
        assert self.encoder is not None
        if self.encoder.device != "cpu":
            for entry, _, _ in unique:
                if id(entry) not in decoded:  # submitted in encoding order, decoded ahead of the model
                    decoded[id(entry)] = pool.submit(open_image, entry.path)
        lock = threading.Lock()

        def image_of(entry: ImageEntry) -> Image.Image:
            # on a CPU an image is decoded by the first crop that needs it, between forwards
            # (see ClipEncoder.encode_images), so decoding never competes with the model's threads
            with lock:
                future = decoded.get(id(entry))
                owner = future is None
                if future is None:
                    future = decoded[id(entry)] = Future()
            if owner:
                try:
                    future.set_result(open_image(entry.path))
                except Exception as exc:
                    future.set_exception(exc)
            return future.result()

        def crop(item: tuple[ImageEntry, Box, str]) -> Image.Image:
            entry, box, _ = item
            try:
                image = image_of(entry)  # a large JPEG is decoded reduced: boxes follow
                return _crop(image, box.scaled(*scale_of(image, entry.size)), self.settings.grounding_profile)
            except Exception as exc:  # truncated data shows only when decoded
                _failed(entry, exc)
                return Image.new("RGB", (1, 1))

        return self.encoder.encode_images(unique, load=crop)

    def _encode_on_device(self, unique: list[tuple[ImageEntry, Box, str]], decoded: dict[int, Future[Image.Image]]) -> np.ndarray:
        """The ``device`` preprocessing: each image decoded once in the worker threads and sent as
        uint8; its crops are cut, resized and normalised on the model's device (``encode_crops``).
        Returns the vectors in the order of ``unique``."""
        encoder = self.encoder
        if not isinstance(encoder, CropEncoder):
            raise ValueError("preprocess 'device' needs an encoder with encode_crops (the CLIP encoder has it)")
        by_entry: dict[int, tuple[ImageEntry, list[int]]] = {}
        for n, (entry, _, _) in enumerate(unique):
            by_entry.setdefault(id(entry), (entry, []))[1].append(n)
        sources = list(by_entry.values())

        def load(source: tuple[ImageEntry, list[int]]) -> tuple[np.ndarray, list[PixelBox]]:
            entry, rows = source
            try:
                future = decoded.get(id(entry))
                image = future.result() if future is not None else open_image(entry.path)
                scale = scale_of(image, entry.size)
                return np.array(image), [_pixel_box(unique[n][1].scaled(*scale)) for n in rows]
            except Exception as exc:
                _failed(entry, exc)
                return np.zeros((1, 1, 3), np.uint8), [(0, 0, 1, 1)] * len(rows)

        vectors = encoder.encode_crops(sources, load)
        order = [n for _, rows in sources for n in rows]
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _encode_vg(self, pending: list[ImageEntry], digests: dict[int, str], decoded: dict[int, Future[Image.Image]]) -> None:
        """The RoViST-VG model's vectors of every chosen region, from the cache or encoded (crops cut
        by Pillow from the decoded image, boxes rounded as Pillow rounds them)."""
        assert self.vg is not None
        model = self.vg.region_signature
        keys = {id(e): [region_key(model, digests[id(e)], b.key() + "|vg") for b in e.boxes] for e in pending}
        found = self.cache.get_many([k for e in pending for k in keys[id(e)]])
        todo = [e for e in pending if any(k not in found for k in keys[id(e)])]
        crops: dict[str, Image.Image] = {}
        for entry in todo:
            future = decoded.get(id(entry))
            try:
                image = future.result() if future is not None else open_image(entry.path)
            except Exception as exc:
                entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
                continue
            scale = scale_of(image, entry.size)
            for box, key in zip(entry.boxes, keys[id(entry)], strict=True):
                if key not in found and key not in crops:
                    crops[key] = _crop(image, box.scaled(*scale), "reference")
        self.cache.hits += sum(len(keys[id(e)]) for e in pending) - len(crops)
        self.cache.misses += len(crops)
        if crops:
            vectors = self.vg.encode_crops(list(crops.values()))
            fresh = dict(zip(crops, vectors, strict=True))
            self.cache.put_many(fresh)
            found.update(fresh)
        for entry in pending:
            if entry.error is None:
                entry.vg_emb = np.stack([found[k] for k in keys[id(entry)]])

    def _detect(self, pending: list[ImageEntry], decoded: dict[int, Future[Image.Image]]) -> list[ImageEntry]:
        """Decode every image for the detector (kept for cropping) and take its boxes; the images
        that decoded."""
        images = []
        for entry in pending:
            try:
                images.append(open_image(entry.path))
            except Exception as exc:
                entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"
        ok = [e for e in pending if e.error is None]
        assert self.detector is not None
        detected = self.detector.boxes(images, self.settings.top_b)
        for entry, image in zip(ok, images, strict=True):
            decoded[id(entry)] = _done(image)
        back = [
            [b.scaled(*(1 / f for f in scale_of(im, e.size))) for b in boxes]
            for e, im, boxes in zip(ok, images, detected, strict=True)
        ]
        self._regions(ok, dict(zip(map(id, ok), back, strict=True)))
        return ok

    def _lookup(
        self, pending: list[ImageEntry], digests: dict[int, str], model: str, whole: bool
    ) -> tuple[dict[int, list[str]], dict[str, np.ndarray], list[tuple[ImageEntry, Box, str]]]:
        """Cache keys of every region (and the whole image when ``whole``), the vectors found, and
        the (image, box, key) crops still to encode, each distinct content once."""
        boxes = {id(e): [*e.boxes, *([whole_image(*e.size)] if whole else [])] for e in pending}
        # another crop or resize gives other vectors: the reference profile's rounding, the device's resize
        crop = {"paper": "", "reference": "|pil-round"}[self.settings.grounding_profile]
        if self.settings.image_preprocess == "device":
            crop += "|device-resize"
        keys = {id(e): [region_key(model, digests[id(e)], self._key_of(b) + crop) for b in boxes[id(e)]] for e in pending}
        known = self._region_vectors  # an image of the last chunk's stories again
        found = {k: known[k] for entry in pending for k in keys[id(entry)] if k in known}
        found.update(self.cache.get_many([k for entry in pending for k in keys[id(entry)] if k not in found]))
        todo: list[tuple[ImageEntry, Box, str]] = []
        for entry in pending:
            todo.extend((entry, b, k) for b, k in zip(boxes[id(entry)], keys[id(entry)], strict=True) if k not in found)
        unique = list({k: (e, b, k) for e, b, k in todo}.values())
        self.cache.hits += len({k for e in pending for k in keys[id(e)]}) - len(unique)
        self.cache.misses += len(unique)
        return keys, found, unique

    @staticmethod
    def _attach(pending: list[ImageEntry], keys: dict[int, list[str]], found: dict[str, np.ndarray], whole: bool) -> None:
        """Give each image its region vectors (and whole-image vector), or the reason it has none."""
        for entry in pending:
            if entry.error is None and not all(k in found for k in keys[id(entry)]):
                entry.error = f"cannot read {entry.path.name}: the same content failed to decode under another name"
            if entry.error is None:
                stacked = np.array([found[k] for k in keys[id(entry)]])  # rows of one width: np.stack, faster
                entry.region_emb = stacked[: len(entry.boxes)]
                entry.whole_emb = stacked[-1] if whole else None

    def _key_of(self, box: Box) -> str:
        """``box.key()``, formatted once per box (the proposals of one image size recur)."""
        key = self._box_key.get(box)
        if key is None:
            key = self._box_key[box] = box.key()
        return key

    def _grid_regions(self, width: int, height: int) -> list[Box]:
        """The weight-free proposals chosen for an image of this size (computed once per size)."""
        chosen = self._grid.get((width, height))
        if chosen is None:
            s = self.settings
            boxes = grid_proposals(width, height)
            chosen = self._grid[(width, height)] = select_regions(
                boxes, width, height, top_b=s.top_b, include_whole=s.whole_image
            )
        return list(chosen)

    def _regions(self, pending: list[ImageEntry], detected: dict[int, list[Box]]) -> None:
        s = self.settings
        for entry in pending:
            width, height = entry.size
            found: list[Box] | None = None
            if s.regions == "csv":
                _, found, why = self.regions_table.lookup(entry.ref) if self.regions_table else (None, None, None)
                if not found:
                    entry.note = f"{why or f'no regions for {entry.ref} in the regions file'}: weight-free proposals used"
            elif id(entry) in detected:
                found = detected[id(entry)]
            if found:
                entry.boxes = select_regions(found, width, height, top_b=s.top_b, include_whole=s.whole_image)
            else:
                entry.boxes = self._grid_regions(width, height)
            if not entry.boxes:
                entry.note = f"no usable box in {entry.path.name}: whole image used"
                entry.boxes = [whole_image(width, height)]

    def _best_matches(self, texts: Sequence[str], regions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each text, the index of its most similar region and that raw cosine."""
        if not texts:
            return np.zeros(0, int), np.zeros(0)
        sims = np.array([self._text[t] for t in texts]) @ regions.T
        best = sims.argmax(axis=1)
        return best, sims[np.arange(len(texts)), best]

    def best_cosines(self, story: Story) -> list[float]:
        """Each phrase unit's best raw cosine over the story's regions (for θ over a dataset)."""
        entries = [self._image(ref) for ref in story.images]
        if not story.images or any(e.error or e.region_emb is None for e in entries):
            return []
        regions = np.concatenate([e.region_emb for e in entries])
        return [float(c) for c in self._best_matches([u for u, _ in self._units(self._phrases(story))], regions)[1]]

    def forget(self) -> None:
        """Drop decoded images and phrases (vectors stay in the cache): memory bounded by a chunk,
        and the newest ``KEEP_BETWEEN_CHUNKS`` of what depends on its key alone (a text's vector on
        the text, a weight on the words, the proposals on the image size)."""
        self.images.clear()
        self.phrases.clear()
        self.nouns.clear()
        _keep_newest(self._text, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._region_vectors, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._weight_of, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._grid, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._box_key, KEEP_BETWEEN_CHUNKS)

    # ------------------------------------------------------------------ scoring

    def entries(self, story: Story) -> list[ImageEntry]:
        """The story's prepared images; raises ValueError with the reason on a failed story."""
        if not story.images:
            raise ValueError("story has no images")
        entries = [self._image(ref) for ref in story.images]
        failed = [f"image {k + 1}: {e.error}" for k, e in enumerate(entries) if e.error]
        if failed:
            raise ValueError("; ".join(failed))
        return entries

    def score(self, story: Story) -> dict[str, MetricScores]:
        """Records of the image metrics asked for (each metric module's builder); raises ValueError
        with the reason on a failed story."""
        entries = self.entries(story)
        builders: dict[str, Callable[[Story, list[ImageEntry]], MetricScores]] = {
            "grounding": self.groovist_record,
            "clipscore": self.clipscore_record,
            "rovist_vg_clip": self.rovist_vg_clip_record,
            "rovist_vg": self.rovist_vg_record,
        }
        return {name: build(story, entries) for name, build in builders.items() if name in self.settings.metrics}

    def _weights(self, units: list[tuple[str, NounPhrase]]) -> list[float]:
        s = self.settings
        if s.weighting == "idf":
            return [self.idf.get(u, 0.0) for u, _ in units]
        if s.weighting == "none":
            return [1.0] * len(units)
        if s.units == "nouns":
            return [phrase_concreteness([u], None, expressions=s.expressions) for u, _ in units]
        if s.grounding_profile == "reference":  # whitespace words of the phrase, WordNet noun lemmas
            return [phrase_concreteness(words, [noun_lemma(w) for w in words]) for words in (u.split(" ") for u, _ in units)]
        # the same words and lemmas weigh the same: each distinct pair looked up once
        memo, out = self._weight_of, []
        for _, p in units:
            key = (p.words or tuple(p.text.split()), p.lemmas or None)
            weight = memo.get(key)
            if weight is None:
                weight = memo[key] = phrase_concreteness(key[0], key[1], expressions=s.expressions)
            out.append(weight)
        return out

    def groovist_record(self, story: Story, entries: list[ImageEntry]) -> GroundingScores:
        """GROOVIST over every region of every image, with T and P (GROOVIST Eq. 3, 4)."""
        s = self.settings
        regions = np.concatenate([e.region_emb for e in entries])
        owner = [k for k, e in enumerate(entries) for _ in e.boxes]
        boxes = [b for e in entries for b in e.boxes]
        units = self._units(self._phrases(story))
        best, best_cos = self._best_matches([u for u, _ in units], regions)
        g = groovist_score(best_cos, self._weights(units), s.theta_value, penalize=s.penalize, weight=s.weighting != "none")
        matched = [owner[j] for j in best.tolist()]
        notes = [e.note for e in entries if e.note]
        aligned = len(story.sentences) <= len(story.images)
        if aligned:
            misalignment = temporal_misalignment([p.sentence for _, p in units], matched, len(story.sentences))
        else:
            misalignment = Misalignment(None, tuple(None for _ in story.sentences))
            notes.append("more sentences than images: temporal misalignment T is undefined")
        # a letters-or-digits token is a word without looking at each character
        n_words = sum(1 for sent in story.sentences for t in token_texts(sent) if t.isalnum() or not is_punctuation(t))
        return grounding_scores(
            g,
            units,
            best_cosines=[float(c) for c in best_cos],
            images=matched,
            boxes=[boxes[int(j)] for j in best],
            misalignment=misalignment,
            np_proportion=np_proportion(len(units), n_words),
            notes=notes,
            penalize=s.penalize,
        )

    def clipscore_record(self, story: Story, entries: list[ImageEntry]) -> ClipScoreScores:
        """CLIPScore of sentence i, after the prompt ("A photo depicts " by default), with the whole image i."""
        n = min(len(story.sentences), len(entries))
        prompt = self.settings.clipscore_prompt
        cosines = [
            float(self._text[prompt + story.sentences[i]] @ entries[i].whole_emb) if story.sentences[i] else 0.0 for i in range(n)
        ]
        aligned = n == len(story.sentences) == len(entries)
        return clipscore_scores(
            clipscore(cosines), [] if aligned else [f"{len(story.sentences)} sentences, {len(entries)} images: {n} pairs scored"]
        )

    def rovist_vg_clip_record(self, story: Story, entries: list[ImageEntry]) -> RovistVGClipScores:
        """RoViST-VG's aggregation of each head noun's best CLIP cosine, idf-weighted."""
        regions = np.concatenate([e.region_emb for e in entries])
        nouns = list(dict.fromkeys(p.root for p in self._phrases(story)))
        best = self._best_matches(nouns, regions)[1]
        idf = [self.idf.get(f"noun:{n}", 0.0) for n in nouns]
        return rovist_vg_clip_scores(rovist_vg(best, idf), nouns, [float(c) for c in best], idf)

    def _vg_vectors(self, words: Sequence[str]) -> tuple[np.ndarray, list[bool]]:
        """The RoViST-VG model's unit vectors of ``words`` (each word encoded once per chunk)."""
        assert self.vg is not None
        new = [w for w in dict.fromkeys(words) if w not in self._vg_words]
        if new:
            vectors, known = self.vg.encode_words(new)
            self._vg_words.update(zip(new, zip(vectors, known, strict=True), strict=True))
        return np.stack([self._vg_words[w][0] for w in words]), [self._vg_words[w][1] for w in words]

    def rovist_vg_record(self, story: Story, entries: list[ImageEntry]) -> RovistVGScores:
        """RoViST-VG with the authors' model, as their ``compute_sim`` and ``vg_score``: each noun's best
        cosine over the regions of each image, the best over the images, idf-weighted log-sum-exp."""
        if self.vg is None:
            raise ValueError("the RoViST-VG model is not loaded")
        self.story_nouns([story])
        nouns = self.nouns[story.key]
        notes = [e.note for e in entries if e.note]
        table = self.vg.idf
        fitted = any(k.startswith("vg:") for k in self.idf)
        if table is None and not fitted:
            notes.append("no idf fitted over a story set: every noun weighs 1 (the authors' --use_idf 0)")
        if not nouns:
            return rovist_vg_scores(
                rovist_vg([], []),
                [],
                best=[],
                idf=[],
                images=[],
                boxes=[],
                model=self.vg.signature,
                tagger=self._tagger,
                notes=notes,
            )
        texts = [n.text for n in nouns]
        vectors, known = self._vg_vectors(texts)
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
            idf = [self.idf.get(f"vg:{t}", 0.0) if fitted else 1.0 for t in texts]
        return rovist_vg_scores(
            rovist_vg(best, idf),
            [(n.text, n.sentence, k) for n, k in zip(nouns, known, strict=True)],
            best=[float(c) for c in best],
            idf=idf,
            images=[int(i) for i in image],
            boxes=boxes,
            model=self.vg.signature,
            tagger=self._tagger,
            notes=notes,
        )

    @property
    def _tagger(self) -> str:
        return tagger_name(self.settings.spacy_model)


def _keep_newest(items: dict[K, V], keep: int) -> None:
    """Drop the oldest entries of ``items`` (insertion order) beyond the newest ``keep``.

    >>> d = {"a": 1, "b": 2, "c": 3}; _keep_newest(d, 2); d
    {'b': 2, 'c': 3}
    """
    for key in list(itertools.islice(items, max(len(items) - keep, 0))):
        del items[key]


def _failed(entry: ImageEntry, exc: Exception) -> None:
    """Record the first decoding failure of an image (truncated data shows only when decoded)."""
    if entry.error is None:
        entry.error = f"cannot read {entry.path.name}: {type(exc).__name__}: {exc}"


def _pixel_box(box: Box) -> PixelBox:
    """The crop :func:`_crop` cuts in the ``paper`` profile, as pixel bounds."""
    return (int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2)))


def _crop(image: Image.Image, box: Box, profile: str = "paper") -> Image.Image:
    """The region's pixels: ``paper`` truncates the top-left corner and rounds the bottom-right one;
    ``reference`` passes the box to Pillow, which rounds every coordinate (as the region files of the
    GROOVIST code were cut)."""
    if profile == "reference":
        return image.crop((box.x1, box.y1, box.x2, box.y2))
    return image.crop((int(box.x1), int(box.y1), int(round(box.x2)), int(round(box.y2))))
