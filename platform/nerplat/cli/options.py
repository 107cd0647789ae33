"""Options and helpers shared by several command groups."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from nerplat.errors import Problem
from nerplat.plan.model import Plan
from nerplat.unfolded import print_unfolded, unfolded_lines

if TYPE_CHECKING:
    from nerplat.analysis.headline import Headline

PROFILE_OPTION = typer.Option(None, "--profile", "-p", help="A profile of the spec to merge over it (e.g. cpu, paper).")
SET_OPTION = typer.Option(
    [], "--set", metavar="KEY=VALUE", help="Override a spec key with a YAML value (repeatable), e.g. --set train.epochs=3."
)


# Errors, and progress the -q flag does not silence. Every console of nerplat's is built with emoji=False: the
# text it prints is often the user's (paths, names, values), where `:x:` must stay `:x:` (escape() stops markup only).
err_console = Console(emoji=False, stderr=True, highlight=False)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nerplat")
    except PackageNotFoundError:
        return "unknown (not installed)"


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
    return Console(emoji=False, stderr=stderr, quiet=Verbosity.quiet(), highlight=False, soft_wrap=True, **kwargs)


def compile_spec(spec: Path, profile: str | None, overrides: Sequence[str] = ()) -> Plan:
    """The plan of a spec file with the full registry catalog, its plugins and `--set` overrides, its corpora read.

    Raises UserInputError on bad input: `nerplat run` calls this before it starts Ray or writes anything.
    """
    # lazy: torch (the catalog's entries) and the compiler, which --help does not need
    from nerplat.catalog import spec_catalog
    from nerplat.plan.compiler import compile_plan
    from nerplat.spec.validate import SpecSource, default_dataset_check

    return compile_plan(SpecSource(spec, profile, overrides=overrides), spec_catalog(spec), default_dataset_check())


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
    """A two-column table of benchmark figures under its title, its rows stacked where it does not fit
    (`print_rows`); the title is a line of prose above it, not squeezed into the table's width."""
    print_unfolded(console, Text(title, style="italic"), hanging=2)
    table = Table()
    table.add_column("figure")
    table.add_column("value", justify="right")
    print_rows(console, table, rows)


def print_rows(console: Console, table: Table, rows: Sequence[Sequence[str]]) -> None:
    """`table` with `rows`, splitting no word: each column is at least as wide as its longest word
    (header included), so a narrow terminal wraps cells between words only; where even that is wider
    than the terminal, the rows are printed one below the other instead (`Stackable`), uncropped, so
    that a word longer than the line (a path) stays whole on a line of its own."""
    for j, column in enumerate(table.columns):
        texts = [str(column.header), *(str(row[j]) for row in rows)]
        column.min_width = max((len(word) for text in texts for word in text.split()), default=0)
    for row in rows:
        table.add_row(*row)
    console.print(Stackable(table, rows), crop=False)


class Stackable:
    """A table that renders as itself where its narrowest layout fits, else as one block per row:
    the first cell, then each other cell under its column's header, indented."""

    def __init__(self, table: Table, rows: Sequence[Sequence[str]]) -> None:
        self.table, self.rows = table, rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.narrowest() <= options.max_width:
            yield self.table
            return
        headers = [str(column.header) for column in self.table.columns]
        if self.table.title:
            yield Text(str(self.table.title), style="italic")
        for row in self.rows:
            yield from _unfolded(Text(str(row[0]), style="bold"), options.max_width, hanging=2)
            for header, cell in zip(headers[1:], row[1:]):
                lines = str(cell).split("\n")
                indented = (
                    [(2, f"{header}: {lines[0]}")] if len(lines) == 1 else [(2, f"{header}:"), *((4, line) for line in lines)]
                )
                for indent, line in indented:
                    yield from _unfolded(Text(" " * indent + line), options.max_width, hanging=indent + 2)

    def narrowest(self) -> int:
        """The table's width with each column at its longest word: cells, padding and rules."""
        columns = self.table.columns
        _, right, _, left = self.table.padding
        rules = 0 if self.table.box is None else len(columns) + 1 if self.table.show_edge else len(columns) - 1
        return sum((column.min_width or 0) + left + right for column in columns) + rules


def _unfolded(text: Text, width: int, hanging: int) -> list[Text]:
    """`unfolded_lines` that rich renders as they are: with overflow "ignore", it keeps a word longer
    than the line whole instead of folding it (its default)."""
    lines = unfolded_lines(text, width, hanging)
    for line in lines:
        line.overflow = "ignore"
    return lines


def print_headline(headline: Headline, console: Console) -> None:
    """The headline table: per arm (its short label) the score's mean ± sd, n and convergence."""
    if not headline.rows:
        console.print(f"no {headline.metric} in the report: no replicate finished", markup=False)
        return
    digits = headline.decimals
    table = Table(title=f"{headline.metric_words()}, mean ± sd over replicates", title_justify="left", highlight=False)
    table.add_column("arm")
    table.add_column(headline.metric_words(), justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    table.add_column("converged")
    rows = []
    for row in headline.rows:
        spread = "" if row.sd is None else f" ± {row.sd:.{digits}f}"  # no sd of n = 1
        score = "-" if row.mean is None else f"{row.mean:.{digits}f}" + spread
        converged = {True: "yes", False: "no", None: "-"}[row.converged]
        rows.append((row.label, score, str(row.n), converged))
    print_rows(console, table, rows)
    if headline.verdicts:
        print_verdicts(headline, console)


def print_verdicts(headline: Headline, console: Console) -> None:
    """The claims' verdicts under the headline table: each claim's difference, interval, pairs and verdict."""
    from nerplat.analysis.verdict_text import verdict_text  # lazy: polars, which --help does not need

    table = Table(title="claims (verdicts.parquet)", title_justify="left", highlight=False)
    for name, justify in (("claim", "left"), ("Δ", "right"), ("interval", "right"), ("units", "right"), ("verdict", "left")):
        table.add_column(name, justify=justify)
    rows = []
    for v in headline.verdicts:
        text = verdict_text(v, headline.decimals)
        direction = f"; direction {text.direction}, magnitude {text.magnitude}" if v.get("direction_verdict") else ""
        verdict = text.verdict + direction
        rows.append((f"{v['claim']}: {text.comparison}", text.delta, text.interval, text.units, verdict))
    print_rows(console, table, rows)
