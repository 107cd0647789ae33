"""The plan a spec compiles to: arms (dataset x sampler setting x method), each with the fixed part
of its trials, its search space, its tune budget and its replicates.

Plain, frozen, JSON-serialisable data: the runner builds Ray objects from it in one place, a single
trial is `Arm.trial_config(...)`, and `Plan.sha256()` names a plan for resume and provenance.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError

from nerplat.errors import Problem, UserInputError
from nerplat.plan.trial_config import Component, Frozen, TrialConfig
from nerplat.spec.suggest import unknown_name


def canonical_json(data: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal data always gives equal text (and hash)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(data: Any) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


class Uniform(Frozen):
    """A float drawn uniformly from [low, high]."""

    kind: Literal["uniform"] = "uniform"
    low: float = Field(description="Smallest value.")
    high: float = Field(description="Largest value.")

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[float]:
        step = (self.high - self.low) / (points_per_axis - 1)
        return [self.low + i * step for i in range(points_per_axis - 1)] + [self.high]

    def label(self) -> str:
        return f"uniform({self.low:g}, {self.high:g})"


class LogUniform(Frozen):
    """A float whose logarithm is uniform on [log low, log high]; low > 0."""

    kind: Literal["loguniform"] = "loguniform"
    low: float = Field(gt=0, description="Smallest value (> 0).")
    high: float = Field(gt=0, description="Largest value.")

    def contains(self, value: Any) -> bool:
        return _is_number(value) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[float]:
        ratio = self.high / self.low
        return [self.low * ratio ** (i / (points_per_axis - 1)) for i in range(points_per_axis - 1)] + [self.high]

    def label(self) -> str:
        return f"loguniform({self.low:g}, {self.high:g})"


class IntRange(Frozen):
    """An integer drawn uniformly from low..high, both included."""

    kind: Literal["int"] = "int"
    low: int = Field(description="Smallest value (included).")
    high: int = Field(description="Largest value (included).")

    def contains(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def grid_values(self, points_per_axis: int) -> list[int]:
        """Evenly spaced integers: every one when the range has at most `points_per_axis`."""
        step = (self.high - self.low) / (points_per_axis - 1)
        return sorted({round(self.low + i * step) for i in range(points_per_axis)})

    def label(self) -> str:
        return f"int({self.low}, {self.high})"


class Choice(Frozen):
    """One of the listed values, each equally likely."""

    kind: Literal["choice"] = "choice"
    options: tuple[Any, ...] = Field(description="The values to choose from.")

    def contains(self, value: Any) -> bool:
        return value in self.options

    def grid_values(self, points_per_axis: int) -> list[Any]:
        return list(self.options)

    def label(self) -> str:
        return f"choice({', '.join(map(str, self.options))})"


Distribution = Annotated[Union[Uniform, LogUniform, IntRange, Choice], Field(discriminator="kind")]
DISTRIBUTION_KINDS = ("uniform", "loguniform", "int", "choice")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Replicate(Frozen):
    """One final run of an arm's best configuration."""

    seed: int = Field(description="Seed of model initialisation, data order and dev subset.")
    partition: int = Field(description="Index of the sampler's partition (0 when the sampler has none).")


class Resources(Frozen):
    """What one trial asks Ray for."""

    workers: int = Field(1, ge=1, description="Ray Train workers per trial (data-parallel).")
    cpus_per_worker: float = Field(1.0, gt=0, description="CPUs reserved by each worker.")
    gpus_per_worker: float = Field(0.0, ge=0, description="GPUs reserved by each worker (fractions share a GPU).")
    custom: dict[str, float] = Field(default_factory=dict, description="Custom Ray resources per worker, e.g. {accelerator_type:A100: 0.01}.")
    max_retries: int = Field(0, ge=0, description="Times a failed trial is restarted before it counts as failed.")


class Tune(Frozen):
    """How the tune phase searches each arm's space on dev."""

    searcher: Component = Field(description="Searcher name and options (registry `searchers`).")
    scheduler: Component = Field(description="Trial scheduler name and options (registry `schedulers`).")
    metric: str = Field(description="Dev metric the searcher and scheduler optimise, e.g. dev_micro_f1.")
    mode: Literal["max", "min"] = Field(description="Whether the metric is maximised or minimised.")
    num_samples: int = Field(ge=1, description="Trials per arm for tpe/random; grid runs every grid point.")
    max_concurrent: int | None = Field(description="Trials of one arm running at once; none: as many as resources allow.")


class Analysis(Frozen):
    """Which comparisons the analysis stage tests, and how."""

    baseline: str | None = Field(None, description="Method every other method is compared with.")
    test: Literal["paired_t", "wilcoxon"] = Field("paired_t", description="Paired significance test over replicates.")
    alpha: float = Field(0.05, gt=0, lt=1, description="Significance level.")
    comparisons: tuple[tuple[str, str], ...] = Field((), description="Extra [method, method] pairs to test.")
    bootstrap_resamples: int = Field(1000, ge=100, description="Resamples of the bootstrapped standard error.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Coverage of the bootstrap percentile intervals.")
    seed: int = Field(0, ge=0, description="Seed of the bootstrap: same seed, same numbers.")
    average: Literal["micro", "macro"] = Field("micro", description="Averaging over types of the headline precision, recall and F1.")
    reference_sampler: str | None = Field(
        None, description="Sampler setting (label) whose runs start the precision-recall arrows; none: each setting's baseline."
    )


