"""`nerplat train`: one arm, one seed, in-process (no Ray, no MLflow), with a progress bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from nerplat.cli.options import PROFILE_OPTION, Verbosity, compile_spec, format_values
from nerplat.errors import Problem, UserInputError
from nerplat.unfolded import print_unfolded

ASSIGNMENTS_OPTION = typer.Option(  # train's --set: spec keys, as everywhere, and searched hyper-parameters too
    [], "--set",
    help="KEY=VALUE (repeatable): a spec key (train.epochs=3, methods.mom.lambda=0.3) or a searched hyper-parameter of "
    "the arm (objective.lambda=0.2).",
)
SUMMARY_METRICS = ("micro_precision", "micro_recall", "micro_f1", "macro_f1", "token_macro_f1", "sentence_accuracy")


def parse_assignments(assignments: list[str], flag: str = "--set") -> dict[str, Any]:
    """KEY=VALUE flags; values are YAML scalars (0.2 -> float, 3 -> int, ce -> str)."""
    import yaml

    values, problems = {}, []
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        if not sep or not key:
            problems.append(Problem(f"{flag} {assignment!r} is not KEY=VALUE (e.g. {flag} objective.lambda=0.2)"))
            continue
        values[key.strip()] = yaml.safe_load(text)
    if problems:
        raise UserInputError(problems)
    return values


class _BarProgress:
    """Adapts `run_trial`'s progress calls to a rich progress bar."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.task = None

    def epoch_started(self, epoch: int, epochs: int, steps: int) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(f"epoch {epoch}/{epochs}", total=steps, loss=float("nan"))

    def step_done(self, loss: float) -> None:
        self.progress.update(self.task, advance=1, loss=loss)


def train(
    spec: Path = typer.Argument(..., help="The experiment spec (YAML)."),
    method: str = typer.Option(..., "--method", "-m", help="Method of the spec to train."),
    profile: str | None = PROFILE_OPTION,
    assignments: list[str] = ASSIGNMENTS_OPTION,
    arm_id: str | None = typer.Option(None, "--arm", help="Arm id when the method has several (dataset x sampler) arms."),
    seed: int = typer.Option(0, "--seed", help="Seed of initialisation and data order."),
    partition: int = typer.Option(0, "--partition", help="Partition of a partitioned sampler (low_resource)."),
    split: str = typer.Option("test", "--split", help="Split of the final evaluation: test or dev."),
    save: Path | None = typer.Option(
        None, "--save",
        help="Write the selected model here (weights, tokenizer, labels, decoding; no optimiser state): a MODEL for "
        "`nerplat predict`. A new or empty folder, or an earlier model's (replaced); checked before training.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the final metrics as JSON only."),
) -> None:
    """Train one arm of SPEC with one seed, printing dev metrics per epoch and test metrics at the end.

    --set takes a spec key, as `nerplat run --set` does, or a searched hyper-parameter by the name
    `nerplat plan` shows. Searched hyper-parameters without a --set value take the middle of their
    range (the first choice), so a quick look needs no flags.
    """
    # lazy: torch, which --help does not need
    from nerplat.serving.bundle import check_bundle_target, save_bundle
    from nerplat.trial.loop import NonFiniteLoss, run_trial

    if split not in ("test", "dev"):
        raise UserInputError(f"--split must be test or dev, not {split!r}")
    overrides, searched = split_assignments(assignments)
    plan = compile_spec(spec, profile, overrides)
    arm = _one_arm(plan, spec, method, arm_id)
    values = _searched_values(arm, searched)
    config = arm.trial_config(values, seed=seed, partition=partition, eval_split=split)
    if save is not None:
        check_bundle_target(save, "--save")  # before the training, whose model it would lose
    console = Console(emoji=False, stderr=as_json, markup=False, quiet=Verbosity.quiet())

    def report(evaluation, save_checkpoint) -> None:
        shown = {k: evaluation.dev[k] for k in SUMMARY_METRICS if k in evaluation.dev}
        console.print(f"epoch {evaluation.epoch}: " + "  ".join(f"dev_{k} {v:.4f}" for k, v in shown.items()))

    def keep_model(trained) -> None:
        save_bundle(save, trained.tagger, trained.tokenizer, trained.labels, trained.config.head, trained.config.encoder)

    _say_arithmetic(arm, console)
    print_unfolded(console, f"arm {arm.id}  seed {seed}  partition {partition}  {format_values(values)}", hanging=2, markup=False)
    columns = (
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]:.4f}"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=console, transient=True) as bar:
            result = run_trial(
                config, report=report, progress=_BarProgress(bar), select_metric=plan.select_metric,
                keep_model=keep_model if save else None,
            )
    except NonFiniteLoss as failed:  # the trial failed, not the program: its message, exit 1
        print_unfolded(console, f"trial failed: {failed}", hanging=2, markup=False)
        raise typer.Exit(1) from None
    if as_json:
        metrics = {"arm": arm.id, "seed": seed, "partition": partition, "values": values, **result.metrics}
        typer.echo(json.dumps(metrics, indent=2))
    else:
        _print_result(console, result, split)


