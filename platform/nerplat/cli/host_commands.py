"""`nerplat bench host`: this machine's CPU, matmul peaks and what `precision: auto` chooses on it."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from nerplat.cli.options import print_figures
from nerplat.cli.train_commands import bench_app


def register(app: typer.Typer) -> None:
    bench_app.command("host")(bench_host_command)


def bench_host_command(
    threads: int | None = typer.Option(
        None, "--threads", min=1,
        help="torch threads to measure at (default: torch's; a spec's trials run at train.threads, else their worker's CPUs).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """CPU model, torch CPU capability, threads, matmul peaks in fp32 and bf16, the calibration `precision: auto`
    uses (measured now, replacing the cached one) and the choices it makes from it, with why; under a minute."""
    from nerplat.bench.host import bench_host  # lazy: torch, which --help does not need

    result = bench_host(threads)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    title = (
        f"nerplat bench host ({result.threads} threads; load average {result.load_before:.2f} before; "
        f"took {result.seconds:.0f} s; peaks: median (min-max) of {len(result.matmul_fp32_gflops.repeats)}, in turns)"
    )
    print_figures(title, result.rows(), Console(emoji=False))
