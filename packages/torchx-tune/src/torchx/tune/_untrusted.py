"""Values read back from a study, checked before use: a study database may be shared, so anyone
with write access (or a careless objective) may have put any text or number in it.

:func:`shown` makes any value text that a terminal or a report shows as written; :func:`finite`
and :func:`count` give a number only where it is one that fits, so callers show the rest as text
and leave it out of sums and plots.
"""

from __future__ import annotations

import math
import reprlib
import unicodedata

__all__ = ["MAX_COUNT", "NOTE_LIMIT", "count", "finite", "shown"]

NOTE_LIMIT = 200
"""The most characters of one stored text (a note, a parameter's value) that :func:`shown` keeps."""

MAX_COUNT = 2**63 - 1
"""The largest count (parameters, multiply-adds, bytes) taken as one: torch counts in int64."""

_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories shown escaped: controls (C0, DEL, C1: NUL, ESC and so every escape
sequence, newlines), format characters (bidi overrides), lone surrogates, line and paragraph separators."""

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = NOTE_LIMIT  # a huge int shows its ends (maxlong), a long list its start


def shown(value: object, most: int = NOTE_LIMIT) -> str:
    """``value`` (a non-str as its clipped ``repr``) as one line for a terminal or a report: more than
    ``most`` characters clipped to ``most`` with an ellipsis (…), then each unsafe character (control,
    format, lone surrogate, line separator) written as its Python escape, ``\\x1b`` for ESC."""
    text = value if isinstance(value, str) else _REPR.repr(value)
    if len(text) > most:
        text = text[: most - 1] + "…"
    return "".join(ascii(char)[1:-1] if unicodedata.category(char) in _UNSAFE else char for char in text)


def finite(value: object) -> float | None:
    """``value`` as a finite float, or None: not a number (text, a bool, None), too big for a float, inf or nan."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past float's range
        return None
    return number if math.isfinite(number) else None


def count(value: object) -> int | None:
    """``value`` where it is a count (an int from 0 to :data:`MAX_COUNT`), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None
