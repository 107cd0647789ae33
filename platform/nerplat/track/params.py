"""Nested configs -> MLflow params with readable dotted names (`train.lr`, `objective.lambda`).

MLflow params are flat strings, immutable once logged, with keys of at most 250 characters drawn
from letters, digits and `_-. :/`, and values of at most 6000 characters. Flattening is
deterministic, so re-logging the same config on resume is a no-op rather than a conflict.

A registry component `{"name": "mom", "params": {"lambda": 0.3}}` reads best as
`objective = mom`, `objective.lambda = 0.3`; other mappings nest by key; lists of scalars stay one
JSON value (`sizes = [20, 50]`) and other lists nest by index (`samplers.0 = low_resource`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

MAX_KEY_LENGTH = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH
MAX_VALUE_LENGTH = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH
_INVALID_KEY_CHARS = re.compile(r"[^\w\-. :/]")
_SCALARS = (str, int, float, bool, type(None))


def to_plain(value: Any) -> Any:
    """Pydantic models and dataclasses -> JSON-like dicts and lists; anything else unchanged."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def flatten_params(config: Any) -> dict[str, str]:
    """Flattens a nested config (mapping, pydantic model or dataclass) into MLflow params."""
    flat: dict[str, str] = {}
    origin: dict[str, str] = {}
    for path, value in _walk(to_plain(config), ()):
        dotted = ".".join(path)
        key = param_key(dotted)
        if key in flat:
            raise ValueError(f"config entries {origin[key]!r} and {dotted!r} both flatten to param {key!r}")
        flat[key], origin[key] = param_value(value), dotted
    return flat


def param_key(dotted: str) -> str:
    """A valid MLflow param key: invalid characters become `_`; over-long keys keep a digest."""
    key = _INVALID_KEY_CHARS.sub("_", dotted)
    if len(key) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(dotted.encode()).hexdigest()[:12]
        key = f"{key[: MAX_KEY_LENGTH - 13]}~{digest}"
    return key


def param_value(value: Any) -> str:
    """The string MLflow stores; over-long values are cut and end with their length and digest."""
    text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, list) else str(value)
    if len(text) <= MAX_VALUE_LENGTH:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    marker = f"...[truncated: {len(text)} chars, sha256 {digest}]"
    return text[: MAX_VALUE_LENGTH - len(marker)] + marker


def _walk(value: Any, path: tuple[str, ...]):
    value = to_plain(value)
    if isinstance(value, Mapping):
        if path and _is_component(value):
            yield path, value["name"]
            yield from _walk(value["params"], path)
            return
        for key, item in value.items():
            yield from _walk(item, (*path, str(key)))
    elif isinstance(value, (list, tuple)) and not all(isinstance(item, _SCALARS) for item in value):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, str(index)))
    elif isinstance(value, tuple):
        yield path, list(value)
    elif path:
        yield path, value
    else:
        raise TypeError(f"params must be a mapping, pydantic model or dataclass, not {type(value).__name__}")


def _is_component(value: Mapping) -> bool:
    return set(value) == {"name", "params"} and isinstance(value["name"], str) and isinstance(value["params"], Mapping)
