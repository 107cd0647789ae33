"""stopping_check: early-stopped runs against their fixed-epoch twins, paired by seed and partition."""

import polars as pl
import pytest

from nerplat.bench.stopping_check import main, stopping_differences
from nerplat.errors import UserInputError


def _runs(test, dev, selected, train_s, stopped=None) -> pl.DataFrame:
    n = len(test)
    frame = pl.DataFrame({
        "dataset": ["conll"] * n, "sampler": ["s"] * n, "method": ["ce"] * n, "size": [100] * n, "seed": list(range(n)),
        "partition": [None] * n, "test_micro_f1": test, "dev_best_micro_f1": dev, "selected_epoch": selected,
        "time_train_s": train_s,
    }, schema_overrides={"partition": pl.Int64})  # fmt: skip
    return frame if stopped is None else frame.with_columns(pl.Series("stopped_epoch", stopped))


def test_pairs_by_seed_and_reports_the_differences_and_the_time_used():
    fixed = _runs([0.50, 0.60, 0.70], [0.55, 0.65, 0.75], [5.0, 8.0, 20.0], [200.0, 200.0, 200.0])
    early = _runs([0.50, 0.60, 0.64], [0.55, 0.65, 0.70], [5.0, 8.0, 9.0], [60.0, 80.0, 100.0], stopped=[9, 12, 13])
    (row,) = stopping_differences(fixed, early, "test_micro_f1").iter_rows(named=True)
    assert row["n_pairs"] == 3 and row["same_epoch"] == 2
    assert row["difference"] == pytest.approx(-0.02) and row["dev_difference"] == pytest.approx(-0.05 / 3)
    assert row["mean_stopped_epoch"] == pytest.approx(34 / 3) and row["train_time_share"] == pytest.approx(0.4)


def test_runs_without_where_they_stopped_or_without_pairs_are_refused(tmp_path, capsys):
    fixed = _runs([0.5], [0.5], [1.0], [1.0])
    with pytest.raises(UserInputError, match="stopped_epoch"):
        stopping_differences(fixed, fixed, "test_micro_f1")
    other = _runs([0.5], [0.5], [1.0], [1.0], stopped=[1]).with_columns(pl.lit(7).alias("seed"))
    with pytest.raises(UserInputError, match="share no pairs"):
        stopping_differences(fixed, other, "test_micro_f1")
    assert main([str(tmp_path / "absent"), str(tmp_path)]) == 2
    assert "no runs.parquet" in capsys.readouterr().err
