"""`nerplat bench`: each command runs one measurement of `nerplat.bench` and prints its figures.

The measurements (and their refusals of bad options) are the bench modules'; a command here only
passes its options on and lays the result out as a table or JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from nerplat.bench.startup import bench_startup
from nerplat.cli.model_commands import MODEL_ARGUMENT, WORKDIR_OPTION
from nerplat.cli.options import message_console, print_figures

bench_app = typer.Typer(
    help="Benchmarks that print figures (ratios against a plain PyTorch loop run alongside).", no_args_is_help=True
)
JSON_OPTION = typer.Option(False, "--json", help="Print a JSON object instead of a table.")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


@bench_app.command("train")
def bench_train_command(
    encoder: str = typer.Option("minilm-l6", "--encoder", help="Encoder to benchmark."),
    sentences: int = typer.Option(320, "--sentences", help="CoNLL-2003 training sentences (one epoch)."),
    batch_size: int = typer.Option(32, "--batch-size"),
    threads: int | None = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda: where both loops train and the matmul peak is measured."),
    precision: str = typer.Option(
        "fp32", "--precision",
        help="fp32, bf16 or fp16 (CUDA only): both loops' arithmetic, as train.precision, and the peak's dtype.",
    ),
    repeats: int = typer.Option(
        5, "--repeats", help="Timed epochs of each loop, interleaved (at least 5): figures are their median (min-max)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Tokens/s of a plain PyTorch loop and of nerplat's trial loop on the same batches, ratio, MFU, memory, time per torch op."""
    from nerplat.bench.train import bench_train  # lazy: torch, which --help does not need

    result = bench_train(
        encoder=encoder, sentences=sentences, batch_size=batch_size, threads=threads, device=device, precision=precision,
        repeats=repeats,
    )
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    title = (
        f"nerplat bench train ({result.encoder} on {result.device} in {result.precision}, {result.sentences} sentences, "
        f"{result.threads} threads; median (min-max) of {result.repeats} interleaved epochs)"
    )
    console = Console(emoji=False)
    print_figures(title, result.rows(), console)
    rows = [("matrix products (mm, addmm, bmm, baddbmm)", f"{result.matmul_share:.3f}")]
    rows += [(f"{op.op} ({op.calls} calls)", f"{op.share:.3f}") for op in result.ops]
    print_figures("share of one profiled training epoch's torch op self time", rows, console)


