"""One story as HTML: repeated spans highlighted, noun phrases underlined by their grounding
contribution, a coherence chip between sentences, and score cards; a matched region drawn on its image.
Every text from a record goes through :func:`vst_core.viz.safe.html_text`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vst_core.config import DEFAULT_METRICS
from vst_core.metric_spec import StoryRecordLike, registry
from vst_core.records import (
    GroundingScores,
    RedundancyScores,
    StoryScores,
)
from vst_core.viz.safe import html_text

INTER_COLOUR = "#fbd38d"  # repeats an earlier sentence
INTRA_COLOUR = "#feb2b2"  # repeats the previous n-gram window of the same sentence


def contribution_colour(c: float) -> str:
    """Diverging colour for a GROOVIST contribution: blue positive, red negative."""
    if c >= 0:
        return f"rgba(43, 108, 176, {min(1.0, 0.25 + c / 3):.2f})"
    return f"rgba(197, 48, 48, {min(1.0, 0.35 + -c):.2f})"


def _render(
    text: str, labels: list[list[str]], kinds: list[set[str]], phrase: list[int | None], phrase_info: list[tuple[str, str]]
) -> str:
    """Runs of characters with the same repeat labels and phrase, as nested highlighted spans."""
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and labels[j] == labels[i] and kinds[j] == kinds[i] and phrase[j] == phrase[i]:
            j += 1
        chunk = html_text(text[i:j])
        if labels[i]:
            colour = INTRA_COLOUR if "intra" in kinds[i] else INTER_COLOUR
            title = html_text(" | ".join(labels[i]))
            chunk = (
                f'<mark class="vst-repeat" style="background:{colour};padding:0 1px;border-radius:3px" '
                f'title="{title}">{chunk}</mark>'
            )
        if phrase[i] is not None:
            colour, title = phrase_info[phrase[i]]  # type: ignore[index]
            chunk = (
                f'<span class="vst-np" data-phrase="{phrase[i]}" style="border-bottom:3px solid {colour};'
                f'padding-bottom:1px" title="{html_text(title)}">{chunk}</span>'
            )
        out.append(chunk)
        i = j
    return "".join(out)


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
    out: dict[int, str] = {}
    for name, spec in registry().specs.items():
        found = record.metrics.get(name)
        if spec.showing.transitions is None or found is None:
            continue
        try:
            drawn = dict(spec.showing.transitions(found))
        except Exception:  # an installed metric's drawing that fails leaves the story drawn
            continue
        for k, html in drawn.items():
            out[int(k)] = out.get(int(k), "") + html
    return out


def annotated_story(record: StoryScores, *, content_only: bool = False) -> str:
    """A story record drawn with every metric's evidence in its text (:func:`story_html`)."""
    return story_html(
        record.sentences,
        record.redundancy,
        None,
        record.grounding,
        content_only=content_only,
        frames=record.frames,
        between=between_sentences(record),
    )


