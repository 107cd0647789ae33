"""`nerplat bench tracking`'s figures: saturation and refused writes (its writer processes on SQLite:
tests/integration/bench/test_bench_tracking.py)."""

import pytest

from nerplat.bench.tracking import StoreFigure, TrackingBenchResult


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

