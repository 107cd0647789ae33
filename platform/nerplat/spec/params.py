"""Checks the parameters a spec gives a registry entry (or the train settings) against its config model.

Each parameter is a value or, where the context allows, several: a distribution (objective, head
and train hyper-parameters are searched) or a list of values (sampler parameters are swept, one arm
per value, when the parameter itself does not take a list). The config model is the single source
of truth for names, types and ranges: unknown keys fail by `extra="forbid"`, values by the model's
own constraints and validators, and every distribution endpoint, choice option and swept value is
validated as if it were the value, with the other parameters at their values. So
`{lambda: {uniform: [0, 1.5]}}` fails at `...lambda.uniform[1]` with the model's "less than or
equal to 1", and `{epochs: {uniform: [2, 5]}}` fails because epochs takes integers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from nerplat.config.search_space import Distribution
from nerplat.errors import Problem
from nerplat.spec.distributions import distribution_kind, misspelt_kind, parse_distribution, probe_values, samples_floats
from nerplat.spec.loader import Document, YamlPath
from nerplat.spec.validation_errors import problems_from
from nerplat.validation import describe, field_keys


@dataclass
class CheckedParams:
    """The outcome of `check_params`. Keys are the config's own (aliases where it has them)."""

    values: dict[str, Any] = field(default_factory=dict)  # single values, as written
    space: dict[str, Distribution] = field(default_factory=dict)  # searched parameters
    sweeps: dict[str, list[Any]] = field(default_factory=dict)  # swept parameters, in spec order
    problems: list[Problem] = field(default_factory=list)
    fixed: dict[str, Any] = field(default_factory=dict)  # every field as JSON, minus searched and swept ones

    def complete(self, config: type[BaseModel], chosen: dict[str, Any]) -> dict[str, Any]:
        """Every field as JSON with swept (or searched) parameters set to `chosen`."""
        return config.model_validate({**self.values, **chosen}).model_dump(mode="json", by_alias=True)


def canonical_keys(config: type[BaseModel]) -> dict[str, str]:
    """Every key a model accepts (field name and alias) -> the key its JSON dump uses (the alias)."""
    by_name = config.model_config.get("populate_by_name") or config.model_config.get("validate_by_name")
    keys = {}
    for name, info in config.model_fields.items():
        keys[info.alias or name] = info.alias or name
        if info.alias is None or by_name:
            keys[name] = info.alias or name
    return keys


def check_params(
    document: Document,
    config: type[BaseModel],
    raw: Any,
    at: YamlPath,
    what: str,
    searchable: bool = False,
    sweepable: bool = False,
) -> CheckedParams:
    """Validates `raw` (written at `at`) as `config`.

    Parameters
    ----------
    what
        Names the owner in messages, e.g. "loss 'focal'" or "train".
    searchable
        Whether a parameter may be a distribution (it is then a search dimension).
    sweepable
        Whether a list given to a parameter that does not take lists means one value per arm.
    """
    result = CheckedParams()
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        result.problems.append(document.problem(f"the parameters of {what} must be a mapping of names to values", at))
        return result
    canonical = canonical_keys(config)
    written_as = {canonical.get(key, key): key for key in raw}
    _sort_params(document, config, raw, at, what, searchable, sweepable, result)
    if result.problems:
        return result

    several = {name: probe_values(d) for name, d in result.space.items()}
    several.update({name: [(v, (i,)) for i, v in enumerate(values)] for name, values in result.sweeps.items()})
    for name, distribution in result.space.items():
        annotation = _annotation(config, name)
        if samples_floats(distribution) and not _accepts(annotation, 0.5):
            hint = "; use {int: [low, high]}" if _accepts(annotation, 1) else ""
            message = f"{distribution.kind} samples real numbers, which {name} of {what} does not take{hint}"
            result.problems.append(document.problem(message, at + (written_as[name],)))
    if result.problems:
        return result

    # Each distribution endpoint, choice option and swept value alone, located where it is written;
    # then everything else with those parameters at their first value.
    base = {**result.values, **{name: probes[0][0] for name, probes in several.items()}}
    base_errors = _errors(config, base)
    seen_in_base = {(e["type"], e["msg"]) for e in base_errors if not e["loc"]}
    probed = {name: probes for name, probes in several.items() if name in canonical.values()}  # unknown: once, below
    for name, probes in probed.items():
        for value, relative in probes:
            errors = _errors(config, {**base, name: value})
            mine = [e for e in errors if e["loc"][:1] == (name,) or (not e["loc"] and (e["type"], e["msg"]) not in seen_in_base)]
            where = at + (written_as[name],) + relative
            result.problems += [document.problem(describe(e, field_keys(config), what), where) for e in mine]
    others = [e for e in base_errors if not e["loc"] or e["loc"][0] not in probed]
    result.problems += problems_from(others, document, at, raw, config, what, rename=written_as)
    if not result.problems:
        dumped = config.model_validate(base).model_dump(mode="json", by_alias=True)
        result.fixed = {key: value for key, value in dumped.items() if key not in several}
    return result