def _say_arithmetic(arm: Any, console: Console) -> None:
    """bf16 asked for on a CPU that emulates it, and what `auto` resolves to here and why (measured on
    this host the first time, then cached: `trial.precision_calibration`)."""
    # lazy: torch, which --help does not need
    from nerplat.estimate.host import precision_lines
    from nerplat.trial.device import emulated_bf16_warnings

    for line in emulated_bf16_warnings([arm]):
        print_unfolded(console, f"warning: {line}", hanging=2, markup=False)
    for line in precision_lines([arm], announce=lambda text: print_unfolded(console, text, hanging=2, markup=False)):
        print_unfolded(console, line, hanging=2, markup=False)


def _one_arm(plan: Any, spec: Path, method: str, arm_id: str | None) -> Any:
    """The arm of `method` that --arm names, or its only arm."""
    of_method = [arm for arm in plan.arms if arm.method == method]
    if not of_method:
        known = sorted({arm.method for arm in plan.arms})
        raise UserInputError(f"no method {method!r} in {spec} (methods: {', '.join(known)})")
    arms = [arm for arm in of_method if arm_id is None or arm.id == arm_id]
    if not arms:
        raise UserInputError(f"method {method!r} has no arm {arm_id!r} in {spec}; its arms: {', '.join(a.id for a in of_method)}")
    if len(arms) > 1:
        raise UserInputError(f"method {method!r} has {len(arms)} arms; choose one with --arm: {', '.join(a.id for a in arms)}")
    return arms[0]


def _searched_values(arm: Any, searched: list[str]) -> dict[str, Any]:
    """The arm's searched hyper-parameters: the --set values, the middle of its range (or first choice) for the rest."""
    values = {key: _default_value(space) for key, space in arm.search_space.items()}
    chosen = parse_assignments(searched)
    unknown = sorted(set(chosen) - set(arm.search_space))
    if unknown:
        known = ", ".join(arm.search_space) or "none"
        raise UserInputError(f"--set {unknown[0]}: not a spec key nor a searched hyper-parameter of {arm.id} (searched: {known})")
    return values | chosen


def _print_result(console: Console, result: Any, split: str) -> None:
    """The final metrics of `split` as a table, then the trial's sizes and timings."""
    table = Table(title=f"{split} metrics (epoch {result.selected_epoch} selected on dev)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name in SUMMARY_METRICS:
        key = f"{split}_{name}"
        if key in result.metrics:
            table.add_row(key, f"{result.metrics[key]:.4f}")
    console.print(table)
    timings = result.timings
    console.print(
        f"train sentences {result.train_sentences}; setup {timings.setup:.1f}s, training {timings.train:.1f}s "
        f"({timings.tokens_per_second():.0f} tokens/s), evaluation {timings.evaluate:.1f}s"
    )


def split_assignments(assignments: list[str]) -> tuple[list[str], list[str]]:
    """--set flags whose key starts with a spec section (spec overrides), and the others (searched values)."""
    from nerplat.spec.schema import Spec  # lazy: the spec's pydantic models, which --help does not build

    sections = set(Spec.model_fields)
    overrides = [a for a in assignments if a.partition("=")[0].strip().split(".")[0].split("[")[0] in sections]
    return overrides, [a for a in assignments if a not in overrides]


def _default_value(space: Any) -> Any:
    if space.kind == "choice":
        return space.options[0]
    if space.kind == "int":
        return (space.low + space.high) // 2
    if space.kind == "loguniform":
        return float((space.low * space.high) ** 0.5)
    return (space.low + space.high) / 2


def register(app: typer.Typer) -> None:
    app.command("train")(train)

