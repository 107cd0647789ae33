import http.server
import threading
import time
from pathlib import Path

import pytest
from host_load import scaled

from nerplat.errors import UserInputError
from nerplat.track.store import check_store, local_artifact_root, resolve_tracking_uri, sqlite_path
from nerplat.loopback import free_port


def test_default_is_a_sqlite_store_in_the_workdir(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = resolve_tracking_uri(None, tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    assert local_artifact_root(uri) == tmp_path.resolve() / "mlartifacts"


def test_environment_beats_spec_beats_default(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert resolve_tracking_uri("http://spec:5000", tmp_path) == "http://127.0.0.1:5000"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert resolve_tracking_uri("http://spec:5000", tmp_path) == "http://spec:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")
    assert resolve_tracking_uri(None, tmp_path).endswith("/mlflow.db")


def test_relative_sqlite_paths_are_anchored_at_the_workdir(tmp_path, monkeypatch):
    # Ray workers run in other directories: a relative path would open another database there.
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = resolve_tracking_uri("sqlite:///runs/exp.db", tmp_path)
    assert sqlite_path(uri) == tmp_path.resolve() / "runs" / "exp.db"
    assert local_artifact_root(uri) == tmp_path.resolve() / "runs" / "mlartifacts"
    assert local_artifact_root("http://127.0.0.1:5000") is None


def test_a_sqlite_uri_filename_names_the_file_after_file_colon(tmp_path):
    database = tmp_path / "mlflow.db"
    assert sqlite_path(f"sqlite:///file:{database}?mode=ro&uri=true") == database
    assert sqlite_path(f"sqlite:///file:{database}?mode=ro") == Path(f"file:{database}")  # SQLite reads it so too
    assert local_artifact_root(f"sqlite:///file:{database}?uri=true") == tmp_path / "mlartifacts"


def test_check_store_creates_a_missing_sqlite_store(empty_mlflow_db):
    # The session fixture ran check_store on a path whose folder did not exist (it takes ~1 s).
    import sqlite3

    with sqlite3.connect(empty_mlflow_db) as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
    assert {"experiments", "runs", "params", "metrics", "tags"} <= tables


def test_a_server_that_is_down_fails_fast_with_what_to_do(monkeypatch):
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    started = time.monotonic()
    with pytest.raises(UserInputError) as error:
        check_store(uri, timeout=2)
    assert time.monotonic() - started < scaled(5)
    message = str(error.value)
    assert f"MLflow server at {uri} is not reachable" in message
    assert "mlflow server --host 127.0.0.1" in message and "unset MLFLOW_TRACKING_URI" in message


def test_something_else_on_the_port_is_not_mistaken_for_mlflow():
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(UserInputError, match="does not look like an MLflow server"):
            check_store(f"http://127.0.0.1:{server.server_port}", timeout=2)
    finally:
        server.shutdown()
        server.server_close()


def test_an_unusable_database_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UserInputError, match="cannot be used"):
        check_store(f"sqlite:///{Path(blocker) / 'mlflow.db'}")


def test_a_lost_server_is_retried_with_a_message_per_attempt_then_given_up(monkeypatch):

    from nerplat.run.ray_session import RAY_SETTINGS

    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"):  # as `nerplat run` sets them
        monkeypatch.setenv(name, RAY_SETTINGS[name])

    from mlflow import MlflowClient

    from nerplat.track.store import PatientClient, StoreLost

    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens on it
    notices: list[str] = []
    client = PatientClient(MlflowClient(tracking_uri=uri), uri, notices.append, patience=2)
    with pytest.raises(StoreLost, match="has not answered for 3 s"):
        client.get_run("0" * 32)
    assert notices == [
        f"MLflow server at {uri} is not answering (connection refused); retrying in 1 s",
        f"MLflow server at {uri} is not answering (connection refused); retrying in 2 s",
    ]
    with pytest.raises(StoreLost, match="has not answered for 3 s"):  # lost for good: no second wait
        client.set_tag("0" * 32, "key", "value")
    assert len(notices) == 2  # nothing retried, so nothing announced


def test_an_answer_that_is_an_error_is_not_retried(tracking_uri):
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from nerplat.track.store import PatientClient

    notices: list[str] = []
    client = PatientClient(MlflowClient(tracking_uri=tracking_uri), tracking_uri, notices.append, patience=2)
    with pytest.raises(MlflowException):
        client.get_run("0" * 32)
    assert notices == []


def sqlite_tables(path: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}


@pytest.fixture
def optuna_db(tmp_path: Path) -> Path:
    """A SQLite file of another program: an Optuna study storage (issue 31 M8)."""
    import optuna

    path = tmp_path / "optuna.db"
    optuna.create_study(storage=f"sqlite:///{path}", study_name="someone-elses")
    return path


@pytest.mark.parametrize("create", [True, False])
def test_a_sqlite_file_that_is_not_an_mlflow_store_is_refused_untouched(optuna_db, create):
    before, files = sqlite_tables(optuna_db), sorted(optuna_db.parent.iterdir())
    with pytest.raises(
        UserInputError, match=r"optuna.db is a SQLite database but not an MLflow store \(an Optuna study storage\?\)"
    ):
        check_store(f"sqlite:///{optuna_db}", create=create)
    assert sqlite_tables(optuna_db) == before and sorted(optuna_db.parent.iterdir()) == files


def test_a_read_only_check_creates_and_migrates_nothing(tmp_path, tracking_uri):
    missing, not_sqlite = tmp_path / "absent" / "mlflow.db", tmp_path / "notes.txt"
    not_sqlite.write_text("not a database\n")
    with pytest.raises(UserInputError, match="no MLflow store at"):
        check_store(f"sqlite:///{missing}", create=False)
    assert not missing.parent.exists()
    with pytest.raises(UserInputError, match="notes.txt is not a SQLite database"):
        check_store(f"sqlite:///{not_sqlite}", create=False)
    store = sqlite_path(tracking_uri)
    check_store(tracking_uri, create=False)  # a complete store passes
    import sqlite3

    with sqlite3.connect(store) as db:
        db.execute("drop table logged_models")  # as if an older MLflow wrote it
    with pytest.raises(UserInputError, match=r"lacks tables of this MLflow version \(logged_models\).*does not migrate it"):
        check_store(tracking_uri, create=False)
    assert "logged_models" not in sqlite_tables(store) and not store.with_name("mlflow.db.lock").exists()


def test_read_only_commands_refuse_a_foreign_sqlite_file_with_exit_2(optuna_db, capsys):
    from nerplat.cli import main

    before = sqlite_tables(optuna_db)
    assert main(["models", "--tracking-uri", f"sqlite:///{optuna_db}"]) == 2
    err = capsys.readouterr().err
    assert "not an MLflow store" in err and "Traceback" not in err
    assert sqlite_tables(optuna_db) == before
