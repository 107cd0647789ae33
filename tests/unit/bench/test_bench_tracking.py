"""`nerplat bench tracking` on tiny settings: real writer processes on SQLite; figures printed, never timed."""

import pytest

from nerplat.bench.tracking import StoreFigure, TrackingBenchResult, measure_writers
from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.track.experiment_tracker import BOOKKEEPING_EXPERIMENT_SUFFIX


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


@pytest.mark.parametrize(
    "rates, saturation",
    [((40.0, 95.0, 100.0), 8), ((100.0, 60.0, 50.0), 1), ((10.0, 20.0, 40.0), None)],
)
def test_a_store_saturates_at_the_fewest_writers_within_ten_percent_of_its_best(rates, saturation):
    result = TrackingBenchResult(trials_per_writer=1, epochs=1, server_workers=2)
    for writers, rate in zip((1, 8, 32), rates):
        result.stores.append(StoreFigure("sqlite", writers, 10, 1.0, rate, 1.0))
    figure = result.saturation("sqlite")
    assert (None if figure is None else figure.writers) == saturation  # None: still rising at the most writers
    assert result.as_dict()["saturation"] == {"sqlite": saturation}


def test_counts_with_refused_writes_are_left_out_of_the_saturation():
    result = TrackingBenchResult(trials_per_writer=1, epochs=1, server_workers=2)
    result.stores += [StoreFigure("sqlite", 1, 10, 1.0, 7.0, 1.0), StoreFigure("sqlite", 8, 10, 1.0, 5.0, 1.0),
                      StoreFigure("sqlite", 32, 10, 1.0, 9.0, 1.0, failed_writers=3, failure="database is locked")]  # fmt: skip
    assert result.best("sqlite").writers == 1 and result.saturation("sqlite").writers == 1

