"""Options and helpers shared by several command groups."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from nerplat.plan.model import Plan

PROFILE_OPTION = typer.Option(None, "--profile", "-p", help="A profile of the spec to merge over it (e.g. cpu, paper).")


def compile_spec(spec: Path, profile: str | None) -> Plan:
    """The plan of a spec file with the full registry catalog, its corpora read and checked.

    Raises UserInputError on bad input: `nerplat run` calls this before it starts Ray or writes anything.
    """
    from nerplat.catalog import default_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.spec.validate import default_dataset_check

    return compile_plan(spec, default_catalog(), profile, dataset_check=default_dataset_check())


def print_figures(title: str, rows: list[tuple[str, str]], console: Console) -> None:
    """A two-column table of benchmark figures."""
    table = Table(title=title)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
