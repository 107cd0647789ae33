"""`nerplat run`: compile a spec and execute it on Ray, tracked in MLflow, then analyse it."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from nerplat.cli.options import PROFILE_OPTION, SET_OPTION, Verbosity, compile_spec, format_values, print_figures
from nerplat.cli.train_commands import bench_app


def run(
    spec: Path = typer.Argument(..., help="The experiment spec (YAML)."),
    profile: Optional[str] = PROFILE_OPTION,
    overrides: list[str] = SET_OPTION,
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted experiment: finished trials are kept."),
    address: Optional[str] = typer.Option(
        None, "--address", help="Ray cluster to use (default: $RAY_ADDRESS, else an embedded local Ray)."
    ),
    storage: Optional[str] = typer.Option(
        None, "--storage", help="Ray Tune storage_path (shared directory or s3://...); default .nerplat/ray."
    ),
    workdir: Path = typer.Option(Path("."), "--workdir", help="Where mlflow.db, .nerplat/ and reports/ go."),
    analyze: bool = typer.Option(True, "--analyze/--no-analyze", help="Run the analysis stage at the end."),
    tune_only: bool = typer.Option(False, "--tune-only", help="Stop after the tune phase; a later --resume replicates."),
    verbose: bool = typer.Option(False, "--verbose", help="Show Ray's worker logs (as the global -v)."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON on stdout (progress goes to stderr)."),
) -> None:
    """Run every arm of SPEC: tune on dev, replicate the best configuration, analyse.

    The spec and its corpora are checked completely before Ray starts or anything is written.
    """
    from nerplat.run.runner import ExperimentRunner, Interrupted, RunOptions

    # Logs and CI are not terminals: give the progress table room instead of rich's default 80 columns.
    console = Console(width=None if sys.stdout.isatty() else 150, stderr=as_json, quiet=Verbosity.quiet())
    plan = compile_spec(spec, profile, overrides)
    options = RunOptions(
        workdir=workdir.resolve(), resume=resume, address=address, storage=storage, analyze=analyze, replicate=not tune_only,
        verbose=verbose or Verbosity.verbose(),
    )
    runner = ExperimentRunner(plan, options, console)
    flags = (f" --profile {profile}" if profile else "") + "".join(f" --set {o}" for o in overrides)
    resume_hint = escape(f"nerplat run {spec}{flags} --resume")
    try:
        summary = runner.run()
    except (Interrupted, KeyboardInterrupt):
        Console(stderr=True).print(f"[yellow]interrupted.[/] Finished trials are saved in MLflow; continue with:\n  {resume_hint}")
        raise typer.Exit(130)
    if as_json:
        typer.echo(json.dumps(summary_json(summary), indent=2))
    else:
        _print_summary(summary, Console(width=console.width))
    if summary.failed():
        Console(stderr=True).print(f"[red]{len(summary.failed())} arm(s) had failures[/]; fix the error and run:\n  {resume_hint}")
        raise typer.Exit(1)


def _print_summary(summary: Any, console: Console) -> None:
    for outcome in summary.outcomes:
        chosen = "" if not outcome.chosen else f" chosen {format_values(outcome.chosen)} (dev {outcome.chosen_value:.4f})"
        console.print(escape(f"{outcome.arm}: tune {_counts(outcome.tune_trials)} replicates {_counts(outcome.replicates)}{chosen}"))
        if outcome.error:
            console.print(f"  [red]error:[/] {escape(outcome.error)}")
    console.print(escape(f"MLflow: {summary.tracking_uri} (experiment '{summary.experiment}', id {summary.experiment_id})"))
    console.print(escape(f"Browse the runs: nerplat ui --tracking-uri {summary.tracking_uri} --experiment {summary.experiment}"))
    if summary.report_dir is not None:
        console.print(escape(f"Report: {summary.report_dir}"))


def _counts(by_status: dict[str, int]) -> str:
    """{'completed': 3, 'stopped': 1} -> '3 completed, 1 stopped'."""
    return ", ".join(f"{count} {status}" for status, count in by_status.items()) or "-"


def summary_json(summary: Any) -> dict[str, Any]:
    """What `nerplat run --json` prints: the experiment, its store, and each arm's outcome."""
    return {
        "experiment": summary.experiment,
        "tracking_uri": summary.tracking_uri,
        "experiment_id": summary.experiment_id,
        "report_dir": None if summary.report_dir is None else str(summary.report_dir),
        "arms": [dataclasses.asdict(outcome) for outcome in summary.outcomes],
        "failed": [outcome.arm for outcome in summary.failed()],
    }


def register(app: typer.Typer) -> None:
    app.command("run")(run)


@bench_app.command("run")
def bench_run_command(
    profile: Optional[str] = typer.Option(None, "--profile", help="Profile of the bench sweep (smoke: tiny encoder, 4 trials)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """Start-up overhead, training share of a 20-trial sweep, and in-trial vs in-process tokens/s."""

    from nerplat.bench.run import bench_run

    console = Console(stderr=as_json)
    result = bench_run(console, profile)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    rows = [
        ("start-up, trial start to first step (median), s", f"{result.startup_s:.2f}"),
        ("start-up, slowest trial (new worker process), s", f"{result.startup_max_s:.2f}"),
        ("sweep wall time, s", f"{result.sweep_wall_s:.1f}"),
        ("share of slot time in training steps", f"{result.train_share:.3f}"),
        ("tokens/s inside a trial", f"{result.trial_tokens_per_s:.0f}"),
        ("tokens/s in-process (nerplat train)", f"{result.inprocess_tokens_per_s:.0f}"),
        ("ratio (trial / in-process)", f"{result.ratio:.3f}"),
    ]
    print_figures(f"nerplat bench run ({result.trials} trials, {result.slots} at a time)", rows, console)
