"""Trained taggers as MLflow models: logged on their replicate run, registered per arm.

A replicate worker calls `log_tagger_model` (weights only, as a pyfunc model named `tagger` on its
run); when the arm's replicates are done, the driver calls `register_arm_models`, which applies the
spec's `replicate.models` rule:

    best   register the replicate with the best `dev_best_<metric>` (the spec's tune metric on dev,
           at the selected epoch; the replicate split's metric when the corpus has no dev split) and
           delete the other replicates' logged models, so only one model's weights stay stored
    all    register every replicate (one version each)
    none   log and register nothing

Both steps are idempotent by run id, so `nerplat run --resume` adds no second model or version.
A resume that reruns an arm (`--rerun-changed`) deletes its runs' versions (`unregister_run`).

A registered model is named by the arm's short label and the experiment (`mom.low_resource-20.
tiny_run`, `registered_model_name`), so that MLflow's model list, which cuts long names, shows
first what tells the arms apart; its tags (`nerplat.experiment`, `nerplat.arm`) and description
give the full arm. An arm's model is found again by those tags (`arm_model_name`), so its name
stays when a changed spec relabels the arm, and models registered under the earlier names
(`<experiment>.<dataset>.<sampler>.<method>`) keep theirs. Each version carries the run's final
metrics as tags.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

from nerplat.config.trial import Component, EncoderSettings
from nerplat.track import schema
from nerplat.run_keys import SEPARATOR

MODEL_NAME = "tagger"  # the logged model's name on its run
ModelRule = Literal["best", "all", "none"]
_REQUIREMENTS = ("torch", "transformers", "safetensors", "seqeval", "pandas", "mlflow")


_REFUSED_IN_NAMES = str.maketrans({"/": "-", ":": "-", "@": "-"})  # MLflow refuses / and :; @ starts an alias


@dataclass(frozen=True)
class ArmModel:
    """The arm whose replicates' models a registered model holds."""

    experiment: str
    arm_id: str  # `conll2003/low_resource-20/mom`
    label: str  # its short label (`Arm.label`): `mom · low_resource-20`

    def tags(self) -> dict[str, str]:
        return {schema.EXPERIMENT: self.experiment, schema.ARM: self.arm_id}

    def description(self, split: str) -> str:
        dataset, sampler, method = self.arm_id.split("/")
        return (
            f"nerplat tagger of arm {self.arm_id} (dataset {dataset}, sampler setting {sampler}, method {method}) "
            f"of experiment {self.experiment}: one version per registered replicate run, with its {split} metrics "
            "and selected epoch as version tags."
        )


def registered_model_name(arm: ArmModel) -> str:
    """`mom · low_resource-20` of `tiny_run` -> `mom.low_resource-20.tiny_run`: the label's parts,
    then the experiment (which keeps names apart across experiments)."""
    return ".".join([*arm.label.split(SEPARATOR), arm.experiment]).translate(_REFUSED_IN_NAMES)


def earlier_model_name(arm: ArmModel) -> str:
    """The name arms were registered under before: `quickstart.conll2003.full.ce`."""
    return ".".join([arm.experiment, *arm.arm_id.split("/")])


def arm_model_name(tracking_uri: str, arm: ArmModel, split: str) -> str:
    """The registered model of `arm`, created (with its tags and description) if it has none.

    An arm keeps the model it has: the one tagged with it, else one under its earlier name (which
    then gets the tags). A new model takes `registered_model_name`, followed by a short hash of the
    arm when another model has that name.
    """
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri)
    tagged = client.search_registered_models(
        filter_string=" AND ".join(f"tags.`{key}` = {_quoted(value)}" for key, value in arm.tags().items())
    )
    if tagged:
        return min(model.name for model in tagged)

    def exists(name: str) -> bool:
        try:
            client.get_registered_model(name)
        except MlflowException as error:
            if error.error_code not in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):  # invalid: could not exist
                raise
            return False
        return True

    earlier = earlier_model_name(arm)
    if exists(earlier):
        for key, value in arm.tags().items():
            client.set_registered_model_tag(earlier, key, value)
        client.update_registered_model(earlier, description=arm.description(split))
        return earlier
    name = registered_model_name(arm)
    if exists(name):
        name = f"{name}-{hashlib.sha256(f'{arm.experiment}/{arm.arm_id}'.encode()).hexdigest()[:6]}"
    client.create_registered_model(name, tags=arm.tags(), description=arm.description(split))
    return name


