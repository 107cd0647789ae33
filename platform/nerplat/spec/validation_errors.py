"""Turns pydantic validation errors into problems located at YAML paths and lines.

Pydantic locations mix data keys with validator tags (union members, renamed fields); walking the
raw data along the location keeps the parts that exist in the YAML, so every error lands on the
key or item the user wrote. Errors of one value from several union members become one problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nerplat.errors import Problem
from nerplat.spec.loader import Document, YamlPath
from nerplat.validation import allowed_keys, describe


def data_path(
    raw: Any, loc: tuple[Any, ...], rename: Mapping[str, str] | None = None, missing: bool = False
) -> YamlPath:
    """The part of a pydantic location that names keys and items present in `raw`.

    `rename` maps first-level keys as validated to keys as written; with `missing`, the location's
    last element is a key absent from the data and is kept.
    """
    path: list[str | int] = []
    current = raw
    for index, part in enumerate(loc):
        if index == 0 and rename:
            part = rename.get(part, part)
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif not (missing and index == len(loc) - 1):
            continue  # a validator tag (union member, function validator), not data
        path.append(part)
    return tuple(path)


def problems_from(
    errors: Iterable[Mapping[str, Any]],
    document: Document,
    at: YamlPath,
    raw: Any,
    model: Any = None,
    what: str = "",
    rename: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Problems for pydantic `errors` (`ValidationError.errors()`) of validating `raw`, written at `at`, as `model`."""
    by_path: dict[YamlPath, list[str]] = {}
    inputs: dict[YamlPath, str] = {}
    for item in errors:
        allowed = allowed_keys(item, model)
        path = at + data_path(raw, tuple(item["loc"]), rename, missing=item["type"] == "missing")
        message = describe(item, allowed, what, show_input=False)
        if message not in by_path.setdefault(path, []):
            by_path[path].append(message)
        with_input = describe(item, allowed, what)
        if with_input != message:
            inputs[path] = with_input.removeprefix(message)
    return [document.problem(_either(messages) + inputs.get(path, ""), path) for path, messages in by_path.items()]


def _either(messages: list[str]) -> str:
    """Joins the complaints of several union members about one value."""
    prefix = "input should be "
    rest = [m.removeprefix(prefix) if m.startswith(prefix) else m for m in messages[1:]]
    return " or ".join([messages[0], *rest])
