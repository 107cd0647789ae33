"""`nerplat models`, `export`, `predict`, `serve`: get a trained tagger out of MLflow and use it.

MODEL is a registered model (NAME, NAME/VERSION, NAME@ALIAS), a models:/ URI, a run id, an MLflow
model folder (`nerplat export` of a non-softmax head) or a bundle folder (`nerplat train --save`);
see `nerplat.serving.references`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from nerplat.errors import Problem, UserInputError

MODEL_ARGUMENT = typer.Argument(..., help="Registered NAME\\[/VERSION|@ALIAS], models:/ URI, run id, or a model folder.")
TRACKING_OPTION = typer.Option(None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else <workdir>/mlflow.db.")
WORKDIR_OPTION = typer.Option(Path("."), "--workdir", help="Directory where `nerplat run` keeps its local store.")


def register(app: typer.Typer) -> None:
    app.command("models")(list_models)
    app.command("export")(export)
    app.command("predict")(predict)
    app.command("serve")(serve)


def _tracking_uri(tracking_uri: str | None, workdir: Path) -> str:
    from nerplat.track.store import check_store, resolve_tracking_uri, sqlite_path

    uri = tracking_uri or resolve_tracking_uri(None, workdir)
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise UserInputError(
            Problem(f"no MLflow store at {database}: run `nerplat run SPEC` in {workdir.resolve()} first, or pass --tracking-uri", path="--tracking-uri")
        )
    check_store(uri)
    return uri


def _resolve(model: str, tracking_uri: str | None, workdir: Path):
    """MODEL resolved against the store (a local folder needs none); and the store's URI or ""."""
    from nerplat.serving.references import resolve_model

    uri = "" if Path(model).is_dir() else _tracking_uri(tracking_uri, workdir)
    return resolve_model(model, uri), uri


def _open(model: str, tracking_uri: str | None, workdir: Path, download_to: Path):
    from nerplat.serving.references import open_model

    reference, uri = _resolve(model, tracking_uri, workdir)
    return open_model(reference, uri, download_to)


def list_models(tracking_uri: Optional[str] = TRACKING_OPTION, workdir: Path = WORKDIR_OPTION) -> None:
    """List registered taggers: every version with its run, test metrics and selected epoch."""
    from mlflow import MlflowClient

    uri = _tracking_uri(tracking_uri, workdir)
    versions = sorted(MlflowClient(uri).search_model_versions(), key=lambda v: (v.name, int(v.version)))
    if not versions:
        typer.echo(f"no registered models in {uri}")
        return
    table = Table(title=f"registered models in {uri}")
    for column in ("model", "version", "run", "test_micro_f1", "test_macro_f1", "selected epoch"):
        table.add_column(column, no_wrap=True)
    for version in versions:
        tags = version.tags
        table.add_row(
            version.name, str(version.version), version.run_id or "", tags.get("test_micro_f1", "")[:6],
            tags.get("test_macro_f1", "")[:6], tags.get("selected_epoch", ""),
        )
    Console(width=max(120, Console().width)).print(table)


