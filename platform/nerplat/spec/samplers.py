"""The `samplers` section, expanded into the sampler settings that become arms.

Forms (docs/spec.md, "Samplers"):

    samplers: []                                      the training set as it is (label 'full')
    samplers: [untyped, {low_resource: {size: 100}}]  one chain of steps, applied in order
    samplers: [[], [sC], [sCR]]                       alternatives: a list of chains, one arm each

A step is a name or `{name: {params}}`. A list given to a parameter that does not itself take a
list sweeps it: `{low_resource: {size: [20, 50, 100]}}` is three settings, and several swept
parameters give every combination. A setting's label (used in arm ids) is its step names joined
by '+', each followed by the values of the parameters the spec gives it, in spec order, except a
partitioned sampler's `partitions` (those are replicates, not a setting): `untyped+low_resource-100`.
Labels depend only on their own setting, so adding a setting to a spec never renames the others.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from nerplat.config.trial import Component
from nerplat.errors import Problem
from nerplat.registry import Catalog
from nerplat.spec.loader import Document, YamlPath, format_path
from nerplat.spec.params import canonical_keys, check_params
from nerplat.spec.schema import parse_component_ref
from nerplat.run_keys import key_text
from nerplat.validation import describe

NO_SAMPLER_LABEL = "full"


@dataclass(frozen=True)
class SamplerSetting:
    """One way of sampling the training set: a chain of configured samplers."""

    label: str  # in arm ids, e.g. "untyped+low_resource-100"
    description: str  # for tags, e.g. "untyped+low_resource(size=100, partitions=3)"
    components: tuple[Component, ...]  # every parameter set, defaults included
    partitions: int | None  # partitions the chain's partitioned sampler defines; None without one
    at: YamlPath  # where the chain is written

    @property
    def partitioned(self) -> bool:
        """Whether its arms' replicate unit is the partition (`plan.units.partitioned`): the chain defines more than one."""
        return (self.partitions or 1) > 1


@dataclass(frozen=True)
class _Step:
    name: str
    given: dict[str, Any]  # parameters as the spec gives them, one value per swept parameter
    params: dict[str, Any]  # every parameter, as JSON
    partitions: int | None  # for partitioned samplers


def expand_samplers(document: Document, raw: list[Any], catalog: Catalog) -> tuple[list[SamplerSetting], list[Problem]]:
    """Every sampler setting of the spec, in spec order; or the problems that prevent them."""
    at: YamlPath = ("samplers",)
    lists = [i for i, item in enumerate(raw) if isinstance(item, list)]
    if lists and len(lists) != len(raw):
        odd = next(i for i, item in enumerate(raw) if not isinstance(item, list))
        message = "either every item of samplers is a chain (a list) to give alternatives, or none is (one chain)"
        return [], [document.problem(message, at + (odd,))]
    chains = [(at + (i,), item) for i, item in enumerate(raw)] if lists else [(at, raw)]

    problems: list[Problem] = []
    expanded: list[tuple[YamlPath, tuple[_Step, ...]]] = []
    for chain_at, chain in chains:
        variants_per_step = []
        for index, step in enumerate(chain):
            variants, step_problems = _expand_step(document, catalog, step, chain_at + (index,))
            variants_per_step.append(variants)
            problems += step_problems
        expanded += [(chain_at, combination) for combination in itertools.product(*variants_per_step)]
    if problems:
        return [], problems

    settings: list[SamplerSetting] = []
    seen: dict[str, YamlPath] = {}
    for chain_at, steps in expanded:
        label = "+".join(_step_label(step) for step in steps) or NO_SAMPLER_LABEL
        if label in seen:
            problems.append(
                document.problem(f"sampler setting '{label}' is given twice (also at {format_path(seen[label])})", chain_at)
            )
            continue
        seen[label] = chain_at
        counts = {step.partitions for step in steps if step.partitions is not None}
        if len(counts) > 1:
            problems.append(document.problem(
                f"the partitioned samplers of one chain must agree on partitions (got {sorted(counts)})", chain_at
            ))
            continue
        settings.append(
            SamplerSetting(
                label=label,
                description="+".join(_step_description(step) for step in steps) or NO_SAMPLER_LABEL,
                components=tuple(Component(name=step.name, params=step.params) for step in steps),
                partitions=counts.pop() if counts else None,
                at=chain_at,
            )
        )
    return settings, problems


def _expand_step(document: Document, catalog: Catalog, step: Any, at: YamlPath) -> tuple[list[_Step], list[Problem]]:
    try:
        ref = parse_component_ref(step)
    except ValueError as error:
        return [], [document.problem(f"a sampler is a name or {{name: {{params}}}}: {error}", at)]
    name = ref["name"]
    params_at = at + (name,) if isinstance(step, dict) else at
    if name not in catalog.samplers:
        return [], [document.problem(catalog.samplers.unknown_message(name), params_at)]
    config = catalog.samplers.get(name).config
    checked = check_params(document, config, ref["params"], params_at, f"sampler '{name}'", sweepable=True)
    if checked.problems:
        return [], checked.problems
    canonical = canonical_keys(config)
    order = [canonical.get(key, key) for key in ref["params"]]
    partitioned = getattr(config, "partitioned", False)
    variants, problems = [], []
    for values in itertools.product(*checked.sweeps.values()):
        chosen = dict(zip(checked.sweeps, values))
        try:
            params = checked.complete(config, chosen)
        except ValidationError as error:  # a combination the sampler refuses
            problems += [document.problem(describe(item, what=f"sampler '{name}'"), params_at) for item in error.errors()]
            continue
        given = {key: chosen.get(key, checked.values.get(key)) for key in order}
        variants.append(_Step(name, given, params, params.get("partitions") if partitioned else None))
    return variants, problems


def _step_label(step: _Step) -> str:
    shown = [value for key, value in step.given.items() if not (step.partitions is not None and key == "partitions")]
    return "-".join([step.name, *map(_slug, shown)])


def _step_description(step: _Step) -> str:
    if not step.given:
        return step.name
    return f"{step.name}({', '.join(f'{key}={value}' for key, value in step.given.items())})"


def _slug(value: Any) -> str:
    """A parameter value as it appears in an arm id."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return "_".join(_slug(v) for v in value)
    if isinstance(value, dict):
        return "_".join(f"{k}{_slug(v)}" for k, v in value.items())
    return key_text(str(value).replace("/", "--").replace(" ", "_"))
