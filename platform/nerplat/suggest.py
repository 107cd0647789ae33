"""Did-you-mean hints for names a user mistyped: sections, keys, profiles, registry entries, types.

The one place the matching rule lives: case-insensitive (the papers write `sCR`, the registry
`scr`), close by difflib's ratio, else an unambiguous prefix (`gpus` for `gpus_per_worker`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's similarity ratio below which a name is not suggested


def closest(name: object, known: Iterable[str]) -> str | None:
    """The known name `name` most likely meant, as it is spelt in `known`, or None."""
    by_lower: dict[str, str] = {}
    for candidate in known:
        by_lower.setdefault(str(candidate).lower(), candidate)
    typed = str(name).lower()
    close = difflib.get_close_matches(typed, list(by_lower), n=1, cutoff=CUTOFF)
    if close:
        return by_lower[close[0]]
    prefixed = [spelt for lower, spelt in by_lower.items() if lower.startswith(typed)]
    return prefixed[0] if typed and len(prefixed) == 1 else None


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """"; did you mean 'gamma'?" or "", to append to a message."""
    match = closest(name, known)
    return f"; did you mean '{match}'?" if match is not None else ""


def unknown_name(what: str, name: object, known: Iterable[str], listed_as: str = "known") -> str:
    """"unknown profile 'gpu'; did you mean 'cpu'? (defined: cpu, paper)"."""
    names = sorted(known)
    return f"unknown {what} '{name}'{did_you_mean(name, names)} ({listed_as}: {', '.join(names) or 'none'})"
