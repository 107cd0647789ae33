"""Was the epoch budget enough? A convergence verdict per cell, read from why each of its runs stopped.

A method still improving when training stops is compared at a point its budget chose, not at its
best, and so is any baseline it is said to beat. The rule, per cell (the replicate runs of one setting
and method, `aggregate.GROUP_KEYS`): the cell is converged when every run of it has `converged_run`
True (`run_frames.with_stopping`): it stopped by patience (`train.early_stopping`: `patience` dev
evaluations without a rise of more than `min_delta`, `trial.stopping`), or, for a head fitted outside
the epoch loop (crfsuite), its fit met its own stopping test (`fit_converged`). A run that hit the cap
(`train.epochs`) makes the cell not converged; a run that does not say (recorded before runs were
tagged `nerplat.stopped_by`) makes it unknown (null) unless another run already says no.

Why not a slope test on the mean dev curve, as before: it read noise. A cell's slope over its last
evaluations, tested against the curve's own wobble, flagged CE at 50 sentences as rising although its
runs' best dev epochs were 7 and 8 of 20, passed a curve still gaining about a point per epoch over a
window of four points, and flagged a smooth mean of many replicates more easily than a ragged mean of
few, so two identical arms got opposite labels. Patience decides in each run, before its budget ends,
with one rule for every arm of a comparison; the analysis only reads what the runs recorded.

Columns beside the verdict, for the tables and warnings: `runs`, `stopped_by_patience` (how many),
`mean_stopped_epoch`, `cap` (the epoch the runs that hit the cap stopped at; null when none did),
`judged_by` (`patience`, `fit` for a cell of crfsuite fits, null when no run recorded why it
stopped), and `last_epoch_share` (replicates whose best dev epoch was their last evaluated one:
information only).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from nerplat.analysis.aggregate import GROUP_KEYS
from nerplat.analysis.run_frames import with_stopping

RULE = (
    "converged: every run stopped by patience (train.early_stopping) before its cap (train.epochs), or its crfsuite fit "
    "met its own stopping test"
)
VERDICT_SCHEMA = {
    "runs": pl.Int64(),
    "stopped_by_patience": pl.Int64(),
    "mean_stopped_epoch": pl.Float64(),
    "cap": pl.Int64(),
    "judged_by": pl.String(),
    "last_epoch_share": pl.Float64(),
    "converged": pl.Boolean(),
}
VERDICT_COLUMNS = tuple(VERDICT_SCHEMA)


def dev_curves(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Mean dev score per epoch per cell: GROUP_KEYS, epoch, n (replicates evaluated), mean."""
    keys = list(GROUP_KEYS)
    points = epochs.filter(pl.col("metric") == metric).join(replicates.select("run_id", *keys), on="run_id")
    curves = points.group_by([*keys, "epoch"]).agg(pl.len().cast(pl.UInt32).alias("n"), pl.col("value").mean().alias("mean"))
    return curves.sort([*keys, "epoch"], nulls_last=True)


