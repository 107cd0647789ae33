"""Which MLflow store an experiment uses, and a fast check that it answers before training starts.

Precedence: `MLFLOW_TRACKING_URI`, then the spec's tracking uri, then a local SQLite store
`<workdir>/mlflow.db` with artifacts in `<workdir>/mlartifacts`. Relative SQLite paths are made
absolute against the working directory because Ray workers run in other directories.

Credentials written in a URI (`https://user:password@host`, `postgresql://user:password@host/db`)
are moved into the variables the clients read (MLflow's `MLFLOW_TRACKING_USERNAME`/`_PASSWORD`,
libpq's `PGUSER`/`PGPASSWORD`) and dropped from the URI, which is then safe to log, print and
hand to Ray (its state files and runtime environment are readable on the cluster). An embedded
Ray's workers inherit those variables; on a remote cluster they come from the pods' environment.

`check_store` refuses a SQLite file that is not an MLflow store (another program's database, an
Optuna study's) before MLflow would add its tables to it; read-only commands (`models`, `export`,
`predict`, `ui`, `analyze`) pass `create=False`, so a store missing or lacking tables of this MLflow
version is refused rather than created or migrated.

`check_store` talks to a server with no retries and a short timeout: MLflow's own client retries
7 times with exponential backoff (`MLFLOW_HTTP_REQUEST_MAX_RETRIES`, `..._BACKOFF_FACTOR`,
`..._TIMEOUT`), which turns "the server is down" into a four-minute hang. A database URI
(PostgreSQL, MySQL) gets one connection attempt with the same timeout first: MLflow's SQL store
tries 10 times over about two minutes, a warning each, before it gives up. Later calls of a driver
go through `PatientClient`, which retries a server that stops answering with a visible message
per attempt and gives up after `NERPLAT_STORE_PATIENCE` seconds (default 120) with `StoreLost`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import time
from collections.abc import Callable, MutableMapping
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import unquote, urlparse

from nerplat.errors import Problem, UserInputError
from nerplat.credentials import without_credentials

DEFAULT_DB_NAME = "mlflow.db"
ARTIFACTS_DIR_NAME = "mlartifacts"
_SQLITE_PREFIX = "sqlite:///"
_SQLITE_URI_FILENAME = "file:"


_CREDENTIAL_VARIABLES = {  # scheme -> (user, password) variables its client reads
    "http": ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"),
    "https": ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"),
    "postgresql": ("PGUSER", "PGPASSWORD"),
    "postgresql+psycopg": ("PGUSER", "PGPASSWORD"),
    "postgresql+psycopg2": ("PGUSER", "PGPASSWORD"),
}


def resolve_tracking_uri(spec_uri: str | None, workdir: Path) -> str:
    """The tracking URI to use: environment, then spec, then `sqlite:///<workdir>/mlflow.db`;
    credentials in it are moved to the environment (`adopt_uri_credentials`)."""
    workdir = Path(workdir).resolve()
    uri = os.environ.get("MLFLOW_TRACKING_URI") or spec_uri
    if uri:
        uri = adopt_uri_credentials(uri, os.environ)
    if not uri:
        return f"{_SQLITE_PREFIX}{workdir / DEFAULT_DB_NAME}"
    return anchored_sqlite_uri(uri, workdir)


def anchored_sqlite_uri(uri: str, workdir: Path) -> str:
    """A relative `sqlite:///` path made absolute against `workdir` (Ray workers, and servers nerplat
    starts, run in other directories); other URIs unchanged."""
    if uri.startswith(_SQLITE_PREFIX) and not uri[len(_SQLITE_PREFIX) :].startswith("/"):
        return f"{_SQLITE_PREFIX}{(Path(workdir).resolve() / uri[len(_SQLITE_PREFIX) :]).resolve()}"
    return uri


def adopt_uri_credentials(uri: str, environ: MutableMapping[str, str]) -> str:
    """`uri` without `user:password@` (and secret query values); for http(s) and PostgreSQL the
    credentials go to `environ` first, so clients still authenticate. Other schemes are unchanged."""
    parsed = urlparse(uri)
    variables = _CREDENTIAL_VARIABLES.get(parsed.scheme)
    if variables is None or parsed.username is None:
        return uri if variables is None else without_credentials(uri)
    user_variable, password_variable = variables
    environ[user_variable] = unquote(parsed.username)
    if parsed.password is not None:
        environ[password_variable] = unquote(parsed.password)
    return without_credentials(uri)


def is_server_uri(uri: str) -> bool:
    return urlparse(uri).scheme in ("http", "https")


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI, else None.

    SQLite's URI filenames (`sqlite:///file:/abs/db?mode=ro&uri=true`, how a store is opened
    read-only) name the file after `file:`; read as a plain path, they would put the store's
    artifacts under a relative folder `file:` in the working directory.
    """
    if not uri.startswith(_SQLITE_PREFIX):
        return None
    path, _, query = uri[len(_SQLITE_PREFIX) :].partition("?")
    if path.startswith(_SQLITE_URI_FILENAME) and "uri=true" in query.split("&"):
        path = path[len(_SQLITE_URI_FILENAME) :]
    return Path(path)


