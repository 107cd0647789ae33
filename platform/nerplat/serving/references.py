"""What a user may name as MODEL, resolved to an MLflow model URI (or a local folder).

    quickstart.conll2003.full.ce         a registered model: its latest version
    quickstart.conll2003.full.ce/2       a registered model version (also NAME@ALIAS)
    models:/...                          any MLflow model URI, as is
    0123abcd... (32 hex digits)          an MLflow run: the tagger logged on it
    ./some/folder                        an MLflow model folder (nerplat export) or a bundle (nerplat train --save)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path

from nerplat.errors import Problem, UserInputError
from nerplat.serving.bundle import TaggerBundle

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_NAME_VERSION = re.compile(r"^([^/@]*)(?:([/@])(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class ModelReference:
    uri: str | None  # an MLflow model URI, or None for a local bundle folder
    bundle: Path | None  # a folder written by `nerplat.serving.bundle.save_bundle`
    shown: str  # what the user typed, for messages


def resolve_model(reference: str, tracking_uri: str) -> ModelReference:
    """Raises UserInputError naming MODEL and what exists when it names nothing."""
    path = Path(reference)
    if path.is_dir():
        if (path / "MLmodel").is_file():
            return ModelReference(str(path.resolve()), None, reference)
        if (path / "tagger.json").is_file():
            return ModelReference(None, path, reference)
        raise _problem(reference, "is a folder but neither an MLflow model (MLmodel) nor a nerplat bundle (tagger.json)")
    if reference.startswith("models:/"):
        return ModelReference(reference, None, reference)
    if _RUN_ID.match(reference):
        return ModelReference(_run_model_uri(reference, tracking_uri), None, reference)
    return ModelReference(_registered_uri(reference, tracking_uri), None, reference)


@dataclass(frozen=True)
class OpenedModel:
    bundle: TaggerBundle
    folder: Path | None  # the MLflow model folder it came from (downloaded), None for a bundle


def open_model(reference: ModelReference, tracking_uri: str, download_to: Path) -> OpenedModel:
    """Loads the tagger through MLflow's own pyfunc loader (models are downloaded to `download_to`)."""
    import mlflow

    from nerplat.serving.bundle import load_bundle
    from nerplat.serving.mlflow_models import global_tracking_uri

    if reference.bundle is not None:
        return OpenedModel(load_bundle(reference.bundle), None)
    with global_tracking_uri(tracking_uri):
        folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=reference.uri, dst_path=str(download_to)))
        model = mlflow.pyfunc.load_model(str(folder))
    return OpenedModel(model.unwrap_python_model().bundle, folder)


def _run_model_uri(run_id: str, tracking_uri: str) -> str:
    from mlflow.exceptions import MlflowException

    from nerplat.serving.mlflow_models import logged_model_of_run

    try:
        model = logged_model_of_run(tracking_uri, run_id)
    except MlflowException:
        raise _problem(run_id, f"is not a run in {tracking_uri}") from None
    if model is None:
        raise _problem(
            run_id,
            "is a run without a logged model: only replicate runs log one, and with replicate.models: best only "
            "the best replicate of each arm keeps it (`nerplat models` lists the registered ones)",
        )
    return model.model_uri


def _registered_uri(reference: str, tracking_uri: str) -> str:
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    name, separator, version = _NAME_VERSION.match(reference).groups("")
    client = MlflowClient(tracking_uri)
    try:
        client.get_registered_model(name)
    except MlflowException:
        known = [m.name for m in client.search_registered_models()]
        close = get_close_matches(name, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        listed = ", ".join(sorted(known)) if known else "none"
        raise _problem(reference, f"is no registered model in {tracking_uri} (registered: {listed}){hint}") from None
    if not separator:
        versions = client.search_model_versions(f"name = '{name}'")
        if not versions:
            raise _problem(reference, "is a registered model without versions")
        return f"models:/{name}/{max(int(v.version) for v in versions)}"
    try:
        if separator == "@":
            client.get_model_version_by_alias(name, version)
        else:
            client.get_model_version(name, version)
    except MlflowException:
        raise _problem(reference, f"names a version or alias that model '{name}' does not have") from None
    return f"models:/{name}{separator}{version}"


def _problem(reference: str, what: str) -> UserInputError:
    return UserInputError(Problem(f"MODEL '{reference}' {what}", path="MODEL"))
