"""The plan a spec compiles to: arms (dataset x sampler setting x method), each with the fixed part
of its trials, its search space, its tune budget and its replicates.

Plain, frozen, JSON-serialisable data: the runner builds Ray objects from it in one place, a single
trial is `Arm.trial_config(...)`, and `Plan.sha256()` names a plan for resume and provenance.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from nerplat.config.experiment import DEFAULT_TUNE_METRIC, Analysis, Claim, Resources, Sequential, Tune
from nerplat.config.frozen import Frozen
from nerplat.config.search_space import Distribution
from nerplat.config.trial import TrialConfig
from nerplat.errors import Problem, UserInputError
from nerplat.spec.recording import mask_values
from nerplat.suggest import unknown_name
from nerplat.validation import validated


def canonical_json(data: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal data always gives equal text (and hash)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_of(data: Any) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


class Replicate(Frozen):
    """One final run of an arm's best configuration."""

    seed: int = Field(description="Seed of model initialisation, data order and dev subset.")
    partition: int = Field(description="Index of the sampler's partition (0 when the sampler has none).")


SEARCHABLE_SECTIONS = ("objective", "head", "train")  # TrialConfig parts a search-space key may start with


class Arm(Frozen):
    """One dataset x sampler setting x method: its fixed trial settings, search space and replicates."""

    id: str = Field(description="Readable, deterministic id: <dataset>/<sampler>/<method>.")
    label: str = Field(description="Short label for people (MLflow run names): what tells the arm from the plan's others.")
    dataset: str = Field(description="Dataset label used in the id.")
    sampler: str = Field(description="Sampler setting label used in the id ('full' for no sampler).")
    sampler_description: str = Field(description="The sampler chain with its spec parameters, for tags.")
    method: str = Field(description="Method name in the spec.")
    objective: str = Field(description="Objective (loss) name.")
    head: str = Field(description="Head name.")
    fixed: dict[str, Any] = Field(
        description="TrialConfig fields as JSON, without seed, partition, eval_split and searched values."
    )
    search_space: dict[str, Distribution] = Field(
        description="Searched hyper-parameters by dotted TrialConfig path, e.g. objective.lambda."
    )
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
        return validated(TrialConfig, data)


class Plan(Frozen):
    """Everything `nerplat run` does for one spec (and profile), as plain data."""

    experiment: str = Field(description="Experiment name (MLflow experiment, Ray experiment prefix).")
    description: str = Field(description="What the experiment is for.")
    profile: str | None = Field(description="Profile merged over the spec, if any.")
    spec_sha256: str = Field(description="sha256 of the resolved spec (interpolated, profile merged) as canonical JSON.")
    resolved_spec: dict[str, Any] = Field(description="The resolved spec this plan was compiled from.")
    tracking_uri: str | None = Field(description="MLflow tracking URI; none: MLFLOW_TRACKING_URI or a local SQLite store.")
    optuna_storage: str | None = Field(
        None,
        description="Optuna storage URL of the arms' studies; none: NERPLAT_OPTUNA_STORAGE or optuna.db beside the MLflow store.",
    )
    tune: Tune | None = Field(
        description="Tune-phase settings (their metric also chooses every run's checkpoint); none without a tune section."
    )
    replicate_split: Literal["test", "dev"] = Field(description="Split the replicate runs are evaluated on.")
    replicate_models: Literal["best", "all", "none"] = Field(
        "best", description="Replicates whose tagger is logged and registered in MLflow (nerplat.serving.mlflow_models)."
    )
    analysis: Analysis = Field(description="Comparisons and statistics of the analysis stage.")
    claims: tuple[Claim, ...] = Field((), description="The papers' claims the analysis gives a verdict on (verdicts.parquet).")
    sequential: Sequential | None = Field(
        None, description="Group-sequential replication: replicates run in looks until every claim is decided; none: all at once."
    )
    arms: tuple[Arm, ...] = Field(description="Every arm, in spec order (datasets, then samplers, then methods).")
    unrecorded: dict[str, str] = Field(
        default_factory=dict, exclude=True, repr=False, description="Text of `${VAR}`s that may not be recorded -> reference."
    )

    @model_serializer(mode="wrap")
    def _masked(self, handler: SerializerFunctionWrapHandler) -> Any:
        # plan.json is read by everyone with access to the store: secrets never reach it (nerplat.spec.recording).
        return mask_values(handler(self), self.unrecorded)

    def sha256(self) -> str:
        return sha256_of(self.model_dump(mode="json"))

    def arm(self, arm_id: str) -> Arm:
        for arm in self.arms:
            if arm.id == arm_id:
                return arm
        raise UserInputError(unknown_name("arm", arm_id, [a.id for a in self.arms], listed_as="arms"))

    @property
    def select_metric(self) -> str:
        """The dev metric, without `dev_`, every run chooses its checkpoint and stops early on: the
        tune metric, searched or not, else the default."""
        return (self.tune.metric if self.tune else DEFAULT_TUNE_METRIC).removeprefix("dev_")

    def total_trials(self) -> int:
        """Tune trials plus replicate runs over all arms."""
        return sum(arm.tune_trials + len(arm.replicates) for arm in self.arms)
