"""Text from a file or a visitor, shown safely: in Streamlit's markdown (:func:`md`, :func:`code`),
in HTML (:func:`html_text`), in plotly's labels (:func:`plot_text`), and with the server's folders
replaced by neutral names (:func:`redact`).

Streamlit renders markdown (CommonMark, GitHub's tables, strikethrough and bare links, ``$`` math,
emoji, icon and colour directives) in ``st.markdown``, ``st.caption``, ``st.info`` and its kin,
``st.toast``, image captions, widget and page-link labels, tabs, expanders and ``help`` texts. A
story id, a system, an aspect, a file name or a message quoting a file goes through :func:`md`
(or :func:`code`) before it is put into such a text, so it shows as the characters it is and never
as an image, a link or formatting. Selectbox and multiselect options, ``st.dataframe`` cells and
``st.code`` are not markdown and take the text as it is.
"""

from __future__ import annotations

import html
import logging
import os
import re
import tempfile
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath

logger = logging.getLogger(__name__)

#: Escaped wherever they stand: inline markup (code, emphasis, strikethrough, tables, raw HTML and
#: autolinks, entities, math, images) and what Streamlit adds to it.
ALWAYS = frozenset("\\`*~|<>$&{}!")
#: Escaped as the first character of the text (a list item, a heading, a thematic break).
LEADING = frozenset("#+-=")
#: An invisible word joiner, put where Streamlit would still make markup of escaped text (it
#: links bare addresses, turns shortcodes into emoji and icons and arrows into symbols after
#: parsing, where a backslash no longer counts): after a colon that a space does not follow
#: (``http:⁠//``, ``:⁠rocket:``, ``:⁠red[``), in ``www⁠.``, before ``@``, inside ``->``, ``--``,
#: ``<=``...
JOINER = "\u2060"
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
_JOINED = re.compile(r"(?i)(?<=:)(?=\S)|(?<=www)(?=\.)|(?=@)|(?<=-)(?=[->])|(?<=<)(?=[-=])|(?<=[>~])(?==)")


def one_line(text: object) -> str:
    """``text`` as a string with every line break a space (a break could start a block), a NUL as
    U+FFFD (as markdown reads it)."""
    return _LINE_BREAKS.sub(" ", str(text)).replace("\x00", "\ufffd")


def md(text: object) -> str:
    """``text`` as markdown that shows exactly these characters (line breaks as spaces; an invisible
    :data:`JOINER` where Streamlit would still make markup). Escaped with a backslash: always
    :data:`ALWAYS`; ``[`` unless after a space, ``]`` before ``(``, ``[``, ``:`` or at the end (no
    link, image, reference, footnote or directive label can form); ``_`` unless inside a word;
    :data:`LEADING` and an ordered list's ``1.`` at the start (no block can begin). A space or a
    tab at either end is a character reference (markdown would drop it, or indent a code block).
    Every other character is kept, so ``story_id``, ``notes.png`` and ``(3)`` read as they are."""
    t = _JOINED.sub(JOINER, one_line(text))
    lead = len(t) - len(t.lstrip())
    out: list[str] = []
    for i, c in enumerate(t):
        if (c == "\t" or unicodedata.category(c) == "Zs") and (i == 0 or i == len(t) - 1):
            out.append(f"&#{ord(c)};")
            continue
        before = t[i - 1] if i else ""
        after = t[i + 1] if i + 1 < len(t) else ""
        if (
            c in ALWAYS
            or (c == "[" and (i == lead or not before.isspace()))
            or (c == "]" and after in ("", "(", "[", ":"))
            or (c == "_" and not (before.isalnum() and after.isalnum()))
            or (c in LEADING and i == lead)
            or (c in ".)" and i > lead and t[lead:i].isdigit() and (after == "" or after.isspace()))
        ):
            out.append("\\")
        out.append(c)
    return "".join(out)


def code(text: object) -> str:
    """``text`` as an inline code span that shows it exactly (line breaks as spaces): fenced by
    more backticks than it holds in a row, padded with a space where it starts or ends with a
    backtick or a space (the one space markdown takes off each side); empty for an empty text.
    Streamlit rewrites ``:material/`` even there: it gets a :data:`JOINER`."""
    t = one_line(text).replace(":material/", f":{JOINER}material/")
    if not t:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", t)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if t.strip(" ") and (t[0] in "` " or t[-1] in "` ") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def html_text(text: object) -> str:
    """``text`` for HTML content or a quoted attribute: ``&``, ``<``, ``>`` and quotes escaped, and
    line breaks as character references (a blank line would end the HTML block Streamlit reads
    it in, and markdown would start again)."""
    text = str(text)
    if _HTML_SPECIAL.search(text) is None:  # most runs of a story: nothing to escape, one scan
        return text
    return html.escape(text, quote=True).replace("\r", "&#13;").replace("\n", "&#10;")


#: The characters :func:`html_text` replaces.
_HTML_SPECIAL = re.compile("[&<>\"'\r\n]")


def plot_text(text: object) -> str:
    """``text`` for a plotly title, legend, tick label or hover text, which render a few tags
    (``<a href>``, ``<b>``, ``<br>``…): ``&``, ``<`` and ``>`` escaped, shown as themselves."""
    return html.escape(str(text), quote=False)


# ---------------------------------------------------------------- server paths

