"""`nerplat ui`: the MLflow UI and optuna-dashboard for an experiment's stores, on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import typer
from rich.console import Console

from nerplat.unfolded import print_unfolded
from nerplat.errors import UserInputError
from nerplat.local_servers import (
    LocalMlflowServer,
    LocalOptunaDashboard,
    LocalServer,
    LocalUiFront,
    optuna_dashboard_executable,
    optuna_dashboard_hint,
    study_url,
)
from nerplat.track.store import check_store, is_server_uri, local_artifact_root, resolve_tracking_uri, sqlite_path
from nerplat.track.studies import optuna_storage_url, resolve_optuna_storage, storage_exists
from nerplat.track.experiment_reader import experiments_to_show, open_client
from nerplat.track.view import runs_table_url


OPTUNA_STORAGE_OPTION = typer.Option(
    None,
    "--optuna-storage",
    metavar="URL",
    help="Optuna storage of the arms' studies (sqlite:///..., postgresql://user@host/db; the password from $PGPASSWORD). "
    "Default: $NERPLAT_OPTUNA_STORAGE, else optuna.db beside a SQLite MLflow store, else <workdir>/optuna.db.",
)


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)


def ui(
    tracking_uri: str | None = typer.Option(
        None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else <workdir>/mlflow.db."
    ),
    experiment: str | None = typer.Option(
        None, "--experiment", "-e",
        help="Spec experiment whose runs table and studies to print. Default: every nerplat experiment.",
    ),
    port: int = typer.Option(
        0, "--port", min=0, max=65535, metavar="PORT", help="Port of the MLflow UI on 127.0.0.1; 0 picks a free one."
    ),
    optuna_storage: str | None = OPTUNA_STORAGE_OPTION,
    workdir: Path = typer.Option(Path("."), "--workdir", help="Directory where `nerplat run` keeps its local stores."),
) -> None:
    """Start the MLflow UI and optuna-dashboard for an experiment's stores and print their URLs.

    First the MLflow runs table of each experiment, oldest run first, with nerplat's columns (scores
    to four significant digits, tuned values, status) until the browser is given others, in MLflow's
    model-training view without its assistant panel or promotions; then optuna-dashboard's page of
    each tuned arm's Optuna study (trials with their MLflow runs, hyper-parameter importances,
    parallel coordinates; live while `nerplat run` goes). All listen on 127.0.0.1 on free ports;
    Ctrl-C stops them.

    An MLflow server (--tracking-uri http://...) is not started again: its UI is served through
    nerplat's front on 127.0.0.1 all the same. When optuna-dashboard cannot start (not installed, no
    study yet), the command that serves the studies is printed instead.
    """
    uri = tracking_uri or resolve_tracking_uri(None, workdir)
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise UserInputError(
            f"no MLflow store at {database}: run `nerplat run SPEC` in {workdir.resolve()} first, "
            "or point --workdir or --tracking-uri at an existing store"
        )
    check_store(uri, create=False)  # read-only: never create or migrate a store
    experiments = experiments_to_show(open_client(uri), experiment)
    studies = optuna_storage_url(optuna_storage, workdir) if optuna_storage else resolve_optuna_storage(None, uri, workdir)
    dashboard = _optuna_dashboard(studies)
    mlflow = None
    if not is_server_uri(uri):
        mlflow = LocalMlflowServer(uri, local_artifact_root(uri) or workdir.resolve() / "mlartifacts")
    front = LocalUiFront(uri if mlflow is None else mlflow.url, port)
    servers = [server for server in (mlflow, front, dashboard) if server is not None]
    typer.echo(f"starting {', '.join(server.name for server in servers)} ...", err=True)
    # Ctrl-C and SIGTERM both stop the servers; SIGINT is set explicitly because a process started
    # in the background by a script inherits it ignored.
    previous = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        for server in servers:
            server.launch()
        if mlflow is not None:
            mlflow.wait_until_healthy()
        _print_urls(front.wait_until_healthy(), experiments)
        if dashboard is not None and not _print_studies(dashboard, studies, experiments):
            servers.remove(dashboard)
        typer.echo("Press Ctrl-C to stop.", err=True)
        stopped, code = _first_to_exit(servers)
        typer.echo(f"{stopped.name} stopped by itself (exit code {code})", err=True)
        raise typer.Exit(1)
    except KeyboardInterrupt:
        typer.echo(f"stopping {', '.join(server.name for server in servers)}", err=True)
    finally:
        for server in servers:
            server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _optuna_dashboard(storage: str) -> LocalOptunaDashboard | None:
    """optuna-dashboard for `storage`, or None when it cannot serve it (the command is printed then)."""
    if optuna_dashboard_executable() is None:
        reason = "optuna-dashboard is not installed (pip install optuna-dashboard)"
    elif not storage_exists(storage):
        reason = f"no Optuna study at {storage} yet (`nerplat run` creates one per tuned arm)"
    else:
        return LocalOptunaDashboard(storage)
    print_unfolded(Console(emoji=False, highlight=False), f"{reason}; serve the studies with:", hanging=2, markup=False)
    typer.echo(f"  {optuna_dashboard_hint(storage)}")  # a line of its own, never folded: copied as is
    return None


def _print_urls(server_url: str, experiments: list[tuple[str, str]]) -> None:
    """Each URL on a line of its own, never folded, what it shows on the next."""
    if not experiments:
        typer.echo(f"{server_url.rstrip('/')}/#/experiments\n  (no nerplat experiment in this store yet)")
    for name, experiment_id in experiments:
        typer.echo(f"{runs_table_url(server_url, experiment_id)}\n  ({name})")
    sys.stdout.flush()


def _print_studies(dashboard: LocalOptunaDashboard, storage: str, experiments: list[tuple[str, str]]) -> bool:
    """The page of each study of `experiments` (named `<experiment>/<arm>`); False when the dashboard failed."""
    try:
        url = dashboard.wait_until_healthy(timeout=60)
        studies = dashboard.studies()
    except (RuntimeError, OSError) as error:
        typer.echo(f"optuna-dashboard did not start: {error}", err=True)
        typer.echo(f"serve the studies with:\n  {optuna_dashboard_hint(storage)}")
        return False
    prefixes = tuple(f"{name}/" for name, _ in experiments)
    shown = [(name, study_id) for name, study_id in studies if name.startswith(prefixes)]
    if not shown:
        typer.echo(f"{url}/dashboard\n  (optuna-dashboard of {storage}: no study of these experiments yet)")
    for name, study_id in shown:
        typer.echo(f"{study_url(url, study_id)}\n  ({name}: Optuna study)")
    sys.stdout.flush()
    return True


def _first_to_exit(servers: list[LocalServer]) -> tuple[LocalServer, int]:
    """Blocks until one of the servers exits (Ctrl-C raises KeyboardInterrupt here)."""
    while True:
        for server in servers:
            code = server.exit_code()
            if code is not None:
                return server, code
        time.sleep(0.5)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
