"""`nerplat run`: compile a spec and execute it on Ray, tracked in MLflow, then analyse it."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from nerplat.cli.options import (
    PROFILE_OPTION,
    SET_OPTION,
    Verbosity,
    compile_spec,
    format_values,
    print_headline,
)
from nerplat.cli.spec_commands import PILOT_HELP, undecidable_lines
from nerplat.track.store import StoreLost
from nerplat.unfolded import print_command, print_unfolded
from nerplat.errors import Problem, UserInputError
from nerplat.run.progress import DEFAULT_EVERY

if TYPE_CHECKING:
    from nerplat.analysis.headline import Headline

DESIGN_PANEL = "Claims the design cannot decide"
THROUGH_LOOK_OPTION = typer.Option(
    None, "--through-look", min=1, metavar="K", rich_help_panel=DESIGN_PANEL,
    help="Under a sequential design, stop after look K (a budget): a later --resume runs look K + 1 on the next units, "
    "judged by the same boundaries (a registered claim keeps its registration).",
)


def run(
    spec: Path = typer.Argument(..., help="The experiment spec (YAML)."),
    profile: str | None = PROFILE_OPTION,
    overrides: list[str] = SET_OPTION,
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted experiment: finished trials are kept."),
    rerun_changed: bool = typer.Option(
        False, "--rerun-changed",
        help="With --resume after the spec, the profile, or the corpus or plugin files the finished runs read changed: run "
        "anew the arms whose runs it changes (their runs are deleted in MLflow); every other arm keeps its finished runs. "
        "Without it such a resume is refused.",
    ),
    address: str | None = typer.Option(
        None, "--address",
        help="Ray cluster to join, HOST:PORT or ray://HOST:PORT (default: $RAY_ADDRESS, else a new embedded Ray on "
        "127.0.0.1, never one found in /tmp/ray).",
    ),
    storage: str | None = typer.Option(
        None, "--storage", help="Ray Tune storage_path (shared directory or s3://...); default .nerplat/ray."
    ),
    workdir: Path = typer.Option(Path("."), "--workdir", help="Where mlflow.db, .nerplat/ and reports/ go."),
    analyze: bool = typer.Option(True, "--analyze/--no-analyze", help="Run the analysis stage at the end."),
    tune_only: bool = typer.Option(False, "--tune-only", help="Stop after the tune phase; a later --resume replicates."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON on stdout (progress goes to stderr)."),
    progress_every: int = typer.Option(
        DEFAULT_EVERY, "--progress-every", metavar="SECONDS",
        help="When the progress output is not a terminal (CI logs, nohup), print a plain timestamped progress line "
        "every SECONDS.",
    ),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", envvar="NERPLAT_METRICS_PORT", show_envvar=False, metavar="PORT",
        help="Serve the embedded Ray's Prometheus metrics (Ray's and nerplat's) on 127.0.0.1 at PORT, path /metrics "
        "(default: a free port Ray picks; also from the environment variable NERPLAT_METRICS_PORT). "
        "Not with --address: a cluster's nodes have their own.",
    ),
    pilot: Path | None = typer.Option(None, "--pilot", metavar="DIR", help=PILOT_HELP, rich_help_panel=DESIGN_PANEL),
    replicate_undecidable: bool = typer.Option(
        False, "--replicate-undecidable", rich_help_panel=DESIGN_PANEL,
        help="Under a sequential design, replicate the arms of claims undecidable at this budget (power below 0.5 at the "
        "design's most units, from their pilot sd: see nerplat plan) beyond the first look too; by default they stop there.",
    ),
    through_look: int | None = THROUGH_LOOK_OPTION,
) -> None:
    """Run every arm of SPEC: tune on dev, replicate the best configuration, analyse.

    The spec and its corpora are checked completely before Ray starts or anything is written.

    It ends with the headline table: per arm, the test metric's mean ± sd over its replicates, n and
    whether its epoch budget converged (also under -q; -v adds Ray's worker logs).

    Exit codes: 0 done; 1 a trial, arm or the analysis failed, or the MLflow server was lost (the resume
    command is printed); 2 bad input (spec, corpus, flag, or a cluster that cannot place a trial); 130
    interrupted (Ctrl-C or SIGTERM).

    Examples:

      nerplat run specs/quickstart.yaml

      nerplat run specs/quickstart.yaml -p smoke --workdir /tmp/smoke

      nerplat run specs/quickstart.yaml --set train.epochs=3

      nerplat run specs/quickstart.yaml --resume
    """
    console, loud = _consoles(as_json)
    _check_run_flags(resume, rerun_changed, progress_every, metrics_port, address)
    # The first line, before the seconds of imports and corpus reading that checking the spec takes.
    print_unfolded(console, f"nerplat run {spec}: checking the spec and reading its corpora", hanging=2, markup=False)
    from nerplat.run.runner import ExperimentRunner, RunOptions  # lazy: the runner's modules, which --help does not need
    plan = compile_spec(spec, profile, overrides)
    _warn_before_start(plan, loud)
    options = RunOptions(
        workdir=workdir.resolve(), resume=resume, rerun_changed=rerun_changed, address=address, storage=storage,
        analyze=analyze, replicate=not tune_only, verbose=Verbosity.verbose(), progress_every=progress_every,
        metrics_port=metrics_port, **_claim_options(plan, spec, pilot, replicate_undecidable, through_look, console, loud),
    )
    runner = ExperimentRunner(plan, options, console)
    hint = resume_command(
        spec, profile=profile, overrides=overrides, workdir=workdir, storage=storage, address=address, pilot=pilot,
        replicate_undecidable=replicate_undecidable,
    )
    _print_outcome(_run_or_exit(runner, loud, hint), as_json, console, loud, hint)


def _consoles(as_json: bool) -> tuple[Console, Console]:
    """The progress console (silent under -q) and the loud one (results and errors: printed under -q
    too), both on stderr with --json so stdout holds the JSON alone."""
    # Logs and CI are not terminals: give the progress table room instead of rich's default 80 columns,
    # unless COLUMNS says how wide the reader is.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 150
    console = Console(emoji=False, width=width, stderr=as_json, quiet=Verbosity.quiet(), highlight=False)
    return console, Console(emoji=False, width=width, stderr=as_json, highlight=False)


def _print_outcome(summary: Any, as_json: bool, console: Console, loud: Console, hint: list[str]) -> None:
    """The run's summary and headline table (or both as JSON); exit 1 with the resume command when it failed."""
    from nerplat.analysis.headline import report_headline  # lazy: polars, which --help does not need

    headline = None if summary.report_dir is None or summary.analysis_error else report_headline(summary.report_dir)
    if as_json:
        typer.echo(json.dumps(summary_json(summary, headline), indent=2))
    else:
        print_summary(summary, console, loud)
        if headline is not None:
            print_headline(headline, loud)
    if summary.status == "failed":
        _advise_after_failure(loud, hint)
        raise typer.Exit(1)


def _undecidable(plan: Any, pilot: Path | None, replicate_undecidable: bool, console: Console) -> frozenset[str]:
    """The claims undecidable at this budget by the plan's pilot sds, printed; those whose arms the
    replicate phase stops after the first look (none with --replicate-undecidable)."""
    from nerplat.analysis.claim_design import pilot_sds, undecidable_claims  # lazy: numpy, which --help does not need

    found = undecidable_claims(plan, pilot_sds(plan, pilot) if pilot is not None else None)
    for power in found:
        console.print(escape(power.line()))
    for line in undecidable_lines(plan, found, replicate_undecidable):
        console.print(escape(line))
    return frozenset() if replicate_undecidable else frozenset(power.claim for power in found)


def _warn_before_start(plan: Any, loud: Console) -> None:
    """What a run says before Ray starts: bf16 asked for on a CPU that emulates it (`trial.device`), and
    what `auto` resolves to here for the arms asking for it, and why: measured on this host now (once per
    CPU model, torch and thread count, then cached), so the trials read it and never measure."""
    # lazy: torch, which --help does not need
    from nerplat.estimate.host import precision_lines
    from nerplat.trial.device import emulated_bf16_warnings

    for line in emulated_bf16_warnings(plan.arms):
        print_unfolded(loud, f"[yellow]warning:[/] {escape(line)}", hanging=2)
    for line in precision_lines(plan.arms, announce=lambda text: print_unfolded(loud, escape(text), hanging=2)):
        print_unfolded(loud, escape(line), hanging=2)


def _claim_options(
    plan: Any, spec: Path, pilot: Path | None, replicate_undecidable: bool, through_look: int | None, console: Console,
    loud: Console,
) -> dict[str, Any]:
    """`RunOptions`' claims part from the flags (--pilot, --replicate-undecidable, --through-look): the
    claims undecidable at this budget (`_undecidable`), the registrations this run serves (claim id ->
    digest), their folder and the look it stops after. The registrations are said before the run
    starts, with those of its claims it does not serve and why (their verdicts will be exploratory)."""
    # lazy: numpy, which --help does not need
    from nerplat.analysis.registration_document import served_registrations
    from nerplat.analysis.registrations import registration_folder

    if through_look is not None and plan.sequential is None:
        raise UserInputError("--through-look stops a sequential design after a look: the spec has no replicate.sequential")
    undecidable = _undecidable(plan, pilot, replicate_undecidable, console)
    served, notes = served_registrations(plan, spec)
    for line in notes:
        print_unfolded(loud, f"[yellow]warning:[/] {escape(line)}", hanging=2)
    for claim, digest in served.items():
        print_unfolded(loud, escape(f"claim {claim}: serves its registration (digest {digest[:12]})"), hanging=2)
    return {"undecidable": undecidable, "registrations": served, "registered_in": registration_folder(spec),
            "through_look": through_look}


def _advise_after_failure(loud: Console, hint: list[str]) -> None:
    print_unfolded(
        loud, "[red]run failed[/] (summary run marked failed); fix the errors above and continue with the command below "
        "(add --rerun-changed when the fix changes the spec, a corpus or a plugin: the arms it changes run anew):",
    )
    print_command(loud, hint)


def _check_run_flags(
    resume: bool, rerun_changed: bool, progress_every: int, metrics_port: int | None, address: str | None
) -> None:
    if rerun_changed and not resume:
        raise UserInputError("--rerun-changed needs --resume: it chooses what a resumed experiment keeps")
    if progress_every < 1:
        raise UserInputError(Problem(f"--progress-every must be 1 second or more, got {progress_every}", path="--progress-every"))
    if metrics_port is not None and not 1 <= metrics_port <= 65535:
        raise UserInputError(
            Problem(f"--metrics-port must be a port number from 1 to 65535, got {metrics_port}", path="--metrics-port")
        )
    joined, flag = (address, "--address") if address else (os.environ.get("RAY_ADDRESS"), "RAY_ADDRESS")
    if joined and joined != "auto":
        from nerplat.run.ray_preflight import cluster_host_port  # lazy: the Ray preflight (resource), which --help does not need

        cluster_host_port(joined, flag)  # a malformed address is refused before anything is written


def _run_or_exit(runner: Any, loud: Console, hint: list[str]) -> Any:
    """The run's summary; exit 130 when it was interrupted, 1 when the MLflow server was lost, with the resume command."""
    from nerplat.run.ray_session import Interrupted  # lazy: the Ray session's modules (ctypes), which --help does not need

    try:
        return runner.run()
    except (Interrupted, KeyboardInterrupt):
        print_unfolded(loud, "[yellow]interrupted.[/] Finished trials are saved in MLflow; continue with:")
        print_command(loud, hint)
        raise typer.Exit(130) from None
    except StoreLost as lost:
        stopped = f"[red]stopped:[/] {escape(str(lost))}. Finished trials are saved there; once it answers again, continue with:"
        print_unfolded(loud, stopped, hanging=2)
        print_command(loud, hint)
        raise typer.Exit(1) from None


def print_summary(summary, console: Console, errors: Console | None = None) -> None:
    """Per arm its trials, replicates, choice and every failure in full; then where to look.

    Failures go to `errors` (default `console`): `nerplat run` gives a console that -q leaves on.
    """
    errors = errors or console
    for outcome in summary.outcomes:
        chosen = "" if not outcome.chosen else f" chosen {format_values(outcome.chosen)} (dev {outcome.chosen_value:.4f})"
        arm = f"{outcome.arm}: tune {_counts(outcome.tune_trials)} replicates {_counts(outcome.replicates)}{chosen}"
        print_unfolded(console, escape(arm), hanging=2)
        for error in outcome.errors:
            print_unfolded(errors, f"  [red]error:[/] {escape(error)}", hanging=4)
    mlflow = f"MLflow: {summary.tracking_uri} (experiment '{summary.experiment}', id {summary.experiment_id})"
    print_unfolded(console, escape(mlflow), hanging=2)
    browse = ["nerplat", "ui", "--tracking-uri", summary.tracking_uri, "--experiment", summary.experiment]
    if summary.optuna_storage is not None:
        optuna = f"Optuna: {summary.optuna_storage} (one study per tuned arm, named {summary.experiment}/<arm>)"
        print_unfolded(console, escape(optuna), hanging=2)
        browse += ["--optuna-storage", summary.optuna_storage]
    console.print("Browse the runs and the searches with:")
    print_command(console, browse)
    if summary.report_dir is not None:
        print_unfolded(console, escape(f"Report: {summary.report_dir}"), hanging=2)
    if summary.next_look is not None:  # loud: docs/results/reproduce.sh keeps the store when it reads this line
        stopped = f"stopped after look {summary.next_look - 1} by --through-look: --resume runs look {summary.next_look}"
        print_unfolded(errors, escape(stopped), hanging=2)
    for line in summary.unconverged:
        print_unfolded(console, f"[yellow]warning:[/] {escape(line)}", hanging=2)
    if summary.analysis_error:
        print_unfolded(errors, f"[red]analysis failed:[/] {escape(summary.analysis_error)}", hanging=2)
    elif summary.failed():
        errors.print(f"[red]{len(summary.failed())} arm(s) had failures[/]: no report was written")


def resume_command(
    spec: Path, *, profile: str | None, overrides: Sequence[str] = (), workdir: Path, storage: str | None, address: str | None,
    pilot: Path | None = None, replicate_undecidable: bool = False,
) -> list[str]:
    """The words of `nerplat run ... --resume` with the options that locate the experiment, and those
    that choose which arms its looks run, repeated as given."""
    words = ["nerplat", "run", str(spec)]
    located = (
        ("--profile", profile), ("--workdir", workdir if workdir != Path(".") else None), ("--storage", storage),
        ("--address", address),
    )
    for flag, value in (*located, ("--pilot", pilot)):
        if value is not None:
            words += [flag, str(value)]
    for override in overrides:
        words += ["--set", override]
    if replicate_undecidable:
        words.append("--replicate-undecidable")
    return [*words, "--resume"]


def _counts(by_status: dict[str, int]) -> str:
    """{'completed': 3, 'stopped': 1} -> '3 completed, 1 stopped'."""
    return ", ".join(f"{count} {status}" for status, count in by_status.items()) or "-"


def summary_json(summary: Any, headline: Headline | None = None) -> dict[str, Any]:
    """What `nerplat run --json` prints: the experiment, its store, each arm's outcome and the
    headline results (`results`: the rows of the headline table, with full ids; none without a report)."""
    return {
        "experiment": summary.experiment,
        "tracking_uri": summary.tracking_uri,
        "optuna_storage": summary.optuna_storage,
        "experiment_id": summary.experiment_id,
        "report_dir": None if summary.report_dir is None else str(summary.report_dir),
        "arms": [dataclasses.asdict(outcome) for outcome in summary.outcomes],
        "status": summary.status,
        "next_look": summary.next_look,
        "failed": [outcome.arm for outcome in summary.failed()],
        "results": None if headline is None else headline.as_json(),
        "verdicts": None if headline is None else headline.verdicts,
    }


def register(app: typer.Typer) -> None:
    app.command("run")(run)

