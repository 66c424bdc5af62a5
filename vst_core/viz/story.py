"""One story as HTML: what each metric marks in its sentences (its spec's ``marks``: repeated spans
highlighted, noun phrases underlined by their grounding contribution) and draws between them
(``transitions``: coherence chips), and score cards; a matched region drawn on its image.
Every text from a record goes through :func:`vst_core.viz.safe.html_text`."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from vst_core.config import DEFAULT_METRICS
from vst_core.contract import Mark, MetricSpec, StoryRecordLike, is_legend_entry, is_mark, registry
from vst_core.records import (
    StoryScores,
)
from vst_core.viz.safe import html_text, md


def _render(text: str, marks: Sequence[Mark]) -> str:
    """Runs of characters with the same marks, as nested spans: highlights (their titles joined, the
    colour of the highest rank, the first of equal ranks) inside underlines (the last one on a character).

    The text is cut where a mark starts or ends; between two cuts the same marks hold, so a run is
    a stretch of such pieces with the same key (titles, highlight look, underline).

    >>> _render("a dog", [Mark(0, 0, 5, "highlight", "red", "x"), Mark(0, 2, 5, "highlight", "blue", "y", rank=1)])
    '<mark style="background:red;padding:0 1px;border-radius:3px" title="x">a </mark><mark style="background:blue;padding:0 1px;border-radius:3px" title="x | y">dog</mark>'
    """
    n = len(text)
    starting: dict[int, list[int]] = {}
    ending: dict[int, list[int]] = {}
    for index, mark in enumerate(marks):
        first, end = max(0, mark.start), min(mark.end, n)
        if end > first:
            starting.setdefault(first, []).append(index)
            ending.setdefault(end, []).append(index)
    if not starting:
        return html_text(text)
    cuts = sorted({0, n, *starting, *ending})
    active: set[int] = set()
    pieces: list[tuple[int, int, tuple[Any, ...], Mark | None, int | None]] = []
    for a, b in itertools.pairwise(cuts):
        active.difference_update(ending.get(a, ()))
        active.update(starting.get(a, ()))
        titles: dict[str, None] = {}
        high: Mark | None = None
        line: int | None = None
        for index in sorted(active):
            mark = marks[index]
            if mark.style == "underline":
                line = index
                continue
            titles[mark.title] = None
            if high is None or mark.rank > high.rank:
                high = mark
        key = (tuple(titles), _look(high), line)
        if pieces and pieces[-1][2] == key:
            pieces[-1] = (pieces[-1][0], b, key, high, line)
        else:
            pieces.append((a, b, key, high, line))
    opened: dict[int, str] = {}  # each mark's opening tag up to its title, escaped once
    out: list[str] = []
    for a, b, key, high, line in pieces:
        chunk = html_text(text[a:b])
        if high is not None:
            if id(high) not in opened:
                opened[id(high)] = (
                    f'<mark{_class(high)}{_data(high)} style="background:{_colour(high.colour)};padding:0 1px;border-radius:3px" '
                )
            chunk = f'{opened[id(high)]}title="{html_text(" | ".join(key[0]))}">{chunk}</mark>'
        if line is not None:
            line_mark = marks[line]
            if id(line_mark) not in opened:
                opened[id(line_mark)] = (
                    f'<span{_class(line_mark)}{_data(line_mark)} style="border-bottom:3px solid {_colour(line_mark.colour)};'
                    f'padding-bottom:1px" title="{html_text(line_mark.title)}">'
                )
            chunk = f"{opened[id(line_mark)]}{chunk}</span>"
        out.append(chunk)
    return "".join(out)


def _look(mark: Mark | None) -> tuple[str, str, tuple[tuple[str, str], ...]] | None:
    """What a highlight looks like (its colour, class and data): part of a run's key."""
    return None if mark is None else (mark.colour, mark.css, mark.data)


#: A CSS colour a mark may have: a hex code, an rgb/rgba/hsl/hsla function of numbers, or a name.
_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}|(?:rgba?|hsla?)\([0-9.,%\s]{1,60}\)|[a-zA-Z]{1,30}")


@functools.lru_cache(maxsize=4096)
def _colour(colour: str) -> str:
    """``colour`` when it is a CSS colour (:data:`_COLOUR`), else ``transparent``: nothing but a
    colour reaches a style.

    >>> _colour("rgba(43, 108, 176, 0.92)"), _colour("red;position:fixed")
    ('rgba(43, 108, 176, 0.92)', 'transparent')
    """
    return colour if _COLOUR.fullmatch(colour) else "transparent"


def _class(mark: Mark) -> str:
    return _class_attribute(mark.css) if mark.css else ""