def _quoted(value: str) -> str:
    """A string literal of MLflow's search filters, which have no escapes: in the quotes it lacks."""
    return f'"{value}"' if "'" in value else f"'{value}'"


def log_tagger_model(
    tracking_uri: str,
    run_id: str,
    tagger: Any,
    tokenizer: Any,
    labels: list[str],
    head: Component,
    encoder: EncoderSettings,
) -> str:
    """Logs the tagger as the pyfunc model `tagger` of run `run_id`; returns its model id.

    A run that already has one keeps it (a resumed replicate logs nothing twice).
    """
    import mlflow
    from mlflow import MlflowClient
    from mlflow.models import Model

    # lazy: torch and MLflow's pyfunc, which only logging a tagger needs (not listing or resolving models)
    from nerplat.serving import pyfunc
    from nerplat.serving.bundle import MLFLOW_ARTIFACT, save_bundle

    existing = logged_model_of_run(tracking_uri, run_id)
    if existing is not None:
        return existing.model_id
    client = MlflowClient(tracking_uri)
    run = client.get_run(run_id)
    # Created here, not by Model.log, which would file it under the process's current experiment.
    model = client.create_logged_model(
        run.info.experiment_id, name=MODEL_NAME, source_run_id=run_id, params=run.data.params, model_type="nerplat-tagger"
    )
    with global_tracking_uri(tracking_uri), tempfile.TemporaryDirectory(prefix="nerplat-model-") as directory:
        bundle = save_bundle(Path(directory) / "tagger", tagger, tokenizer, labels, head, encoder)
        Model.log(
            artifact_path=None,
            name=MODEL_NAME,
            flavor=mlflow.pyfunc,
            run_id=run_id,
            model_id=model.model_id,
            python_model=pyfunc.TaggerModel(),
            artifacts={MLFLOW_ARTIFACT: str(bundle)},
            signature=model_signature(),
            input_example=pyfunc.input_example(),
            pip_requirements=pinned_requirements(),
            metadata={"nerplat_head": head.name, "labels": list(labels)},
        )
    return model.model_id


@contextmanager
def global_tracking_uri(tracking_uri: str) -> Iterator[None]:
    """MLflow's model code (Model.log, the registry's source check) reads the process-wide URI."""
    import mlflow
    from mlflow.tracking import is_tracking_uri_set

    # None when unset: restoring it then unsets MLFLOW_TRACKING_URI again, rather than pinning the
    # default store (a mlflow.db in the working directory).
    previous = mlflow.get_tracking_uri() if is_tracking_uri_set() else None
    mlflow.set_tracking_uri(tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)


def model_signature() -> Any:
    """Input: `text` (a sentence) or `tokens` (its words), each optional; output: one record per row."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import Array, ColSpec, DataType, Object, Property, Schema

    span = Object(
        [
            Property("type", DataType.string),
            Property("start", DataType.long),
            Property("end", DataType.long),
            Property("text", DataType.string),
            Property("start_char", DataType.long, required=False),
            Property("end_char", DataType.long, required=False),
            Property("score", DataType.double, required=False),
        ]
    )
    return ModelSignature(
        inputs=Schema(
            [ColSpec(DataType.string, "text", required=False), ColSpec(Array(DataType.string), "tokens", required=False)]
        ),
        outputs=Schema(
            [
                ColSpec(Array(DataType.string), "words"),
                ColSpec(Array(DataType.string), "tags"),
                ColSpec(Array(DataType.double), "scores", required=False),
                ColSpec(Array(span), "spans"),
            ]
        ),
    )


def pinned_requirements() -> list[str]:
    """What serving the model elsewhere needs besides nerplat itself (which is not on PyPI)."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in _REQUIREMENTS]


