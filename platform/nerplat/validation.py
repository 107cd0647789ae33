"""Pydantic validation errors as located problems: one wording and one path style for every caller.

Registries, the plan, analysis settings and the spec layer all turn `ValidationError`s into
`Problem`s here. Paths are dotted with list items in brackets (`samplers[0].size`); the spec layer
maps the same locations onto YAML paths and lines (`nerplat.spec.validation_errors`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from nerplat.errors import Problem, UserInputError, shown
from nerplat.suggest import did_you_mean

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Any, at: str = "", what: str = "", source: str | None = None) -> M:
    """`data` validated as `model`; every problem is raised at once, located under `at`."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise UserInputError(located_problems(error, model, at, what, source)) from None


def located_problems(
    error: ValidationError, model: Any = None, at: str = "", what: str = "", source: str | None = None
) -> list[Problem]:
    """One `Problem` per pydantic error of validating as `model`, at `at` + the error's location.

    `what` names the thing validated ("sampler 'low_resource'") and starts each message; `model`
    lets an unknown key list the keys accepted where it was written.
    """
    problems = []
    for item in error.errors(include_url=False):
        message = describe(item, allowed_keys(item, model), what)
        if what and item["type"] != "extra_forbidden":
            message = f"{what}: {message}"
        problems.append(Problem(message, source=source, path=dotted_path(at, tuple(item["loc"])) or None))
    return problems


def allowed_keys(error: Mapping[str, Any], model: Any) -> list[str] | None:
    """For an unknown key, the keys accepted where it was written (None when not known)."""
    if error["type"] != "extra_forbidden" or model is None:
        return None
    found = model_at(model, tuple(error["loc"])[:-1])
    return field_keys(found) if found is not None else None


def dotted_path(at: str, loc: tuple[Any, ...]) -> str:
    """`samplers[0]` + ('size',) -> 'samplers[0].size'; list items in brackets."""
    path = at
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


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
        message += f" (got {shown(value)})"
    return message


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
