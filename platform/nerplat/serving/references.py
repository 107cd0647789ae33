"""What a user may name as MODEL, resolved to an MLflow model URI (or a local folder).

    ce.quickstart                        a registered model: its latest version
    ce.quickstart/2                      a registered model version (also NAME@ALIAS)
    models:/...                          any MLflow model URI, as is
    0123abcd... (32 hex digits)          an MLflow run: the tagger logged on it
    0123abcd (8 or more hex digits)      the run whose id starts so (`nerplat models` prints 8 digits)
    ./some/folder                        an MLflow model folder (nerplat export) or a bundle (nerplat train --save)
"""

from __future__ import annotations

import re
from contextlib import closing
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path

from nerplat.errors import Problem, UserInputError
from nerplat.serving.bundle import MLFLOW_ARTIFACT, TaggerBundle, load_bundle
from nerplat.serving.mlflow_models import MODEL_NAME, global_tracking_uri, logged_model_of_run, registered_versions
from nerplat.track.store import sqlite_path

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_RUN_ID_PREFIX = re.compile(r"^[0-9a-f]{8,31}$")
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
    if _RUN_ID_PREFIX.match(reference) and (run_id := _registered_run(reference, tracking_uri)) is not None:
        return ModelReference(_run_model_uri(run_id, tracking_uri), None, reference)
    return ModelReference(_registered_uri(reference, tracking_uri), None, reference)


def _registered_run(prefix: str, tracking_uri: str) -> str | None:
    """The run id of the registered versions whose run id starts with `prefix`; None when none does."""
    runs = sorted({v.run_id for v in registered_versions(tracking_uri) if (v.run_id or "").startswith(prefix)})
    if len(runs) > 1:
        raise _problem(prefix, f"starts the ids of several runs ({', '.join(runs)}): give more of the id")
    return runs[0] if runs else None


@dataclass(frozen=True)
class OpenedModel:
    bundle: TaggerBundle
    folder: Path | None  # the MLflow model folder it came from, None for a bundle


def open_model(reference: ModelReference, tracking_uri: str) -> OpenedModel:
    """Loads the tagger from its bundle folder, without MLflow's pyfunc loader (slow, and it warns)."""
    if reference.bundle is not None:
        return OpenedModel(load_bundle(reference.bundle), None)
    folder = model_folder(reference.uri, tracking_uri)
    return OpenedModel(load_bundle(tagger_folder(folder)), folder)


def model_folder(uri: str, tracking_uri: str, cache: Path | None = None) -> Path:
    """The MLflow model folder `uri` names, on this disk.

    A store with local artifacts (nerplat's SQLite stores) keeps the folder on disk: it is read
    where it lies. Other stores' models are downloaded once into `cache` (default `model_cache()`),
    under a key of their artifact location, which MLflow never reuses for another model.
    """
    if Path(uri).is_dir():
        return Path(uri)
    from mlflow.store.artifact.models_artifact_repo import ModelsArtifactRepository

    with global_tracking_uri(tracking_uri):
        location = ModelsArtifactRepository.get_underlying_uri(uri)
        local = local_path(location)
        if local is not None and (local / "MLmodel").is_file():
            return local
        return cached_download(location, cache or model_cache())


def folder_on_disk(reference: str, tracking_uri: str) -> Path | None:
    """The model folder a registered NAME, NAME/VERSION or NAME@ALIAS, or a run id (the tagger logged
    on the run), names in a SQLite store, read from the store's tables without MLflow; None when in
    any doubt (MLflow then resolves it, or names the problem).

    Importing MLflow's SQL store is about half of a one-sentence `nerplat predict` (docs/performance.md,
    "Start-up of small commands"); a model version's row (`storage_location`) and a logged model's
    (`artifact_location`) name its folder, which a local store keeps on disk. The file is opened
    read-only, so a store is never created or migrated here.
    """
    import sqlite3

    database = sqlite_path(tracking_uri)
    if database is None or not database.is_file() or reference.startswith("models:/"):
        return None
    is_run = _RUN_ID.match(reference) or _RUN_ID_PREFIX.match(reference)
    found = _run_model_query(reference) if is_run else _registered_query(reference)
    if found is None:
        return None
    try:
        with closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=5)) as connection:
            rows = connection.execute(*found).fetchall()
    except sqlite3.Error:  # another schema, a locked or foreign file: MLflow decides
        return None
    folder = local_path(rows[0][0]) if len(rows) == 1 and rows[0][0] else None
    return folder if folder is not None and (folder / "MLmodel").is_file() else None


