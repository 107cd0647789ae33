"""`nerplat bench tracking` for real: writers on a SQLite store, and the plan figures."""

import re

import pytest

from nerplat.bench.tracking import measure_writers
from nerplat.catalog import default_catalog
from nerplat.cli import main
from nerplat.plan.compiler import compile_plan
from nerplat.track.experiment_tracker import BOOKKEEPING_EXPERIMENT_SUFFIX


@pytest.mark.slow
def test_bench_tracking_prints_events_per_second_by_writers_and_the_plan_figures(capsys):
    flags = ["--writers", "1", "--writers", "2", "--trials", "1", "--epochs", "2", "--plan-trials", "200"]
    assert main(["bench", "tracking", *flags]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"sqlite\s*│\s*(\d+)\s*│\s*(\d+)\s*│\s*[\d.]+\s*│\s*([\d.]+)", out)
    assert [(int(writers), int(events)) for writers, events, _ in rows] == [(1, 5), (2, 10)], out
    assert "events/s" in out and re.search(r"sqlite( saturates at 1 writer\(s\)|: best [\d.]+ events/s at 2 writer\(s\))", out)
    assert re.search(r"nerplat plan, 200 trials: [\d.]+ s, peak RSS \d+ MB", out)


@pytest.mark.slow
def test_every_writer_logs_its_own_trials_and_every_epoch_once(tracking_uri):
    from mlflow import MlflowClient

    from nerplat.bench.runner_overhead import SWEEP_SPEC
    from nerplat.track import schema

    arm = compile_plan(SWEEP_SPEC, default_catalog()).arms[0]
    figure = measure_writers("sqlite", tracking_uri, arm, writers=2, trials=1, epochs=2)
    assert (figure.writers, figure.events) == (2, 2 * (2 + 3))  # start, node, 2 evaluations, end
    assert figure.events_per_s > 0 and figure.epoch_write_ms > 0

    client = MlflowClient(tracking_uri)
    (experiment,) = [
        e
        for e in client.search_experiments()
        if e.name.startswith("nerplat-bench-tracking-2w-") and not e.name.endswith(BOOKKEEPING_EXPERIMENT_SUFFIX)
    ]
    trials = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{schema.KIND}` = 'trial'")
    assert sorted(run.data.tags[schema.ARM] for run in trials) == [f"{arm.id}-w0", f"{arm.id}-w1"]
    for run in trials:
        assert run.data.tags[schema.STATUS] == "completed"
        assert [point.step for point in client.get_metric_history(run.info.run_id, "dev_micro_f1")] == [1, 2]
