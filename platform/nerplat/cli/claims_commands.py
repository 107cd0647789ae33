"""`nerplat reanalyze`, `nerplat claims table`, `nerplat claims reading`, `nerplat claims register` and
`nerplat claims registrations`: a report folder analysed again by the current code with its spec's
claims, the verdict table of many reports (docs/results/README.md's), a claim's pairs read in another
metric, and claims registered before their runs (`analysis.registrations`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from nerplat.cli.options import PROFILE_OPTION, compile_spec
from nerplat.errors import Problem, UserInputError

claims_app = typer.Typer(
    name="claims", help="Register claims before their runs; the verdict table of many reports; readings beside a claim.",
    no_args_is_help=True,
)


@claims_app.callback()
def claims() -> None:
    """Register claims before their runs (a confirmatory study), the verdict table of many reports
    (each report's verdicts.parquet), and readings beside a claim."""


def register(app: typer.Typer) -> None:
    """Adds `reanalyze` and the `claims` command group to the app."""
    app.command("reanalyze")(reanalyze)
    app.add_typer(claims_app, name="claims")


def reanalyze(
    report: Path = typer.Argument(..., help="A report folder: reports/<experiment> or docs/results/<name>."),
    spec: Path = typer.Option(..., "--spec", help="The spec whose analysis settings and claims to use."),
    profile: str | None = PROFILE_OPTION,
) -> None:
    """Analyse a report folder again from its own frames with the current code: tables, tests,
    convergence and the spec's claims (verdicts.parquet). Nothing is retrained; RUN.md and other
    files you added are kept. For reports made by an earlier nerplat or before their spec had claims.
    A verdict is confirmatory only where the spec's registrations (registered/ beside it) allow it."""
    # lazy: polars, which --help does not need
    from nerplat.analysis.committed import reanalyse_report
    from nerplat.analysis.evidence import dated_registrations
    from nerplat.analysis.registrations import registration_folder
    from nerplat.analysis.report import settings_from_plan
    from nerplat.analysis.verdict_context import arm_frame

    plan = compile_spec(spec, profile)
    settings = settings_from_plan(plan.model_dump(mode="json"), str(spec))
    registered = dated_registrations(registration_folder(spec))
    written = reanalyse_report(report, settings, plan.experiment, arm_frame(plan.model_dump(mode="json")), registered)
    console = Console(emoji=False, highlight=False, markup=False)
    verdicts = report / "verdicts.parquet"
    if verdicts.is_file():
        import polars as pl

        from nerplat.analysis.verdict_text import verdict_text  # lazy: polars, which --help does not need

        for row in pl.read_parquet(verdicts).iter_rows(named=True):
            text = verdict_text(row)
            console.print(f"{row['claim']}: {text.comparison} {text.delta} over {text.units}: direction {text.direction}, "
                          f"magnitude {text.magnitude}; verdict {text.verdict}")
    console.print(f"rewrote {len(written)} files of {report}")


@claims_app.command("table")
def table(
    root: Path = typer.Argument(Path("docs/results"), help="Folder whose report folders hold verdicts.parquet."),
    readme: Path | None = typer.Option(
        None, "--readme",
        help="Write the tables between the verdict markers of this file, its summary between the summary markers (if it "
        "has them) and the forest plot beside it, instead of printing the tables.",
    ),
    registrations: Path = typer.Option(
        Path("specs/registered"), "--registrations", help="The folder of registered claims (nerplat claims register)."
    ),
) -> None:
    """The claims table of every ROOT/*/verdicts.parquet, as markdown: one verdict per registered claim
    (all of its confirmatory runs joined under its registered design; "registered, not yet run"
    without any), then the exploratory readings (chosen after results) with a pooled estimate."""
    # lazy: polars, which --help does not need
    from nerplat.analysis.claims_table import save_forest_plot
    from nerplat.analysis.committed import FOREST_PLOT, SUMMARY_START, claims_tables, update_readme
    from nerplat.analysis.registrations import load_registrations

    found = load_registrations(registrations)
    if readme is None:
        typer.echo(claims_tables(root, found).markdown, nl=False)
        return
    with_summary = SUMMARY_START in _text_or_empty(readme)
    tables = claims_tables(root, found, FOREST_PLOT if with_summary else None)
    update_readme(readme, tables.markdown, tables.summary if with_summary else None)
    if with_summary and tables.forest is not None:
        save_forest_plot(tables.forest, readme.resolve().parent / FOREST_PLOT)
    Console(emoji=False, highlight=False, markup=False).print(f"wrote the claims table of {root} into {readme}")


def _text_or_empty(path: Path) -> str:
    """The file's text, or "" when it cannot be read (`update_readme` then says why)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@claims_app.command("reading")
def reading(
    report: Path = typer.Argument(..., help="A report folder: reports/<experiment> or docs/results/<name>."),
    spec: Path = typer.Option(..., "--spec", help="The spec (and --profile) the report ran."),
    profile: str | None = PROFILE_OPTION,
    claim: str = typer.Option(..., "--claim", help="The id of one of the spec's claims."),
    metrics: list[str] = typer.Option(
        ..., "--metric", help="A metric of the report's runs, without the split (sentence_accuracy); repeatable."
    ),
    partner_metric: str | None = typer.Option(
        None, "--partner-metric", help="Read the partner's runs in this metric instead (with one --metric)."
    ),
) -> None:
    """A claim's pairs, on the units its verdict reads, in other metrics: each side's mean and sd,
    the mean and median difference, the units the method is ahead on and a paired t-test's p. A
    reading, never a verdict: no declared level, not adjusted across metrics."""
    # lazy: polars, which --help does not need
    from nerplat.analysis.readings import report_readings
    from nerplat.analysis.report import settings_from_plan

    plan = compile_spec(spec, profile)
    settings = settings_from_plan(plan.model_dump(mode="json"), str(spec))
    found = report_readings(report, settings, claim, metrics, partner_metric)
    console = Console(emoji=False, highlight=False, markup=False, soft_wrap=True)
    for row in found:
        console.print(row.line())
    if not found:
        console.print(f"{claim}: no pairs in {report / 'runs.parquet'} (its method and partner have no completed runs in common)")


@claims_app.command("register")
def register_command(
    spec: Path = typer.Argument(..., help="The spec whose claims to register."),
    profile: str | None = PROFILE_OPTION,
    claim: list[str] = typer.Option([], "--claim", help="A claim id to register (repeatable); default: every claim of the plan."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace a claim's registration by a new design on units the old one did not hold."
    ),
) -> None:
    """Register claims before any of their runs evaluates on test: writes registered/<claim>.yaml beside
    the spec (the claim as the paper states it, its setting, the design that will decide it, the units it
    draws, and their digest). Commit the file before the run: the commit is the registration date, and
    only runs after it give the claim a confirmatory verdict. All claims or none are written."""
    # lazy: numpy, which --help does not need
    from nerplat.analysis.registration_document import register_claims

    plan = compile_spec(spec, profile)
    console = Console(emoji=False, highlight=False, markup=False, soft_wrap=True)
    registered = register_claims(plan, spec, claim, replace=replace)
    for done in registered:
        state = "registered" if done.written else "already registered (unchanged)"
        units = ", ".join(str(u) for u in done.units)
        console.print(f"{done.claim_id}: {state} in {done.path}, digest {done.digest[:12]}, {done.unit}s {units}")
    if any(done.written for done in registered):
        console.print("commit the registrations before running: git add them and git commit; the commit dates them")


@claims_app.command("registrations")
def registrations_command(
    folder: Path = typer.Argument(Path("specs/registered"), help="A folder of registrations (specs/registered)."),
) -> None:
    """Each registration in FOLDER: its claim, digest, units, looks, and the date of the commit that added it
    (or that it is not committed, or was edited since it was written)."""
    from nerplat.analysis.registrations import load_registrations, registered_dates  # lazy: numpy, which --help does not need

    if not folder.is_dir():
        raise UserInputError(Problem(f"{folder} is not a folder: give the registrations' folder (specs/registered)"))
    console = Console(emoji=False, highlight=False, markup=False, soft_wrap=True)
    found = load_registrations(folder)
    dates = registered_dates(registration.path for registration in found.values())
    for claim_id, registration in found.items():
        date = dates[registration.path.resolve()]
        when = f"committed {date.isoformat()}" if date is not None else "not committed (no registration date yet)"
        edited = "" if registration.intact else "; EDITED since it was written: its digest no longer matches"
        console.print(f"{claim_id}: digest {registration.digest[:12]}, {registration.unit}s {list(registration.units)}, "
                      f"looks at {list(registration.looks)} of {registration.max_units}, {registration.spending or 'fixed'}, "
                      f"alpha {registration.alpha:.3g}; {when}{edited}")
    if not found:
        console.print(f"no registrations in {folder}")
