"""The spec's sections as pydantic models: shapes, types and ranges that need no registry.

Parts whose keys depend on a registry (objective, head and sampler parameters, searcher and
scheduler options) or that may hold distributions (train settings) are plain mappings here and
are checked against the registered config models by `nerplat.spec.params`. `docs/spec.md` is
the reference for every section.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo, field_validator, model_validator,
)

from nerplat.config.experiment import DEFAULT_TUNE_METRIC, Analysis, Claim, Resources, Sequential
from nerplat.config.trial import DatasetRef, EncoderSettings, FileSplit

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
MAX_NAME_LENGTH = 64  # names become parts of file names (255 bytes) and of MLflow run names
# Bounds that keep a plan (and `nerplat plan`) small enough to build: one seed is one training run.
MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1  # numpy and torch seeds are 32-bit
MAX_NUM_SAMPLES = 10_000
# A Hugging Face hub id: `name` or `owner/name`, never a path (`..`, absolute, backslashes).
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?")
HUB_PREFIX = "hf:"
SAVED_FOLDER_PREFIXES = (".", "/", "~")  # hf:<these> names a folder written by save_to_disk, not a hub id


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ValueError(f"'{name}' must start with a letter or digit and use only letters, digits, '_', '.', '-'")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"a name has at most {MAX_NAME_LENGTH} characters (this one has {len(name)}): shorten it")
    return name


Name = Annotated[str, AfterValidator(_check_name)]


def is_hub_id(text: str) -> bool:
    """`owner/name` or `name` as the Hugging Face hub writes them; `..` never (it would be a path)."""
    return bool(_HUB_ID.fullmatch(text)) and ".." not in text


class Section(BaseModel):
    """A part of the spec: unknown keys, non-finite numbers and true/false for numbers are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_number(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic reads `epochs: true` as 1; a boolean where a number is due is a mistake.
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and not _accepts(annotation, True, strict=True):
            expected = "a number" if _accepts(annotation, 1, strict=True) else "no true/false here"
            raise ValueError(f"expected {expected}, not {str(value).lower()}")
        return value


def _accepts(annotation: Any, value: Any, strict: bool) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value, strict=strict)
    except ValidationError:
        return False
    return True


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
    """A corpus: a registered name, `hf:<hub id>`, a folder of split files, or one file with its `split`."""

    name: str | None = DatasetRef.model_fields["name"]
    path: str | None = Field(
        None,
        description="Folder with train/dev/test files, or one file given with `split`; relative paths start at the spec's "
        "folder.",
    )
    format: ComponentRef = Field(
        default_factory=lambda: ComponentRef.model_validate("conll"),
        description="Format of the folder's files: conll, jsonl_tokens, jsonl_text, or {name: {options}} (registry `formats`).",
    )
    iob1: Literal["convert", "refuse"] = DatasetRef.model_fields["iob1"]
    dev_from_train: float | None = DatasetRef.model_fields["dev_from_train"]
    split: FileSplit | None = DatasetRef.model_fields["split"]

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("name")
    @classmethod
    def _hub_id(cls, name: str | None) -> str | None:
        rest = name[len(HUB_PREFIX) :] if name is not None and name.startswith(HUB_PREFIX) else None
        if rest is not None and not rest.startswith(SAVED_FOLDER_PREFIXES) and not is_hub_id(rest):
            raise ValueError(
                "write a hub dataset as hf:<owner>/<name>, e.g. hf:eriktks/conll2003 (letters, digits, '_', '.', '-'), "
                "or a dataset saved with save_to_disk as hf:./folder"
            )
        return name

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

    Every key besides loss, display, encoder, head, head_params, train and samplers is a hyper-parameter of the objective.
    """

    loss: str = Field(description="Objective name (registry `objectives`).")
    display: str | None = Field(
        None, min_length=1, description="The method's name in the report's LaTeX tables (e.g. 'WCE ($w$=1)'); default: its key."
    )
    encoder: str | None = Field(
        None, description="Encoder of this method (registry `encoders`, HF id or folder); default: model.encoder."
    )
    head: str | None = Field(
        None, description="Head name (registry `heads`); default: model.head, else the objective's default head."
    )
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
        own = {"loss", "display", "encoder", "head", "head_params", "train", "samplers"}
        gathered = {k: v for k, v in value.items() if k in own}
        gathered["params"] = {k: v for k, v in value.items() if k not in own}
        return gathered


def _check_seeds(seeds: int | list[int]) -> int | list[int]:
    if isinstance(seeds, int) and seeds < 1:
        raise ValueError(f"seeds must be a count of at least 1 or a list of seeds (got {seeds}): zero replicates measure nothing")
    count = seeds if isinstance(seeds, int) else len(seeds)
    if count > MAX_SEEDS:
        raise ValueError(f"at most {MAX_SEEDS} seeds (got {count}): each seed is a training run of every arm")
    if isinstance(seeds, list):
        if not seeds:
            raise ValueError("seeds must list at least one seed")
        if len(set(seeds)) != len(seeds):
            raise ValueError("seeds must not repeat")
        if not all(0 <= seed <= MAX_SEED for seed in seeds):
            raise ValueError(f"seeds are integers from 0 to {MAX_SEED}")
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
        10,
        description="Number of seeds (0, 1, ..., n-1) or the list of seeds, of every partition. With sequential: "
        "the seeds of each partition of a partitioned arm (default then 1); other arms run seeds 0..max_seeds-1, "
        "or, with no partitioned sampler, the max_seeds seeds listed here.",
    )
    partitions: Annotated[int | list[int] | None, AfterValidator(_check_partitions)] = Field(
        None, description="Partitions to run: all the sampler defines (none), the first n, or a list of indices."
    )
    split: Literal["test", "dev"] = Field("test", description="Split the replicates are evaluated on.")
    sequential: Sequential | None = Field(
        None,
        description="Replicate until decided: {max_seeds, look_every, spending}; units (partitions of a partitioned arm, "
        "else seeds) then run in looks, each arm only while a claim it takes part in is undecided (docs/spec.md).",
    )
    models: Literal["best", "all", "none"] = Field(
        "best",
        description="Trained taggers to log as MLflow models and register (one registered model per arm): "
        "the best replicate of each arm by the tune metric on dev, all replicates, or none.",
    )


class TuneSection(Section):
    """The tune phase: how each arm's search space is searched on dev."""

    search: ComponentRef = Field(
        default_factory=lambda: ComponentRef.model_validate("tpe"),
        description="Searcher: tpe, random or grid, or {name: {options}}.",
    )
    scheduler: ComponentRef = Field(
        default_factory=lambda: ComponentRef.model_validate("fifo"), description="Scheduler: asha or fifo, or {name: {options}}."
    )
    metric: str = Field(
        DEFAULT_TUNE_METRIC, description="Dev metric to optimise: dev_<name> with a name from nerplat.metrics."
    )
    mode: Literal["max", "min"] = Field("max", description="Maximise or minimise the metric.")
    num_samples: int | None = Field(
        None, ge=1, le=MAX_NUM_SAMPLES, description="Trials per arm (default 20); not for grid, which runs every point."
    )
    max_concurrent: int | None = Field(None, ge=1, description="Trials of one arm at once; default: as many as resources allow.")
    time_budget_s: float | None = Field(
        None, gt=0, description="Seconds each arm's tune phase may take, as Ray's TuneConfig.time_budget_s: "
        "then its trials stop and the best so far is chosen."
    )
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed the searchers' seeds derive from: each arm's searcher gets its own "
        "(sha256 of this seed and the arm id)."
    )
    enqueue: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict,
        description="Points a method's search starts from: {method: [{key: value, ...}, ...]}, keys as its search space names "
        "them (lambda or objective.lambda); each runs once, first, and counts in num_samples (tpe and random only).",
    )