def convergence(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell: GROUP_KEYS and VERDICT_COLUMNS (the module docstring's rule).

    `epochs` (per-epoch dev `metric`, `run_frames.epoch_frame`) gives only `last_epoch_share`.
    """
    keys = list(GROUP_KEYS)
    schema = {k: replicates.schema[k] for k in keys} | VERDICT_SCHEMA
    if replicates.is_empty():
        return pl.DataFrame(schema=schema)
    runs = with_stopping(replicates)
    fitted = pl.col("fit_converged").is_not_null() if "fit_converged" in runs.columns else pl.lit(False)
    cells = runs.group_by(keys).agg(
        pl.len().cast(pl.Int64).alias("runs"),
        (pl.col("stopped_by") == "patience").sum().cast(pl.Int64).alias("stopped_by_patience"),
        pl.col("stopped_epoch").mean().alias("mean_stopped_epoch"),
        pl.col("stopped_epoch").filter(pl.col("stopped_by") == "cap").max().alias("cap"),
        pl.when(fitted.all()).then(pl.lit("fit"))
        .when(pl.col("stopped_by").is_null().all()).then(pl.lit(None, pl.String()))
        .otherwise(pl.lit("patience")).alias("judged_by"),
        _all_converged(pl.col("converged_run")).alias("converged"),
    )
    return (
        cells.join(_last_epoch_shares(runs, epochs, metric), on=keys, how="left", nulls_equal=True)
        .with_columns(
            pl.when(pl.col("judged_by") == "fit").then(None).otherwise(pl.col("last_epoch_share")).alias("last_epoch_share")
        )
        .select(list(schema))
        .cast(schema)
        .sort(keys, nulls_last=True)
    )


def _all_converged(flags: pl.Expr) -> pl.Expr:
    """True when every flag is True, False when one is False, else null (some run does not say)."""
    return pl.when((flags == False).any()).then(False).when(flags.is_null().any()).then(None).otherwise(True)  # noqa: E712


def _last_epoch_shares(runs: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Per cell, the share of replicates whose selected epoch was their last evaluated one."""
    keys = list(GROUP_KEYS)
    if "selected_epoch" not in runs.columns:
        return runs.select(keys).unique().with_columns(pl.lit(None, pl.Float64).alias("last_epoch_share"))
    last = epochs.filter(pl.col("metric") == metric).group_by("run_id").agg(pl.col("epoch").max().alias("run_last"))
    selected = runs.select("run_id", *keys, "selected_epoch").join(last, on="run_id")
    return selected.group_by(keys).agg((pl.col("selected_epoch").round() == pl.col("run_last")).mean().alias("last_epoch_share"))


def with_convergence(summary: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """The summary with VERDICT_COLUMNS on every row of each cell (null where no verdict)."""
    keys = list(GROUP_KEYS)
    joined = summary.join(verdicts, on=keys, how="left", nulls_equal=True)
    return joined.select(*summary.columns, *VERDICT_COLUMNS)


def with_cell_convergence(tests: pl.DataFrame, verdicts: pl.DataFrame, axes: Sequence[str] = ()) -> pl.DataFrame:
    """Paired tests with `converged` (the method's cell) and `partner_converged` (the partner's cell)."""
    keys = ["dataset", "sampler", "method", *axes]
    cells = verdicts.select(*keys, "converged").unique(keys, keep="first")
    partner = cells.rename({"sampler": "partner_sampler", "method": "partner", "converged": "partner_converged"})
    partner_keys = ["dataset", "partner_sampler", "partner", *axes]
    return tests.join(cells, on=keys, how="left", nulls_equal=True).join(partner, on=partner_keys, how="left", nulls_equal=True)


def unconverged_cells(summary: pl.DataFrame, methods: Sequence[str] | None = None) -> list[str]:
    """One warning line per cell whose budget did not converge (of `methods`, default all).

    For `nerplat run` to print at the end: `unconverged_cells(pl.read_parquet(report / "summary.parquet"))`.
    """
    if "converged" not in summary.columns:
        return []
    cells = summary.filter(pl.col("converged").eq_missing(False)).unique(list(GROUP_KEYS), keep="first")
    if methods is not None:
        cells = cells.filter(pl.col("method").is_in(list(methods)))
    return [
        f"not converged: {row['method']} on {row['dataset']} ({row['sampler']}): {_reason(row)}"
        for row in cells.sort(list(GROUP_KEYS), nulls_last=True).iter_rows(named=True)
    ]


def _reason(row: dict) -> str:
    if row.get("judged_by") == "fit":
        return "its fit stopped at its iteration limit in some replicates; raise the head's max_iterations"
    patience, runs, cap = row.get("stopped_by_patience"), row.get("runs"), row.get("cap")
    at = f" (train.epochs {cap})" if cap is not None else ""
    return (
        f"{runs - patience} of {runs} runs hit the cap{at} before a dev plateau, or stopped before rising above their first "
        "evaluation; raise train.epochs for this cell and its partners, or set train.early_stopping so runs stop at their plateau"
    )
