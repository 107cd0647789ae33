"""Did-you-mean hints for names a user mistyped (sections, keys, profiles, distributions)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """"; did you mean 'gamma'?" or "", to append to a message."""
    known = list(known)
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    if not close:  # a shortened name: `gpus` for `gpus_per_worker`
        close = [k for k in known if k.startswith(str(name))][:2]
        close = close if len(close) == 1 else []
    return f"; did you mean '{close[0]}'?" if close else ""


def unknown_name(what: str, name: object, known: Iterable[str], listed_as: str = "known") -> str:
    """"unknown profile 'gpu'; did you mean 'cpu'? (defined: cpu, paper)"."""
    names = sorted(known)
    return f"unknown {what} '{name}'{did_you_mean(name, names)} ({listed_as}: {', '.join(names) or 'none'})"
