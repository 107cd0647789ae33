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
Registered models are named `<experiment>.<dataset>.<sampler>.<method>` (`registered_model_name`);
each version carries the run's final metrics as tags.
"""

from __future__ import annotations

import importlib.metadata
import tempfile
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator, Literal, Sequence

from nerplat.config.trial import Component, EncoderSettings

MODEL_NAME = "tagger"  # the logged model's name on its run
ModelRule = Literal["best", "all", "none"]
_REQUIREMENTS = ("torch", "transformers", "safetensors", "seqeval", "pandas", "mlflow")


def registered_model_name(experiment: str, arm_id: str) -> str:
    """`quickstart` + `conll2003/full/ce` -> `quickstart.conll2003.full.ce` (no '/': models:/ URIs split on it)."""
    return ".".join([experiment, *arm_id.split("/")])


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
        inputs=Schema([ColSpec(DataType.string, "text", required=False), ColSpec(Array(DataType.string), "tokens", required=False)]),
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
    name: str,
    runs: Sequence[Any],
    rule: ModelRule,
    *,
    metric: str,
    split: str,
    mode: Literal["max", "min"] = "max",
) -> list[Any]:
    """Registers the chosen replicate runs' models under `name`; returns their model versions.

    `runs` are the arm's finished replicate runs (MLflow `Run`s). With `best`, the other runs'
    logged models are deleted (their weights are not kept twice).
    """
    chosen = select_replicates({run.info.run_id: replicate_score(run, metric, split) for run in runs}, rule, mode)
    versions = [register_run_model(tracking_uri, name, run, split) for run in runs if run.info.run_id in chosen]
    if rule == "best":
        for run in runs:
            if run.info.run_id not in chosen:
                delete_run_model(tracking_uri, run.info.run_id)
    return [v for v in versions if v is not None]


def register_run_model(tracking_uri: str, name: str, run: Any, split: str = "test") -> Any | None:
    """The model version of `run`'s logged model under `name`, created once (None: nothing logged).

    The version's tags are the run's final `<split>_*` metrics and its selected epoch.
    """
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri)
    run_id = run.info.run_id
    existing = client.search_model_versions(f"name = '{name}' AND run_id = '{run_id}'")
    if existing:
        return existing[0]
    model = logged_model_of_run(tracking_uri, run_id)
    if model is None:
        return None
    try:
        client.get_registered_model(name)
    except MlflowException as error:
        if error.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        client.create_registered_model(name, description="A nerplat tagger: one version per registered replicate run.")
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
