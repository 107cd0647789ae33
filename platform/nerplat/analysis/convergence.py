"""Was the epoch budget enough? Dev learning curves and a convergence verdict per cell.

A method that is still improving when training stops is compared at a point of its choosing the
budget made, not at its best, and so is any baseline it is said to beat. Per cell (the replicate
runs of one setting and method, `aggregate.GROUP_KEYS`):

  last_epoch_share  share of replicates whose selected epoch (best dev score) was the last evaluated one
  late_gain         the mean dev curve at the last evaluation minus its best over the evaluations up
                    to 75% of the run: how much the final quarter still added
  converged         last_epoch_share <= 1/2 and late_gain < 0.01

Why these two: a budget that lets the dev score peak leaves the selected epoch spread over the
plateau, so only a minority of replicates pick the final epoch; while the score still rises almost
all do. With 3 replicates the share alone is coarse (0, 1/3, 2/3, 1), so the mean curve must also
have flattened: one F1 point over the last quarter is below the seed-to-seed spread the papers report.
A cell with a single evaluation cannot show a plateau and is not converged; a cell without a dev
curve or without selected epochs (old runs, corpora without a dev split) is null: unknown.

Heads fitted outside the epoch loop (crfsuite) have no budget in epochs: their runs log
`fit_converged` (whether the optimiser met its own stopping test), and such a cell is converged when
every fit did; its last_epoch_share and late_gain are null.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from nerplat.analysis.aggregate import GROUP_KEYS

LAST_EPOCH_SHARE = 0.5
LATE_GAIN = 0.01
LATE_FRACTION = 0.25
RULE = (
    f"converged: at most {LAST_EPOCH_SHARE:.0%} of replicates selected the last evaluated epoch and the mean dev "
    f"curve gained less than {LATE_GAIN} over the last {LATE_FRACTION:.0%} of epochs"
)
VERDICT_COLUMNS = ("last_epoch", "last_epoch_share", "late_gain", "converged")


def dev_curves(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Mean dev score per epoch per cell: GROUP_KEYS, epoch, n (replicates evaluated), mean."""
    keys = list(GROUP_KEYS)
    points = epochs.filter(pl.col("metric") == metric).join(replicates.select("run_id", *keys), on="run_id")
    curves = points.group_by([*keys, "epoch"]).agg(pl.len().cast(pl.UInt32).alias("n"), pl.col("value").mean().alias("mean"))
    return curves.sort([*keys, "epoch"], nulls_last=True)


def convergence(replicates: pl.DataFrame, epochs: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell: GROUP_KEYS and VERDICT_COLUMNS (see the module docstring for the rule)."""
    keys = list(GROUP_KEYS)
    schema = {k: replicates.schema[k] for k in keys} | {
        "last_epoch": pl.Int64(), "last_epoch_share": pl.Float64(), "late_gain": pl.Float64(), "converged": pl.Boolean(),
    }
    if replicates.is_empty() or "selected_epoch" not in replicates.columns:
        return pl.DataFrame(schema=schema)
    last = epochs.filter(pl.col("metric") == metric).group_by("run_id").agg(pl.col("epoch").max().alias("run_last"))
    runs = replicates.select("run_id", *keys, "selected_epoch").join(last, on="run_id")
    shares = runs.group_by(keys).agg(
        pl.col("run_last").max().alias("last_epoch"),
        (pl.col("selected_epoch").round() == pl.col("run_last")).mean().alias("last_epoch_share"),
    )
    curves = dev_curves(replicates, epochs, metric).join(shares.select(*keys, "last_epoch"), on=keys, nulls_equal=True)
    cut = (pl.col("last_epoch") * (1 - LATE_FRACTION)).floor()
    gains = curves.group_by(keys).agg(
        (pl.col("mean").filter(pl.col("epoch") == pl.col("last_epoch")).first()
         - pl.col("mean").filter(pl.col("epoch") <= cut).max()).alias("late_gain")
    )
    plateau = ((pl.col("last_epoch_share") <= LAST_EPOCH_SHARE) & (pl.col("late_gain") < LATE_GAIN)).fill_null(False)
    verdicts = shares.join(gains, on=keys, how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("last_epoch_share").is_not_null()).then(plateau).alias("converged")
    )
    return _with_fit_verdicts(verdicts, replicates).select(list(schema)).cast(schema).sort(keys, nulls_last=True)


def _with_fit_verdicts(verdicts: pl.DataFrame, replicates: pl.DataFrame) -> pl.DataFrame:
    """Cells whose runs logged `fit_converged` take it as their verdict instead of the curve's."""
    if "fit_converged" not in replicates.columns:
        return verdicts
    keys = list(GROUP_KEYS)
    fits = replicates.filter(pl.col("fit_converged").is_not_null()).group_by(keys).agg(
        (pl.col("fit_converged") == 1).all().alias("fit")
    )
    fitted = pl.col("fit").is_not_null()
    return verdicts.join(fits, on=keys, how="left", nulls_equal=True).with_columns(
        pl.when(fitted).then(None).otherwise(pl.col("last_epoch_share")).alias("last_epoch_share"),
        pl.when(fitted).then(None).otherwise(pl.col("late_gain")).alias("late_gain"),
        pl.when(fitted).then(pl.col("fit")).otherwise(pl.col("converged")).alias("converged"),
    )


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
    lines = []
    for row in cells.sort(list(GROUP_KEYS), nulls_last=True).iter_rows(named=True):
        if row["last_epoch_share"] is None:
            lines.append(
                f"not converged: {row['method']} on {row['dataset']} ({row['sampler']}): its fit stopped at its "
                "iteration limit in some replicates; raise the head's max_iterations"
            )
            continue
        gain = "n/a" if row["late_gain"] is None else f"{row['late_gain']:+.4f}"
        lines.append(
            f"not converged: {row['method']} on {row['dataset']} ({row['sampler']}): "
            f"{row['last_epoch_share']:.0%} of replicates selected the last epoch ({row['last_epoch']}), "
            f"dev curve gained {gain} over the last {LATE_FRACTION:.0%}; raise train.epochs"
        )
    return lines
