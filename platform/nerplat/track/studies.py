"""Where the arms' Optuna studies are kept, and what each is called: the live view of a search.

Every tuned arm's search is an Optuna study in one persistent Optuna storage, so `optuna-dashboard`
shows its trials, hyper-parameter importances and parallel coordinates while the run goes, and
`--resume` continues the same study. Precedence: `NERPLAT_OPTUNA_STORAGE`, then the spec's
`tracking.optuna_storage`, then `optuna.db` beside the MLflow store when that is a local SQLite file,
else `<workdir>/optuna.db`. Only the driver writes a study (Ray Tune's searcher runs there), so a file
on the driver's machine always works; on the cluster the ConfigMap points it at PostgreSQL
(cluster/README.md), where it outlives the head pod and `nerplat ui` reaches it by port-forward.
Relative SQLite paths are made absolute against the working directory, as MLflow's are.

Credentials written in the URL go to libpq's `PGUSER`/`PGPASSWORD` as MLflow's do (track/store.py):
the URL printed, and the one Tune pickles with the searcher's state into its storage, has none.

A study is named `<experiment>/<arm id>`: the same plan names the same studies, so a resumed run
finds them (names are unique per storage, so one storage serves every experiment).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from nerplat.errors import UserInputError
from nerplat.track.store import adopt_uri_credentials, anchored_sqlite_uri, sqlite_path

OPTUNA_STORAGE_ENV = "NERPLAT_OPTUNA_STORAGE"
DEFAULT_DB_NAME = "optuna.db"


def resolve_optuna_storage(
    spec_storage: str | None, tracking_uri: str, workdir: Path, environ: MutableMapping[str, str] = os.environ
) -> str:
    """The Optuna storage URL: environment, then spec, then `optuna.db` beside a SQLite MLflow store
    (else in `workdir`); credentials in it are moved to `environ` (`adopt_uri_credentials`)."""
    url = environ.get(OPTUNA_STORAGE_ENV) or spec_storage
    if not url:
        mlflow_db = sqlite_path(tracking_uri)
        folder = mlflow_db.parent if mlflow_db is not None else Path(workdir).resolve()
        return f"sqlite:///{folder / DEFAULT_DB_NAME}"
    return optuna_storage_url(url, workdir, environ)


def optuna_storage_url(url: str, workdir: Path, environ: MutableMapping[str, str] = os.environ) -> str:
    """`url` as given (`nerplat ui --optuna-storage`), with a relative SQLite path anchored at
    `workdir` and credentials moved to `environ`."""
    return anchored_sqlite_uri(adopt_uri_credentials(url, environ), workdir)


def study_name(experiment: str, arm_id: str) -> str:
    """The arm's study: `<experiment>/<arm id>`, e.g. `mom_conll/conll2003/full/mom`."""
    return f"{experiment}/{arm_id}"


def storage_exists(url: str) -> bool:
    """False only for a SQLite file that is not there yet (opening it would create an empty one)."""
    path = sqlite_path(url)
    return path is None or path.exists()


def open_optuna_storage(url: str) -> Any:
    """Optuna's RDBStorage at `url` (its tables created if missing); UserInputError when it cannot be used."""
    import optuna

    try:
        return optuna.storages.RDBStorage(url)
    except Exception as error:  # a missing driver, a refused connection, a locked or foreign database
        raise UserInputError(
            f"Optuna storage {url} cannot be used ({type(error).__name__}: {error}); set {OPTUNA_STORAGE_ENV} "
            "or tracking.optuna_storage in the spec to a database nerplat can write"
        ) from error
