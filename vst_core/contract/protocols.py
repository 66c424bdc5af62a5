"""What a metric's hooks are given, as structural types: the run's settings, its models, a batch's
scoring run, the image work the image metrics share (the grounder, each image's entry, its regions,
a story's noun phrases) and the story set. The product's own classes satisfy them
(:class:`vst_core.config.Settings`, :class:`vst_core.scoring.registry.Models`,
:class:`vst_core.scoring.story.ScoringRun`, :class:`vst_core.images.grounder.Grounder`, …) and mypy
checks each hook against them, so a metric, built in or installed, is written against this contract
alone. A story is :class:`vst_core.story.Story` itself (plain data, below every layer).

>>> from vst_core.config import Settings
>>> def top_b(settings: SettingsLike) -> int:
...     return int(settings.option("top_b"))
>>> top_b(Settings())
10
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from vst_core.story import Story

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

#: A story's identity: ``(system, story_id)``.
Key = tuple[str, str]
T = TypeVar("T")


class ImageTextEncoder(Protocol):
    """L2-normalised text and image embeddings in one space (CLIP).

    ``signature`` names the exact weights (cache keys, exports); ``workers`` is how many threads
    may decode images beside the model."""

    signature: str
    device: str
    workers: int

    def encode_text(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_images(self, images: Sequence[Any], *, load: Callable[[Any], Any] | None = None) -> np.ndarray: ...


class SettingsLike(Protocol):
    """What a hook may read of a run's settings (:class:`vst_core.config.Settings` is one): the run's
    own (:data:`vst_core.contract.RUN_SETTINGS`) and any option of a component or a metric by name
    (``option(name)``: its value, or the option's default)."""

    @property
    def metrics(self) -> tuple[str, ...]: ...
    @property
    def device(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    def batch_for(self, device: str | None) -> int:
        """The model batch size on ``device``: ``batch_size``, or the device's when it is 0."""
        ...

    @property
    def workers(self) -> int: ...
    def option(self, name: str) -> Any: ...


class ModelsLike(Protocol):
    """What a hook may read of a run's models (:class:`vst_core.scoring.registry.Models` is one): its
    settings, the CLIP encoder every image metric shares, the cache folder, and a metric's own model
    loaded once under a key (``own(key, build)``)."""

    @property
    def settings(self) -> SettingsLike: ...
    @property
    def clip(self) -> ImageTextEncoder: ...
    @property
    def cache_dir(self) -> Path | None: ...
    @property
    def warnings(self) -> Sequence[str]:
        """The warnings of the records of the run these models score (each metric's summary reads its own)."""
        ...

    def own(self, key: str, build: Callable[[ModelsLike], T]) -> T: ...


class PhraseLike(Protocol):
    """A noun phrase of a story (:class:`vst_core.text.phrases.NounPhrase`): its normalised ``text``,
    ``sentence``, character span ``[start, end)`` in it, ``surface`` as written, head lemma ``root``,
    ``words`` and their ``lemmas``."""

    @property
    def text(self) -> str: ...
    @property
    def sentence(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def surface(self) -> str: ...
    @property
    def root(self) -> str: ...
    @property
    def words(self) -> tuple[str, ...]: ...
    @property
    def lemmas(self) -> tuple[str, ...]: ...


P = TypeVar("P", bound=PhraseLike)


class WordLike(Protocol):
    """A word of a story and the sentence it comes from (RoViST-VG's nouns)."""

    @property
    def text(self) -> str: ...
    @property
    def sentence(self) -> int: ...


class BoxLike(Protocol):
    """A region ``[x1, y1, x2, y2]`` in pixels, with a detector's label and score if any."""

    @property
    def x1(self) -> float: ...
    @property
    def y1(self) -> float: ...
    @property
    def x2(self) -> float: ...
    @property
    def y2(self) -> float: ...
    @property
    def label(self) -> str | None: ...
    @property
    def score(self) -> float | None: ...

    def as_list(self) -> list[float]: ...


class ImageEntryLike(Protocol):
    """One image of a story as the shared image work left it: its regions (``boxes``) and their CLIP
    vectors (``region_emb``, one row each), the whole image's (``whole_emb``), the region model's
    (``vg_emb``), a ``note``, or the ``error`` it could not be read with."""

    @property
    def path(self) -> Path: ...
    @property
    def ref(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def boxes(self) -> Sequence[BoxLike]: ...
    @property
    def region_emb(self) -> np.ndarray | None: ...
    @property
    def whole_emb(self) -> np.ndarray | None: ...
    @property
    def vg_emb(self) -> np.ndarray | None: ...
    @property
    def note(self) -> str | None: ...


class RegionModelLike(Protocol):
    """A metric's own model the shared image work runs over each image's regions beside CLIP
    (RoViST-VG's, :class:`vst_core.metrics.rovist_vg.region2phrase.RovistVGModel`): unit vectors of
    region crops and of words, the ``device`` it runs on, its ``signature`` and the
    ``region_signature`` cached region vectors are keyed by, and an ``idf`` table of its own (None:
    idf is fitted over the set under ``vg:``)."""

    @property
    def device(self) -> str: ...
    @property
    def signature(self) -> str: ...
    @property
    def region_signature(self) -> str: ...
    @property
    def idf(self) -> object | None: ...

    def load_words(self, words: Iterable[str]) -> None: ...
    def encode_words(self, words: Sequence[str]) -> tuple[np.ndarray, list[bool]]: ...
    def encode_crops(self, crops: Sequence[Image.Image]) -> np.ndarray: ...


class GrounderLike(Protocol):
    """The image work a run's image metrics share (:class:`vst_core.images.grounder.Grounder`): its
    settings; a story's noun phrases and the units embedded of them; each text's CLIP vector (encoded
    before any story is scored) and whether CLIP cut it; each unit's best region and weight; idf
    fitted over the set; the region model a metric runs over the regions (``vg``: RoViST-VG's, or
    None), the nouns it reads and their vectors; a crop encoded whole."""

    @property
    def settings(self) -> SettingsLike: ...
    @property
    def idf(self) -> Mapping[str, float]: ...
    @property
    def vg(self) -> RegionModelLike | None: ...
    @property
    def nouns(self) -> Mapping[Key, Sequence[WordLike]]: ...
    @property
    def tagger(self) -> str: ...

    def phrases_of(self, story: Story) -> Sequence[PhraseLike]: ...
    def units(self, phrases: Sequence[P]) -> list[tuple[str, P]]: ...
    def weights(self, units: Sequence[tuple[str, PhraseLike]]) -> list[float]: ...
    def best_matches(self, texts: Sequence[str], regions: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...
    def text_vector(self, text: str) -> np.ndarray: ...
    def truncation(self, text: str) -> tuple[int, int] | None: ...
    def story_nouns(self, stories: Sequence[Story]) -> None: ...
    def vg_vectors(self, words: Sequence[str]) -> tuple[np.ndarray, list[bool]]: ...
    def crop(self, ref: str) -> ImageEntryLike: ...


#: An image metric of one story from the shared image work: ``(grounder, story, entries) -> record``.
ImageRecordHook = Callable[[GrounderLike, Story, Sequence[ImageEntryLike]], object]


class RunLike(Protocol):
    """What a ``score`` hook is given with a batch (:class:`vst_core.scoring.story.ScoringRun`): the
    settings, the models, the story set's folder, the set metrics computed
    before the chunks (``together``), a warning for a story's record, and the image work shared by the
    image metrics (``image_records``) and the set metrics' results (``set_records``)."""

    @property
    def settings(self) -> SettingsLike: ...
    @property
    def models(self) -> ModelsLike: ...
    @property
    def root(self) -> Path: ...
    @property
    def together(self) -> Mapping[Key, Mapping[str, object]]: ...

    def warn(self, key: Key, message: str) -> None: ...
    def image_records(
        self, stories: Sequence[Story], build: ImageRecordHook, *, metric: str | None = None
    ) -> Mapping[Key, object]: ...
    def set_records(self, stories: Sequence[Story], name: str) -> Mapping[Key, object]: ...


class StorySetLike(Protocol):
    """A story set (:class:`vst_core.data.StorySet`): its stories, the folder its image paths are
    relative to, the file it was read from, and its stories by sequence."""

    @property
    def stories(self) -> tuple[Story, ...]: ...
    @property
    def root(self) -> Path: ...
    @property
    def source(self) -> str: ...

    def __iter__(self) -> Iterator[Story]: ...
    def __len__(self) -> int: ...
    def sequences(self) -> dict[str, list[Story]]: ...
