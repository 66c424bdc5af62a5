"""The models a run needs, built from its settings on first use (or injected: tiny ones in tests)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from vst_core.config import Settings, default_cache_dir, story_limit_reason
from vst_core.contract import MetricSpec, registry
from vst_core.data import Problem, Story, StorySet
from vst_core.data.regions import read_regions_csv
from vst_core.hashing import file_digest
from vst_core.images.embeddings import EmbeddingCache
from vst_core.images.grounder import Ahead, Grounder, parse_ahead
from vst_core.images.memo import FILE_NAME as MEMO_FILE
from vst_core.images.memo import InputMemo, regular_stamp
from vst_core.images.options import image_settings
from vst_core.models.checkpoints import READ_CHECKS
from vst_core.models.clip import LazyClipEncoder, load_clip, resolve_clip_weights
from vst_core.models.detector import Detector
from vst_core.models.hub import ModelLoadError
from vst_core.models.protocols import EmbeddingStore, ImageTextEncoder

if TYPE_CHECKING:
    from vst_core.text.phrases import PhrasesAhead

T = TypeVar("T")

#: The models a :class:`Models` built from its settings (by id), so that another one given them
#: (``Models(settings, **models.loaded())``) knows they are the ones the settings name.
_BUILT: dict[int, weakref.ref[Any]] = {}


def _built(value: T) -> T:
    """Remember ``value`` as built from settings (a value that takes no weak reference is not)."""
    key = id(value)
    try:
        _BUILT[key] = weakref.ref(value, lambda _: _BUILT.pop(key, None))
    except TypeError:
        pass
    return value


def _was_built(value: object) -> bool:
    found = _BUILT.get(id(value))
    return found is not None and found() is value


class Models:
    """Load once, share everywhere: one CLIP encoder (several metrics use it), one embedding store,
    one grounder per dataset folder (its regions and idf belong to that set), and each metric's own
    models, loaded by its module through :meth:`own` (injected by the metric's name:
    ``Models(settings, coherence=pair_scorer)``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        clip: ImageTextEncoder | None = None,
        cache: EmbeddingStore | None = None,
        cache_dir: Path | None = None,
        **own: object,
    ) -> None:
        self.settings = settings
        self._clip = clip
        self._cache = cache
        self._own: dict[str, object] = {k: v for k, v in own.items() if v is not None}  # None: load it when used
        self._given = {k: v for k, v in [("clip", clip), *own.items()] if v is not None and not _was_built(v)}
        names = registry().names
        unknown = [k for k in own if not any(k == n or k.startswith(n + "_") for n in names)]
        if unknown:  # a misspelt argument, not a metric's model
            raise TypeError(
                f"Models() got unexpected keyword argument(s) {', '.join(unknown)}: a metric's own model is given by its name"
            )
        self.cache_dir = cache_dir
        self._grounders: dict[str, Grounder] = {}
        self._memo: InputMemo | None = None
        self._ahead: Ahead | None = None
        self.problems: list[Problem] = []
        #: the warnings of the records of the run these models score (its engine keeps them, those
        #: read back from the record store too), for the metrics' summary hooks: RoViST-C's says its
        #: truncated pairs
        self.warnings: list[str] = []

    def own(self, key: str, build: Callable[[Models], T]) -> T:
        """A metric's own model (or store) under ``key`` (the metric's name, or its name, ``_`` and a
        part: ``judge_cache``): the one injected as ``Models(..., key=...)`` or loaded before, else
        ``build(self)`` once (the metric module's loader, which raises ModelLoadError with the reason).

        >>> models = Models(Settings(), vrank=1)
        >>> models.own("vrank", lambda m: 2), models.own("judge_cache", lambda m: 3), models.own("judge_cache", lambda m: 4)
        (1, 3, 3)
        """
        if key not in self._own:
            self._own[key] = _built(build(self))
        return cast(T, self._own[key])

    @property
    def clip(self) -> ImageTextEncoder:
        """CLIP of the settings. Weights that built before (the memo holds their signature and their
        file is unchanged) come as a :class:`LazyClipEncoder`, built on the first vector the cache
        lacks, so a rerun whose vectors are all cached never imports torch; any other weights are
        built now, so a file that does not load is found before any work."""
        if self._clip is None:
            s, image = self.settings, image_settings(self.settings)
            build = partial(
                load_clip,
                image.clip_model,
                image.clip_pretrained,
                checkpoint=image.clip_checkpoint,
                model_config=image.clip_config,
                activation=image.clip_activation,
                device=s.device,
                batch_size=s.batch_size,
                workers=s.workers,
            )
            memo = self.memo
            weights = None
            if memo is not None:
                try:
                    weights = resolve_clip_weights(
                        image.clip_model, image.clip_pretrained, image.clip_checkpoint, image.clip_activation
                    )
                except (ModelLoadError, ValueError, OSError):
                    weights = None  # built now: load_clip gives the error with its fix
            stamp = regular_stamp(weights.path) if weights is not None and weights.path is not None else None
            if stamp is not None:  # weights remembered as built before the loader's checks are read (checked) once more
                stamp = f"{stamp}|{READ_CHECKS}"
            if stamp is not None and image.clip_config is not None:
                # the model config defines the architecture the weights are built into: its content counts too
                config = Path(image.clip_config)
                stamp = f"{stamp}|config:{file_digest(config)}" if config.is_file() else None
            if memo is None or weights is None or stamp is None or not memo.model_built(weights.signature, stamp):
                encoder = build()
                if memo is not None and weights is not None and stamp is not None and encoder.signature == weights.signature:
                    memo.put_model(weights.signature, stamp)
                self._clip = _built(encoder)
            else:
                self._clip = LazyClipEncoder(  # type: ignore[assignment]  # device: a read-only property
                    weights.signature,
                    build,
                    device=s.device,
                    batch_size=s.batch_size,
                    workers=s.workers,
                    on_built=lambda encoder: memo.put_model(weights.signature, stamp),
                )
                _built(self._clip)
        assert self._clip is not None
        return self._clip

    @property
    def cache(self) -> EmbeddingStore:
        if self._cache is None:
            self._cache = EmbeddingCache((self.cache_dir or default_cache_dir()) / "embeddings.sqlite")
        return self._cache

    @property
    def memo(self) -> InputMemo | None:
        """Image digests and noun phrases of earlier runs (``inputs.sqlite`` beside the embeddings),
        kept where the embeddings are on disk; None for an injected in-memory store."""
        if self._memo is None and self._memo_path() is not None:
            self._memo = InputMemo(self._memo_path())
        return self._memo

    def known_models(self, clip_weights: object) -> bool:
        """Whether every model of this run is the one its settings name, so its signature says what
        made the numbers: built here (or by another :class:`Models`) from the settings, or a CLIP
        encoder given whose weights' signature is ``clip_weights`` (the run signature's); a model
        a caller or a test gives otherwise is not known by the signature."""
        return all(k == "clip" and getattr(v, "signature", None) == clip_weights for k, v in self._given.items())

    def folder(self) -> Path | None:
        """The cache folder on disk (where the memo is), or None when the stores are in memory."""
        path = self._memo_path()
        return path.parent if path is not None else None

    def _memo_path(self) -> Path | None:
        if self._cache is None or self.cache_dir is not None:
            return (self.cache_dir or default_cache_dir()) / MEMO_FILE
        path = getattr(self._cache, "path", None)
        return Path(path).parent / MEMO_FILE if path is not None else None

    def parse_ahead(self, stories: Sequence[Story]) -> PhrasesAhead | None:
        """Start parsing the noun phrases of ``stories`` that the memo lacks in worker processes
        (:func:`~vst_core.images.grounder.parse_ahead`: one fewer than the cores, at most 8, each
        for at least 1,000 sentences), before the models load, so the parse runs beside loading CLIP
        and decoding the first images. Whether it started."""
        memo = self.memo
        if memo is None or self._ahead is not None or self._grounders:
            return None
        parsing = {
            n
            for n, spec in registry().specs.items()
            if spec.computing.image_record is not None and "clip" in spec.computing.needs
        }
        if not parsing & set(self.settings.metrics):  # no metric of the run reads noun phrases
            return None
        sentences = sum(len(s.sentences) for s in stories)
        processes = max(1, min((os.cpu_count() or 1) - 1, 8, sentences // 1000))
        self._ahead = parse_ahead(self.settings, memo, stories, processes)
        return self._ahead[0] if self._ahead is not None else None

    def taking_over(self, other: Models) -> Models:
        """This :class:`Models`, with the noun phrases ``other`` started parsing (:meth:`parse_ahead`)."""
        if self._ahead is None:
            self._ahead, other._ahead = other._ahead, None
        return self

    def grounder(self, root: Path) -> Grounder:
        """The grounder of a dataset folder, built on first use."""
        key = str(root)
        if key not in self._grounders:
            s, image = self.settings, image_settings(self.settings)
            table = None
            if image.regions == "csv" and image.regions_file:
                table, problems = read_regions_csv(image.regions_file)
                self.problems.extend(problems)
            clip = self.clip if registry().with_need("clip") & set(s.metrics) else None
            vg = next(
                (spec.computing.region_model(self) for spec in registry().in_use(s.metrics) if spec.computing.region_model), None
            )
            detector = None
            if image.regions == "detector":
                device = clip.device if clip is not None else vg.device if vg is not None else "cpu"
                detector = Detector(device)
            ahead, self._ahead = self._ahead, None
            self._grounders[key] = Grounder(
                s, clip, root=root, cache=self.cache, regions_table=table, detector=detector, vg=vg, memo=self.memo, ahead=ahead
            )
        return self._grounders[key]

    def grounder_for(self, story_set: StorySet) -> Grounder:
        """The grounder of a story set, with idf fitted over the whole set when the settings use it
        (the stories within the length limits: those that are scored)."""
        grounder = self.grounder(story_set.root)
        if grounder.needs_idf and not grounder.idf:  # a story over a length limit is refused, its text unread
            grounder.fit_idf([s for s in story_set if story_limit_reason(s.sentences) is None])
        return grounder

    def loaded(self) -> dict[str, Any]:
        """The models and stores loaded so far, as keyword arguments for another :class:`Models`
        (e.g. with fewer metrics), so nothing loads twice."""
        found = {
            "clip": self._clip,
            "cache": self._cache,
            **self._own,
        }
        return {k: v for k, v in found.items() if v is not None}

    def _loaders(self) -> dict[str, Callable[[], object]]:
        """Each metric of the settings that needs a model, and what loads it (its module's ``load``;
        the CLIP metrics share one), in registry order whatever the order of the settings."""
        reg = registry()
        found: dict[str, Callable[[], object]] = {}
        for name, spec in reg.specs.items():
            if name not in self.settings.metrics:
                continue
            if spec in reg.plugins:
                found[name] = partial(_installed_load, spec, self)
            elif spec.computing.load is not None:
                found[name] = partial(spec.computing.load, self)
        return found

    def unloadable(self) -> dict[str, str]:
        """Each metric of the settings whose model cannot load, with the reason (the others' models
        are loaded now; :func:`unloadable_metrics`); the redundancy metric needs none and is never here."""
        found = unloadable_metrics(self.settings.metrics, self.load_metric, clip=lambda: self.clip)
        return {metric: str(error) for metric, error in found.metrics.items()}

    def load_metric(self, name: str) -> None:
        """Load what metric ``name`` needs now (nothing for a text metric); ModelLoadError says why not."""
        loader = self._loaders().get(name)
        if loader is not None:
            loader()

    def load(self) -> None:
        """Load every model the settings need now, so a missing one fails before any work."""
        for loader in self._loaders().values():
            loader()


@dataclass(frozen=True)
class Unloadable:
    """The metrics of a run whose model does not load, each with its error (``metrics``; CLIP's for
    every metric that needs CLIP when CLIP is what fails), and CLIP's own error (``clip``), if any."""

    metrics: dict[str, BaseException] = field(default_factory=dict)
    clip: BaseException | None = None


def unloadable_metrics(
    metrics: Sequence[str],
    load: Callable[[str], object],
    *,
    clip: Callable[[], object] | None = None,
    catch: tuple[type[BaseException], ...] = (ModelLoadError,),
) -> Unloadable:
    """Which of ``metrics`` cannot have their models, the others' loaded now: CLIP first (``clip``,
    once, when a metric needs it: its failure is the reason of each metric that needs it), then each
    metric's own (``load(name)``: :meth:`Models.load_metric`, or a front end's cached loader), in the
    registry's order. An error of a type in ``catch`` leaves the metric out; any other is raised.

    >>> def load(name: str) -> None:
    ...     if name == "vrank":
    ...         raise ModelLoadError("no folder")
    >>> found = unloadable_metrics(("redundancy", "vrank"), load)
    >>> {m: str(e) for m, e in found.metrics.items()}, found.clip
    ({'vrank': 'no folder'}, None)
    """
    reg = registry()
    needs_clip = reg.with_need("clip")
    clip_error: BaseException | None = None
    if clip is not None and needs_clip & set(metrics):
        try:
            clip()
        except catch as exc:
            clip_error = exc
    found: dict[str, BaseException] = {}
    for name in [n for n in reg.specs if n in metrics]:
        if clip_error is not None and name in needs_clip:
            found[name] = clip_error
            continue
        try:
            load(name)
        except catch as exc:
            found[name] = exc
    return Unloadable(found, clip_error)


def _installed_load(spec: MetricSpec, models: Models) -> object:
    """An installed metric's models and weights' identity, loaded up front; whatever fails is a
    :class:`ModelLoadError` naming the metric, so the run scores the other metrics (exit 6)."""
    try:
        loaded = spec.computing.load(models) if spec.computing.load is not None else None
        if spec.signing.identity is not None:
            spec.signing.identity(models.settings)
    except ModelLoadError:
        raise
    except Exception as exc:
        raise ModelLoadError(f"{spec.title} ({spec.module}) could not load: {type(exc).__name__}: {exc}") from exc
    return loaded