SEARCHABLE_SECTIONS = ("objective", "head", "train")  # TrialConfig parts a search-space key may start with


class Arm(Frozen):
    """One dataset x sampler setting x method: its fixed trial settings, search space and replicates."""

    id: str = Field(description="Readable, deterministic id: <dataset>/<sampler>/<method>.")
    dataset: str = Field(description="Dataset label used in the id.")
    sampler: str = Field(description="Sampler setting label used in the id ('full' for no sampler).")
    sampler_description: str = Field(description="The sampler chain with its spec parameters, for tags.")
    method: str = Field(description="Method name in the spec.")
    objective: str = Field(description="Objective (loss) name.")
    head: str = Field(description="Head name.")
    fixed: dict[str, Any] = Field(description="TrialConfig fields as JSON, without seed, partition, eval_split and searched values.")
    search_space: dict[str, Distribution] = Field(description="Searched hyper-parameters by dotted TrialConfig path, e.g. objective.lambda.")
    tune_trials: int = Field(ge=0, description="Trials of the tune phase; 0 when the search space is empty.")
    partitions: tuple[int, ...] = Field(description="Partitions the sampler chain defines (replicates draw from these).")
    replicates: tuple[Replicate, ...] = Field(description="Final runs of the chosen configuration.")
    resources: Resources = Field(description="Ray resources of one trial.")

    def trial_config(
        self,
        sampled: dict[str, Any] | None = None,
        seed: int = 0,
        partition: int = 0,
        eval_split: Literal["dev", "test"] | None = "test",
    ) -> TrialConfig:
        """The complete config of one trial of this arm.

        `sampled` gives a value for every key of `search_space` (and only those), each inside its
        distribution. Bad values raise `UserInputError` naming the key, so this also serves
        `nerplat train --set objective.lambda=0.2`.
        """
        sampled = dict(sampled or {})
        problems = [
            Problem(f"'{key}' is not searched in arm {self.id} (searched: {', '.join(self.search_space) or 'nothing'})", path=key)
            for key in sampled
            if key not in self.search_space
        ]
        problems += [
            Problem(f"arm {self.id} needs a value for '{key}' ({space.label()})", path=key)
            for key, space in self.search_space.items()
            if key not in sampled
        ]
        problems += [
            Problem(f"{value!r} is outside {self.search_space[key].label()}", path=key)
            for key, value in sampled.items()
            if key in self.search_space and not self.search_space[key].contains(value)
        ]
        if partition not in self.partitions:
            problems.append(Problem(f"arm {self.id} has partitions {list(self.partitions)}, not {partition}", path="partition"))
        if problems:
            raise UserInputError(problems)
        data = copy.deepcopy(self.fixed)
        for key, value in sampled.items():
            section, _, name = key.partition(".")
            target = data[section] if section == "train" else data[section]["params"]
            target[name] = value
        data.update(seed=seed, partition=partition, eval_split=eval_split)
        try:
            return TrialConfig.model_validate(data)
        except ValidationError as error:
            raise UserInputError([Problem(f"{e['msg']} at {'.'.join(map(str, e['loc']))}") for e in error.errors()]) from None


class Plan(Frozen):
    """Everything `nerplat run` does for one spec (and profile), as plain data."""

    experiment: str = Field(description="Experiment name (MLflow experiment, Ray experiment prefix).")
    description: str = Field(description="What the experiment is for.")
    profile: str | None = Field(description="Profile merged over the spec, if any.")
    spec_sha256: str = Field(description="sha256 of the resolved spec (interpolated, profile merged) as canonical JSON.")
    resolved_spec: dict[str, Any] = Field(description="The resolved spec this plan was compiled from.")
    tracking_uri: str | None = Field(description="MLflow tracking URI; none: MLFLOW_TRACKING_URI or a local SQLite store.")
    tune: Tune | None = Field(description="Tune-phase settings; none when no method has a search space.")
    replicate_split: Literal["test", "dev"] = Field(description="Split the replicate runs are evaluated on.")
    replicate_models: Literal["best", "all", "none"] = Field(
        "best", description="Replicates whose tagger is logged and registered in MLflow (nerplat.serving.mlflow_models)."
    )
    analysis: Analysis = Field(description="Comparisons and statistics of the analysis stage.")
    arms: tuple[Arm, ...] = Field(description="Every arm, in spec order (datasets, then samplers, then methods).")

    def sha256(self) -> str:
        return sha256_of(self.model_dump(mode="json"))

    def arm(self, arm_id: str) -> Arm:
        for arm in self.arms:
            if arm.id == arm_id:
                return arm
        raise UserInputError(unknown_name("arm", arm_id, [a.id for a in self.arms], listed_as="arms"))

    def total_trials(self) -> int:
        """Tune trials plus replicate runs over all arms."""
        return sum(arm.tune_trials + len(arm.replicates) for arm in self.arms)
