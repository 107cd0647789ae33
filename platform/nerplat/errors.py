"""Errors that reach the user: bad input exits with code 2 and names where the problem is."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass

_SHOWN = reprlib.Repr()  # a value quoted from a user's file may be megabytes long
_SHOWN.maxstring = _SHOWN.maxother = 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 8


def shown(value: object) -> str:
    """`repr(value)` cut short for a message: strings to 80 characters, containers to 8 items."""
    return _SHOWN.repr(value)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user's input, located as precisely as we can."""

    message: str
    source: str | None = None  # file path, or None for flags and programmatic input
    line: int | None = None  # 1-based
    path: str | None = None  # dotted YAML path, e.g. "methods.mom.loss"

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f" at {self.path}"
        if self.source:
            loc = self.source if self.line is None else f"{self.source}:{self.line}"
            where += f" ({loc})"
        return f"{self.message}{where}"


class UserInputError(Exception):
    """Bad spec, corpus or flag. Carries every problem found, so the user fixes them in one go."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class StorageError(Exception):
    """The machine failed, not the input: a full disk, a read-only folder or store. One message, exit 1."""

    exit_code = 1
