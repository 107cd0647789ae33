"""The spec's sections as pydantic models: shapes, types and ranges that need no registry.

Parts whose keys depend on a registry (objective, head and sampler parameters, searcher and
scheduler options) or that may hold distributions (train settings) are plain mappings here and
are checked against the registered config models by `nerplat.spec.params`. `docs/spec.md` is
the reference for every section.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from nerplat.plan.model import Analysis, Resources
from nerplat.plan.trial_config import DatasetRef, EncoderSettings

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"'{name}' must start with a letter or digit and use only letters, digits, '_', '.', '-'")
    return name


Name = Annotated[str, AfterValidator(_check_name)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComponentRef(Section):
    """A registry entry named in the spec: `tpe` or `{tpe: {n_startup_trials: 5}}`."""

    name: str = Field(description="Registered name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Options of the entry's config model.")

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        return value if isinstance(value, ComponentRef) else parse_component_ref(value)


def parse_component_ref(value: Any) -> dict[str, Any]:
    """`name` or `{name: {params}}` (or `{name: null}`) -> {"name": ..., "params": {...}}."""
    if isinstance(value, str):
        return {"name": value, "params": {}}
    if isinstance(value, dict) and len(value) == 1:
        ((name, params),) = value.items()
        if params is None or isinstance(params, dict):
            return {"name": name, "params": params or {}}
    raise ValueError("expected a name or {name: {options}}, e.g. tpe or {tpe: {n_startup_trials: 5}}")


class DatasetSection(Section):
    """A corpus: a registered name, `hf:<hub id>`, or a folder of CoNLL files."""

    name: str | None = DatasetRef.model_fields["name"]
    path: str | None = Field(None, description="Folder with train/dev/test CoNLL files; relative paths start at the spec's folder.")
    iob1: Literal["convert", "refuse"] = DatasetRef.model_fields["iob1"]
    dev_from_train: float | None = DatasetRef.model_fields["dev_from_train"]

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _name_or_path(self) -> "DatasetSection":
        if (self.name is None) == (self.path is None):
            raise ValueError("give a dataset either a name (conll2003, hf:<hub id>) or a path, not both or neither")
        return self


class ModelSection(Section):
    """The network: a pretrained encoder, windowing, and the default head."""

    encoder: str = EncoderSettings.model_fields["name"]
    head: str | None = Field(None, description="Head for methods that name none; default: each objective's own default head.")
    max_length: int = EncoderSettings.model_fields["max_length"]
    window_stride: int = EncoderSettings.model_fields["window_stride"]


class MethodSection(Section):
    """A method: an objective, its head, and their hyper-parameters (values or distributions).

    Every key besides loss, head, head_params, train and samplers is a hyper-parameter of the objective.
    """

    loss: str = Field(description="Objective name (registry `objectives`).")
    head: str | None = Field(None, description="Head name (registry `heads`); default: model.head, else the objective's default head.")
    head_params: dict[str, Any] = Field(default_factory=dict, description="Head hyper-parameters (values or distributions).")
    train: dict[str, Any] = Field(default_factory=dict, description="Train settings of this method, over the spec's `train`.")
    samplers: list[str] | None = Field(
        None, min_length=1, description="Labels of the sampler settings this method runs with (as in arm ids); default: all."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Objective hyper-parameters: every other key of the method.")

    @model_validator(mode="before")
    @classmethod
    def _gather_params(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        own = {"loss", "head", "head_params", "train", "samplers"}
        gathered = {k: v for k, v in value.items() if k in own}
        gathered["params"] = {k: v for k, v in value.items() if k not in own}
        return gathered


def _check_seeds(seeds: int | list[int]) -> int | list[int]:
    if isinstance(seeds, int) and seeds < 1:
        raise ValueError(f"seeds must be a count of at least 1 or a list of seeds (got {seeds}): zero replicates measure nothing")
    if isinstance(seeds, list):
        if not seeds:
            raise ValueError("seeds must list at least one seed")
        if len(set(seeds)) != len(seeds):
            raise ValueError("seeds must not repeat")
    return seeds


def _check_partitions(partitions: int | list[int] | None) -> int | list[int] | None:
    if isinstance(partitions, int) and partitions < 1:
        raise ValueError(f"partitions must be a count of at least 1 or a list of partition indices (got {partitions})")
    if isinstance(partitions, list) and (not partitions or len(set(partitions)) != len(partitions) or min(partitions) < 0):
        raise ValueError("partitions must list distinct partition indices (0, 1, ...)")
    return partitions


class ReplicateSection(Section):
    """The final runs: the chosen configuration of each arm over seeds and sampler partitions."""

    seeds: Annotated[int | list[int], AfterValidator(_check_seeds)] = Field(
        10, description="Number of seeds (0, 1, ..., n-1) or the list of seeds."
    )
    partitions: Annotated[int | list[int] | None, AfterValidator(_check_partitions)] = Field(
        None, description="Partitions to run: all the sampler defines (none), the first n, or a list of indices."
    )
    split: Literal["test", "dev"] = Field("test", description="Split the replicates are evaluated on.")
    models: Literal["best", "all", "none"] = Field(
        "best",
        description="Trained taggers to log as MLflow models and register (one registered model per arm): "
        "the best replicate of each arm by the tune metric on dev, all replicates, or none.",
    )


class TuneSection(Section):
    """The tune phase: how each arm's search space is searched on dev."""

    search: ComponentRef = Field(
        default_factory=lambda: ComponentRef.model_validate("tpe"), description="Searcher: tpe, random or grid, or {name: {options}}."
    )
    scheduler: ComponentRef = Field(
        default_factory=lambda: ComponentRef.model_validate("fifo"), description="Scheduler: asha or fifo, or {name: {options}}."
    )
    metric: str = Field("dev_micro_f1", description="Dev metric to optimise: dev_<name> with a name from nerplat.track.schema.")
    mode: Literal["max", "min"] = Field("max", description="Maximise or minimise the metric.")
    num_samples: int | None = Field(None, ge=1, description="Trials per arm (default 20); not for grid, which runs every point.")
    max_concurrent: int | None = Field(None, ge=1, description="Trials of one arm at once; default: as many as resources allow.")


