"""The one rule for intervals, applied by every page, command and export: below
:data:`MIN_INTERVAL_N` stories (or systems) no bootstrap interval is computed or shown, since it
would look certain (three systems give intervals of zero width) without meaning anything; the
number is then marked :data:`SMALL_N_MARK` with its N.

>>> has_interval(9), has_interval(10)
(False, True)
"""

from __future__ import annotations

#: The fewest stories (or systems) a bootstrap interval is given for.
MIN_INTERVAL_N = 10
#: How a number from fewer than :data:`MIN_INTERVAL_N` is marked wherever it is shown.
SMALL_N_MARK = "†"
#: The sentence that explains the mark (pages, reports, exports).
SMALL_N_NOTE = f"{SMALL_N_MARK} N < {MIN_INTERVAL_N}: no interval is given, as it would look certain without meaning anything."


def has_interval(n: int) -> bool:
    """Whether a number over ``n`` stories gets a bootstrap interval."""
    return n >= MIN_INTERVAL_N


__all__ = ["MIN_INTERVAL_N", "SMALL_N_MARK", "SMALL_N_NOTE", "has_interval"]