def story_html(
    sentences: Sequence[str],
    record: RedundancyScores | None,
    coherence: object = None,
    grounding: GroundingScores | None = None,
    *,
    content_only: bool = False,
    frames: Sequence[int] = (),
    between: Mapping[int, str] | None = None,
) -> str:
    """Story sentences as HTML: repeated spans highlighted (hover: what they repeat), noun phrases
    underlined by grounding contribution (hover: score, concreteness, matched image), and what the
    metrics draw between consecutive sentences (``between``, :func:`between_sentences`: RoViST-C's
    chips; a metric's record given as ``coherence`` is drawn by its spec's ``transitions``).
    ``content_only`` leaves repeats of :data:`FUNCTION_WORDS` unmarked (the scores are unchanged).
    ``frames`` (a story in sentence groups per image): each group opens with its image's number, so
    the grouping is seen."""
    if between is None:
        spec = next((s for s in registry().specs.values() if coherence is not None and isinstance(coherence, s.record)), None)
        between = dict(spec.showing.transitions(coherence)) if spec is not None and spec.showing.transitions is not None else {}
    labels: list[list[list[str]]] = [[[] for _ in s] for s in sentences]
    kinds: list[list[set[str]]] = [[set() for _ in s] for s in sentences]
    for rep in (record.inter_repeats if record else None) or ():
        if not 0 <= rep.sentence < len(sentences):  # a record from a file may name a sentence the story lacks
            continue
        label = f"repeats sentence {rep.earlier + 1} (Jaccard {rep.jaccard:.2f})"
        for start, end in rep.spans:
            start, end = max(0, start), max(0, end)
            if not _shown(sentences[rep.sentence], start, end, content_only):
                continue
            for c in range(start, min(end, len(sentences[rep.sentence]))):
                if label not in labels[rep.sentence][c]:
                    labels[rep.sentence][c].append(label)
                kinds[rep.sentence][c].add("inter")
    for intra in (record.intra_repeats if record else None) or ():
        if not 0 <= intra.sentence < len(sentences):
            continue
        label = f"repeats the previous window of this sentence (Jaccard {intra.jaccard:.2f})"
        for start, end in intra.spans:
            start, end = max(0, start), max(0, end)
            if not _shown(sentences[intra.sentence], start, end, content_only):
                continue
            for c in range(start, min(end, len(sentences[intra.sentence]))):
                labels[intra.sentence][c].append(label)
                kinds[intra.sentence][c].add("intra")
    phrase: list[list[int | None]] = [[None for _ in s] for s in sentences]
    phrase_info: list[tuple[str, str]] = []
    for k, p in enumerate(grounding.phrases if grounding else ()):
        start, end = p.span
        sign = "grounded" if p.positive else "below θ"
        phrase_info.append(
            (
                contribution_colour(p.contribution),
                f"{p.text}: contribution {p.contribution:+.3f} ({sign}) · score {p.score:.3f} · "
                f"concreteness {p.weight:.2f} · matched image {p.image + 1}, {p.box_label or 'box'} {list(p.box)}",
            )
        )
        if not 0 <= p.sentence < len(sentences):
            continue
        for c in range(max(0, start), min(end, len(sentences[p.sentence]))):
            phrase[p.sentence][c] = k
    parts = []
    for k, sentence in enumerate(sentences):
        if frames and len(frames) == len(sentences) and (k == 0 or frames[k] != frames[k - 1]):
            parts.append(
                f'<span class="vst-frame" style="color:#2b6cb0;font-size:0.8em;font-weight:600">[image {frames[k] + 1}]</span>'
            )
        body = _render(sentence, labels[k], kinds[k], phrase[k], phrase_info)
        parts.append(f'<span class="vst-sentence" data-index="{k}"><sup style="color:#718096">{k + 1}</sup> {body}</span>')
        if k in between:
            parts.append(between[k])
    return '<div class="vst-story" style="line-height:1.8">' + " ".join(parts) + "</div>"


def legend_html() -> str:
    return (
        f'<span style="background:{INTER_COLOUR};padding:0 4px;border-radius:3px">repeats an earlier sentence</span> '
        f'<span style="background:{INTRA_COLOUR};padding:0 4px;border-radius:3px">repeats inside the sentence</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(2)}">grounded phrase</span> '
        f'<span style="border-bottom:3px solid {contribution_colour(-0.5)}">phrase below θ</span>'
    )


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
    each metric run in registry order, drawn by its module (:attr:`~vst_core.metric_spec.MetricSpec.cards`);
    an error shows as such."""
    specs = registry().specs
    shown = [*DEFAULT_METRICS, *(name for name in specs if name in metrics and name not in DEFAULT_METRICS)]
    out: list[tuple[str, str, str]] = []
    for name in shown:
        spec = specs.get(name)
        if spec is None:
            continue
        try:
            cards = [(label, format_score(value), tip) for label, value, tip in spec.cards_of(record)]
        except Exception as exc:  # an installed metric's drawing that fails shows why, the page goes on
            cards = [(spec.title, "error", f"its cards could not be drawn: {type(exc).__name__}: {exc}")]
        out.extend((card[0], "error", record.errors[name]) if name in record.errors else card for card in cards)
    return out


def evidence_blocks(record: StoryScores) -> list[tuple[str, str]]:
    """(title, HTML) of each metric's evidence block on a story (its module's ``evidence``), in
    registry order; metrics without one, or without evidence on this story, are left out."""
    blocks = []
    for name, spec in registry().specs.items():
        if spec.showing.evidence is not None and name in record.metrics:
            try:
                block = spec.showing.evidence(record)
                if block is not None and not (
                    isinstance(block, tuple) and len(block) == 2 and all(isinstance(x, str) for x in block)
                ):
                    raise TypeError(f"evidence gave a {type(block).__name__}, not (title, HTML)")
            except Exception as exc:  # an installed metric's drawing that fails shows why, the page goes on
                block = (f"{spec.title}: evidence not drawn", html_text(f"{type(exc).__name__}: {exc}"))
            if block is not None:
                blocks.append(block)
    return blocks
