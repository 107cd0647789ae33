"""`nerplat reanalyze`, `nerplat claims table` and `nerplat claims reading`: a report folder analysed
again by the current code with its spec's claims, the verdict table of many reports
(docs/results/README.md's), and a claim's pairs read in another metric."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from nerplat.cli.options import PROFILE_OPTION, compile_spec

claims_app = typer.Typer(
    name="claims", help="The verdict table of many reports, and readings beside a claim.", no_args_is_help=True
)


@claims_app.callback()
def claims() -> None:
    """The verdict table of many reports (each report's verdicts.parquet), and readings beside a claim."""


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
    files you added are kept. For reports made by an earlier nerplat or before their spec had claims."""
    # lazy: polars, which --help does not need
    from nerplat.analysis.committed import reanalyse_report
    from nerplat.analysis.report import settings_from_plan
    from nerplat.analysis.verdicts import arm_frame

    plan = compile_spec(spec, profile)
    settings = settings_from_plan(plan.model_dump(mode="json"), str(spec))
    written = reanalyse_report(report, settings, plan.experiment, arm_frame(plan.model_dump(mode="json")))
    console = Console(highlight=False, markup=False)
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
        None, "--readme", help="Write the table between the verdict markers of this file instead of printing it."
    ),
) -> None:
    """The verdict table of every ROOT/*/verdicts.parquet, as markdown."""
    from nerplat.analysis.committed import update_readme, verdict_table  # lazy: polars, which --help does not need

    text = verdict_table(root)
    if readme is None:
        typer.echo(text, nl=False)
        return
    update_readme(readme, text)
    Console(highlight=False, markup=False).print(f"wrote the verdict table of {root} into {readme}")


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
    console = Console(highlight=False, markup=False, soft_wrap=True)
    for row in found:
        console.print(row.line())
    if not found:
        console.print(f"{claim}: no pairs in {report / 'runs.parquet'} (its method and partner have no completed runs in common)")