def local_artifact_root(uri: str) -> Path | None:
    """Where nerplat puts artifacts of a SQLite store (`mlartifacts` beside the database).

    None for servers (they decide) and other databases (MLflow's default applies).
    """
    path = sqlite_path(uri)
    return None if path is None else path.parent / ARTIFACTS_DIR_NAME


def check_store(uri: str, timeout: float = 5.0, *, create: bool = True) -> None:
    """Raises UserInputError, within about `timeout` seconds, when the store cannot be used.

    With `create`, a SQLite store is created (with MLflow's tables) if missing: doing that once
    here, in the driver, keeps concurrent workers from racing to initialise the same file. Without
    it (a read-only command), nothing is written: the store must exist with every table of this
    MLflow version. Either way a SQLite file holding something else than an MLflow store is refused.
    """
    if is_server_uri(uri):
        _check_server(uri, timeout)
    else:
        _check_database(uri, create, timeout)


def _check_server(uri: str, timeout: float) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    creds = get_default_host_creds(uri)

    def request(endpoint: str, method: str, **kwargs):
        return http_request(
            creds, endpoint, method, max_retries=0, backoff_factor=0, timeout=timeout, raise_on_status=False, **kwargs
        )

    try:
        health = request("/health", "GET")
        if health.status_code == 200:
            api = request("/api/2.0/mlflow/experiments/search", "POST", json={"max_results": 1})
    except MlflowException as error:  # MLflow wraps every failure to get a response in it
        raise UserInputError(_unreachable(uri, _short_reason(str(error)))) from error
    if health.status_code != 200:
        raise UserInputError(
            f"{uri} answered /health with HTTP {health.status_code}: it does not look like an MLflow server; "
            "check the port, or unset MLFLOW_TRACKING_URI to use a local SQLite store"
        )
    if api.status_code in (401, 403):
        raise UserInputError(
            f"MLflow server at {uri} refused access (HTTP {api.status_code}): set MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN"
        )
    if api.status_code != 200:
        raise UserInputError(f"MLflow server at {uri} failed a search request (HTTP {api.status_code}): {api.text[:300]}")


def _unreachable(uri: str, reason: str) -> Problem:
    parsed = urlparse(uri)
    if parsed.hostname in ("127.0.0.1", "localhost", "::1"):
        fix = (
            f"start it with `mlflow server --host 127.0.0.1 --port {parsed.port or 5000} "
            "--backend-store-uri sqlite:///mlflow.db --artifacts-destination ./mlartifacts`"
        )
    else:
        fix = "check that it runs and that this machine can reach it"
    return Problem(f"MLflow server at {uri} is not reachable ({reason}): {fix}{_or_another_store(uri)}")


