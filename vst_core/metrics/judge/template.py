"""The judge's rubric template: a versioned JSON file of rubric questions, read safely and digested.

A template names, per aspect, two or more paraphrases of one rubric question, the story prompt
they are asked in, the rating scale and the answer prefix after which the rating token is read;
and the pairwise question (two stories, "1" or "2"). The built-in template is
``rubric_v1.json`` beside this module; a user's own file (``--judge-template FILE``) has the same
keys. Its sha256 goes into the settings signature and every judge cache key, so a changed word
never reuses an old answer.

Placeholders are replaced literally (``{story}``, ``{question}``, ``{scale}``, ``{n_images}``,
``{images_note}``, and ``{first}``/``{second}`` in the pairwise prompt): braces anywhere else in
a user's file are left as they are, and a story's text is never interpreted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from vst_core.hashing import text_digest
from vst_core.models.hub import SettingFileError

#: The built-in template's file name (inside this package).
BUILTIN = "rubric_v1.json"
#: Aspects every template must ask (the registry's columns: judge grounding, ... judge overall).
REQUIRED_ASPECTS: tuple[str, ...] = ("grounding", "coherence", "non_redundancy", "overall")
#: Longest template file read (a rubric is a few kB).
MAX_BYTES = 1 << 20
#: The deepest JSON nesting a template may have (the built-in one has 3).
MAX_DEPTH = 16


class TemplateError(SettingFileError):
    """A rubric template that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class JudgePrompt:
    """One chat turn to score: the system and user messages, the start of the answer after which
    the rating token is read, and the images (paths) a vision-language model sees before the text."""

    system: str
    user: str
    prefix: str
    images: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rubric:
    """A parsed template: ``aspects`` maps aspect -> paraphrases; ``digest`` is the file's sha256."""

    name: str
    version: int
    source: str
    digest: str
    system: str
    story: str
    images_note: str
    scale: str
    answer_prefix: str
    aspects: Mapping[str, tuple[str, ...]]
    pair_story: str
    pair_questions: tuple[str, ...]
    pair_scale: str
    pair_prefix: str
    rationale: str

    @property
    def id(self) -> str:
        """``name-vVERSION@sha256[:12]``, as the signature names it."""
        return f"{self.name}-v{self.version}@{self.digest[:12]}"

    def prompt(self, sentences: Sequence[str], aspect: str, paraphrase: int, images: Sequence[str] = ()) -> JudgePrompt:
        """The rubric prompt of one aspect's paraphrase for a story (its images shown when given)."""
        question = self.aspects[aspect][paraphrase]
        user = _fill(
            self.story,
            story=_numbered(sentences),
            question=question,
            scale=self.scale,
            n_images=str(len(images) or len(sentences)),
            images_note=self.images_note if images else "",
        )
        return JudgePrompt(self.system, user, self.answer_prefix, tuple(images))

    def rationale_prompt(self, sentences: Sequence[str], images: Sequence[str] = ()) -> JudgePrompt:
        """The story with the rationale request, answered by greedy decoding (not part of a score)."""
        user = _fill(
            self.story,
            story=_numbered(sentences),
            question=self.rationale,
            scale="",
            n_images=str(len(images) or len(sentences)),
            images_note=self.images_note if images else "",
        ).rstrip()
        return JudgePrompt(self.system, user, "", tuple(images))

    def pair_prompt(self, first: Sequence[str], second: Sequence[str], question: int, images: Sequence[str] = ()) -> JudgePrompt:
        """Which of two stories of one sequence is better ("1": ``first``, "2": ``second``)."""
        user = _fill(
            self.pair_story,
            first=_numbered(first),
            second=_numbered(second),
            question=self.pair_questions[question],
            scale=self.pair_scale,
            n_images=str(len(images) or max(len(first), len(second))),
            images_note=self.images_note if images else "",
        )
        return JudgePrompt(self.system, user, self.pair_prefix, tuple(images))


def _numbered(sentences: Sequence[str]) -> str:
    return "\n".join(f"{k + 1}. {s.strip()}" for k, s in enumerate(sentences) if s.strip())