@functools.lru_cache(maxsize=4096)
def _class_attribute(css: str) -> str:
    return f' class="{html_text(css)}"'


def _data(mark: Mark) -> str:
    """The mark's ``data-`` attributes (a name keeps only lower-case letters, digits and dashes)."""
    return _data_attributes(mark.data) if mark.data else ""


@functools.lru_cache(maxsize=4096)
def _data_attributes(data: tuple[tuple[str, str], ...]) -> str:
    named = ((re.sub(r"[^a-z0-9-]", "", key.lower()), value) for key, value in data)
    return "".join(f' data-{key}="{html_text(value)}"' for key, value in named if key)


def probability_colour(p: float) -> str:
    """Red (0) through amber (0.5) to green (1), as a CSS hsl colour."""
    return f"hsl({round(120 * max(0.0, min(1.0, p)))}, 70%, 42%)"


#: English closed-class words (articles, pronouns, prepositions, conjunctions, auxiliaries): with
#: "content words only", their repeats are not highlighted. Display only; the metric counts them.
FUNCTION_WORDS = frozenset(
    """a an the this that these those my your his her its our their i me we us you he him she it they them
    to of in on at by for with from into onto over under about as up down out off than then so and or but
    nor if because while when where there here is are was were be been being am do does did have has had
    will would can could shall should may might must not no 's ' s""".split()
)


def _shown(sentence: str, start: int, end: int, content_only: bool) -> bool:
    """Whether a repeated span is marked: always, or with ``content_only`` when it is a word that is not
    a function word (a repeated comma or full stop, which the reference profile's tokens include, is not).

    >>> _shown("a, b, c", 1, 2, True), _shown("the dog", 0, 3, True), _shown("the dog", 4, 7, True)
    (False, False, True)
    """
    text = sentence[start:end].strip().lower()
    return not content_only or (text not in FUNCTION_WORDS and any(c.isalnum() for c in text))


def between_sentences(record: StoryRecordLike) -> dict[int, str]:
    """What the story's metrics draw between its sentences (each spec's ``transitions``: RoViST-C's
    chips), ``{k: HTML between sentence k and k+1}``; a hook that fails draws nothing."""
    return _between_all(_drawn_of(record))


#: A metric's spec and a record of it, to draw.
Drawn = list[tuple[MetricSpec, object]]


def _drawn_of(record: StoryRecordLike) -> Drawn:
    """Each metric with the story's record of it: the one under its name, else one of its record type
    (a record built by hand under another name, as earlier versions drew it), in the registry's order."""
    out: Drawn = []
    for spec in registry().specs.values():
        found = record.metrics.get(spec.name)
        if found is None:
            found = next((v for v in record.metrics.values() if isinstance(v, spec.record)), None)
        if found is not None:
            out.append((spec, found))
    return out


def _marks_all(drawn: Drawn) -> list[Mark]:
    """What the metrics of ``drawn`` mark in the text, in their order."""
    return [m for spec, found in drawn for m in _marks(spec, found)]


def _between_all(drawn: Drawn) -> dict[int, str]:
    """What the metrics of ``drawn`` draw between sentences, joined per gap in their order."""
    out: dict[int, str] = {}
    for spec, found in drawn:
        for k, html in _between(spec, found).items():
            out[k] = out.get(k, "") + html
    return out


def annotated_story(record: StoryScores, *, content_only: bool = False) -> str:
    """A story record drawn with every metric's evidence in its text (:func:`story_html`)."""
    drawn = _drawn_of(record)
    return story_html(
        record.sentences,
        content_only=content_only,
        frames=record.frames,
        between=_between_all(drawn),
        marks=_marks_all(drawn),
    )


#: The most marks one metric draws in one story (a hook that never ends stops here).
MAX_MARKS = 100_000


def _marks(spec: MetricSpec, record: object) -> list[Mark]:
    """What ``spec`` marks in the text for its ``record``: its well-typed marks (:func:`vst_core.contract.is_mark`),
    at most :data:`MAX_MARKS`; nothing when it has no ``marks`` or they fail (an installed metric's
    drawing that fails leaves the story drawn)."""
    try:
        found = spec.showing.marks(record) if spec.showing.marks is not None else ()
        return [m for m in itertools.islice(found, MAX_MARKS) if is_mark(m)]
    except Exception:
        return []


def _between(spec: MetricSpec, record: object) -> dict[int, str]:
    """What ``spec`` draws between sentences for its ``record``: nothing when it has no ``transitions`` or they fail."""
    try:
        return {int(k): html for k, html in (spec.showing.transitions(record) if spec.showing.transitions else {}).items()}
    except Exception:
        return {}