#: A session's upload folder is named so, in the temporary folder (``dashboard.session.PREFIX``).
UPLOAD_PREFIX = "vst-upload-"
#: Where a visitor's upload lies, a model cache, an allowed data folder, as a message names them.
UPLOADS, CACHE, DATA = "<upload>", "<model cache>", "<data folder>"
#: Messages already logged in full (each once, the most recent kept).
_LOGGED: OrderedDict[str, None] = OrderedDict()
_LOGGED_MAX = 2048
#: An absolute (or ``~/``) path: not inside a word, an address (``http://``), a relative path or a
#: closing tag; it runs to the next space, quote or bracket of a message.
_PATH = re.compile(r"(?<![\w.~/\\<-])(?:~(?=/)|/(?![/\s]))[^\s'\"`<>|,;*?]*")
_TRAILING = ".,:;)]}!?"


def cache_roots() -> tuple[Path, ...]:
    """The folders models, weights and indexes are kept in on this machine, from the environment as
    the loaders read it (``VST_CACHE_DIR``, ``HF_HOME``, ``HF_HUB_CACHE``, ``TORCH_HOME``,
    ``XDG_CACHE_HOME``, ``~/.cache``), as written and resolved, the longest first."""
    home = str(Path.home())
    names = ("XDG_CACHE_HOME", "VST_CACHE_DIR", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
             "TORCH_HOME", "NLTK_DATA")  # fmt: skip
    return _cache_forms(home, tuple(os.environ.get(name, "") for name in names))


@lru_cache(maxsize=8)
def _cache_forms(home: str, values: tuple[str, ...]) -> tuple[Path, ...]:
    xdg = values[0] or os.path.join(home, ".cache")
    defaults = [
        os.path.join(home, ".cache"),
        *(os.path.join(xdg, name) for name in ("", "vst-eval", "huggingface", "torch", "clip")),
    ]
    hub = [
        os.path.join(values[2] or os.path.join(xdg, "huggingface"), "hub"),
        os.path.join(values[6] or os.path.join(xdg, "torch"), "hub"),
    ]
    return _forms((*defaults, *hub, *(part for value in values for part in value.split(os.pathsep))))


@lru_cache(maxsize=64)
def _forms(folders: tuple[str, ...]) -> tuple[Path, ...]:
    """Each absolute folder as written and resolved, once; the longest first."""
    forms: dict[Path, None] = {}
    for folder in folders:
        if not folder.strip():
            continue
        path = Path(os.path.expanduser(folder.strip()))
        if not path.is_absolute():
            continue
        forms[Path(os.path.normpath(path))] = None
        try:
            forms[path.resolve()] = None
        except (OSError, RuntimeError):
            pass
    return tuple(sorted(forms, key=lambda p: len(p.parts), reverse=True))


def _temp_forms() -> tuple[PurePosixPath, ...]:
    temp = tempfile.gettempdir()
    return tuple(dict.fromkeys(PurePosixPath(p) for p in (os.path.normpath(temp), os.path.realpath(temp))))


def neutral(path: str, data_roots: Sequence[Path] = ()) -> str:
    """The name a message shows for an absolute (or ``~/``) ``path``: ``<upload>/its/name`` inside
    a visitor's upload folder, ``<model cache>/…/name`` in a model cache, ``<data folder>/its/path``
    in an allowed data folder (a path a visitor may type), else ``…/name``."""
    p = PurePosixPath(os.path.normpath(os.path.expanduser(path)))
    parts = p.parts
    temps = _temp_forms()
    for k, part in enumerate(parts):
        if part.startswith(UPLOAD_PREFIX) and PurePosixPath(*parts[:k]) in temps:
            rest = list(parts[k + 1 :])
            if rest and re.fullmatch(r"[0-9a-f]{16}", rest[0]):
                rest = rest[1:]  # the folder of one upload, named by its key
            return "/".join([UPLOADS, *rest])
    cache = next((root for root in cache_roots() if p.is_relative_to(root)), None)
    if cache is not None:
        return CACHE if p == PurePosixPath(cache) else f"{CACHE}/…/{p.name}"
    data = next((root for root in _forms(tuple(map(str, data_roots)))[::-1] if p.is_relative_to(root)), None)
    if data is not None:
        rel = p.relative_to(data)
        return f"{DATA}/{rel.as_posix()}" if rel.parts else DATA
    return f"…/{p.name}" if p.name else "…"


def redact(text: object, data_roots: Sequence[Path] = ()) -> str:
    """``text`` with every absolute path (and ``~/`` path) replaced by its :func:`neutral` name,
    ``data_roots`` being the folders the dashboard may read. A message that changed is logged in
    full, once, for whoever runs the dashboard."""
    message = str(text)

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        path = found.rstrip(_TRAILING)
        if path in ("", "~", "/"):
            return found
        return neutral(path, data_roots) + found[len(path) :]

    redacted = _PATH.sub(replace, message)
    if redacted != message and message not in _LOGGED:
        _LOGGED[message] = None
        if len(_LOGGED) > _LOGGED_MAX:
            _LOGGED.popitem(last=False)
        logger.info("shown with its server folders left out: %s", message)
    return redacted


def say(text: object, data_roots: Sequence[Path] = ()) -> str:
    """A message for the page: its server paths :func:`redact`-ed, then :func:`md`-escaped."""
    return md(redact(text, data_roots))
