"""Grounding a batch of stories: the images' regions and vectors (:class:`ImageRegions`), the
stories' noun phrases, idf and texts, encoded where the cache lacks them; each image metric's
module then applies its pure formula (:mod:`vst_core.formulas.grounding`) story by story through
its ``image_record`` (:mod:`vst_core.metrics`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vst_core.config import Settings
from vst_core.contract import TextsHook, registry
from vst_core.contract.protocols import P, PhraseLike, RegionModelLike
from vst_core.data import Story
from vst_core.data.regions import RegionsTable
from vst_core.formulas.grounding import idf_table
from vst_core.images.embeddings import text_key, tokens_key
from vst_core.images.image_regions import (
    KEEP_BETWEEN_CHUNKS,
    ImageEntry,
    ImageRegions,
    _crop,
    _keep_newest,
    _pixel_box,
    _probe,
)
from vst_core.images.memo import InputMemo
from vst_core.models.detector import Detector
from vst_core.models.protocols import EmbeddingStore, ImageTextEncoder
from vst_core.records import MetricScores
from vst_core.text.concreteness import phrase_concreteness
from vst_core.text.nouns import Noun, nouns_many, tagger_name
from vst_core.text.phrases import NounPhrase, load_spacy, noun_phrases_many, pipeline_id, pipeline_id_of, reference_spacy_model
from vst_core.text.wordnet import noun_lemma

if TYPE_CHECKING:
    from spacy.language import Language

    from vst_core.text.phrases import PhrasesAhead

log = logging.getLogger(__name__)

#: Fewest stories whose noun phrases are worth worker processes (each loads the pipeline, ~2 s of CPU).
AHEAD_MIN = 300

# the crop rules and the probe are read from here by the parity tests and the benchmarks too
__all__ = ["KEEP_BETWEEN_CHUNKS", "Grounder", "ImageEntry", "_crop", "_pixel_box", "_probe"]


#: Noun phrases being parsed in worker processes: the workers, the pipeline the memo keys name, the keys.
Ahead = tuple["PhrasesAhead", str, list[str]]


def spacy_name(settings: Settings) -> str | None:
    """The spaCy pipeline the settings parse noun phrases with (None: the first installed)."""
    reference = settings.option("grounding_profile") == "reference"
    spacy_model: str | None = settings.option("spacy_model")
    return reference_spacy_model() if reference and not spacy_model else spacy_model


def parse_ahead(settings: Settings, memo: InputMemo, stories: Sequence[Story], processes: int) -> Ahead | None:
    """Start parsing, in ``processes`` worker processes, the noun phrases of those ``stories`` the
    memo lacks (at least :data:`AHEAD_MIN` of them), so the parse runs beside the model's loading
    and the images; a :class:`Grounder` given the result stores them in the memo when it first
    needs phrases. None when nothing was started (few stories, or a pipeline that cannot be named
    from its files)."""
    if not registry().with_need("clip") & set(settings.metrics):
        return None
    reference = settings.option("grounding_profile") == "reference"
    name = spacy_name(settings)
    pipeline = pipeline_id_of(name)
    if pipeline is None:
        return None
    todo = list({s.key: s for s in stories}.values())
    keys = [memo.phrase_key(s.sentences, pipeline, reference) for s in todo]
    known = memo.phrases_known(keys)  # an entry that does not decode is parsed again when the grounder reads it
    missing = [(s, k) for s, k in zip(todo, keys, strict=True) if k not in known]
    if len(missing) < AHEAD_MIN:
        return None
    from vst_core.text.phrases import PhrasesAhead

    try:
        ahead = PhrasesAhead([s.sentences for s, _ in missing], name, whole_pronouns=reference, processes=processes)
    except Exception as exc:  # no worker processes here (no semaphores, spawning refused): parsed in this process
        log.warning(
            "noun phrases cannot be parsed in worker processes (%s: %s); parsing in this process", type(exc).__name__, exc
        )
        return None
    return ahead, pipeline, [k for _, k in missing]


class Grounder(ImageRegions):
    """Prepares a batch of stories for the image metrics and scores them: images and regions as
    :class:`ImageRegions`, then noun phrases (spaCy, memoised), idf over the set, RoViST-VG's nouns
    and every text's CLIP vector; models and region tables are injected."""

    def __init__(
        self,
        settings: Settings,
        encoder: ImageTextEncoder | None,
        *,
        root: Path,
        cache: EmbeddingStore | None = None,
        regions_table: RegionsTable | None = None,
        detector: Detector | None = None,
        vg: RegionModelLike | None = None,
        memo: InputMemo | None = None,
        ahead: Ahead | None = None,
    ) -> None:
        super().__init__(
            settings, encoder, root=root, cache=cache, regions_table=regions_table, detector=detector, vg=vg, memo=memo
        )
        self.nouns: dict[tuple[str, str], list[Noun]] = {}  # RoViST-VG's nouns, by (system, story_id)
        self._vg_words: dict[str, tuple[np.ndarray, bool]] = {}
        self.phrases: dict[tuple[str, str], list[NounPhrase]] = {}  # by (system, story_id)
        self.idf: dict[str, float] = {}
        # text vectors and phrase weights by their text (words), kept from chunk to chunk (the newest
        # KEEP_BETWEEN_CHUNKS): a phrase met again is not read from the cache again
        self._text: dict[str, np.ndarray] = {}
        self._tokens: dict[str, tuple[int, int]] = {}  # text -> (tokens, context length)
        self._weight_of: dict[tuple[tuple[str, ...], tuple[str, ...] | None], float] = {}
        self._pipeline: tuple[object, str] | None = None  # (spaCy pipeline, its pipeline_id)
        self._named: tuple[str | None, str | None] | None = None  # (pipeline name, its id from its files)
        self._ahead = ahead  # phrases being parsed in worker processes (parse_ahead), stored in the memo when needed
        self.text_failures: dict[str, str] = {}  # metric -> why its texts could not be had this batch

    # ------------------------------------------------------------------ preparation

    def units(self, phrases: Sequence[P]) -> list[tuple[str, P]]:
        """(text to embed, phrase) per unit; with units='nouns' the head lemma, de-duplicated."""
        if self.settings.option("units") == "phrases":
            return [(p.text, p) for p in phrases]
        seen: dict[str, P] = {}
        for p in phrases:
            seen.setdefault(p.root, p)
        return list(seen.items())

    @property
    def needs_idf(self) -> bool:
        """Whether the settings use idf weights over the set (-C +idf, or a metric that needs ``idf``)."""
        return self.settings.option("weighting") == "idf" or bool(registry().with_need("idf") & set(self.settings.metrics))

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
                phrases = self.phrases_of(story)
                docs_units.append([u for u, _ in self.units(phrases)])
                docs_nouns.append([p.root for p in phrases])
            self.idf = {**idf_table(docs_units), **{f"noun:{k}": v for k, v in idf_table(docs_nouns).items()}}
        if self.vg is not None:
            found = nouns_many([s.sentences for s in stories], self.settings.option("spacy_model"))
            if self.vg.idf is None:  # no table of the authors': fitted over the set
                self.idf.update({f"vg:{k}": v for k, v in idf_table([[n.text for n in f] for f in found]).items()})
            self.vg.load_words({n.text for f in found for n in f})

    def story_nouns(self, stories: Sequence[Story]) -> None:
        """RoViST-VG's nouns of every story not done yet, tagged in one pass."""
        todo = list({s.key: s for s in stories if s.key not in self.nouns}.values())
        if todo:
            found = nouns_many([s.sentences for s in todo], self.settings.option("spacy_model"))
            self.nouns.update((s.key, n) for s, n in zip(todo, found, strict=True))

    def _collect_ahead(self) -> None:
        """Store the phrases :meth:`parse_ahead` started in the memo (those of the pipeline it named)."""
        if self._ahead is None or self.memo is None:
            return
        ahead, pipeline, keys = self._ahead
        self._ahead = None
        try:
            ids, found = ahead.result()
        except Exception as exc:  # a worker that failed: the stories are parsed here instead
            log.warning("noun phrases in worker processes failed (%s: %s); parsing in this process", type(exc).__name__, exc)
            return
        if ids == {pipeline}:
            self.memo.put_phrases(dict(zip(keys, found, strict=True)))

    def parse(self, stories: Sequence[Story]) -> None:
        """Noun phrases of every story not parsed yet, in one spaCy pass over all their sentences."""
        todo = list({s.key: s for s in stories if s.key not in self.phrases}.values())
        if not todo:
            return
        self._collect_ahead()
        reference = self.settings.option("grounding_profile") == "reference"
        name = spacy_name(self.settings)
        keys: dict[tuple[str, str], str] = {}
        nlp: Language | None = None
        if self.memo is not None:
            # the pipeline named from its files: spaCy is loaded only for stories the memo lacks
            pipeline = self._named_pipeline(name)
            if pipeline is None:
                nlp = load_spacy(name)
                pipeline = self._pipeline_id(nlp)
            todo = self._from_memo(todo, pipeline, reference, keys)
            if todo and nlp is None:
                nlp = load_spacy(name)
                if self._pipeline_id(nlp) != pipeline:  # the files named another pipeline than loads
                    todo = self._from_memo(todo, self._pipeline_id(nlp), reference, keys)
        if not todo:
            return
        nlp = nlp or load_spacy(name)
        found = noun_phrases_many([s.sentences for s in todo], nlp, whole_pronouns=reference)
        self.phrases.update((s.key, p) for s, p in zip(todo, found, strict=True))
        if self.memo is not None:
            self.memo.put_phrases({keys[s.key]: p for s, p in zip(todo, found, strict=True)})

    def _from_memo(self, todo: list[Story], pipeline: str, reference: bool, keys: dict[tuple[str, str], str]) -> list[Story]:
        """Take the phrases of ``todo`` the memo holds under ``pipeline`` (``keys`` filled); the rest."""
        assert self.memo is not None
        keys.update((s.key, self.memo.phrase_key(s.sentences, pipeline, reference)) for s in todo)
        known = self.memo.phrases(keys[s.key] for s in todo)
        self.phrases.update((s.key, known[keys[s.key]]) for s in todo if keys[s.key] in known)
        return [s for s in todo if keys[s.key] not in known]

    def _named_pipeline(self, name: str | None) -> str | None:
        """:func:`pipeline_id_of` the pipeline ``name``, read once per grounder."""
        if self._named is None or self._named[0] != name:
            self._named = (name, pipeline_id_of(name))
        return self._named[1]

    def _pipeline_id(self, nlp: Language) -> str:
        """:func:`pipeline_id` of ``nlp``, read once per pipeline (its ``meta`` is rebuilt on every read)."""
        if self._pipeline is None or self._pipeline[0] is not nlp:
            self._pipeline = (nlp, pipeline_id(nlp))
        return self._pipeline[1]

    def phrases_of(self, story: Story) -> list[NounPhrase]:
        """The story's noun phrases (parsed now if :meth:`parse` has not covered it)."""
        if story.key not in self.phrases:
            self.parse([story])
        return self.phrases[story.key]

    def prepare(self, stories: Sequence[Story]) -> None:
        """Choose the regions of new images, encode every region and phrase the cache lacks.

        Each distinct image of the batch is hashed and measured (header only) in worker threads;
        only images with a region missing from the cache are decoded, in the background, while
        the encoder crops and preprocesses them a model batch ahead of the forward pass.
        """
        model = self.encoder.signature if self.encoder is not None else ""
        pending = self.pending([ref for story in stories for ref in story.images])
        pending += [e for e in self.extra_images(stories) if e.error is None and e.region_emb is None]
        if pending:
            self._encode_regions(pending, model)
        self._probe_then()  # when no image of this chunk needed hashing
        if self.vg is not None:
            self.story_nouns(stories)
        if self.encoder is None:
            return
        texts = [t for t in self.texts_of(stories) if t not in self._text]
        if texts:
            encoder = self.encoder
            vectors = self.cache.fetch(
                [text_key(model, t) for t in texts], lambda idx: encoder.encode_text([texts[i] for i in idx])
            )
            vectors.setflags(write=False)  # its rows are kept from chunk to chunk and shared by the image metrics
            self._text.update(zip(texts, vectors))
            self._count_tokens(texts, model)

    def _count_tokens(self, texts: Sequence[str], model: str) -> None:
        """Each text's token count and the model's context length (:meth:`truncation`): from what the
        encoder saw this run, else the cache, else counted now (a text cached before counts were
        kept; this builds the model)."""
        assert self.encoder is not None
        keys = {t: tokens_key(model, t) for t in texts}
        seen: dict[str, int] = getattr(self.encoder, "token_counts", {})
        counted = {t: seen[t] for t in texts if t in seen}
        seen.clear()
        found = self.cache.get_many([keys[t] for t in texts if t not in counted])
        missing = [t for t in texts if t not in counted and keys[t] not in found]
        count = getattr(self.encoder, "token_count", None) if missing else None
        if count is not None:
            for text in missing:
                if (tokens := count(text)) is not None:
                    counted[text] = tokens
        if counted:  # the encoder is built by now: asking its context length loads nothing
            context = int(getattr(self.encoder, "context_length", 0) or 0)
            fresh = {keys[t]: np.array([n, context], np.float32) for t, n in counted.items()}
            self.cache.put_many(fresh)
            found.update(fresh)
        self._tokens.update(
            {t: (int(found[k][0]), int(found[k][1])) for t, k in keys.items() if k in found and len(found[k]) == 2}
        )

    def truncation(self, text: str) -> tuple[int, int] | None:
        """(tokens, context length) of a text :meth:`prepare` encoded when CLIP truncated it, else None."""
        tokens = self._tokens.get(text)
        return tokens if tokens is not None and tokens[1] and tokens[0] > tokens[1] else None

    def extra_images(self, stories: Sequence[Story]) -> list[ImageEntry]:
        """The entries of the images beyond the stories' own that the settings' metrics need whole
        vectors of (their ``image_refs``: the characters' crops), each distinct one once; each is
        encoded whole, without regions, and read back with :meth:`crop`."""
        s = self.settings
        hooks = [
            spec.computing.image_refs
            for name, spec in registry().specs.items()
            if name in s.metrics and spec.computing.image_refs is not None
        ]
        if not hooks or self.encoder is None:
            return []
        refs = dict.fromkeys(ref for story in stories for hook in hooks for ref in hook(story))
        return [self.crop(ref) for ref in refs]

    def texts_of(self, stories: Sequence[Story]) -> list[str]:
        """Every distinct text the CLIP metrics of the settings encode for ``stories``, in order: the
        phrase units, then what each metric's ``texts`` adds (RoViST-VG on CLIP: head nouns;
        CLIPScore: its prompted sentences); parses them."""
        s = self.settings
        self.parse(stories)
        extra = [
            (name, spec.computing.texts)
            for name, spec in registry().specs.items()
            if name in s.metrics and spec.computing.texts is not None
        ]
        texts: list[str] = []
        for story in stories:
            phrases = self.phrases_of(story)
            texts.extend(u for u, _ in self.units(phrases))
            for name, more in extra:
                if name not in self.text_failures:
                    texts.extend(self._metric_texts(name, more, story, phrases))
        return list(dict.fromkeys(t for t in texts if t))

    def _metric_texts(self, name: str, more: TextsHook, story: Story, phrases: list[NounPhrase]) -> list[str]:
        """A metric's ``texts`` for one story; a hook that raises or gives anything but strings is
        that metric's failure for the batch (:attr:`text_failures`), and the other metrics go on."""
        try:
            found = list(more(self.settings, story, phrases))
            wrong = next((t for t in found if not isinstance(t, str)), None)
            if wrong is not None:
                raise TypeError(f"its texts hook gave a {type(wrong).__name__}, not a str")
        except Exception as exc:
            self.text_failures[name] = f"{type(exc).__name__}: {exc}"
            return []
        return found

    def text_vector(self, text: str) -> np.ndarray:
        """The unit CLIP vector of a text :meth:`prepare` encoded (a phrase unit or a metric's ``texts``)."""
        return self._text[text]

    def ready(self, story: Story) -> bool:
        """Whether :meth:`prepare` has covered this story."""
        if self.encoder is not None and story.key not in self.phrases:
            return False
        if self.vg is not None and story.key not in self.nouns:
            return False
        entries = [self.images.get(ref) for ref in story.images]
        return all(e is not None and (e.error is not None or e.region_emb is not None) for e in entries)

    def best_matches(self, texts: Sequence[str], regions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
        return [float(c) for c in self.best_matches([u for u, _ in self.units(self.phrases_of(story))], regions)[1]]

    def forget(self) -> None:
        """Drop decoded images and phrases (vectors stay in the cache): memory bounded by a chunk,
        and the newest ``KEEP_BETWEEN_CHUNKS`` of what depends on its key alone (a text's vector on
        the text, a weight on the words, the proposals on the image size)."""
        self.forget_images()
        self.text_failures.clear()
        self.phrases.clear()
        self.nouns.clear()
        _keep_newest(self._text, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._tokens, KEEP_BETWEEN_CHUNKS)
        _keep_newest(self._weight_of, KEEP_BETWEEN_CHUNKS)

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
        """Records of the image metrics of the settings (each module's ``image_record``) for one
        prepared story; raises ValueError with the reason on a failed story."""
        entries = self.entries(story)
        specs = registry().specs
        return {
            name: spec.computing.image_record(self, story, entries)
            for name, spec in specs.items()
            if name in self.settings.metrics and spec.computing.image_record is not None
        }

    def weights(self, units: Sequence[tuple[str, PhraseLike]]) -> list[float]:
        """Each phrase unit's weight by the settings' ``weighting``: idf over the set, none (1), or
        concreteness (of the head lemma with units='nouns'; of the whitespace words and their WordNet
        lemmas in the reference profile; else of the phrase's words and lemmas, each pair once)."""
        option = self.settings.option
        if option("weighting") == "idf":
            return [self.idf.get(u, 0.0) for u, _ in units]
        if option("weighting") == "none":
            return [1.0] * len(units)
        expressions = bool(option("expressions"))
        if option("units") == "nouns":
            return [phrase_concreteness([u], None, expressions=expressions) for u, _ in units]
        if option("grounding_profile") == "reference":  # whitespace words of the phrase, WordNet noun lemmas
            return [phrase_concreteness(words, [noun_lemma(w) for w in words]) for words in (u.split(" ") for u, _ in units)]
        # the same words and lemmas weigh the same: each distinct pair looked up once
        memo, out = self._weight_of, []
        for _, p in units:
            key = (p.words or tuple(p.text.split()), p.lemmas or None)
            weight = memo.get(key)
            if weight is None:
                weight = memo[key] = phrase_concreteness(key[0], key[1], expressions=expressions)
            out.append(weight)
        return out

    def vg_vectors(self, words: Sequence[str]) -> tuple[np.ndarray, list[bool]]:
        """The RoViST-VG model's unit vectors of ``words`` (each word encoded once per chunk)."""
        assert self.vg is not None
        new = [w for w in dict.fromkeys(words) if w not in self._vg_words]
        if new:
            vectors, known = self.vg.encode_words(new)
            self._vg_words.update(zip(new, zip(vectors, known, strict=True), strict=True))
        return np.stack([self._vg_words[w][0] for w in words]), [self._vg_words[w][1] for w in words]

    @property
    def tagger(self) -> str:
        """The tagger that finds RoViST-VG's nouns (its name and version)."""
        return tagger_name(self.settings.option("spacy_model"))