def _or_another_store(uri: str) -> str:
    if os.environ.get("MLFLOW_TRACKING_URI") == uri:
        return ", or unset MLFLOW_TRACKING_URI to use a local SQLite store"
    return ", or change the tracking uri in the spec"


def _short_reason(message: str) -> str:
    lowered = message.lower()
    if "refused" in lowered:
        return "connection refused"
    if "timed out" in lowered or "timeout" in lowered:
        return "timed out"
    return message.splitlines()[0][:200]


def _check_database(uri: str, create: bool, timeout: float) -> None:
    from mlflow import MlflowClient

    path = sqlite_path(uri)
    if path is not None:
        _check_sqlite_file(path, create)
    elif urlparse(uri).scheme.split("+")[0] in _DATABASES:
        _check_database_answers(uri, timeout)
    try:
        if path is not None and create:
            path.parent.mkdir(parents=True, exist_ok=True)
        with _schema_lock(path if create else None):
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
    except Exception as error:  # any failure to open the store is the user's to fix
        raise UserInputError(f"MLflow store {uri} cannot be used: {error}") from error


_DATABASES = ("postgresql", "mysql", "mssql")  # MLflow's SQL stores besides SQLite, by URI scheme


def _check_database_answers(uri: str, timeout: float) -> None:
    """One connection to a database store, given up after about `timeout` seconds (the drivers of
    PostgreSQL and MySQL take `connect_timeout`), before MLflow's engine retries for two minutes."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    try:
        url = sqlalchemy.engine.make_url(uri)
        waits = {"connect_timeout": max(1, round(timeout))} if url.get_backend_name() in ("postgresql", "mysql") else {}
        engine = sqlalchemy.create_engine(url, connect_args=waits, poolclass=NullPool)
    except ImportError as error:
        raise UserInputError(
            f"MLflow store {uri} needs a database driver that is not installed ({error}): install it into nerplat's "
            "environment, or name an installed driver in the URI"
        ) from None
    except Exception as error:  # sqlalchemy's ArgumentError and the like: not a database URL it reads
        raise UserInputError(f"MLflow store {uri} cannot be used: {_first_line(error)}") from None
    try:
        with engine.connect():
            pass
    except Exception as error:  # any failure to connect is the user's to fix
        reason = _first_line(getattr(error, "orig", None) or error)
        raise UserInputError(
            f"MLflow store {uri} is not reachable ({reason}): check that the database runs and that this machine can "
            f"reach it{_or_another_store(uri)}"
        ) from None
    finally:
        engine.dispose()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


_MLFLOW_MARKS = {"alembic_version", "experiments"}  # tables every MLflow store has had


def _check_sqlite_file(path: Path, create: bool) -> None:
    """Refuses, having written nothing, a SQLite file that is not an MLflow store; without `create`,
    also one that is missing or lacks tables of this MLflow version (MLflow would add them)."""
    if not path.is_file():
        if create and not path.exists():
            return
        raise UserInputError(f"no MLflow store at {path}: give the store `nerplat run` wrote (<workdir>/mlflow.db)")
    tables = _sqlite_tables(path)
    if not tables and create:
        return  # an empty database: MLflow makes it a store
    if not _MLFLOW_MARKS <= tables:
        shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "") or "none"
        hint = " (an Optuna study storage?)" if {"studies", "trials"} <= tables else ""
        raise UserInputError(
            f"{path} is a SQLite database but not an MLflow store{hint}; its tables: {shown}. "
            "Give the MLflow store (<workdir>/mlflow.db)"
        )
    missing = sorted(_mlflow_tables() - tables) if not create else []
    if missing:
        raise UserInputError(
            f"the MLflow store {path} lacks tables of this MLflow version ({', '.join(missing[:4])}"
            f"{', ...' if len(missing) > 4 else ''}), and a read-only command does not migrate it: "
            f"back it up and run `mlflow db upgrade sqlite:///{path}`, or `nerplat run` on it"
        )


def _sqlite_tables(path: Path) -> set[str]:
    """The tables of a SQLite file, read without writing to it."""
    import sqlite3

    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as database:
            return {row[0] for row in database.execute("select name from sqlite_master where type = 'table'")}
    except sqlite3.OperationalError as error:
        raise UserInputError(f"cannot read the MLflow store {path}: {error}") from None
    except sqlite3.DatabaseError:
        raise UserInputError(f"{path} is not a SQLite database: give an MLflow store (<workdir>/mlflow.db)") from None


def _mlflow_tables() -> set[str]:
    """The tables a store of the installed MLflow version has (its SQL models' metadata)."""
    import mlflow.store.db.utils  # noqa: F401  (importing it registers every model's table)
    from mlflow.store.db.base_sql_model import Base

    return set(Base.metadata.tables)


@contextmanager
def _schema_lock(database: Path | None):
    """Serialises MLflow's table creation on a new SQLite file across processes (two fresh runs
    would both migrate it: "duplicate column name"): an exclusive lock on `<db>.lock` beside it."""
    if database is None:
        yield
        return
    with open(database.with_name(database.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class StoreLost(Exception):
    """The MLflow server stopped answering for longer than the driver's patience."""

    def __init__(self, uri: str, waited: float, reason: str):
        self.uri, self.waited, self.reason = uri, waited, reason
        super().__init__(f"the MLflow server at {uri} has not answered for {waited:.0f} s ({reason})")


_CONNECTION_FAILURE = re.compile(r"failed with (timeout )?exception|error code 50[234]|Max retries exceeded|Connection refused")


def is_connection_failure(error: BaseException) -> bool:
    """A request that got no answer from the server (or a gateway's 502/503/504), not a refused one."""
    from mlflow.exceptions import MlflowException

    return isinstance(error, (MlflowException, OSError)) and bool(_CONNECTION_FAILURE.search(str(error)))


def store_patience() -> float:
    return float(os.environ.get("NERPLAT_STORE_PATIENCE", "120"))


class PatientClient:
    """An `MlflowClient` whose calls ride out a server outage: each failed attempt is announced
    through `notify` and retried with exponential backoff (1 s doubling to 30 s) until `patience`
    seconds have passed; then `StoreLost`. Other errors pass through unchanged.

    Once lost, the store stays lost for this client: every later call raises the same StoreLost at
    once, so the writes a stopping driver still attempts do not each wait out the patience again."""

    def __init__(self, client, uri: str, notify: Callable[[str], None], patience: float | None = None):
        self._client = client
        self._uri = uri
        self._notify = notify
        self._patience = store_patience() if patience is None else patience
        self._lost: StoreLost | None = None

    def __getattr__(self, name: str):
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def patient_call(*args, **kwargs):
            if self._lost is not None:
                raise StoreLost(self._lost.uri, self._lost.waited, self._lost.reason)
            delay, waited = 1.0, 0.0
            while True:
                try:
                    return attribute(*args, **kwargs)
                except Exception as error:
                    if not is_connection_failure(error):
                        raise
                    reason = _short_reason(str(error))
                    if waited >= self._patience:
                        self._lost = StoreLost(self._uri, waited, reason)
                        raise self._lost from error
                    self._notify(f"MLflow server at {self._uri} is not answering ({reason}); retrying in {delay:.0f} s")
                    time.sleep(delay)
                    waited += delay
                    delay = min(delay * 2, 30.0)

        return patient_call


def store_errors() -> tuple[type[BaseException], ...]:
    """What a failed read or write of the tracking store raises (MLflow wraps every failure in one)."""
    from mlflow.exceptions import MlflowException

    return (MlflowException,)


def tracking_logger() -> logging.Logger:
    """MLflow's logger, after MLflow configured it on import (a level set before would be reset)."""
    import mlflow  # noqa: F401

    return logging.getLogger("mlflow")