class TrackingSection(Section):
    """Where runs are logged."""

    uri: str | None = Field(None, description="MLflow tracking URI; default: $MLFLOW_TRACKING_URI, else a local SQLite store.")
    optuna_storage: str | None = Field(
        None,
        pattern=r"^[A-Za-z][A-Za-z0-9+.\-]*://",
        description="Optuna storage URL of the arms' studies (optuna-dashboard's live view); default: "
        "$NERPLAT_OPTUNA_STORAGE, else optuna.db beside a SQLite MLflow store (else in the workdir).",
    )
    record_env: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list,
        description="Environment variables whose values may be recorded in clear; others are recorded as ${VAR}.",
    )


class Spec(Section):
    """A whole spec after its profile is merged. Sections are validated one by one (see
    `nerplat.spec.validate`) so that a broken section does not hide the problems of the others."""

    experiment: Name = Field(description="Experiment name: MLflow experiment and Ray experiment prefix.")
    description: str = Field("", description="What the experiment is for.")
    dataset: DatasetSection | None = Field(None, description="The corpus (or use `datasets` for several).")
    datasets: list[DatasetSection] | None = Field(None, min_length=1, description="Several corpora: one set of arms each.")
    model: ModelSection = Field(ModelSection(), description="Encoder, windowing and default head.")
    train: dict[str, Any] = Field(
        default_factory=dict, description="Train settings (TrainSettings fields): values or distributions."
    )
    samplers: list[Any] = Field(default_factory=list, description="A sampler chain, or a list of alternative chains.")
    methods: dict[Name, MethodSection] = Field(min_length=1, description="Methods by name.")
    tune: TuneSection | None = Field(None, description="Tune phase; needed when any method has a search space.")
    replicate: ReplicateSection = Field(ReplicateSection(), description="Final runs over seeds and partitions.")
    analysis: Analysis = Field(Analysis(), description="Significance tests of the analysis stage.")
    claims: list[Claim] = Field(
        default_factory=list, description="The papers' headline claims, each judged by one rule in verdicts.parquet."
    )
    resources: Resources = Field(Resources(), description="Ray resources of one trial.")
    tracking: TrackingSection = Field(TrackingSection(), description="MLflow tracking.")
    profiles: dict[Name, dict[str, Any]] = Field(
        default_factory=dict, description="Partial specs merged over this one by --profile NAME."
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="The user's code to import first: module names, or .py files and package folders relative to the spec.",
    )