def export(
    model: str = MODEL_ARGUMENT,
    out: Path = typer.Option(..., "--out", help="Folder to write (new or empty)."),
    tracking_uri: Optional[str] = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Write MODEL as a folder to take elsewhere: Hugging Face format for softmax heads, else an MLflow model."""
    from nerplat.serving.export import check_target, export_model

    check_target(out)
    with tempfile.TemporaryDirectory(prefix="nerplat-export-") as download:
        opened = _open(model, tracking_uri, workdir, Path(download))
        kind = export_model(opened.bundle, opened.folder, out, model)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    typer.echo(f"wrote {kind} folder {out} ({size / 1e6:.1f} MB); {out / 'README.md'} says how to load it")


def predict(
    model: str = MODEL_ARGUMENT,
    input_file: Optional[Path] = typer.Argument(None, help="Sentences to tag: plain text (one per line), CoNLL or JSONL."),
    text: Optional[str] = typer.Option(None, "--text", help="Tag this sentence instead of a file."),
    input_format: Optional[str] = typer.Option(None, "--format", help="text, conll or jsonl; default: from the suffix."),
    words: str = typer.Option("encoder", "--words", help="How text is split into words: encoder (the model tokenizer's pre-tokenizer) or whitespace."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of standard output."),
    output_format: str = typer.Option("jsonl", "--output-format", help="jsonl (spans with scores) or conll (WORD TAG [SCORE])."),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Windows per forward pass."),
    tracking_uri: Optional[str] = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Tag sentences with MODEL, windowed and decoded exactly as in training; prints sentences/s."""
    from nerplat.serving.documents import OUTPUT_FORMATS, input_format as choose_format, read_rows, write_records
    from nerplat.serving.words import WORD_SPLITTERS

    if (text is None) == (input_file is None):
        raise UserInputError(Problem("give either --text or an input file, not both and not neither", path="INPUT_FILE"))
    if words not in WORD_SPLITTERS:
        raise UserInputError(Problem(f"--words {words!r}: choose one of {', '.join(WORD_SPLITTERS)}", path="--words"))
    if output_format not in OUTPUT_FORMATS:
        raise UserInputError(Problem(f"--output-format {output_format!r}: choose one of {', '.join(OUTPUT_FORMATS)}", path="--output-format"))
    if text is not None and not text.strip():
        raise UserInputError(Problem("--text is empty: nothing to tag", path="--text"))
    rows = [{"text": text}] if text is not None else read_rows(input_file, choose_format(input_file, input_format))
    with tempfile.TemporaryDirectory(prefix="nerplat-predict-") as download:
        bundle = _open(model, tracking_uri, workdir, Path(download)).bundle
        records, seconds = _predict_with_progress(bundle, rows, words, batch_size, show=input_file is not None)
    if output is None:
        write_records(records, output_format, sys.stdout)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        temporary = output.with_name(f".{output.name}.tmp")
        with open(temporary, "w", encoding="utf-8") as stream:
            write_records(records, output_format, stream)
        os.replace(temporary, output)
    typer.echo(f"tagged {len(rows)} sentences in {seconds:.2f} s ({len(rows) / seconds:.1f} sentences/s)", err=True)


def _predict_with_progress(bundle, rows: list[dict], words: str, batch_size: int, show: bool) -> tuple[list[dict], float]:
    """Records of all rows, tagged in chunks so a progress bar can follow; and the seconds tagging took."""
    from nerplat.serving.pyfunc import predict_records

    chunk = batch_size * 8
    columns = (TextColumn("tagging"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    records: list[dict] = []
    started = time.perf_counter()
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=not show) as bar:
        task = bar.add_task("tagging", total=len(rows))
        for first in range(0, len(rows), chunk):
            records += predict_records(bundle, rows[first : first + chunk], words, batch_size)
            bar.advance(task, len(rows[first : first + chunk]))
    return records, time.perf_counter() - started


def serve(
    model: str = MODEL_ARGUMENT,
    port: int = typer.Option(5001, "--port", min=1, max=65535, help="Port to listen on."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback by default)."),
    tracking_uri: Optional[str] = TRACKING_OPTION,
    workdir: Path = WORKDIR_OPTION,
) -> None:
    """Serve MODEL over HTTP with `mlflow models serve` (POST /invocations, GET /ping) in this environment."""
    reference, uri = _resolve(model, tracking_uri, workdir)
    if reference.uri is None:
        raise UserInputError(
            Problem(f"{model} is a bundle folder, not an MLflow model: `nerplat export` or log it first", path="MODEL")
        )
    command = serve_command(reference.uri, host, port)
    environment = {**os.environ, **({"MLFLOW_TRACKING_URI": uri} if uri else {})}
    # MLflow starts the server as `exec uvicorn ...`: this environment's scripts must be on PATH.
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    typer.echo(f"serving {reference.uri} on http://{host}:{port}/invocations: {' '.join(command)}", err=True)
    raise typer.Exit(subprocess.call(command, env=environment))


def serve_command(model_uri: str, host: str, port: int) -> list[str]:
    """`mlflow models serve` in this Python environment (no new virtualenv: nerplat must be importable)."""
    return [sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri, "--env-manager", "local", "--host", host, "--port", str(port)]
