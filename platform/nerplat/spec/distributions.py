"""Search-space forms a hyper-parameter may take instead of a value.

    {uniform: [lo, hi]}      float, uniform on [lo, hi]
    {loguniform: [lo, hi]}   float, log-uniform on [lo, hi], lo > 0
    {int: [lo, hi]}          integer in lo..hi, both included
    {choice: [a, b, ...]}    one of the listed values

A mapping with exactly one of these keys is a distribution; anything else is a value. Endpoints
are checked here for shape; whether the parameter accepts them is checked against its config
model by `nerplat.spec.params`.
"""

from __future__ import annotations

from typing import Any

from nerplat.config.search_space import DISTRIBUTION_KINDS, Choice, Distribution, IntRange, LogUniform, Uniform
from nerplat.spec.loader import YamlPath
from nerplat.suggest import closest

Complaint = tuple[str, YamlPath]  # message, path relative to the distribution's value

_EXAMPLES = {
    "uniform": "{uniform: [0.0, 1.0]}",
    "loguniform": "{loguniform: [1.0e-5, 1.0e-3]}",
    "int": "{int: [1, 8]}",
    "choice": "{choice: [ce, focal]}",
}


def distribution_kind(value: Any) -> str | None:
    """The distribution a value is written as, or None for a plain value."""
    if isinstance(value, dict) and len(value) == 1:
        (key,) = value
        if key in DISTRIBUTION_KINDS:
            return key
    return None


def misspelt_kind(value: Any) -> str | None:
    """For `{unifrom: [0, 1]}`: 'uniform'."""
    if isinstance(value, dict) and len(value) == 1:
        (key,) = value
        return closest(key, DISTRIBUTION_KINDS)
    return None


def parse_distribution(value: dict[str, Any]) -> tuple[Distribution | None, list[Complaint]]:
    """Parses `{kind: [...]}` (see `distribution_kind`) into a plan distribution."""
    (kind, body), = value.items()
    where: YamlPath = (kind,)
    if kind == "choice":
        if not isinstance(body, list) or len(body) < 2:
            return None, [(f"a choice lists at least two values, e.g. {_EXAMPLES['choice']}", where)]
        repeated = [i for i, option in enumerate(body) if option in body[:i]]
        if repeated:
            return None, [(f"value {body[repeated[0]]!r} is listed twice", where + (repeated[0],))]
        return Choice(options=tuple(body)), []
    if not isinstance(body, list) or len(body) != 2:
        return None, [(f"{kind} takes [low, high], e.g. {_EXAMPLES[kind]}", where)]
    complaints: list[Complaint] = []
    for index, bound in enumerate(body):
        wanted_int = kind == "int"
        if isinstance(bound, bool) or not isinstance(bound, int if wanted_int else (int, float)):
            complaints.append(
                (f"{kind} bounds must be {'integers' if wanted_int else 'numbers'} (got {bound!r})", where + (index,))
            )
    if complaints:
        return None, complaints
    low, high = body
    if not low < high:
        return None, [(f"low ({low}) must be below high ({high}); for a fixed value write the value itself", where)]
    if kind == "loguniform" and low <= 0:
        return None, [(f"loguniform needs low > 0 (got {low}); use uniform to include 0", where + (0,))]
    built = {"uniform": Uniform, "loguniform": LogUniform, "int": IntRange}[kind](low=low, high=high)
    return built, []


def probe_values(distribution: Distribution) -> list[tuple[Any, YamlPath]]:
    """Values a parameter must accept for the distribution to be valid, with where each is written."""
    if isinstance(distribution, Choice):
        return [(option, (distribution.kind, i)) for i, option in enumerate(distribution.options)]
    return [(distribution.low, (distribution.kind, 0)), (distribution.high, (distribution.kind, 1))]


def samples_floats(distribution: Distribution) -> bool:
    return isinstance(distribution, (Uniform, LogUniform))

