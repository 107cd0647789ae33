"""`nerplat run`: compile a spec and execute it on Ray, tracked in MLflow, then analyse it."""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from nerplat.cli.options import PROFILE_OPTION, SET_OPTION, Verbosity, compile_spec, format_values, print_figures
from nerplat.cli.train_commands import bench_app
from nerplat.run.progress import DEFAULT_EVERY


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
    progress_every: int = typer.Option(
        DEFAULT_EVERY, "--progress-every", min=1, metavar="SECONDS",
        help="When the progress output is not a terminal (CI logs, nohup), print a plain timestamped progress line every SECONDS.",
    ),
    metrics_port: Optional[int] = typer.Option(
        None, "--metrics-port", envvar="NERPLAT_METRICS_PORT", min=1, max=65535, metavar="PORT",
        help="Serve the embedded Ray's Prometheus metrics (Ray's and nerplat's) at http://127.0.0.1:PORT/metrics "
        "(default: a free port Ray picks). Not with --address: a cluster's nodes have their own.",
    ),
) -> None:
    """Run every arm of SPEC: tune on dev, replicate the best configuration, analyse.

    The spec and its corpora are checked completely before Ray starts or anything is written.

    Exit codes: 0 done; 1 a trial, arm or the analysis failed, or the MLflow server was lost (the resume command is printed); 2 bad input (spec, corpus, flag, or a cluster that cannot place a trial); 130 interrupted (Ctrl-C or SIGTERM).
    """
    from nerplat.run.runner import ExperimentRunner, Interrupted, RunOptions
    from nerplat.track.store import StoreLost

    # Logs and CI are not terminals: give the progress table room instead of rich's default 80 columns.
    console = Console(width=None if sys.stdout.isatty() else 150, stderr=as_json, quiet=Verbosity.quiet(), highlight=False)
    plan = compile_spec(spec, profile, overrides)
    options = RunOptions(
        workdir=workdir.resolve(), resume=resume, address=address, storage=storage, analyze=analyze, replicate=not tune_only,
        verbose=verbose or Verbosity.verbose(), progress_every=progress_every, metrics_port=metrics_port,
    )
    runner = ExperimentRunner(plan, options, console)
    hint = escape(resume_command(spec, profile=profile, overrides=overrides, workdir=workdir, storage=storage, address=address))
    try:
        summary = runner.run()
    except (Interrupted, KeyboardInterrupt):
        console.print(f"[yellow]interrupted.[/] Finished trials are saved in MLflow; continue with:\n  {hint}", soft_wrap=True)  # one line: copied as is
        raise typer.Exit(130) from None
    except StoreLost as lost:
        console.print(f"[red]stopped:[/] {escape(str(lost))}. Finished trials are saved there; once it answers again, continue with:\n  {hint}", soft_wrap=True)  # one line: copied as is
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(summary_json(summary), indent=2))
    else:
        print_summary(summary, console)
    if summary.status == "failed":
        console.print(f"[red]run failed[/] (summary run marked failed); fix the errors above and continue with:\n  {hint}", soft_wrap=True)  # one line: copied as is
        raise typer.Exit(1)


def print_summary(summary, console: Console) -> None:
    """Per arm its trials, replicates, choice and every failure in full; then where to look."""
    for outcome in summary.outcomes:
        chosen = "" if not outcome.chosen else f" chosen {format_values(outcome.chosen)} (dev {outcome.chosen_value:.4f})"
        console.print(escape(f"{outcome.arm}: tune {_counts(outcome.tune_trials)} replicates {_counts(outcome.replicates)}{chosen}"))
        for error in outcome.errors:
            console.print(f"  [red]error:[/] {escape(error)}")
    console.print(escape(f"MLflow: {summary.tracking_uri} (experiment '{summary.experiment}', id {summary.experiment_id})"))
    browse = shlex.join(["nerplat", "ui", "--tracking-uri", summary.tracking_uri, "--experiment", summary.experiment])
    if summary.optuna_storage is not None:
        console.print(escape(f"Optuna: {summary.optuna_storage} (one study per tuned arm, named {summary.experiment}/<arm>)"), soft_wrap=True)
        browse += f" --optuna-storage {shlex.quote(summary.optuna_storage)}"
    console.print(escape(f"Browse the runs and the searches: {browse}"), soft_wrap=True)  # one line: copied as is
    if summary.report_dir is not None:
        console.print(escape(f"Report: {summary.report_dir}"))
    for line in summary.unconverged:
        console.print(f"[yellow]warning:[/] {escape(line)}")
    if summary.analysis_error:
        console.print(f"[red]analysis failed:[/] {escape(summary.analysis_error)}")
    elif summary.failed():
        console.print(f"[red]{len(summary.failed())} arm(s) had failures[/]: no report was written")


def resume_command(
    spec: Path, *, profile: str | None, overrides: Sequence[str] = (), workdir: Path, storage: str | None, address: str | None
) -> str:
    """`nerplat run ... --resume` with the options that locate the experiment repeated as given."""
    words = ["nerplat", "run", str(spec)]
    for flag, value in (("--profile", profile), ("--workdir", workdir if workdir != Path(".") else None), ("--storage", storage), ("--address", address)):
        if value is not None:
            words += [flag, str(value)]
    for override in overrides:
        words += ["--set", override]
    return shlex.join([*words, "--resume"])


def _counts(by_status: dict[str, int]) -> str:
    """{'completed': 3, 'stopped': 1} -> '3 completed, 1 stopped'."""
    return ", ".join(f"{count} {status}" for status, count in by_status.items()) or "-"


def summary_json(summary: Any) -> dict[str, Any]:
    """What `nerplat run --json` prints: the experiment, its store, and each arm's outcome."""
    return {
        "experiment": summary.experiment,
        "tracking_uri": summary.tracking_uri,
        "optuna_storage": summary.optuna_storage,
        "experiment_id": summary.experiment_id,
        "report_dir": None if summary.report_dir is None else str(summary.report_dir),
        "arms": [dataclasses.asdict(outcome) for outcome in summary.outcomes],
        "status": summary.status,
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