def _fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders in one pass (a value containing ``{x}`` is not replaced again)."""
    out: list[str] = []
    i = 0
    while i < len(template):
        if template[i] == "{":
            end = template.find("}", i)
            name = template[i + 1 : end] if end > 0 else ""
            if name in values:
                out.append(values[name])
                i = end + 1
                continue
        out.append(template[i])
        i += 1
    return "".join(out)


def _text(data: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise TemplateError(f"{where}: {key!r} must be a string")
    return value


def _texts(value: Any, where: str, least: int) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TemplateError(f"{where}: expected a list of non-empty strings")
    if len(value) < least:
        raise TemplateError(f"{where}: expected at least {least} paraphrases, got {len(value)}")
    return tuple(value)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, strings skipped (no parse, no recursion).

    >>> json_depth(b'{"a": [1, {"b": "[[["}]}')
    3
    """
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def parse_rubric(raw: bytes, source: str) -> Rubric:
    """A :class:`Rubric` from a template file's bytes (JSON; the digest is of these bytes)."""
    if len(raw) > MAX_BYTES:
        raise TemplateError(f"{source}: larger than {MAX_BYTES} bytes; not a rubric template")
    depth = json_depth(raw)
    if depth > MAX_DEPTH:
        raise TemplateError(f"{source}: JSON nested {depth} levels deep; a rubric template needs at most {MAX_DEPTH}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TemplateError(f"{source}: not a JSON rubric template ({exc})") from None
    if not isinstance(data, dict):
        raise TemplateError(f"{source}: expected a JSON object")
    aspects = data.get("aspects")
    if not isinstance(aspects, dict):
        raise TemplateError(f"{source}: 'aspects' must be an object of aspect -> list of paraphrases")
    missing = [a for a in REQUIRED_ASPECTS if a not in aspects]
    if missing:
        raise TemplateError(f"{source}: aspects {', '.join(missing)} missing (needed: {', '.join(REQUIRED_ASPECTS)})")
    parsed = {str(name): _texts(v, f"{source}: aspects.{name}", 2) for name, v in aspects.items()}
    pair = data.get("pairwise")
    if not isinstance(pair, dict):
        raise TemplateError(f"{source}: 'pairwise' must be an object (story, questions, scale, answer_prefix)")
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise TemplateError(f"{source}: 'version' must be a whole number")
    story = _text(data, "story", source)
    if "{story}" not in story or "{question}" not in story:
        raise TemplateError(f"{source}: 'story' must contain {{story}} and {{question}}")
    pair_story = _text(pair, "story", f"{source}: pairwise")
    if "{first}" not in pair_story or "{second}" not in pair_story:
        raise TemplateError(f"{source}: pairwise.story must contain {{first}} and {{second}}")
    return Rubric(
        name=_text(data, "name", source, "rubric"),
        version=version,
        source=source,
        digest=text_digest(raw),
        system=_text(data, "system", source, ""),
        story=story,
        images_note=_text(data, "images_note", source, ""),
        scale=_text(data, "scale", source),
        answer_prefix=_text(data, "answer_prefix", source, ""),
        aspects=parsed,
        pair_story=pair_story,
        pair_questions=_texts(pair.get("questions"), f"{source}: pairwise.questions", 1),
        pair_scale=_text(pair, "scale", f"{source}: pairwise"),
        pair_prefix=_text(pair, "answer_prefix", f"{source}: pairwise", ""),
        rationale=_text(data, "rationale", source, "Explain your rating in two or three sentences."),
    )


def load_rubric(path: str | Path | None = None) -> Rubric:
    """The template at ``path``, or the built-in one (``rubric_v1.json``) when None."""
    if path is None:
        raw = resources.files("vst_core.metrics.judge").joinpath(BUILTIN).read_bytes()
        return parse_rubric(raw, BUILTIN)
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise TemplateError(f"judge template {path}: {exc.strerror or exc}") from None
    return parse_rubric(raw, Path(path).name)


def rubric_id(path: str | Path | None = None) -> str:
    """The signature entry of a template (``name-vN@sha``), or why it cannot be read."""
    try:
        return load_rubric(path).id
    except TemplateError as exc:
        return f"unreadable:{exc}"
