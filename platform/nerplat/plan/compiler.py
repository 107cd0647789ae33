"""Spec -> plan: arms are datasets x sampler settings x methods, in spec order (a method that lists
its sampler settings runs only with those).

Pure: the same spec file, profile and environment give the same plan (and `Plan.sha256()`);
nothing is started, read beyond the spec, or written. Arm ids are `<dataset>/<sampler>/<method>`,
e.g. `conll2003/untyped+low_resource-100/mom` (docs/spec.md, "Arms").

Seeds come from two streams: every tuning trial trains with `TUNE_SEED` (`config.experiment`, the
plan's `tune.train_seed`), replicates with the spec's `replicate.seeds` (0, 1, ... by default; under
`replicate.sequential` they depend on the sampler setting, `spec.rules.replicate_seeds`), and the
two never meet. When the tuning trials shared seed 0 with the first replicate, that replicate
re-ran the chosen trial (same dev score): a tuned method got a best-of-N draw in its replicates
that an untuned one did not.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import TypeAdapter

from nerplat.config.experiment import TUNE_SEED, Tune
from nerplat.config.trial import EncoderSettings
from nerplat.errors import UserInputError
from nerplat.plan.labels import arm_labels
from nerplat.plan.model import Arm, Plan, Replicate, sha256_of
from nerplat.registry import Catalog
from nerplat.spec.datasets import DatasetCheck
from nerplat.spec.methods import ResolvedMethod
from nerplat.spec.validate import SpecSource, ValidatedSpec, load_spec

GRID_SEARCHER = "grid"
_REPLICATES = TypeAdapter(tuple[Replicate, ...])


def compile_plan(spec: SpecSource | str | Path, catalog: Catalog, dataset_check: DatasetCheck | None = None) -> Plan:
    """Validates the spec file with its profile and `--set` overrides (raising `UserInputError` with every
    problem) and compiles it."""
    return build_plan(load_spec(spec, catalog, dataset_check))


def build_plan(validated: ValidatedSpec) -> Plan:
    spec = validated.spec
    if any(TUNE_SEED in seeds for seeds in validated.seeds.values()):
        message = f"seed {TUNE_SEED} is the tuning trials' seed; a replicate with it would repeat a tuning trial: choose another"
        raise UserInputError(validated.document.problem(message, ("replicate", "seeds")))
    fields = []
    # same partitions and seeds: same replicates
    shared: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[Replicate, ...]] = {}
    for dataset in validated.datasets:
        for setting in validated.samplers:
            key = (validated.partitions[setting.label], validated.seeds[setting.label])
            if key not in shared:
                shared[key] = replicates_of(*key)
            replicates = shared[key]
            for method in validated.methods:
                if method.samplers is not None and setting.label not in method.samplers:
                    continue
                fields.append(
                    dict(
                        id=f"{dataset.label}/{setting.label}/{method.name}",
                        dataset=dataset.label,
                        sampler=setting.label,
                        sampler_description=setting.description,
                        method=method.name,
                        objective=method.objective.name,
                        head=method.head.name,
                        fixed={
                            "dataset": dataset.ref.model_dump(mode="json"),
                            "samplers": [c.model_dump(mode="json") for c in setting.components],
                            "encoder": method_encoder(validated, method).model_dump(mode="json"),
                            "head": method.head.model_dump(mode="json"),
                            "objective": method.objective.model_dump(mode="json"),
                            "train": method.train,
                        },
                        search_space=method.space,
                        tune_trials=tune_trials(method, validated.tune),
                        partitions=tuple(range(setting.partitions or 1)),
                        replicates=replicates,
                        resources=spec.resources,
                    )
                )
    labels = arm_labels([(f["dataset"], f["sampler"], f["method"]) for f in fields])
    arms = [Arm(**f, label=label) for f, label in zip(fields, labels)]
    return Plan(
        experiment=spec.experiment,
        description=spec.description,
        profile=validated.profile,
        spec_sha256=sha256_of(validated.resolved_data()),
        resolved_spec=validated.recorded_data(),
        unrecorded=validated.unrecorded_values(),
        tracking_uri=spec.tracking.uri,
        optuna_storage=spec.tracking.optuna_storage,
        tune=validated.tune,
        replicate_split=spec.replicate.split,
        replicate_models=spec.replicate.models,
        analysis=spec.analysis,
        claims=tuple(spec.claims),
        sequential=spec.replicate.sequential,
        arms=tuple(arms),
    )


def replicates_of(partitions: tuple[int, ...], seeds: tuple[int, ...]) -> tuple[Replicate, ...]:
    """Every seed of every partition, in one validation pass.

    A plan may hold 100,000 replicates: one pydantic validation of the whole list is about twice as
    fast as a `Replicate(...)` call each (docs/performance.md, "Figures behind the code's choices").
    """
    return _REPLICATES.validate_python([{"seed": seed, "partition": partition} for partition in partitions for seed in seeds])


def method_encoder(validated: ValidatedSpec, method: ResolvedMethod) -> EncoderSettings:
    """The spec's encoder settings, with the method's own encoder name when it has one."""
    if method.encoder is None:
        return validated.encoder
    return validated.encoder.model_copy(update={"name": method.encoder})


def tune_trials(method: ResolvedMethod, tune: Tune | None) -> int:
    """Trials of an arm's tune phase: 0 without a search space, every point for grid search."""
    if not method.space or tune is None:
        return 0
    if tune.searcher.name == GRID_SEARCHER:
        points = tune.searcher.params["points_per_axis"]
        return math.prod(len(d.grid_values(points)) for d in method.space.values())
    return tune.num_samples
