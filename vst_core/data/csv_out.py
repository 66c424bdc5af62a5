"""CSV that is safe to open in a spreadsheet.

Every CSV the CLI and the dashboard write goes through :func:`frame_csv` (a file: :func:`write_csv`); no
other module calls ``csv.writer`` or ``DataFrame.to_csv`` (a test keeps it so). A
text cell that a spreadsheet would evaluate as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return, the OWASP rule) is written with a leading apostrophe, so
``=HYPERLINK(...)`` in a story id is shown as text instead of run. Numbers, and text that is
exactly a number (``-0.5``), are written unchanged. What produced the numbers (the settings and
their signature) is one cell on one line, so a newline in a description cannot start a row. Rows end in
CRLF (RFC 4180, and Python's ``csv`` default), so a cell holding a lone carriage return is quoted
instead of splitting its row.

>>> safe_cell("=1+2"), safe_cell("-0.25"), safe_cell("story 7"), safe_cell(-0.25)
("'=1+2", '-0.25', 'story 7', -0.25)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from vst_core.data.exports import write_text_whole

#: The first characters that make a spreadsheet evaluate a cell.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """``value`` with a leading apostrophe when it is text a spreadsheet would evaluate; else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


def safe_row(values: Iterable[Any]) -> list[Any]:
    """Each cell of one row through :func:`safe_cell` (for ``csv.writer``)."""
    return [safe_cell(v) for v in values]


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are safe (numeric columns untouched)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or isinstance(out[column].dtype, pd.StringDtype):
            out[column] = out[column].map(safe_cell)
    out.columns = [safe_cell(str(c)) for c in out.columns]
    return out


#: The column of an exported table that holds what produced its numbers (the settings'
#: description and the whole signature as JSON), on the first row only: every row points at it by
#: :data:`SIGNATURE_ID`, so a plain ``pandas.read_csv`` reads the table as it is and the file is
#: not the signature repeated a row.
PROVENANCE = "provenance"
#: The column of every row of an exported table with the id of the signature that produced it.
SIGNATURE_ID = "signature_id"
_SIG = re.compile(r"\bsig ([0-9a-f]{6,})\b")


def provenance(lines: Sequence[str]) -> str:
    """The lines that say what produced a table, as one cell (line breaks inside a line as spaces).

    >>> provenance(["meta-eval sig 0123", "signature {}"])
    'meta-eval sig 0123 | signature {}'
    """
    return " | ".join(" ".join(line.splitlines()) for line in lines)


def signature_id(lines: Sequence[str]) -> str | None:
    """The id of the signature the lines name: the ``id`` of a ``signature {...}`` line's JSON,
    else the first ``sig <hex>`` (``meta-eval sig 0123abcd``), else None.

    >>> signature_id(["compare sig 0123abcd", 'signature {"id": "0123abcd"}']), signature_id(["dHM sig 89abcdef"])
    ('0123abcd', '89abcdef')
    """
    for line in lines:
        if line.startswith("signature {"):
            try:
                found = json.loads(line.removeprefix("signature "))
            except ValueError:
                continue
            if isinstance(found, dict) and found.get("id"):
                return str(found["id"])
    for line in lines:
        if match := _SIG.search(line):
            return match.group(1)
    return None


def frame_csv(frame: pd.DataFrame, head: Sequence[str] = ()) -> str:
    """``frame`` as CSV (no index) made safe by :func:`safe_frame`; with ``head`` (what produced
    the numbers: the settings and their signature) a column :data:`SIGNATURE_ID` on every row with
    the signature's id and a last column :data:`PROVENANCE` holding ``head`` whole on the first row.

    >>> import io
    >>> text = frame_csv(pd.DataFrame({"NR": [0.5, 0.7]}), ["sig 0123abcd", 'signature {"id": "0123abcd"}'])
    >>> pd.read_csv(io.StringIO(text), dtype={"signature_id": str}).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'NR': 0.5, 'signature_id': '0123abcd', 'provenance': 'sig 0123abcd | signature {"id": "0123abcd"}'},
     {'NR': 0.7, 'signature_id': '0123abcd', 'provenance': nan}]
    """
    if head:
        found = signature_id(head)
        about = [provenance(head)] + [""] * (len(frame) - 1) if len(frame) else []
        frame = frame.assign(**({SIGNATURE_ID: found} if found else {}), **{PROVENANCE: about})
    body: str = safe_frame(frame).to_csv(index=False, lineterminator="\r\n")
    return body


def write_csv(path: Path, frame: pd.DataFrame, head: Sequence[str] = ()) -> None:
    """``frame`` as :func:`frame_csv` makes it, written to ``path`` whole or not at all (its folder
    made; an OSError names ``path``).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "t.csv"
    >>> write_csv(path, pd.DataFrame({"system": ["@SUM(A1)"], "n": [2]}))
    >>> path.read_bytes()
    b"system,n\\r\\n'@SUM(A1),2\\r\\n"
    """
    write_text_whole(Path(path), frame_csv(frame, head))
