"""The benchmark's parts on small inputs (the full sizes run from `nerplat bench analysis`)."""

from __future__ import annotations

import shutil

from nerplat.bench.analysis_scale import BenchResult, bench_fetch, synthetic_bench_frame


def test_synthetic_bench_frame_has_the_requested_shape():
    frame = synthetic_bench_frame(runs=2000, metrics=10)
    metrics = [c for c, t in frame.schema.items() if t.is_float()]
    assert frame.height == 2000 and len(metrics) == 10


def test_fetch_benchmark_logs_and_reads_back_runs(tmp_path, empty_mlflow_db):
    database = tmp_path / "bench.db"
    shutil.copy(empty_mlflow_db, database)
    result = BenchResult(runs=0, metrics=10, fetch_runs=6)
    bench_fetch(result, database, log=lambda line: None)
    assert result.notes["fetched_frame_shape"][0] == 6
    assert {"create_store_runs", "fetch_runs", "runs_to_frame", "fetch_total"} <= set(result.seconds)
    again = BenchResult(runs=0, metrics=10, fetch_runs=6)
    bench_fetch(again, database, log=lambda line: None)  # the store is reused, not refilled
    assert again.notes["fetched_frame_shape"][0] == 6
