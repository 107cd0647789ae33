"""Where the arms' Optuna studies are kept (beside the MLflow store by default) and what they are called."""

from pathlib import Path

import pytest

from nerplat.errors import UserInputError
from nerplat.track.studies import OPTUNA_STORAGE_ENV, open_optuna_storage, resolve_optuna_storage, storage_exists, study_name


def test_the_default_is_optuna_db_beside_a_sqlite_mlflow_store(tmp_path: Path):
    store = tmp_path / "elsewhere" / "mlflow.db"
    assert resolve_optuna_storage(None, f"sqlite:///{store}", tmp_path / "workdir", environ={}) == f"sqlite:///{store.parent}/optuna.db"


@pytest.mark.parametrize("tracking_uri", ["http://127.0.0.1:5000", "postgresql://db:5432/mlflow"])
def test_with_an_mlflow_server_or_database_the_default_is_optuna_db_in_the_workdir(tmp_path: Path, tracking_uri):
    # The driver alone writes the studies: a file on its machine always works.
    assert resolve_optuna_storage(None, tracking_uri, tmp_path, environ={}) == f"sqlite:///{tmp_path.resolve()}/optuna.db"


def test_environment_beats_spec_beats_default(tmp_path: Path):
    mlflow = f"sqlite:///{tmp_path}/mlflow.db"
    environ = {OPTUNA_STORAGE_ENV: "sqlite:////env/optuna.db"}
    assert resolve_optuna_storage("sqlite:////spec/optuna.db", mlflow, tmp_path, environ=environ) == "sqlite:////env/optuna.db"
    assert resolve_optuna_storage("sqlite:////spec/optuna.db", mlflow, tmp_path, environ={}) == "sqlite:////spec/optuna.db"
    assert resolve_optuna_storage(None, mlflow, tmp_path, environ={OPTUNA_STORAGE_ENV: ""}) == f"sqlite:///{tmp_path}/optuna.db"


def test_a_relative_sqlite_path_is_anchored_at_the_workdir(tmp_path: Path):
    url = resolve_optuna_storage("sqlite:///studies/optuna.db", "http://mlflow:5000", tmp_path, environ={})
    assert url == f"sqlite:///{tmp_path.resolve()}/studies/optuna.db"


def test_postgresql_credentials_move_to_libpq_variables():
    # Tune pickles the searcher, with its storage URL, into Ray's storage: the URL keeps no password.
    environ = {OPTUNA_STORAGE_ENV: "postgresql://optuna:s3cret@nerplat-postgres:5432/optuna"}
    url = resolve_optuna_storage(None, "http://mlflow:5000", Path("."), environ=environ)
    assert url == "postgresql://nerplat-postgres:5432/optuna"
    assert (environ["PGUSER"], environ["PGPASSWORD"]) == ("optuna", "s3cret")


def test_a_study_is_named_from_experiment_and_arm_id():
    assert study_name("mom_conll", "conll2003/full/mom") == "mom_conll/conll2003/full/mom"
    assert study_name("mom_conll", "conll2003/full/mom") != study_name("mom_conll", "conll2003/full/focal")
    assert study_name("mom_conll", "conll2003/full/mom") != study_name("mom_conll2", "conll2003/full/mom")


def test_a_storage_that_cannot_be_opened_is_a_user_error_naming_it(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/no/such/folder/optuna.db"
    assert not storage_exists(url)
    with pytest.raises(UserInputError, match=f"Optuna storage {url} cannot be used"):
        open_optuna_storage(url)
    open_optuna_storage(f"sqlite:///{tmp_path}/optuna.db")
    assert storage_exists(f"sqlite:///{tmp_path}/optuna.db") and storage_exists("postgresql://db/optuna")
