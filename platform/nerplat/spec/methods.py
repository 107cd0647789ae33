"""Methods resolved against the registries: objective, head and train settings, fixed and searched.

A method's encoder is its own `encoder`, else `model.encoder`. A method's head is, in order: its
own `head`, else `model.head`, else its objective's `default_head`. The objective's config class
lists the heads it can train (`heads`); any other head is an error at the place the head came
from. Search-space keys are dotted TrialConfig paths: `objective.<param>`, `head.<param>`,
`train.<field>`. A method runs with every sampler setting unless it lists the labels of those it
runs with (`samplers: [full]`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nerplat.config.search_space import Distribution
from nerplat.config.trial import Component, TrainSettings
from nerplat.errors import Problem
from nerplat.registry import Catalog
from nerplat.spec.loader import Document, YamlPath
from nerplat.spec.params import CheckedParams, check_params
from nerplat.spec.schema import MethodSection, ModelSection


@dataclass(frozen=True)
class ResolvedMethod:
    name: str
    objective: Component  # fixed parameters only; searched ones are in `space`
    head: Component
    train: dict[str, Any]  # TrainSettings as JSON, minus searched fields
    space: dict[str, Distribution] = field(default_factory=dict)
    train_at: YamlPath = ("train",)  # where this method's train settings are written (for rules)
    samplers: tuple[str, ...] | None = None  # sampler setting labels it runs with; None: all
    encoder: str | None = None  # its own encoder; None: the spec's model.encoder


def resolve_methods(
    document: Document,
    methods: dict[str, MethodSection],
    train: dict[str, Any],
    model: ModelSection,
    catalog: Catalog,
) -> tuple[list[ResolvedMethod], list[Problem]]:
    """Every method of the spec resolved, or the problems found on the way (all of them)."""
    problems: list[Problem] = []
    shared_train = check_params(document, TrainSettings, train, ("train",), "train", searchable=True)
    problems += shared_train.problems
    resolved = []
    for name, section in methods.items():
        method, method_problems = _resolve(document, name, section, train, model, catalog, shared_train)
        problems += method_problems
        if method is not None:
            resolved.append(method)
    return resolved, problems


def _resolve(
    document: Document, name: str, section: MethodSection, shared: dict[str, Any], model: ModelSection, catalog: Catalog,
    shared_train: CheckedParams,
) -> tuple[ResolvedMethod | None, list[Problem]]:
    at: YamlPath = ("methods", name)
    if section.loss not in catalog.objectives:
        return None, [document.problem(catalog.objectives.unknown_message(section.loss), at + ("loss",))]
    objective_config = catalog.objectives.get(section.loss).config
    problems: list[Problem] = []
    objective = check_params(document, objective_config, section.params, at, f"loss '{section.loss}'", searchable=True)
    problems += objective.problems

    head_name, head_at = section.head, at + ("head",)
    if head_name is None and model.head is not None:
        head_name, head_at = model.head, ("model", "head")
    if head_name is None:
        head_name = getattr(objective_config, "default_head", "softmax")
    compatible = getattr(objective_config, "heads", None)
    head = None
    if head_name not in catalog.heads:
        problems.append(document.problem(catalog.heads.unknown_message(head_name), head_at))
    elif compatible is not None and head_name not in compatible:
        message = f"loss '{section.loss}' trains heads {', '.join(compatible)}, not '{head_name}'"
        if head_at[0] == "model":
            message += f"; give methods.{name} its own head"
        problems.append(document.problem(message, head_at))
    else:
        head = check_params(
            document, catalog.heads.get(head_name).config, section.head_params, at + ("head_params",), f"head '{head_name}'",
            searchable=True,
        )
        problems += head.problems

    train, train_at = shared_train, ("train",)
    if section.train and not shared_train.problems:
        train_at = at + ("train",)
        merged = {**shared, **section.train}
        train = check_params(document, TrainSettings, merged, train_at, f"train of method {name}", searchable=True)
        problems += train.problems
    if problems or head is None or train.problems:
        return None, problems

    space = {f"objective.{k}": d for k, d in objective.space.items()}
    space.update({f"head.{k}": d for k, d in head.space.items()})
    space.update({f"train.{k}": d for k, d in train.space.items()})
    return (
        ResolvedMethod(
            name=name,
            objective=Component(name=section.loss, params=objective.fixed),
            head=Component(name=head_name, params=head.fixed),
            train=train.fixed,
            space=space,
            train_at=train_at,
            samplers=None if section.samplers is None else tuple(section.samplers),
            encoder=section.encoder,
        ),
        [],
    )
