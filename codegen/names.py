"""Names in generated source: identifiers and comments sanitised (nothing from a user's names reaches
``exec`` raw) and fresh names that no other name of the source takes."""
from __future__ import annotations

import keyword
import re

_BAD = re.compile(r"[^0-9a-zA-Z_]")


def identifier(name: str, prefix: str = "u_") -> str:
    """A valid, non-keyword Python identifier derived from ``name``."""
    s = _BAD.sub("_", name) or "_"
    if s[0].isdigit() or keyword.iskeyword(s) or s.startswith("__"):
        s = prefix + s
    return s


def comment(text: str, limit: int = 100) -> str:
    """One line of comment text: no newlines or control characters, bounded length."""
    s = "".join(ch if ch.isprintable() else " " for ch in text)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def fresh(want: str, taken: set[str]) -> str:
    """``want``, or ``want`` with underscores appended, whichever is first not in ``taken``; added to it."""
    name = want
    while name in taken:
        name += "_"
    taken.add(name)
    return name
