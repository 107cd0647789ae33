"""`nerplat analyze`: tables, plots and tests of an experiment's MLflow runs; `nerplat rescore`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rich.console import Console
from rich.markup import escape

from nerplat.cli.options import message_console, print_headline
from nerplat.errors import Problem, UserInputError
from nerplat.track.store import check_store, resolve_tracking_uri, sqlite_path
from nerplat.unfolded import print_unfolded


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze)
    app.command("rescore")(rescore)


def _tracking_uri(tracking_uri: str | None) -> str:
    uri = tracking_uri or resolve_tracking_uri(None, Path("."))
    database = sqlite_path(uri)
    if database is not None and not database.exists():
        raise UserInputError(
            Problem(
                f"no MLflow store at {database}: run `nerplat run SPEC` here first, or give --tracking-uri", path="--tracking-uri"
            )
        )
    check_store(uri, create=False)  # it adds a report to a store, never creates or migrates one
    return uri


def analyze(
    experiment: str = typer.Argument(..., help="Spec experiment name (the MLflow experiment)."),
    tracking_uri: str | None = typer.Option(
        None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else ./mlflow.db."
    ),
    out: Path | None = typer.Option(
        None, "--out",
        help="Report folder: new, empty, or an earlier report's (only its files are replaced). Default: reports/<experiment>.",
    ),
    formats: str = typer.Option("md,latex,html,csv", "--format", help="Comma-separated table formats: md, latex, html, csv."),
    baseline: str | None = typer.Option(None, "--baseline", help="Override the plan's baseline method."),
    test: str | None = typer.Option(None, "--test", help="Override the paired test: paired_t or wilcoxon."),
    alpha: float | None = typer.Option(None, "--alpha", help="Override the significance level."),
    resamples: int | None = typer.Option(None, "--resamples", help="Override the bootstrap resamples."),
    seed: int | None = typer.Option(None, "--seed", help="Override the bootstrap seed."),
    reference_sampler: str | None = typer.Option(
        None, "--reference-sampler", help="Sampler whose baseline runs start every precision-recall arrow."
    ),
    as_json: bool = typer.Option(
        False, "--json",
        help="Print {out_dir, files, summary_run_id, warnings, results} as JSON on stdout (results: the headline table's rows).",
    ),
    registrations: Path = typer.Option(
        Path("specs/registered"), "--registrations", metavar="DIR",
        help="The claims' registrations (nerplat claims register): which verdicts are confirmatory.",
    ),
) -> None:
    """Analyse an experiment: paper-style tables, plots and paired tests in reports/<experiment>/,
    also logged to the experiment's summary run. Settings come from the run's plan.json; flags override them.

    Prints the headline table: per arm, the test metric's mean ± sd over its replicates, n and convergence."""
    # lazy: polars, which --help does not need
    from nerplat.analysis.headline import report_headline
    from nerplat.analysis.report import analyze_experiment, experiment_settings

    uri = _tracking_uri(tracking_uri)
    flags = {"baseline": baseline, "test": test, "alpha": alpha, "bootstrap_resamples": resamples, "seed": seed,
             "reference_sampler": reference_sampler}
    overrides = {k: v for k, v in flags.items() if v is not None}
    settings = experiment_settings(experiment, uri, overrides)
    chosen = [f.strip() for f in formats.split(",") if f.strip()]
    report = analyze_experiment(experiment, uri, out or Path("reports") / experiment, chosen, settings,
                                registrations=registrations)
    notes = message_console(stderr=True)  # warnings are notes: -q keeps results and errors only, as for `run`
    for warning in report.warnings:
        print_unfolded(notes, f"[yellow]warning:[/] {escape(warning)}", hanging=2)
    headline = report_headline(report.out_dir)
    if as_json:
        files = [str(f) for f in report.files]
        payload = {
            "out_dir": str(report.out_dir), "files": files, "summary_run_id": report.summary_run_id,
            "warnings": list(report.warnings), "results": headline.as_json(), "verdicts": headline.verdicts,
        }  # fmt: skip
        typer.echo(json.dumps(payload, indent=2))
        return
    results = message_console()
    wrote = f"wrote {len(report.files)} files to {report.out_dir}/ (start with report.md)"
    print_unfolded(results, wrote, hanging=2, markup=False)
    print_unfolded(results, f"logged them to MLflow run {report.summary_run_id} under analysis/", hanging=2, markup=False)
    print_headline(headline, Console(emoji=False, highlight=False))


def rescore(
    experiment: str = typer.Argument(..., help="Spec experiment name (the MLflow experiment)."),
    tracking_uri: str | None = typer.Option(
        None, "--tracking-uri", help="MLflow store. Default: $MLFLOW_TRACKING_URI, else ./mlflow.db."
    ),
) -> None:
    """Score an experiment's finished replicates again from their logged test predictions, adding
    only the metrics they lack (a metric nerplat added after the run); then `nerplat analyze` reports them.

    Numbers already logged are never changed: a second rescore adds nothing."""
    # lazy: the run readers and scorers, which --help does not need
    from nerplat.analysis.rescoring import rescore_replicates
    from nerplat.track.experiment_reader import open_client

    done = rescore_replicates(open_client(_tracking_uri(tracking_uri)), experiment)
    print_unfolded(message_console(), done.line(), hanging=2)

