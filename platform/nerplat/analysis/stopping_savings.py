"""What early stopping saved: per arm, the epochs its runs trained against their cap, and the
training time the cap would have cost.

Early stopping (`train.early_stopping`) ends a run at its dev plateau; the cap (`train.epochs`) is
what the run would have trained without it. A run's epochs cost about the same each (the same
batches of the same sampled set), so the time a stopped run saved is estimated as its training time
per epoch times the epochs it did not train. Training time is `time_train_s`: start-up and dev
evaluations are in neither side, so the estimate is of training only. Tuning trials and replicates
are counted alike; an arm whose cap was searched (no one cap) or whose runs did not record the epoch
they stopped at is left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

SCHEMA = {
    "arm": pl.String(), "runs": pl.Int64(), "cap": pl.Int64(), "epochs_run": pl.Int64(), "epochs_at_cap": pl.Int64(),
    "train_hours": pl.Float64(), "train_hours_at_cap": pl.Float64(),
}  # fmt: skip


def stopping_savings(frames: Sequence[pl.DataFrame], arms: pl.DataFrame) -> pl.DataFrame:
    """One row per arm of `arms` (`verdict_context.arm_frame`: arm, epochs) with runs in `frames` (replicates,
    tune trials: frames with `arm`, `stopped_epoch` and `time_train_s`; others are skipped): SCHEMA's columns."""
    needed = ("arm", "stopped_epoch", "time_train_s")
    recorded = [frame.select(*needed) for frame in frames if set(needed) <= set(frame.columns)]
    if not recorded or arms.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    caps = arms.select("arm", pl.col("epochs").cast(pl.Int64).alias("cap")).drop_nulls("cap")
    runs = pl.concat([
        frame.cast({"arm": pl.String(), "stopped_epoch": pl.Float64(), "time_train_s": pl.Float64()}) for frame in recorded
    ])
    stopped = runs.with_columns(pl.col("stopped_epoch").round().cast(pl.Int64)).drop_nulls()
    stopped = stopped.filter(pl.col("stopped_epoch") > 0).join(caps, on="arm")
    per_epoch = pl.col("time_train_s") / pl.col("stopped_epoch")
    frame = stopped.group_by("arm").agg(
        pl.len().cast(pl.Int64).alias("runs"),
        pl.col("cap").first(),
        pl.col("stopped_epoch").sum().alias("epochs_run"),
        pl.col("cap").sum().alias("epochs_at_cap"),
        (pl.col("time_train_s").sum() / 3600).alias("train_hours"),
        ((per_epoch * pl.col("cap")).sum() / 3600).alias("train_hours_at_cap"),
    )
    return frame.select(list(SCHEMA)).cast(SCHEMA).sort("arm")
