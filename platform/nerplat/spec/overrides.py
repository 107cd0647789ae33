"""`--set KEY=VALUE` overrides: any key of a spec, set on the loaded YAML tree after the profile merge.

Keys are YAML paths as error messages print them (`train.epochs`, `methods.mom.lambda`,
`samplers[1].low_resource.size`); values are YAML (`3`, `0.3`, `[full]`, `{uniform: [0, 1]}`), so
anything the file may say a flag may say, and it is read and validated the same way (the loader's
bounds on size, nesting and aliases, its refusal of tags and control characters). As in profiles,
`null` removes the key (its default applies again); missing mappings on the way are created. The
result is the resolved spec the run records. A problem with an overridden value names the flag
(shortened when long), not the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from nerplat.errors import Problem, UserInputError
from nerplat.spec.loader import Document, Location, YamlPath, format_path, parse_value

FLAG = "--set"
FLAG_LINE = 0  # the line recorded for overridden values: never a file line (they are 1-based)
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_NOT_OVERRIDABLE = ("profiles", "plugins")
SHOWN_CHARACTERS = 80  # of a flag quoted in a message: a value may be a megabyte
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE  # what YAML text may not hold raw


@dataclass(frozen=True)
class Override:
    text: str  # as given: "train.epochs=3"
    path: YamlPath
    value: Any

    @property
    def flag(self) -> str:
        """The flag as messages name it: `--set train.epochs=3`."""
        return flag_text(self.text)

    def problem(self, message: str) -> Problem:
        return Problem(message, source=self.flag, path=format_path(self.path) or None)


def flag_text(text: str) -> str:
    """`--set KEY=VALUE` as a message may print it: control characters escaped (`\\x1b`, never sent
    to the terminal), cut to `SHOWN_CHARACTERS` with how much more there is."""
    shown = _NON_PRINTABLE.sub(lambda found: ascii(found.group())[1:-1], text[:SHOWN_CHARACTERS])
    if len(text) <= SHOWN_CHARACTERS:
        return f"{FLAG} {shown}"
    return f"{FLAG} {shown}... ({len(text) - SHOWN_CHARACTERS:,} more characters)"


def parse_overrides(assignments: Sequence[str]) -> list[Override]:
    """`KEY=VALUE` strings as overrides; every malformed one is reported at once."""
    overrides, problems = [], []
    for text in assignments:
        key, sep, raw = text.partition("=")
        path = parse_key(key.strip())
        if not sep or path is None:
            problems.append(Problem(f"expected KEY=VALUE with a spec key, e.g. {FLAG} train.epochs=3", source=flag_text(text)))
            continue
        if path[0] in _NOT_OVERRIDABLE:
            problems.append(Problem(f"'{path[0]}' cannot be set from the command line; edit the spec", source=flag_text(text)))
            continue
        if not raw.strip():
            overrides.append(Override(text, path, ""))
            continue
        try:
            value, found = parse_value(raw, flag_text(text), path)
        except UserInputError as error:
            problems += error.problems
            continue
        problems += found
        if not found:
            overrides.append(Override(text, path, value))
    if problems:
        raise UserInputError(problems)
    return overrides


def parse_key(key: str) -> YamlPath | None:
    """'samplers[1].low_resource.size' -> ('samplers', 1, 'low_resource', 'size'); None when malformed."""
    parts: list[str | int] = []
    position = 0
    while position < len(key):
        if parts and key[position] == "." and not key.startswith("[", position + 1):
            position += 1
        found = _PART.match(key, position)
        if found is None:
            return None
        parts.append(found.group(1) if found.group(1) is not None else int(found.group(2)))
        position = found.end()
    return tuple(parts) if parts and isinstance(parts[0], str) else None


def apply_overrides(document: Document, overrides: Sequence[Override]) -> Document:
    """The document with every override set, in order; a path that cannot be followed raises, naming the flag."""
    if not overrides:
        return document
    data = _copy(document.data)
    locations = dict(document.locations)
    problems = []
    for override in overrides:
        try:
            _set(data, override.path, override.value)
        except _PathError as error:
            problems.append(override.problem(str(error)))
            continue
        for path in [p for p in locations if p[: len(override.path)] == override.path]:
            del locations[path]
        if override.value is not None:
            for path in _paths_within(override.value, override.path):
                locations[path] = Location(FLAG_LINE, path)
    if problems:
        raise UserInputError(problems)
    return Document(document.source, data, locations, document.unresolved)


def relocate(problems: Sequence[Problem], overrides: Sequence[Override]) -> list[Problem]:
    """Problems about overridden values name their flag instead of the spec file."""
    located = []
    for problem in problems:
        override = None
        if problem.line == FLAG_LINE and problem.path is not None:
            override = next((o for o in reversed(overrides) if _is_under(problem.path, format_path(o.path))), None)
        located.append(problem if override is None else replace(problem, source=override.flag, line=None))
    return located


class _PathError(Exception):
    pass


def _set(data: Any, path: YamlPath, value: Any) -> None:
    node = data
    for depth, part in enumerate(path[:-1]):
        node = _child(node, part, path[: depth + 1], create=True)
    last = path[-1]
    if isinstance(last, int):
        _child(node, last, path, create=False)  # the item must exist
        node[last] = value
    elif not isinstance(node, dict):
        raise _PathError(f"{format_path(path[:-1]) or 'the spec'} is not a mapping, so it has no key '{last}'")
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value


def _child(node: Any, part: str | int, path: YamlPath, create: bool) -> Any:
    if isinstance(part, int):
        if not isinstance(node, list) or part >= len(node):
            size = f"has {len(node)} items" if isinstance(node, list) else "is not a list"
            raise _PathError(f"{format_path(path[:-1])} {size}: there is no item [{part}]")
        return node[part]
    if not isinstance(node, dict):
        raise _PathError(f"{format_path(path[:-1])} is not a mapping, so it has no key '{part}'")
    if part not in node or node[part] is None:
        if not create:
            raise _PathError(f"there is no {format_path(path)}")
        node[part] = {}
    return node[part]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _paths_within(value: Any, at: YamlPath) -> list[YamlPath]:
    paths = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _paths_within(item, at + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += _paths_within(item, at + (index,))
    return paths


def _is_under(path: str, parent: str) -> bool:
    return path == parent or path.startswith((parent + ".", parent + "["))
