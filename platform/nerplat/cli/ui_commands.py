"""`nerplat ui`: the MLflow UI for an experiment's store, on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Optional

import typer

from nerplat.errors import UserInputError
from nerplat.track.store import check_store, is_server_uri, local_artifact_root, resolve_tracking_uri, sqlite_path
from nerplat.track.ui_server import LocalMlflowServer, experiments_to_show
from nerplat.track.view import runs_table_url


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)


def ui(
    tracking_uri: Optional[str] = typer.Option(
        None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else <workdir>/mlflow.db."
    ),
    experiment: Optional[str] = typer.Option(
        None, "--experiment", "-e", help="Spec experiment whose runs table to print. Default: every nerplat experiment."
    ),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1; 0 picks a free one."),
    workdir: Path = typer.Option(Path("."), "--workdir", help="Directory where `nerplat run` keeps its local store."),
) -> None:
    """Start the MLflow UI for an experiment's store and print the URL of its runs table."""
    uri = tracking_uri or resolve_tracking_uri(None, workdir)
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise UserInputError(
            f"no MLflow store at {database}: run `nerplat run SPEC` in {workdir.resolve()} first, "
            "or point --workdir or --tracking-uri at an existing store"
        )
    check_store(uri)
    experiments = experiments_to_show(uri, experiment)
    if is_server_uri(uri):  # already served: nothing to start
        _print_urls(uri, experiments)
        return
    server = LocalMlflowServer(uri, local_artifact_root(uri) or workdir.resolve() / "mlartifacts", port)
    typer.echo(f"starting the MLflow UI for {uri} ...", err=True)
    # Ctrl-C and SIGTERM both stop the server; SIGINT is set explicitly because a process started
    # in the background by a script inherits it ignored.
    previous = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        url = server.start()
        _print_urls(url, experiments)
        typer.echo("Press Ctrl-C to stop.", err=True)
        code = server.wait()
        typer.echo(f"the MLflow server stopped by itself (exit code {code})", err=True)
        raise typer.Exit(1)
    except KeyboardInterrupt:
        typer.echo("stopping the MLflow UI", err=True)
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _print_urls(server_url: str, experiments: list[tuple[str, str]]) -> None:
    if not experiments:
        typer.echo(f"{server_url.rstrip('/')}/#/experiments  (no nerplat experiment in this store yet)")
    for name, experiment_id in experiments:
        typer.echo(f"{runs_table_url(server_url, experiment_id)}  ({name})")
    sys.stdout.flush()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
