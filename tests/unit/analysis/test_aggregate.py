"""Summary frames: per-group statistics equal direct computation, whatever the row order."""

from __future__ import annotations

import polars as pl
import pytest

from nerplat.analysis.aggregate import metric_columns, summarise
from nerplat.analysis.settings import AnalysisSettings
from nerplat.analysis.stats import bootstrap_summary
from nerplat.analysis.synthetic import synthetic_replicates

SETTINGS = AnalysisSettings(bootstrap_resamples=500, seed=3)


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return synthetic_replicates(methods=("ce", "mom"), sizes=(20, 50), seeds=5, types=("PER",))


def _cell(summary: pl.DataFrame, method: str, size: int, metric: str) -> dict:
    return summary.filter(
        (pl.col("method") == method) & (pl.col("size") == size) & (pl.col("metric") == metric)
    ).row(0, named=True)


def test_mean_sd_and_bootstrap_match_a_direct_computation(frame):
    summary = summarise(frame, metric_columns(frame), SETTINGS)
    group = frame.filter((pl.col("method") == "mom") & (pl.col("size") == 50)).sort("seed")
    values = group["test_micro_f1"].to_numpy()
    cell = _cell(summary, "mom", 50, "test_micro_f1")
    se, low, high = bootstrap_summary(values[None, :], 500, 3, 0.95)
    assert cell["n"] == 5
    assert cell["mean"] == pytest.approx(values.mean())
    assert cell["sd"] == pytest.approx(values.std(ddof=1))
    assert (cell["se"], cell["ci_low"], cell["ci_high"]) == pytest.approx((se[0], low[0], high[0]), rel=1e-12)


def test_row_order_does_not_change_any_number(frame):
    forward = summarise(frame, metric_columns(frame), SETTINGS)
    shuffled = summarise(frame.sample(fraction=1.0, shuffle=True, seed=11), metric_columns(frame), SETTINGS)
    assert forward.equals(shuffled)


def test_missing_and_nan_values_are_left_out_of_their_group_only(frame):
    holes = frame.with_columns(
        pl.when((pl.col("method") == "ce") & (pl.col("size") == 20) & (pl.col("seed") == 0)).then(None)
        .when((pl.col("method") == "ce") & (pl.col("size") == 20) & (pl.col("seed") == 1)).then(float("nan"))
        .otherwise(pl.col("test_micro_f1")).alias("test_micro_f1")
    )
    summary = summarise(holes, ["test_micro_f1", "test_micro_precision"], SETTINGS)
    assert _cell(summary, "ce", 20, "test_micro_f1")["n"] == 3
    assert _cell(summary, "ce", 20, "test_micro_precision")["n"] == 5
    assert _cell(summary, "ce", 50, "test_micro_f1")["n"] == 5


def test_one_replicate_has_a_mean_but_no_spread(frame):
    single = frame.filter(pl.col("seed") == 0)
    cell = _cell(summarise(single, ["test_micro_f1"], SETTINGS), "ce", 20, "test_micro_f1")
    assert cell["n"] == 1 and cell["mean"] is not None
    assert cell["sd"] is None and cell["se"] is None and cell["ci_low"] is None


def test_metric_columns_are_the_float_columns_that_are_not_identity(frame):
    names = metric_columns(frame)
    assert "test_micro_f1" in names and "train_size_factor" in names
    assert not {"size", "seed", "partition", "method"} & set(names)


def test_an_empty_frame_gives_an_empty_summary(frame):
    assert summarise(frame.clear(), ["test_micro_f1"], SETTINGS).is_empty()