@bench_app.command("mrc")
def bench_mrc_command(
    encoder: str = typer.Option("minilm-l6", "--encoder", help="Encoder to benchmark."),
    sentences: int = typer.Option(160, "--sentences", help="CoNLL-2003 training sentences (one epoch per framework)."),
    batch_size: int = typer.Option(32, "--batch-size", help="Sentences (sequence labelling) or examples (MRC) per step."),
    threads: int | None = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
    repeats: int = typer.Option(
        5, "--repeats", help="Epochs of each framework, in turns (at least 5): figures are their median (min-max)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Training tokens/s and sentences/s of the MRC framework against sequence labelling on the same sentences."""
    from nerplat.bench.mrc_cost import bench_mrc  # lazy: torch, which --help does not need

    result = bench_mrc(encoder=encoder, sentences=sentences, batch_size=batch_size, threads=threads, repeats=repeats)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    rows = [
        ("sequence labelling, tokens/s", result.sequence_labelling.tokens_per_s.text(0)),
        ("MRC, tokens/s (queries, K contexts)", result.mrc.tokens_per_s.text(0)),
        ("sequence labelling, sentences/s", result.sequence_labelling.sentences_per_s.text(1)),
        ("MRC, sentences/s", result.mrc.sentences_per_s.text(1)),
        ("MRC cost per sentence (x sequence labelling)", result.cost_per_sentence.text(2)),
    ]
    title = (
        f"nerplat bench mrc ({result.encoder}, {result.sentences} sentences, {result.types} types, {result.threads} threads; "
        f"median (min-max) of {result.repeats} epochs each, in turns)"
    )
    print_figures(title, rows, Console(emoji=False))


@bench_app.command("run")
def bench_run_command(
    profile: str | None = typer.Option(None, "--profile", help="Profile of the bench sweep (smoke: tiny encoder, 5 trials)."),
    repeats: int = typer.Option(
        5, "--repeats",
        help="Blocks of consecutive trials, and in-process runs (at least 5): figures are their median (min-max).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Start-up overhead, where a 20-trial sweep's slot time goes, and in-trial vs in-process tokens/s."""
    from nerplat.bench.runner_overhead import bench_run  # lazy: torch, which --help does not need

    console = Console(emoji=False, stderr=as_json)
    result = bench_run(console, profile, repeats)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    title = (
        f"nerplat bench run ({result.trials} trials, {result.slots} at a time; "
        f"median (min-max) over {result.repeats} blocks of trials)"
    )
    print_figures(title, result.rows(), console)
    print_figures("where the slot time goes (wall time x trials at a time): sweep   blocks", result.share_rows(), console)


@bench_app.command("peer")
def bench_peer_command(
    trials: int | None = typer.Option(
        None, "--trials", min=1,
        help="Trials of each side's sweep in each repeat (default: 4; the bench sweep's own 20 take about 7 minutes a repeat).",
    ),
    epochs: int | None = typer.Option(None, "--epochs", min=1, help="Epochs of each trial (default: the sweep's 4)."),
    sentences: int | None = typer.Option(
        None, "--sentences", min=1, help="CoNLL-2003 training sentences (default: the sweep's 100)."
    ),
    encoder: str | None = typer.Option(
        None, "--encoder", help="Encoder (default: the sweep's minilm-l6; tiny for a quick check)."
    ),
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="torch threads of each side's one running trial (default: all CPUs)."
    ),
    repeats: int = typer.Option(
        5, "--repeats", help="Sweeps of each side, in turns (at least 5): figures are their median (min-max)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """The bench sweep run by nerplat and by Hugging Face Trainer + Optuna: wall time, per-trial time, best dev F1, ratio."""
    from nerplat.bench.peer import bench_peer  # lazy: torch, which --help does not need

    console = Console(emoji=False, stderr=as_json)
    result = bench_peer(
        console, trials=trials, epochs=epochs, sentences=sentences, encoder=encoder, threads=threads, repeats=repeats
    )
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    _print_peer(result, console)


def _print_peer(result: Any, console: Console) -> None:
    """bench peer's table of the two sides, then their ratio and whether they trained alike (seeds, learning rates)."""
    title = (
        f"nerplat bench peer ({result.trials} trials x {result.epochs} epochs, {result.sentences} sentences, "
        f"{result.encoder}; each side one trial at a time on {result.threads} threads; median (min-max) of "
        f"{result.repeats} repeats, the sides in turns)"
    )
    table = Table(title=title)
    table.add_column("")
    for side in (result.nerplat, result.peer):
        table.add_column(side.name, justify="right")
    table.add_row("wall time, s", result.nerplat.wall_s.text(1), result.peer.wall_s.text(1))
    table.add_row("per trial, s", result.nerplat.per_trial_s.text(1), result.peer.per_trial_s.text(1))
    table.add_row("best dev micro F1", result.nerplat.best_dev_micro_f1.text(3), result.peer.best_dev_micro_f1.text(3))
    console.print(table)
    console.print(f"ratio (peer wall / nerplat wall): {result.ratio.text(2)}")
    console.print(f"best dev micro F1, nerplat minus peer: {result.best_dev_difference.text(3)}")
    if result.nerplat.seeds == result.peer.seeds:
        console.print(f"training seeds by repeat, both sides: {', '.join(map(str, result.nerplat.seeds))}")
    else:
        console.print(f"the two sides trained at different seeds: nerplat {result.nerplat.seeds} | peer {result.peer.seeds}")
    rates = {
        side.name: "; ".join(", ".join(f"{rate:.3g}" for rate in drawn) for drawn in side.learning_rates)
        for side in (result.nerplat, result.peer)
    }
    if result.same_learning_rates:
        console.print(f"learning rates tried by both: {rates['nerplat']}")
    else:
        console.print("the two sides tried different learning rates: " + " | ".join(f"{k}: {v}" for k, v in rates.items()))


@bench_app.command("tracking")
def bench_tracking_command(
    writers: list[int] = typer.Option(
        [1, 8, 32], "--writers", min=1, metavar="N", help="Concurrent reporting trials (repeatable: --writers 1 --writers 8)."
    ),
    trials: int = typer.Option(2, "--trials", min=1, metavar="N", help="Trials each writer runs, one after another."),
    epochs: int = typer.Option(10, "--epochs", min=1, metavar="N", help="Per-epoch reports of each trial."),
    postgres: str | None = typer.Option(
        None, "--postgres", metavar="URL",
        help="Also measure an `mlflow server` on this PostgreSQL database (postgresql://USER:PASSWORD@HOST:PORT/DB).",
    ),
    postgres_bin: Path | None = typer.Option(
        None, "--postgres-bin",
        help="Also measure an `mlflow server` on a throwaway PostgreSQL started from this folder's initdb and pg_ctl "
        "(Debian: /usr/lib/postgresql/<major>/bin).",
    ),
    server_workers: int = typer.Option(2, "--server-workers", min=1, metavar="N", help="uvicorn workers of that mlflow server."),
    plan_trials: int = typer.Option(
        100_000, "--plan-trials", min=0, metavar="N", help="Trials of the spec `nerplat plan` is timed on (0 skips it)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of tables."),
) -> None:
    """Events/s of the tracking path (the run ledger) with N concurrent reporting trials, on SQLite and
    on an `mlflow server` on PostgreSQL; where each saturates; time and memory of `nerplat plan` at 100,000 trials."""
    from nerplat.bench.tracking import bench_tracking  # lazy: torch, which --help does not need

    notes = message_console(stderr=True)
    result = bench_tracking(
        writers, trials, epochs, postgres=postgres, postgres_bin=postgres_bin, server_workers=server_workers,
        plan_trials=plan_trials, log=lambda line: notes.print(line, markup=False),
    )  # fmt: skip
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    _print_tracking(result, trials, epochs, server_workers)


def _print_tracking(result: Any, trials: int, epochs: int, server_workers: int) -> None:
    """bench tracking's table of stores and writer counts, then where each store saturates and plan's figures."""
    console = Console(emoji=False, highlight=False, soft_wrap=True)  # a figure's line stays one line
    table = Table(title=f"nerplat bench tracking ({trials} trials x {epochs} epochs per writer)")
    for column in ("store", "writers", "events", "seconds", "events/s", "epoch write, ms (median)"):
        table.add_column(column, justify="left" if column == "store" else "right")
    for figure in result.stores:
        table.add_row(
            figure.store, str(figure.writers), str(figure.events), f"{figure.seconds:.1f}", f"{figure.events_per_s:.1f}",
            f"{figure.epoch_write_ms:.1f}",
        )
    console.print(table)
    for figure in result.stores:
        if figure.failed_writers:
            refused = f"{figure.store}, {figure.writers} writers: {figure.failed_writers} had a write refused ({figure.failure})"
            console.print(refused, markup=False)
    for store in result.store_names():
        best, top = result.best(store), result.saturation(store)
        server = f" (mlflow server, {server_workers} workers)" if store == "postgresql" else ""
        if best is None:
            console.print(f"{store}{server}: writes were refused at every writer count")
        elif top is None:
            console.print(
                f"{store}{server}: best {best.events_per_s:.1f} events/s at {best.writers} writer(s), "
                "not saturated within the counts measured"
            )
        else:
            console.print(f"{store}{server} saturates at {top.writers} writer(s): {top.events_per_s:.1f} events/s")
    if result.plan is not None:
        plan = result.plan
        console.print(
            f"nerplat plan, {plan.trials:,} trials: {plan.seconds:.1f} s, peak RSS {plan.peak_rss_mb:.0f} MB "
            f"(one-run spec: {plan.one_run_seconds:.1f} s, {plan.one_run_peak_rss_mb:.0f} MB; "
            f"{plan.bytes_per_trial:.0f} bytes per trial)"
        )


@bench_app.command("startup")
def bench_startup_command(
    model: str = MODEL_ARGUMENT,
    spec: Path | None = typer.Option(None, "--spec", help="Also time `nerplat train SPEC -m METHOD` (with --profile)."),
    method: str | None = typer.Option(None, "--method", "-m", help="The method `nerplat train` trains (with --spec)."),
    profile: str | None = typer.Option("smoke", "--profile", "-p", help="The spec's profile for `nerplat train`."),
    repeats: int = typer.Option(
        5, "--repeats", help="Runs of each command, in turns (at least 5): figures are their median (min-max)."
    ),
    workdir: Path = WORKDIR_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of tables."),
) -> None:
    """Wall and CPU seconds of --help, predict --text, export, serve (to its first /ping) and train, each
    in a new process; and where predict's imports go."""
    result = bench_startup(model, spec=spec, method=method, profile=profile, repeats=repeats, workdir=workdir)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    console = Console(emoji=False)
    title = (
        f"nerplat bench startup (median (min-max) of {result.repeats} runs each, in turns; load average "
        f"{result.load_before:.2f} before, {result.load_after:.2f} after; torch CPU capability {result.cpu_capability})"
    )
    print_figures(title, result.rows(), console)
    imports = "import time of one predict --text by package (wall clock, python -X importtime)"
    print_figures(imports, result.import_rows(), console)


@bench_app.command("analysis")
def bench_analysis_command(
    as_json: bool = typer.Option(False, "--json", help="Print the timings as JSON."),
    runs: int = typer.Option(100_000, "--runs", min=1, help="Runs in the synthetic frame."),
    fetch: int = typer.Option(5_000, "--fetch", min=0, help="Runs created in and fetched from a local MLflow store (0 skips)."),
    store: Path | None = typer.Option(None, "--store", help="SQLite file to keep those runs in between benchmark runs."),
) -> None:
    """Time the analysis of a synthetic 100,000-run frame and the fetch of 5,000 runs from MLflow."""
    from nerplat.bench.analysis_scale import run_benchmark  # lazy: polars, which --help does not need

    result = run_benchmark(runs=runs, metrics=10, fetch_runs=fetch, store=store, log=lambda line: typer.echo(line, err=True))
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2))
        return
    typer.echo(f"synthetic frame: {result.notes['frame_shape'][0]} runs x {result.notes['metrics']} metrics")
    for name, seconds in result.seconds.items():
        typer.echo(f"  {name:<22} {seconds:8.2f} s")


@bench_app.command("host")
def bench_host_command(
    threads: int | None = typer.Option(
        None, "--threads", min=1,
        help="torch threads to measure at (default: torch's; a spec's trials run at train.threads, else their worker's CPUs).",
    ),
    as_json: bool = JSON_OPTION,
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
