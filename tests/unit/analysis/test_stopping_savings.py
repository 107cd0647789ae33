"""stopping_savings: epochs run against the cap and the training hours the cap would have cost, per arm."""

import polars as pl
import pytest

from nerplat.analysis.context_tables import savings_table
from nerplat.analysis.stopping_savings import stopping_savings
from nerplat.analysis.verdict_context import arm_frame


def _arms() -> pl.DataFrame:
    return arm_frame({"arms": [
        {"id": "ce", "fixed": {"train": {"epochs": 20}}},
        {"id": "mom", "fixed": {"train": {"epochs": 20}}},
        {"id": "searched", "fixed": {"train": {}}},
    ]})  # fmt: skip


def test_savings_count_epochs_and_scale_each_runs_time_per_epoch_to_the_cap():
    replicates = pl.DataFrame(
        {"arm": ["ce", "ce", "mom"], "stopped_epoch": [10.0, 20.0, 5.0], "time_train_s": [360.0, 720.0, 90.0]}
    )
    trials = pl.DataFrame({"arm": ["mom"], "stopped_epoch": [15.0], "time_train_s": [540.0], "param.lr": ["0.1"]})
    saved = stopping_savings((replicates, trials), _arms())
    rows = {row["arm"]: row for row in saved.iter_rows(named=True)}
    assert set(rows) == {"ce", "mom"}  # `searched` has no single cap; it ran nothing here either
    assert (rows["ce"]["runs"], rows["ce"]["epochs_run"], rows["ce"]["epochs_at_cap"]) == (2, 30, 40)
    assert rows["ce"]["train_hours"] == pytest.approx(1080 / 3600)
    assert rows["ce"]["train_hours_at_cap"] == pytest.approx((36 * 20 + 36 * 20) / 3600)
    assert (rows["mom"]["runs"], rows["mom"]["epochs_run"], rows["mom"]["epochs_at_cap"]) == (2, 20, 40)
    assert rows["mom"]["train_hours_at_cap"] == pytest.approx((18 * 20 + 36 * 20) / 3600)


def test_runs_that_did_not_record_where_they_stopped_are_left_out():
    old = pl.DataFrame({"arm": ["ce"], "time_train_s": [100.0]})  # a report older than nerplat.stopped_by
    assert stopping_savings((old,), _arms()).is_empty()
    unknown = pl.DataFrame(
        {"arm": ["ce"], "stopped_epoch": [None], "time_train_s": [100.0]}, schema_overrides={"stopped_epoch": pl.Float64}
    )
    assert stopping_savings((unknown,), _arms()).is_empty()
    assert savings_table(stopping_savings((old,), _arms())) is None


def test_the_savings_table_shows_the_share_of_epochs_run():
    replicates = pl.DataFrame({"arm": ["ce", "ce"], "stopped_epoch": [10.0, 20.0], "time_train_s": [360.0, 720.0]})
    table = savings_table(stopping_savings((replicates,), _arms()))
    assert table is not None and table.name == "early-stopping"
    (row,) = table.rows
    assert [cell.text for cell in row.cells] == ["2", "20", "30 / 40 (75%)", "0.30", "0.40"]
