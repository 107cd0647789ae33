"""`nerplat bench analysis`: how long analysis takes at scale, a 100,000-run synthetic frame and 5,000 runs fetched from MLflow.

The MLflow part first fills a local SQLite store with replicate runs (`track/synthetic_runs.py`:
one `create_run` with the tags and one `log_batch` with the metrics per run), which takes
minutes; `store` keeps that database between benchmark runs.
"""

from __future__ import annotations

import io
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.compare import setting_axes
from nerplat.analysis.render import RENDERERS
from nerplat.analysis.report import analyse, paired_comparisons
from nerplat.analysis.run_frames import replicate_frame
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.synthetic import synthetic_replicates
from nerplat.track import schema
from nerplat.track.experiment_reader import open_client, search_all
from nerplat.track.synthetic_runs import fill_experiment

BENCH_EXPERIMENT = "nerplat-bench-analysis"
FILLED_TAG = "nerplat.bench.runs"  # experiment tag: the store holds this many benchmark runs


@dataclass
class BenchResult:
    runs: int
    metrics: int
    fetch_runs: int
    seconds: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def _timed(result: BenchResult, name: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    result.seconds[name] = round(time.perf_counter() - start, 3)


def synthetic_bench_frame(runs: int, metrics: int) -> pl.DataFrame:
    """About `runs` replicate runs (5 datasets x 20 sizes x 10 methods x seeds x partitions) with `metrics` metrics.

    The generator's own metrics are micro/macro P/R/F1 and two size metrics (8); the rest are
    extra noise metrics, so the count is exact from 8 upwards.
    """
    per_seed_grid = 5 * 20 * 10
    replicates = max(1, round(runs / per_seed_grid))
    seeds = min(replicates, 10)
    partitions = max(1, round(replicates / seeds))
    extra = [f"test_extra_{i}" for i in range(max(0, metrics - 8))]
    return synthetic_replicates(
        datasets=[f"corpus{i}" for i in range(5)],
        sizes=[20 * (k + 1) for k in range(20)],
        methods=["ce"] + [f"method{i}" for i in range(1, 10)],
        seeds=seeds,
        partitions=partitions,
        types=(),
        extra_metrics=extra,
    )


def bench_frame(result: BenchResult, settings: AnalysisSettings) -> None:
    """Times `report.analyse` on the synthetic frame, then rendering its tables and plots in memory.

    Summary statistics and paired tests are also timed alone, to show where the time goes.
    """
    with _timed(result, "synthesise_frame"):
        frame = synthetic_bench_frame(result.runs, result.metrics)
    result.notes["frame_shape"] = list(frame.shape)
    result.notes["metrics"] = len(metric_columns(frame))
    with _timed(result, "summarise_alone"):
        summary = summarise(frame, metric_columns(frame), settings)
    result.notes["summary_rows"] = summary.height
    with _timed(result, "paired_tests_alone"):
        tests = paired_comparisons(frame, settings, setting_axes(frame)).tests
    result.notes["tests"] = tests.height
    empty_trials = pl.DataFrame(schema={"dataset": pl.String()})
    with _timed(result, "analyse"):
        analysis = analyse(frame, empty_trials, settings)
    with _timed(result, "render_tables"):
        for table in analysis.tables:
            for render in RENDERERS.values():
                render(table)
    with _timed(result, "draw_plots_png"):
        for plot in analysis.plots:
            plot.figure.savefig(io.BytesIO(), format="png", dpi=150)
    result.notes["tables"] = len(analysis.tables)
    result.notes["plots"] = len(analysis.plots)
    result.seconds["analyse_total"] = round(
        result.seconds["analyse"] + result.seconds["render_tables"] + result.seconds["draw_plots_png"], 3
    )


def fill_store(tracking_uri: str, runs: int, log: Callable[[str], None]) -> str:
    """Creates the benchmark experiment with `runs` replicate runs unless it already has them."""

    def tagged_rows() -> Iterator[tuple[dict[str, str], dict[str, float]]]:
        frame = synthetic_bench_frame(runs, 10).head(runs)
        metric_names = metric_columns(frame)
        for row in frame.iter_rows(named=True):
            tags = {
                schema.KIND: "replicate", schema.PHASE: "replicate", schema.ARM: row["arm"], schema.METHOD: row["method"],
                schema.DATASET: row["dataset"], schema.SAMPLER: row["sampler"], schema.SIZE: str(row["size"]),
                schema.SEED: str(row["seed"]), schema.PARTITION: str(row["partition"]), schema.OBJECTIVE: row["objective"],
                schema.HEAD: row["head"], schema.ENCODER: row["encoder"], schema.STATUS: "completed",
            }
            yield tags, {m: row[m] for m in metric_names}

    return fill_experiment(tracking_uri, BENCH_EXPERIMENT, runs, tagged_rows, filled_tag=FILLED_TAG, log=log)


def bench_fetch(result: BenchResult, store: Path | None, log: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        database = (store or Path(scratch) / "bench.db").resolve()
        uri = f"sqlite:///{database}"
        log(f"filling {database} with {result.fetch_runs} runs (reused when already there)")
        with _timed(result, "create_store_runs"):
            experiment_id = fill_store(uri, result.fetch_runs, log)
        client = open_client(uri)
        with _timed(result, "fetch_runs"):
            runs = search_all(client, experiment_id, "replicate")
        with _timed(result, "runs_to_frame"):
            frame = replicate_frame(runs)
        result.notes["fetched_frame_shape"] = list(frame.shape)
        result.seconds["fetch_total"] = round(result.seconds["fetch_runs"] + result.seconds["runs_to_frame"], 3)


def run_benchmark(
    runs: int = 100_000,
    metrics: int = 10,
    fetch_runs: int = 5_000,
    store: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> BenchResult:
    result = BenchResult(runs=runs, metrics=metrics, fetch_runs=fetch_runs)
    settings = AnalysisSettings(baseline="ce")
    log(f"analysing a synthetic frame of about {runs} runs x {metrics} metrics")
    bench_frame(result, settings)
    if fetch_runs > 0:
        bench_fetch(result, store, log)
    return result
