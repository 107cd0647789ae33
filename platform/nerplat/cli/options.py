"""Options and helpers shared by several command groups."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from nerplat.errors import Problem
from nerplat.plan.model import Plan

PROFILE_OPTION = typer.Option(None, "--profile", "-p", help="A profile of the spec to merge over it (e.g. cpu, paper).")
SET_OPTION = typer.Option(
    [], "--set", help="Override a spec key, KEY=VALUE with a YAML value (repeatable), e.g. --set train.epochs=3 --set methods.mom.lambda=0.3."
)


class Verbosity:
    """The global -q/-v flags: -1 prints results and errors only, 1 adds library logs (Ray's workers)."""

    level = 0

    @classmethod
    def quiet(cls) -> bool:
        return cls.level < 0

    @classmethod
    def verbose(cls) -> bool:
        return cls.level > 0


def message_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A console for progress and notes, silent under -q (results and errors use their own)."""
    return Console(stderr=stderr, quiet=Verbosity.quiet(), highlight=False, soft_wrap=True, **kwargs)


def compile_spec(spec: Path, profile: str | None, overrides: Sequence[str] = ()) -> Plan:
    """The plan of a spec file with the full registry catalog, its plugins and `--set` overrides, its corpora read.

    Raises UserInputError on bad input: `nerplat run` calls this before it starts Ray or writes anything.
    """
    from nerplat.catalog import spec_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.spec.validate import default_dataset_check

    return compile_plan(spec, spec_catalog(spec), profile, dataset_check=default_dataset_check(), overrides=overrides)


def format_values(values: Mapping[str, Any]) -> str:
    """Hyper-parameters as people write them: `objective.lambda=0.3127, train.lr=2.1e-05`."""
    return ", ".join(f"{key}={_readable(value)}" for key, value in values.items())


def _readable(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_readable(v) for v in value) + "]"
    return str(value)


def problem_json(problem: Problem) -> dict[str, Any]:
    return {"message": problem.message, "source": problem.source, "line": problem.line, "path": problem.path}


def print_figures(title: str, rows: list[tuple[str, str]], console: Console) -> None:
    """A two-column table of benchmark figures."""
    table = Table(title=title)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