def _sort_params(
    document: Document,
    config: type[BaseModel],
    raw: dict[str, Any],
    at: YamlPath,
    what: str,
    searchable: bool,
    sweepable: bool,
    result: CheckedParams,
) -> None:
    """Puts each written parameter into `result` as a search dimension, a sweep or a plain value."""
    canonical = canonical_keys(config)
    for key, value in raw.items():
        name = canonical.get(key, key)
        kind = distribution_kind(value)
        if kind is not None and searchable:
            distribution, complaints = parse_distribution(value)
            result.problems += [document.problem(message, at + (key,) + where) for message, where in complaints]
            if distribution is not None:
                result.space[name] = distribution
        elif kind is not None:
            hint = f"; list values ({key}: [a, b]) for one arm each" if sweepable else ""
            result.problems.append(document.problem(f"{what} is not searched: give {key} a value{hint}", at + (key,)))
        elif sweepable and isinstance(value, list) and not _accepts(_annotation(config, name), []):
            if value:
                result.sweeps[name] = value
            else:
                result.problems.append(document.problem(f"an empty list sweeps no value of {key}", at + (key,)))
        else:
            close = misspelt_kind(value)
            if close is not None and not _accepts(_annotation(config, name), value):
                result.problems.append(
                    document.problem(f"unknown distribution '{next(iter(value))}'; did you mean '{close}'?", at + (key,))
                )
            result.values[name] = value


def _errors(config: type[BaseModel], data: dict[str, Any]) -> list[Any]:
    """pydantic's errors, plus the values pydantic lets through that would break a run later:
    true/false for a number (read as 1/0) and non-finite numbers (`lr: .inf`)."""
    errors = [
        _value_error(key, f"expected a number, not {str(value).lower()}")
        for key, value in data.items()
        if _bool_for_number(config, key, value)
    ]
    try:
        validated = config.model_validate(data)
    except ValidationError as error:
        return errors + error.errors(include_url=False)
    dumped = validated.model_dump(by_alias=True)
    return errors + [
        _value_error(key, f"expected a finite number, not {value}")
        for key, value in dumped.items()
        if isinstance(value, float) and not math.isfinite(value)
    ]


def _value_error(key: str, message: str) -> dict[str, Any]:
    return {"type": "value_error", "loc": (key,), "msg": f"Value error, {message}", "input": None}


def _bool_for_number(config: type[BaseModel], key: str, value: Any) -> bool:
    if not isinstance(value, bool) or key not in canonical_keys(config):
        return False
    try:
        TypeAdapter(_annotation(config, key)).validate_python(value, strict=True)
    except ValidationError:
        return True
    return False


def _annotation(config: type[BaseModel], key: str) -> Any:
    """The type of the field written as `key` (name or alias), or Any for unknown keys."""
    for name, info in config.model_fields.items():
        if key in (name, info.alias):
            return info.annotation
    return Any


def _accepts(annotation: Any, value: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError:
        return False
    return True