def logged_model_of_run(tracking_uri: str, run_id: str) -> Any | None:
    """The `tagger` model logged on run `run_id` (complete: status READY), or None."""
    from mlflow import MlflowClient
    from mlflow.entities import LoggedModelStatus

    client = MlflowClient(tracking_uri)
    experiment_id = client.get_run(run_id).info.experiment_id
    models = client.search_logged_models(
        experiment_ids=[experiment_id], filter_string=f"source_run_id = '{run_id}' AND name = '{MODEL_NAME}'"
    )
    # A status filter matches nothing in MLflow 3.17's SQL store, so completeness is checked here.
    return next((m for m in models if m.status == LoggedModelStatus.READY), None)


def select_replicates(scores: dict[str, float | None], rule: ModelRule, mode: Literal["max", "min"] = "max") -> list[str]:
    """Run ids whose model to register: the best score (first on ties), all, or none.

    Runs without a score (failed replicates) are never chosen.
    """
    scored = {run_id: value for run_id, value in scores.items() if value is not None}
    if rule == "none" or not scored:
        return []
    if rule == "all":
        return list(scored)
    choose = max if mode == "max" else min
    return [choose(scored, key=scored.__getitem__)]


def replicate_score(run: Any, metric: str, split: str) -> float | None:
    """What `best` compares: the run's `dev_best_<metric>`, else `<split>_<metric>` (no dev split)."""
    metrics = run.data.metrics
    return metrics.get(f"dev_best_{metric}", metrics.get(f"{split}_{metric}"))


def register_arm_models(
    tracking_uri: str,
    arm: ArmModel,
    runs: Sequence[Any],
    rule: ModelRule,
    *,
    metric: str,
    split: str,
    mode: Literal["max", "min"] = "max",
) -> list[Any]:
    """Registers the chosen replicate runs' models as versions of the arm's registered model
    (`arm_model_name`, created with the first of them); returns those versions.

    `runs` are the arm's finished replicate runs (MLflow `Run`s). With `best`, the other runs'
    logged models are deleted (their weights are not kept twice).
    """
    chosen = select_replicates({run.info.run_id: replicate_score(run, metric, split) for run in runs}, rule, mode)
    logged = [
        (run, model)
        for run in runs
        if run.info.run_id in chosen and (model := logged_model_of_run(tracking_uri, run.info.run_id))
    ]
    name = arm_model_name(tracking_uri, arm, split) if logged else ""
    versions = [register_run_model(tracking_uri, name, run, model, split) for run, model in logged]
    if rule == "best":
        for run in runs:
            if run.info.run_id not in chosen:
                delete_run_model(tracking_uri, run.info.run_id)
    return versions


def register_run_model(tracking_uri: str, name: str, run: Any, model: Any, split: str = "test") -> Any:
    """The version of registered model `name` holding `model`, the logged model of `run`, created once.

    The version's tags are the run's final `<split>_*` metrics and its selected epoch.
    """
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    run_id = run.info.run_id
    existing = client.search_model_versions(f"name = {_quoted(name)} AND run_id = '{run_id}'")
    if existing:
        return existing[0]
    metrics = run.data.metrics
    tags = {key: str(value) for key, value in metrics.items() if key.startswith(f"{split}_") or key == "selected_epoch"}
    with global_tracking_uri(tracking_uri):
        return client.create_model_version(name, source=model.model_uri, run_id=run_id, tags=tags, model_id=model.model_id)


def delete_run_model(tracking_uri: str, run_id: str) -> None:
    """Deletes `run_id`'s logged model and its stored files (a model not chosen by `best`)."""
    from mlflow import MlflowClient
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    model = logged_model_of_run(tracking_uri, run_id)
    if model is None:
        return
    MlflowClient(tracking_uri).delete_logged_model(model.model_id)
    get_artifact_repository(model.artifact_location).delete_artifacts()


def unregister_run(tracking_uri: str, run_id: str) -> int:
    """Deletes the model versions registered from `run_id` (a run deleted to run its arm anew, whose
    model no longer belongs to the experiment); returns how many."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    versions = client.search_model_versions(f"run_id = '{run_id}'")
    for version in versions:
        client.delete_model_version(version.name, version.version)
    return len(versions)


def registered_versions(tracking_uri: str) -> list[Any]:
    """Every registered model version in the store, by name then version number."""
    from mlflow import MlflowClient

    return sorted(MlflowClient(tracking_uri).search_model_versions(), key=lambda v: (v.name, int(v.version)))