class TrackingSection(Section):
    """Where runs are logged."""

    uri: str | None = Field(None, description="MLflow tracking URI; default: $MLFLOW_TRACKING_URI, else a local SQLite store.")


class Spec(Section):
    """A whole spec after its profile is merged. Sections are validated one by one (see
    `nerplat.spec.validate`) so that a broken section does not hide the problems of the others."""

    experiment: Name = Field(description="Experiment name: MLflow experiment and Ray experiment prefix.")
    description: str = Field("", description="What the experiment is for.")
    dataset: DatasetSection | None = Field(None, description="The corpus (or use `datasets` for several).")
    datasets: list[DatasetSection] | None = Field(None, min_length=1, description="Several corpora: one set of arms each.")
    model: ModelSection = Field(ModelSection(), description="Encoder, windowing and default head.")
    train: dict[str, Any] = Field(default_factory=dict, description="Train settings (TrainSettings fields): values or distributions.")
    samplers: list[Any] = Field(default_factory=list, description="A sampler chain, or a list of alternative chains.")
    methods: dict[Name, MethodSection] = Field(min_length=1, description="Methods by name.")
    tune: TuneSection | None = Field(None, description="Tune phase; needed when any method has a search space.")
    replicate: ReplicateSection = Field(ReplicateSection(), description="Final runs over seeds and partitions.")
    analysis: Analysis = Field(Analysis(), description="Significance tests of the analysis stage.")
    resources: Resources = Field(Resources(), description="Ray resources of one trial.")
    tracking: TrackingSection = Field(TrackingSection(), description="MLflow tracking.")
    profiles: dict[Name, dict[str, Any]] = Field(default_factory=dict, description="Partial specs merged over this one by --profile NAME.")