def _registered_query(reference: str) -> tuple[str, tuple] | None:
    """The registry's query for the folder of NAME (its latest version), NAME/VERSION or NAME@ALIAS."""
    name, separator, version = _NAME_VERSION.match(reference).groups("")
    live = "v.current_stage != 'Deleted_Internal' AND v.status = 'READY'"
    if separator == "@":
        query = (
            "SELECT v.storage_location FROM model_versions v JOIN registered_model_aliases a "
            f"ON a.name = v.name AND a.version = v.version WHERE v.name = ? AND a.alias = ? AND {live}"
        )
        return query, (name, version)
    if separator == "/" and version.isdigit():
        return (
            f"SELECT v.storage_location FROM model_versions v WHERE v.name = ? AND v.version = ? AND {live}", (name, int(version))
        )
    if not separator:
        query = (
            f"SELECT v.storage_location FROM model_versions v WHERE v.name = ? AND {live} "
            "AND v.version = (SELECT MAX(version) FROM model_versions WHERE name = ?)"
        )
        return query, (name, name)
    return None


def _run_model_query(run_id: str) -> tuple[str, tuple]:
    """The query for the folder of the tagger logged on a run, as `logged_model_of_run` finds it: complete,
    not deleted. `run_id` may be the start of one (hex digits only: nothing LIKE reads as a pattern)."""
    query = (
        "SELECT artifact_location FROM logged_models WHERE source_run_id LIKE ? AND name = ? AND status = ? "
        "AND lifecycle_stage = 'active'"
    )
    return query, (run_id + "%", MODEL_NAME, _LOGGED_MODEL_READY)


_LOGGED_MODEL_READY = 2  # MLflow's LoggedModelStatus.READY as its SQL store keeps it (an integer)


def local_path(location: str) -> Path | None:
    """The folder an artifact location names when it is on this disk (`file:` or a plain path), else None."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(url2pathname(parsed.path))
    if parsed.scheme == "" and Path(location).is_absolute():
        return Path(location)
    return None


def model_cache() -> Path:
    """Where downloaded models are kept: $NERPLAT_MODEL_CACHE, else $XDG_CACHE_HOME/nerplat/models."""
    import os

    if os.environ.get("NERPLAT_MODEL_CACHE"):
        return Path(os.environ["NERPLAT_MODEL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nerplat" / "models"


def cached_download(location: str, cache: Path) -> Path:
    """The model folder at `location`, downloaded into `cache` on first use (atomically, without progress bars)."""
    import hashlib
    import os
    import shutil
    import tempfile

    import mlflow

    target = cache / hashlib.sha256(location.encode()).hexdigest()[:24]
    if (target / "MLmodel").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=cache, prefix=".download-"))
    previous = os.environ.get("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR")
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    try:
        mlflow.artifacts.download_artifacts(artifact_uri=location, dst_path=str(temporary))
        downloaded = next(temporary.rglob("MLmodel")).parent
        os.replace(downloaded, target)
    except FileExistsError:  # another process downloaded it first
        pass
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
        if previous is None:
            os.environ.pop("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", None)
        else:
            os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = previous
    return target


def tagger_folder(model: Path) -> Path:
    """The bundle inside an MLflow model folder: the pyfunc artifact its MLmodel file names `tagger`."""
    import yaml

    try:
        artifacts = yaml.safe_load((model / "MLmodel").read_text())["flavors"]["python_function"]["artifacts"]
        return model / artifacts[MLFLOW_ARTIFACT]["path"]
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        what = f"is an MLflow model but not a nerplat tagger (its MLmodel names no '{MLFLOW_ARTIFACT}' artifact)"
        raise _problem(str(model), what) from None


def _run_model_uri(run_id: str, tracking_uri: str) -> str:
    from mlflow.exceptions import MlflowException

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