def marks_of(record: StoryRecordLike) -> list[Mark]:
    """What the story's metrics mark in its sentences (each spec's ``marks``: RoViST-NR's repeated
    spans, GROOVIST's noun phrases), in the registry's order; a hook that fails marks nothing."""
    return _marks_all(_drawn_of(record))


def story_html(
    sentences: Sequence[str],
    *records: object,
    content_only: bool = False,
    frames: Sequence[int] = (),
    between: Mapping[int, str] | None = None,
    marks: Sequence[Mark] | None = None,
    record: object = None,
    coherence: object = None,
    grounding: object = None,
) -> str:
    """Story sentences as HTML with what the metrics mark in them (``marks``: RoViST-NR's repeated
    spans highlighted, hover saying what they repeat; GROOVIST's noun phrases underlined by
    contribution) and draw between consecutive sentences (``between``: RoViST-C's chips). Without
    them, both come from ``records``, metric records (None skipped) drawn by the spec whose record
    type each is, as earlier versions' ``story_html(sentences, nr_record, coherence, grounding)``
    (by position or by those keywords).
    ``content_only`` leaves a ``word`` mark over a :data:`FUNCTION_WORDS` word unmarked (the scores
    are unchanged). ``frames`` (a story in sentence groups per image): each group opens with its
    image's number, so the grouping is seen.

    >>> story_html(["A dog."], marks=[Mark(0, 2, 5, "underline", "blue", "dog <3", "vst-np")])
    '<div class="vst-story" style="line-height:1.8"><span class="vst-sentence" data-index="0"><sup style="color:#718096">1</sup> A <span class="vst-np" style="border-bottom:3px solid blue;padding-bottom:1px" title="dog &lt;3">dog</span>.</span></div>'
    """
    records = (*records, record, coherence, grounding)  # earlier versions' keywords, drawn as records
    if marks is None or between is None:
        specs = [next((s for s in registry().specs.values() if isinstance(r, s.record)), None) for r in records]
        drawn: Drawn = [(spec, r) for spec, r in zip(specs, records) if spec is not None]
        if marks is None:
            marks = _marks_all(drawn)
        if between is None:
            between = _between_all(drawn)
    by_sentence: list[list[Mark]] = [[] for _ in sentences]
    for mark in marks:
        if not 0 <= mark.sentence < len(sentences):  # a record from a file may name a sentence the story lacks
            continue
        if mark.word and not _shown(sentences[mark.sentence], max(0, mark.start), max(0, mark.end), content_only):
            continue
        by_sentence[mark.sentence].append(mark)
    parts = []
    for k, sentence in enumerate(sentences):
        if frames and len(frames) == len(sentences) and (k == 0 or frames[k] != frames[k - 1]):
            parts.append(
                f'<span class="vst-frame" style="color:#2b6cb0;font-size:0.8em;font-weight:600">[image {frames[k] + 1}]</span>'
            )
        body = _render(sentence, by_sentence[k])
        parts.append(f'<span class="vst-sentence" data-index="{k}"><sup style="color:#718096">{k + 1}</sup> {body}</span>')
        if k in between:
            parts.append(between[k])
    return '<div class="vst-story" style="line-height:1.8">' + " ".join(parts) + "</div>"


def drawn_in_text(metrics: Collection[str] | None = None) -> str:
    """Markdown saying what each metric draws in a story (each spec's ``in_text`` and title, in the
    registry's order; every text escaped), for a page's introduction; of the ``metrics`` that ran
    only, when given (a run's ``settings.metrics``).

    >>> drawn_in_text().startswith("Non-redundancy with the spans that repeat (RoViST-NR), the coherence of every")
    True
    >>> drawn_in_text(["redundancy"])
    'Non-redundancy with the spans that repeat (RoViST-NR)'
    """
    said = [(s.showing.in_text, s.title) for name, s in registry().specs.items() if metrics is None or name in metrics]
    parts = [f"{md(words)} ({md(title)})" for words, title in said if isinstance(words, str) and words]
    if not parts:
        return ""
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text[:1].upper() + text[1:]


