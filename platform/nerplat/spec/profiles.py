"""Named profiles: partial specs deep-merged over the base, so one file holds several budgets.

Merge rules: a mapping merges into a mapping key by key; anything else (a scalar, a list, a mapping
over a non-mapping) replaces the base value; `null` removes the key, so the section's defaults
apply again (`tune: null` drops tuning, `methods: {focal: null}` drops a method). Values a profile
supplies keep their own location, so errors point at the profile's lines.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nerplat.errors import Problem, UserInputError
from nerplat.spec.loader import Document, Location, YamlPath
from nerplat.suggest import unknown_name

PROFILES_KEY = "profiles"


def profile_names(document: Document) -> list[str]:
    profiles = document.data.get(PROFILES_KEY) if isinstance(document.data, dict) else None
    return sorted(profiles) if isinstance(profiles, dict) else []


def profile_problems(document: Document) -> list[Problem]:
    """The `profiles` section's own shape: a mapping of names to partial specs."""
    if not isinstance(document.data, dict) or PROFILES_KEY not in document.data:
        return []
    profiles = document.data[PROFILES_KEY]
    where: YamlPath = (PROFILES_KEY,)
    if not isinstance(profiles, dict):
        return [document.problem("profiles must map names to partial specs, e.g. {cpu: {train: {epochs: 2}}}", where)]
    problems = []
    for name, overlay in profiles.items():
        if not isinstance(overlay, dict):
            problems.append(document.problem(f"profile '{name}' must be a mapping of sections to override", where + (name,)))
        elif PROFILES_KEY in overlay:
            problems.append(document.problem("a profile cannot define profiles", where + (name, PROFILES_KEY)))
    return problems


def apply_profile(document: Document, name: str | None) -> Document:
    """The document with profile `name` merged over it and the `profiles` section removed.

    Raises `UserInputError` when `name` is not defined, listing the defined profiles.
    """
    data = dict(document.data) if isinstance(document.data, dict) else document.data
    if not isinstance(data, dict):
        return document
    profiles = data.pop(PROFILES_KEY, None)
    if name is None:
        return replace(document, data=data, locations=_drop_prefix(document, (PROFILES_KEY,)))
    defined = profiles if isinstance(profiles, dict) else {}
    if name not in defined:
        message = unknown_name("profile", name, defined, listed_as="defined")
        raise UserInputError([document.problem(message, (PROFILES_KEY,) if profiles is not None else ())])
    locations = _drop_prefix(document, (PROFILES_KEY,))
    overlay = defined[name] if isinstance(defined[name], dict) else {}
    merged = _merge(data, overlay, (), (PROFILES_KEY, name), document, locations)
    return replace(document, data=merged, locations=locations)


def _drop_prefix(document: Document, prefix: YamlPath) -> dict[YamlPath, Location]:
    return {p: loc for p, loc in document.locations.items() if p[: len(prefix)] != prefix}


def _merge(
    base: dict[str, Any],
    overlay: dict[str, Any],
    at: YamlPath,
    overlay_at: YamlPath,
    document: Document,
    locations: dict[YamlPath, Location],
) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overlay.items():
        path, source_path = at + (key,), overlay_at + (key,)
        if value is None:
            merged.pop(key, None)
            _forget(locations, path)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value, path, source_path, document, locations)
        else:
            merged[key] = value
            _forget(locations, path)
            _adopt(locations, document, source_path, path)
    return merged


def _forget(locations: dict[YamlPath, Location], path: YamlPath) -> None:
    for known in [p for p in locations if p[: len(path)] == path]:
        del locations[known]


def _adopt(locations: dict[YamlPath, Location], document: Document, source: YamlPath, target: YamlPath) -> None:
    """Gives the merged value at `target` the locations of the profile value written at `source`."""
    for path, location in document.locations.items():
        if path[: len(source)] == source:
            locations[target + path[len(source) :]] = location
