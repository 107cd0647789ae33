"""Turns pydantic validation errors into problems located at YAML paths and lines.

Pydantic locations mix data keys with validator tags (union members, renamed fields); walking the
raw data along the location keeps the parts that exist in the YAML, so every error lands on the
key or item the user wrote. Errors of one value from several union members become one problem.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from nerplat.errors import Problem
from nerplat.spec.loader import Document, YamlPath
from nerplat.suggest import did_you_mean


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


def field_keys(model: type[BaseModel]) -> list[str]:
    """Keys a model accepts in YAML (aliases where given)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def model_at(model: Any, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that validates the value at `loc` inside `model`, if one can be found."""
    current = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            fields = {info.alias or name: info for name, info in current.model_fields.items()}
            fields.update(current.model_fields)
            if part in fields:
                current = fields[part].annotation
            continue
        origin = typing.get_origin(current)
        if origin in (dict, Mapping) and isinstance(part, str):
            current = typing.get_args(current)[1]
        elif origin in (list, tuple) and isinstance(part, int):
            current = typing.get_args(current)[0]
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            models = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
            if len(models) != 1:
                return annotation
            annotation = models[0]
        else:
            return annotation


def describe(error: Mapping[str, Any], allowed: list[str] | None = None, what: str = "", show_input: bool = True) -> str:
    """One pydantic error as a sentence a spec author can act on."""
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        return f"missing required key '{error['loc'][-1]}'"
    if kind == "extra_forbidden":
        key = error["loc"][-1]
        message = f"unknown key '{key}'" + (f" in {what}" if what else "")
        if allowed is not None:
            message += f"{did_you_mean(key, allowed)} (allowed: {', '.join(allowed) or 'none'})"
        return message
    message = str(error["msg"])
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "assertion_error":
        message = message.removeprefix("Assertion failed, ")
    message = message[:1].lower() + message[1:]
    if show_input and isinstance(value, str | int | float | bool) and kind not in ("value_error", "assertion_error"):
        message += f" (got {value!r})"
    return message


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
        loc = tuple(item["loc"])
        allowed = None
        if item["type"] == "extra_forbidden" and model is not None:
            found = model_at(model, loc[:-1])
            allowed = field_keys(found) if found is not None else None
        path = at + data_path(raw, loc, rename, missing=item["type"] == "missing")
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