def legend_html(*, markdown: bool = False, metrics: Collection[str] | None = None) -> str:
    """What the marks in a story mean: each metric's ``legend``, in the registry's order; an entry
    that is not a well-typed ``LegendEntry`` (:func:`vst_core.contract.is_legend_entry`) is left out. ``markdown``: for a page's markdown,
    where the text inside the spans is read as markdown, so each label is escaped for it (:func:`md`)
    instead of for HTML. ``metrics``: the metrics that ran (a run's ``settings.metrics``), whose
    marks alone are listed; None lists every metric's.

    >>> "grounded phrase" in legend_html(metrics=["redundancy"]), "repeats an earlier" in legend_html(metrics=["redundancy"])
    (False, True)
    """
    parts = []
    for name, spec in registry().specs.items():
        if metrics is not None and name not in metrics:
            continue
        legend = spec.showing.legend
        for entry in legend if isinstance(legend, tuple) else ():
            if not is_legend_entry(entry):
                continue
            colour = _colour(entry.colour)
            style = (
                f"background:{colour};padding:0 4px;border-radius:3px"
                if entry.style == "highlight"
                else f"border-bottom:3px solid {colour}"
            )
            parts.append(f'<span style="{style}">{md(entry.label) if markdown else html_text(entry.label)}</span>')
    return " ".join(parts)


def draw_box(image: Any, box: Sequence[float], label: str) -> Any:
    """A copy of a PIL image with ``box`` outlined and labelled."""
    from PIL import ImageDraw

    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(2, round(min(out.size) / 100))
    draw.rectangle(list(box), outline=(255, 215, 0), width=width)
    draw.rectangle([box[0], box[1], box[0] + 7 * len(label) + 6, box[1] + 14], fill=(255, 215, 0))
    draw.text((box[0] + 3, box[1] + 1), label, fill=(0, 0, 0))
    return out


def score_cards_html(cards: Sequence[tuple[str, str, str]]) -> str:
    """Compact score cards (label, value, hover text) that wrap in narrow columns."""
    items = "".join(
        f'<div class="vst-card" title="{html_text(tip)}" style="flex:1 1 70px;min-width:70px;'
        f'border:1px solid #e2e8f0;border-radius:6px;padding:2px 6px">'
        f'<div style="font-size:0.72em;color:#718096">{html_text(label)}</div>'
        # a word ("undefined", "error") smaller than a number, so it never breaks inside a narrow card
        f'<div style="font-size:{"1.3em" if _numeric(value) else "0.9em;padding-top:0.35em"};font-weight:600">{html_text(value)}</div></div>'
        for label, value, tip in cards
    )
    return f'<div style="display:flex;flex-wrap:wrap;gap:6px;margin-bottom:8px">{items}</div>'


def _numeric(text: str) -> bool:
    """Whether a card's value is a number (as :func:`format_score` writes one).

    >>> _numeric("0.963"), _numeric("-1.2"), _numeric("undefined")
    (True, True, False)
    """
    return bool(text) and (text[0].isdigit() or (text[0] in "+-−" and text[1:2].isdigit()))


def format_score(value: float | None, digits: int = 3) -> str:
    """A score for display; ``None`` (undefined) is shown as such, never as 0."""
    return "undefined" if value is None else f"{value:.{digits}f}"


def story_cards(record: StoryScores, metrics: Sequence[str]) -> list[tuple[str, str, str]]:
    """Score cards (label, value, hover text) of a story: the default metrics (RoViST-NR) always, then
    each metric run in registry order, drawn by its module from the story's record of it, or None when
    the story has none (:attr:`~vst_core.contract.Showing.cards`); an error shows as such."""
    specs = registry().specs
    shown = [*DEFAULT_METRICS, *(name for name in specs if name in metrics and name not in DEFAULT_METRICS)]
    out: list[tuple[str, str, str]] = []
    for name in shown:
        spec = specs.get(name)
        if spec is None:
            continue
        try:
            cards = [(label, format_score(value), tip) for label, value, tip in spec.cards_of(record.metrics.get(name))]
        except Exception as exc:  # an installed metric's drawing that fails shows why, the page goes on
            cards = [(spec.title, "error", f"its cards could not be drawn: {type(exc).__name__}: {exc}")]
        out.extend((card[0], "error", record.errors[name]) if name in record.errors else card for card in cards)
    return out


def evidence_blocks(record: StoryScores) -> list[tuple[str, str]]:
    """(title, HTML) of each metric's evidence block on a story (its module's ``evidence``, given the
    story's record of the metric), in registry order; metrics without one, without a record on this
    story or without evidence in it, are left out."""
    blocks = []
    for name, spec in registry().specs.items():
        if spec.showing.evidence is not None and name in record.metrics:
            try:
                block = spec.showing.evidence(record.metrics[name])
                if block is not None and not (
                    isinstance(block, tuple) and len(block) == 2 and all(isinstance(x, str) for x in block)
                ):
                    raise TypeError(f"evidence gave a {type(block).__name__}, not (title, HTML)")
            except Exception as exc:  # an installed metric's drawing that fails shows why, the page goes on
                block = (f"{spec.title}: evidence not drawn", html_text(f"{type(exc).__name__}: {exc}"))
            if block is not None:
                blocks.append(block)
    return blocks
