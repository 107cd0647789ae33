"""`nerplat validate`, `nerplat plan` and `nerplat registry`: check a spec, see what it would run,
and list the names a spec may use.

Nothing here writes a file; `--json` output goes to stdout alone, messages to stderr.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.table import Table

from nerplat.cli.options import PROFILE_OPTION, SET_OPTION, compile_spec, message_console, print_rows, problem_json
from nerplat.config.trial import Component
from nerplat.errors import UserInputError
from nerplat.plan.model import Plan
from nerplat.run.looks import replicates_by_look
from nerplat.unfolded import print_unfolded

SPEC_HELP = "A spec file (YAML)."
PILOT_HELP = (
    "A report folder (docs/results/NAME, reports/NAME) whose runs.parquet gives each claim's pilot sd, or an earlier "
    "run's work folder (or its mlflow.db) whose runs of this spec's experiment give it, where the claim declares no "
    "pilot_sd: the sd of its unit-level paired differences there. With --cost, also the wall time at the epochs "
    "its runs trained."
)
COST_HELP = (
    "Also predict each arm's wall time and device-hours on this host, from earlier runs of the same encoder and device, "
    "else from a short calibration run it says it ran (--json: a `cost` field)."
)
BUDGET_HELP = "With --cost: the time the spec may take (150m, 2h, 5400s); over it, the cuts that would fit (advice, exit 0)."


def register(app: typer.Typer) -> None:
    """Adds `validate`, `plan` and `registry` to the app."""
    app.command("validate")(validate)
    app.command("plan")(plan)
    app.command("registry")(registry)


def validate(
    specs: list[Path] = typer.Argument(..., help="Spec files to check."),
    profile: str | None = PROFILE_OPTION,
    overrides: list[str] = SET_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print {ok, specs, problems} as JSON on stdout (exit 2 on any problem)."),
) -> None:
    """Check specs completely: every problem of every file, with file:line and YAML path (exit 2 on any).

    Without --profile, the spec and each of its profiles are checked. Corpora are read in full.
    """
    # lazy: torch (the catalog's entries) and the spec's checks, which --help does not need
    from nerplat.catalog import spec_catalog
    from nerplat.spec.validate import SpecSource, default_dataset_check, validate_spec_file

    check = default_dataset_check()
    console = message_console(stderr=as_json)
    problems, checked = [], []
    for spec in specs:
        try:
            variants = validate_spec_file(SpecSource(spec, profile, overrides=overrides), spec_catalog(spec), check)
        except UserInputError as error:
            problems += error.problems  # each names its file; all are reported at the end
            continue
        profiles = [v.profile for v in variants if v.profile is not None]
        checked.append({"spec": str(spec), "profiles": profiles})
        checked_line = f"OK {spec}" + (f" (profiles: {', '.join(profiles)})" if profiles else "")
        print_unfolded(console, checked_line, hanging=2, markup=False)
        for variant in variants:
            for line in _warnings(variant):
                warning = f"warning: {spec}" + (f" (profile {variant.profile})" if variant.profile else "") + f": {line}"
                print_unfolded(console, warning, hanging=2, markup=False)
    if as_json:
        sys.stdout.write(_json({"ok": not problems, "specs": checked, "problems": [problem_json(p) for p in problems]}) + "\n")
        if problems:
            raise typer.Exit(UserInputError.exit_code)
    if problems:
        raise UserInputError(problems)


def plan(
    spec: Path = typer.Argument(..., help=SPEC_HELP),
    profile: str | None = PROFILE_OPTION,
    overrides: list[str] = SET_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON on stdout."),
    cost: bool = typer.Option(False, "--cost", help=COST_HELP),
    budget: str | None = typer.Option(None, "--budget", help=BUDGET_HELP),
    calibrate: bool = typer.Option(
        True, "--calibrate/--no-calibrate", help="With --cost: calibrate on this host where the store has no runs."
    ),
    tracking_uri: str | None = typer.Option(
        None, "--tracking-uri",
        help="MLflow store whose runs --cost reads (default: MLFLOW_TRACKING_URI, the spec's, else ./mlflow.db).",
    ),
    pilot: Path | None = typer.Option(None, "--pilot", metavar="DIR", help=PILOT_HELP),
) -> None:
    """Show the arms a spec compiles to (dataset x sampler x method): search spaces, tune trials, replicates.

    Per claim: its design, and from a pilot sd (the claim's pilot_sd, else --pilot) the paper's effect
    in sd units, the fixed design's power at it, the units a power of 0.8 needs and, under a sequential
    design, its own simulated power; a claim below power 0.5 is undecidable at this budget, and
    `nerplat run` stops its arms after the first look.

    Arms are named by their short labels (MLflow's run names); --json gives every id in full."""
    # lazy: numpy and polars, which --help does not need
    from nerplat.analysis.claim_design import pilot_runs, runs_sds, undecidable_claims

    compiled = compile_spec(spec, profile, overrides)
    runs = pilot_runs(compiled, pilot) if pilot is not None else None  # read once: the sds and the epochs
    measured = runs_sds(compiled, *runs) if runs is not None else None
    undecidable = undecidable_claims(compiled, measured)
    source, undecidable_ids = (spec, profile, overrides), {p.claim for p in undecidable}
    predicted = _estimate(compiled, source, tracking_uri, undecidable_ids, budget, calibrate, runs) if cost else None
    if as_json:
        if predicted is None:
            sys.stdout.write(compiled.model_dump_json(indent=2) + "\n")
        else:
            sys.stdout.write(_json(compiled.model_dump(mode="json") | {"cost": predicted.as_dict()}) + "\n")
        return
    console = Console(emoji=False, highlight=False, markup=False)
    print_rows(console, *_arm_table(compiled))
    for line in _plan_lines(compiled, predicted, measured, undecidable):
        print_unfolded(console, line, hanging=len(line) - len(line.lstrip()) + 2, markup=False)


def _plan_lines(compiled: Plan, predicted: Any, measured: Any, undecidable: list[Any]) -> list[str]:
    """What `plan` prints under the arm table: settings, trial counts, tuning, the cost, the claims, warnings."""
    # lazy: numpy and torch, which --help does not need
    from nerplat.analysis.claim_design import claim_costs, unequal_effort
    from nerplat.trial.device import emulated_bf16_warnings

    lines = _setting_lines(compiled)
    tune_trials = sum(arm.tune_trials for arm in compiled.arms)
    replicates = sum(len(arm.replicates) for arm in compiled.arms)
    lines.append(
        f"{len(compiled.arms)} arms, {tune_trials} tune trials, {replicates} replicate runs: "
        f"{compiled.total_trials()} trials in all"
    )
    if compiled.tune is not None and not tune_trials:
        lines.append(f"no search: every run chooses its checkpoint on {compiled.tune.metric} (mode {compiled.tune.mode})")
    elif compiled.tune is not None:
        tune = compiled.tune
        lines.append(
            f"tune: {_component_text(tune.searcher)}, scheduler {_component_text(tune.scheduler)}, "
            f"{'maximise' if tune.mode == 'max' else 'minimise'} {tune.metric}, "
            f"{tune.max_concurrent or 'as many as resources allow'} trials at once, "
            f"seed {tune.seed} (each arm's searcher its own)"
        )
        for method, points in tune.enqueue.items():  # run first, once each
            lines.append(f"  {method} starts from: " + "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) for p in points))
    lines.append(f"replicates evaluated on {compiled.replicate_split}; plan sha256 {compiled.sha256()}")
    lines += predicted.lines() if predicted is not None else []
    seconds = {a.arm: a.trial_s for a in predicted.arms if a.trial_s is not None} if predicted is not None else None
    for claim_cost in claim_costs(compiled, seconds, measured):
        lines += claim_cost.lines()
    lines += undecidable_lines(compiled, undecidable)
    return lines + [f"warning: {line}" for line in unequal_effort(compiled) + emulated_bf16_warnings(compiled.arms)]


def _estimate(
    compiled: Plan, source: tuple, tracking_uri: str | None, undecidable: set[str], budget: str | None, calibrate: bool,
    pilot_runs: tuple[Any, str] | None,
) -> Any:
    """`--cost` and `--budget`: the prediction over the looks the design runs, and the cuts, each the
    spec compiled again from `source` (spec, profile, overrides) with the cut's overrides; with
    `--pilot` (its runs and where they were read), also the prediction at the epochs they trained."""
    from nerplat.estimate.spec_cost import estimate_plan, pilot_epochs  # lazy: torch and polars, which --help does not need

    spec, profile, overrides = source
    replan = lambda more: compile_spec(spec, profile, [*overrides, *more])
    looks_of = lambda cut: replicates_by_look(cut, undecidable)
    epochs = pilot_epochs(*pilot_runs) if pilot_runs is not None else None
    return estimate_plan(compiled, tracking_uri, looks_of, calibrating=calibrate, budget=budget, replan=replan, pilot=epochs)


def undecidable_lines(compiled: Plan, undecidable: list[Any], replicate_undecidable: bool = False) -> list[str]:
    """What `nerplat run` does with the claims undecidable at this budget (`analysis.claim_design`)."""
    if not undecidable:
        return []
    names = ", ".join(power.claim for power in undecidable)
    if compiled.sequential is None:
        return [f"undecidable at this budget: {names} (a fixed design runs every replicate of their arms)"]
    if replicate_undecidable:
        return [f"undecidable at this budget: {names}: replicated to the end anyway (--replicate-undecidable)"]
    return [
        f"undecidable at this budget: {names}: arms in no other claim stop after the first look "
        "(nerplat run --replicate-undecidable replicates them on)"
    ]


def _arm_table(compiled: Any) -> tuple[Table, list[tuple[str, ...]]]:
    """The arm table and its rows, one per arm: its label, objective, head, search space, tune trials and replicates."""
    title = f"{compiled.experiment}" + (f" (profile {compiled.profile})" if compiled.profile else "")
    table = Table(title=title, title_justify="left", caption=compiled.description or None, caption_justify="left")
    for column in ("arm", "objective", "head", "searched"):
        table.add_column(column)
    table.add_column("tune", justify="right")
    table.add_column("reps", justify="right")
    rows = [
        (
            arm.label, arm.objective, arm.head,
            "\n".join(f"{key} ~ {_unbroken(d.label())}" for key, d in arm.search_space.items()) or "-",
            str(arm.tune_trials), str(len(arm.replicates)),
        )
        for arm in compiled.arms
    ]  # fmt: skip
    return table, rows


def _unbroken(label: str) -> str:
    """A distribution's label as one word (`loguniform(3e-05,0.0003)`): a table wraps its cells between
    words, and a distribution cut after its comma reads as two."""
    return label.replace(", ", ",")


def _warnings(variant: Any) -> list[str]:
    """What `validate` warns about a validated spec, as `plan` does: claims whose arms get unequal tuning
    effort (`analysis.claim_design`), bf16 asked for on a CPU that emulates it (`trial.device`)."""
    # lazy: numpy, the compiler and torch, which --help does not need
    from nerplat.analysis.claim_design import unequal_effort
    from nerplat.plan.compiler import build_plan
    from nerplat.trial.device import emulated_bf16_warnings

    compiled = build_plan(variant)
    return unequal_effort(compiled) + emulated_bf16_warnings(compiled.arms)


def _setting_lines(compiled: Plan) -> list[str]:
    """What the arm labels leave out: the dataset and the sampler setting of the arms (full ids: --json)."""
    datasets = list(dict.fromkeys(arm.dataset for arm in compiled.arms))
    samplers = dict.fromkeys((arm.sampler, arm.sampler_description) for arm in compiled.arms)
    lines = [f"dataset{'s' if len(datasets) > 1 else ''}: {', '.join(datasets)}"]
    if len(samplers) == 1:
        return lines + [f"sampler: {next(iter(samplers))[1]}"]
    return lines + ["samplers:"] + [f"  {label}: {description}" for label, description in samplers]


def _component_text(component: Component) -> str:
    params = ", ".join(f"{key}={value}" for key, value in component.params.items())
    return f"{component.name}({params})" if params else component.name


def registry(
    as_json: bool = typer.Option(False, "--json", help="Print the registries as JSON on stdout."),
    spec: Path | None = typer.Option(None, "--spec", help="Also load the plugins this spec names."),
) -> None:
    """List every name a spec may use, registry by registry, with each entry's parameters and origin
    (built-in, an installed plugin's entry point, or a spec's plugin)."""
    from nerplat.catalog import default_catalog, spec_catalog  # lazy: torch, which --help does not need

    catalog = default_catalog() if spec is None else spec_catalog(spec)
    listing = {
        group: [
            {"name": entry.name, "summary": entry.summary, "origin": entry.origin, "params": config_fields(entry.config)}
            for entry in reg.entries()
        ]
        for group, reg in catalog.registries().items()
    }
    if as_json:
        sys.stdout.write(_json(listing) + "\n")
        return
    console = Console(emoji=False, highlight=False, markup=False)
    for group, entries in listing.items():
        table = Table(title=f"{group} ({len(entries)})", title_justify="left")
        for column in ("name", "summary", "parameters", "from"):
            table.add_column(column)
        rows = [(e["name"], e["summary"], "\n".join(_param_line(p) for p in e["params"]) or "-", e["origin"]) for e in entries]
        print_rows(console, table, rows)


def config_fields(config: type[BaseModel]) -> list[dict[str, Any]]:
    """The parameters a config model accepts, as the spec writes them."""
    fields = []
    for name, info in config.model_fields.items():
        required = info.is_required()
        default = None if required else info.get_default(call_default_factory=True)
        fields.append(
            {
                "name": info.alias or name,
                "type": _type_name(info.annotation),
                "required": required,
                "default": to_jsonable_python(default, fallback=repr),
                "description": info.description or "",
            }
        )
    return fields


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _param_line(param: dict[str, Any]) -> str:
    default = "" if param["required"] else f" = {param['default']!r}"
    return f"{param['name']}: {param['type']}{default}"


def _json(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False)
