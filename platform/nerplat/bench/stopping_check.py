"""What early stopping changed against fixed epochs: the same replicates of a report trained to the cap
and stopped by patience (`train.early_stopping`), paired run by run.

Both runs of a pair share the cell (dataset, sampler, method, size), the seed and the partition, and
the learning-rate schedule (planned over the cap either way), so a stopped run trains exactly the
epochs of its fixed twin up to where it stops; what can differ is the epoch selected on dev, when the
fixed run found a better one after the stopped run gave up. Per cell it prints the mean paired
difference (stopped minus fixed) of the test metric and of the best dev score, how many pairs
selected the same epoch, the mean epoch the stopped runs stopped at, and their training time as a
share of the fixed runs' (a share of wall time on whatever else the machine ran then):

    python -m nerplat.bench.stopping_check FIXED_RUNS EARLY_RUNS [--metric test_micro_f1]

Each argument is a report folder or its runs.parquet. Exit code 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from nerplat.errors import Problem, UserInputError

PAIR_KEYS = ("dataset", "sampler", "method", "size", "seed", "partition")
COLUMNS = (
    "dataset", "sampler", "method", "n_pairs", "difference", "difference_sd", "dev_difference", "same_epoch",
    "mean_stopped_epoch", "train_time_share",
)  # fmt: skip


def stopping_differences(fixed: pl.DataFrame, early: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell in both frames of replicate runs (COLUMNS), over the runs paired by PAIR_KEYS."""
    dev = "dev_best_" + metric.split("_", 1)[1]
    needed = (*PAIR_KEYS, metric, dev, "selected_epoch", "time_train_s")
    for name, frame, extra in (("fixed", fixed, ()), ("early-stopped", early, ("stopped_epoch",))):
        missing = [c for c in (*needed, *extra) if c not in frame.columns]
        if missing:
            message = f"the {name} runs have no column {', '.join(missing)}"
            raise UserInputError(Problem(message, path="--metric" if metric in missing else None))
    early_runs = early.select(*needed, "stopped_epoch")
    paired = fixed.select(needed).join(early_runs, on=list(PAIR_KEYS), nulls_equal=True, suffix="_early")
    if paired.is_empty():
        raise UserInputError("the two sets of runs share no pairs (same dataset, sampler, method, size, seed and partition)")
    difference = pl.col(f"{metric}_early") - pl.col(metric)
    cells = paired.group_by(["dataset", "sampler", "method"]).agg(
        pl.len().alias("n_pairs"),
        difference.mean().alias("difference"),
        difference.std().alias("difference_sd"),
        (pl.col(f"{dev}_early") - pl.col(dev)).mean().alias("dev_difference"),
        (pl.col("selected_epoch_early").round() == pl.col("selected_epoch").round()).sum().alias("same_epoch"),
        pl.col("stopped_epoch").mean().alias("mean_stopped_epoch"),
        (pl.col("time_train_s_early").sum() / pl.col("time_train_s").sum()).alias("train_time_share"),
    )
    return cells.select(COLUMNS).sort("dataset", "sampler", "method")


def _runs(path: str) -> pl.DataFrame:
    file = Path(path) / "runs.parquet" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        raise UserInputError(Problem(f"{path}: no runs.parquet there", path="FIXED_RUNS/EARLY_RUNS"))
    return pl.read_parquet(file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nerplat.bench.stopping_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("fixed_runs")
    parser.add_argument("early_runs")
    parser.add_argument("--metric", default="test_micro_f1")
    args = parser.parse_args(argv)
    try:
        table = stopping_differences(_runs(args.fixed_runs), _runs(args.early_runs), args.metric)
    except UserInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return UserInputError.exit_code
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=4, tbl_width_chars=200):
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
